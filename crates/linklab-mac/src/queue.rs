//! The zero-copy RX queue between the PHY's interrupt (producer) and the main loop
//! (consumer), over bbqueue 0.7 in framed mode.
//!
//! The producer takes a grant of [`RX_GRANT_LEN`] bytes *before* it knows what is
//! coming, lets the PHY write straight into it, then commits the length it used, or
//! cancels (a link test pulse, noise). A NIC that takes several posted buffers is lent a
//! run of them instead, one grant cut into buffers [`RX_GRANT_LEN`] bytes apart
//! ([`crate::run`]). The consumer reads the oldest transmission in place
//! and releases it. SFD search, realignment and the FCS check happen on the consumer side
//! ([`crate::Mac::receive`]); the producer does no per-byte work at all.
//!
//! Lock-free and interrupt-safe: bbqueue's atomic coordination with polling, which needs
//! neither a critical section nor `alloc`.
//!
//! # Storage
//!
//! The ring's bytes are a bbqueue [`Storage`]: [`Inline`]`<N>` (an array inside the queue, for
//! a `static` on a microcontroller: [`RxQueue::new`] is `const`) or, with the `alloc` feature,
//! `BoxedSlice` (a heap slice of any size chosen at run time: `RxQueue::boxed`). The code
//! that runs per frame is the same for both.
//!
//! # Capacity rule (bbqueue issue #129)
//!
//! A framed grant needs `RX_GRANT_LEN + 2` *contiguous* bytes (2 for the length header).
//! bbqueue places a grant either after the write pointer or, wrapping, strictly before
//! the read pointer. With a drained queue both pointers sit at the same position `w`; if
//! `w + g > N` and `g >= w` for grant footprint `g`, no grant can ever succeed, because
//! only a successful grant moves the pointers: a permanent stall. Such `w` (the range
//! `N - g < w <= g`) exist exactly when `2g > N`. This queue therefore requires
//!
//! ```text
//! N >= MIN_QUEUE_CAPACITY = 2 * (RX_GRANT_LEN + 2)
//! ```
//!
//! checked at compile time by [`RxQueue::new`] and at run time by [`RxQueue::with_storage`]
//! (and `RxQueue::boxed`). Under this rule, once the consumer has drained the queue (a read
//! returned nothing), a maximum-size grant always succeeds (tests/queue_liveness.rs drives
//! bbqueue to every reachable pointer position, for compile-time and run-time sizes).
//!
//! How many frames a queue is guaranteed to hold, from any drained position, is
//! [`guaranteed_frames`]; [`crate::window`] turns that into a TCP receive window and back
//! into a capacity ([`crate::window::capacity_for_frames`]).

use crate::atomic::{AtomicU32, Coord, Ordering};
use bbqueue::prod_cons::framed::{FramedConsumer, FramedGrantR, FramedGrantW, FramedProducer};
use bbqueue::traits::notifier::polling::Polling;
use bbqueue::BBQueue;

#[cfg(feature = "alloc")]
pub use bbqueue::traits::storage::BoxedSlice;
pub use bbqueue::traits::storage::{Inline, Storage};

use crate::counters::ProducerCounters;
use crate::deframe::{RxChecksums, RxTag, RX_TAG_LEN};

/// Size of a producer's grant for one frame: a tagged maximum frame in raw form (8 bytes
/// preamble/SFD, 1522 bytes frame with FCS, 1 byte of bit shift) rounded up to 1536. A
/// run's buffers ([`crate::run::RUN_STRIDE`]) are this many bytes apart, header included.
pub const RX_GRANT_LEN: usize = 1536;
/// Bytes bbqueue's framed mode stores in front of every frame (a `u16` length).
pub const FRAME_HEADER_LEN: usize = 2;
/// Where a frame should start, mod 4, for the copies after it to be word-aligned: its IPv4
/// header (14 bytes in) and a TCP payload without options (54 bytes in) then start on a
/// word. See [`RxGrant::commit_padded`].
pub const FRAME_ALIGN: usize = 2;
/// Contiguous bytes one maximum-size grant occupies in the ring.
pub const GRANT_FOOTPRINT: usize = RX_GRANT_LEN + FRAME_HEADER_LEN;
/// Smallest allowed queue capacity (see the capacity rule above).
pub const MIN_QUEUE_CAPACITY: usize = 2 * GRANT_FOOTPRINT;

pub(crate) type Bbq<S> = BBQueue<S, Coord, Polling>;

/// Ring bytes one stored frame of `frame_len` bytes takes (capped to 1..=`RX_GRANT_LEN`, as a
/// commit is), header included.
const fn slot_len(frame_len: usize) -> usize {
    let f = if frame_len == 0 {
        1
    } else if frame_len > RX_GRANT_LEN {
        RX_GRANT_LEN
    } else {
        frame_len
    };
    f + FRAME_HEADER_LEN
}

/// Number of frames of `frame_len` stored bytes a drained queue whose read and write
/// pointers both sit at byte `w` accepts in a row, when the producer always grants
/// [`RX_GRANT_LEN`] and commits `frame_len` (capped to 1..=`RX_GRANT_LEN`).
///
/// bbqueue 0.7 places grant `k` after the write pointer while `w + k·s + g <= N`; then,
/// wrapping to 0, grant `j` while `j·s + g < w` (strictly: the write pointer may never
/// catch up with the read pointer), with `s = frame_len + 2` and `g = RX_GRANT_LEN + 2`.
pub const fn frames_from(capacity: usize, w: usize, frame_len: usize) -> usize {
    let g = GRANT_FOOTPRINT;
    let s = slot_len(frame_len);
    let before_wrap = if w + g <= capacity {
        (capacity - g - w) / s + 1
    } else {
        0
    };
    let after_wrap = if g < w { (w - 1 - g) / s + 1 } else { 0 };
    before_wrap + after_wrap
}

/// Number of frames of `frame_len` stored bytes the queue is guaranteed to accept in a
/// row from a drained queue at *any* pointer position: the minimum of [`frames_from`]
/// over all positions `0..=capacity`, in closed form (constant time, so a queue sized at run
/// time costs nothing to ask; tests/queue_liveness.rs checks it against the minimum taken
/// position by position).
///
/// [`frames_from`] is `B(w) + A(w)`: `B` (frames before the wrap) falls with `w` and is 0
/// past `p = N − g`; `A` (frames after the wrap) rises with `w` and is 0 up to `g`.
/// * `N < 2g`: the positions `p < w <= g` have neither: 0 (the capacity rule's stall).
/// * Where only one counts (`w <= g` or `w > p`), its smallest value is at `w = g` or
///   `w = p + 1`, both `⌊(N − 2g)/s⌋ + 1`.
/// * Where both count (`g < w <= p`), with `x = p − w`, `y = w − 1 − g`, `x + y = T =
///   N − 2g − 1`: `⌊x/s⌋ + ⌊y/s⌋ + 2`, whose minimum is `⌊T/s⌋ + 2`, less 1 if some `x`
///   has a larger remainder mod `s` than `T` has (exactly when `T mod s < s − 1` and
///   `T >= s`).
pub const fn guaranteed_frames(capacity: usize, frame_len: usize) -> usize {
    let g = GRANT_FOOTPRINT;
    let s = slot_len(frame_len);
    if capacity < 2 * g {
        return 0;
    }
    let one_side = (capacity - 2 * g) / s + 1;
    if capacity == 2 * g {
        return one_side; // No position has both.
    }
    let t = capacity - 2 * g - 1;
    let r = t % s;
    let both = t / s + 2 - if r + 1 < s && t >= s { 1 } else { 0 };
    if both < one_side {
        both
    } else {
        one_side
    }
}

/// The storage handed to [`RxQueue::with_storage`] (or the size given to
/// `RxQueue::boxed`) is below [`MIN_QUEUE_CAPACITY`]: such a ring can stall for good (see
/// the capacity rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueueTooSmall {
    /// The capacity asked for, in bytes.
    pub capacity: usize,
}

impl core::fmt::Display for QueueTooSmall {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "an RX queue of {} bytes is below the minimum of {MIN_QUEUE_CAPACITY} (two grants of {RX_GRANT_LEN} bytes plus headers)",
            self.capacity
        )
    }
}

#[cfg(feature = "std")]
impl std::error::Error for QueueTooSmall {}

/// The RX queue: a ring of bytes in storage `S` plus counters. Use
/// `RxQueue<Inline<N>>` in a `static` (or a local) on a microcontroller, and
/// `RxQueue<BoxedSlice>` for a size chosen at run time; then hand out one producer and one
/// consumer.
pub struct RxQueue<S: Storage> {
    pub(crate) bbq: Bbq<S>,
    pub(crate) producer_counters: ProducerCounters,
    pub(crate) dequeued: AtomicU32,
    pub(crate) released_bytes: AtomicU32,
    /// The consumer task's waker (feature `embassy`): every commit wakes it.
    #[cfg(feature = "embassy")]
    rx_waker: atomic_waker::AtomicWaker,
}

impl<const N: usize> Default for RxQueue<Inline<N>> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> RxQueue<Inline<N>> {
    /// A new, empty queue of `N` bytes inline. Fails to compile if `N < MIN_QUEUE_CAPACITY`.
    pub const fn new() -> Self {
        const {
            assert!(
                N >= MIN_QUEUE_CAPACITY,
                "RxQueue capacity must be at least 2 * (RX_GRANT_LEN + 2)"
            )
        };
        RxQueue {
            bbq: Bbq::new(),
            producer_counters: ProducerCounters::new(),
            dequeued: AtomicU32::new(0),
            released_bytes: AtomicU32::new(0),
            #[cfg(feature = "embassy")]
            rx_waker: atomic_waker::AtomicWaker::new(),
        }
    }
}

#[cfg(feature = "alloc")]
impl RxQueue<BoxedSlice> {
    /// A new, empty queue of `capacity` bytes on the heap, or [`QueueTooSmall`] below
    /// [`MIN_QUEUE_CAPACITY`] (checked before allocating).
    pub fn boxed(capacity: usize) -> Result<Self, QueueTooSmall> {
        if capacity < MIN_QUEUE_CAPACITY {
            return Err(QueueTooSmall { capacity });
        }
        Self::with_storage(BoxedSlice::new(capacity))
    }
}

impl<S: Storage> RxQueue<S> {
    /// A new, empty queue over `storage`, or [`QueueTooSmall`] if it holds fewer than
    /// [`MIN_QUEUE_CAPACITY`] bytes.
    pub fn with_storage(storage: S) -> Result<Self, QueueTooSmall> {
        let bbq = Bbq::new_with_storage(storage);
        let capacity = bbq.capacity();
        if capacity < MIN_QUEUE_CAPACITY {
            return Err(QueueTooSmall { capacity });
        }
        Ok(RxQueue {
            bbq,
            producer_counters: ProducerCounters::new(),
            dequeued: AtomicU32::new(0),
            released_bytes: AtomicU32::new(0),
            #[cfg(feature = "embassy")]
            rx_waker: atomic_waker::AtomicWaker::new(),
        })
    }

    /// The producer half (the PHY's interrupt). Use one producer per queue.
    pub const fn producer(&self) -> RxProducer<'_, S> {
        RxProducer {
            inner: self.bbq.framed_producer(),
            queue: self,
        }
    }

    /// The consumer half (the main loop, usually inside a [`crate::Mac`]). Use one
    /// consumer per queue.
    pub const fn consumer(&self) -> RxConsumer<'_, S> {
        RxConsumer {
            inner: self.bbq.framed_consumer(),
            queue: self,
        }
    }

    /// Both halves at once.
    pub const fn split(&self) -> (RxProducer<'_, S>, RxConsumer<'_, S>) {
        (self.producer(), self.consumer())
    }

    /// Ring capacity in bytes.
    pub fn capacity(&self) -> usize {
        self.bbq.capacity()
    }

    /// Bytes committed and not yet released (headers included): the fill level used by
    /// the PAUSE watermarks.
    pub fn occupancy(&self) -> usize {
        let c = self
            .producer_counters
            .committed_bytes
            .load(Ordering::Acquire);
        let r = self.released_bytes.load(Ordering::Acquire);
        c.wrapping_sub(r) as usize
    }

    /// [`guaranteed_frames`] for this queue.
    pub fn guaranteed_frames(&self, frame_len: usize) -> usize {
        guaranteed_frames(self.capacity(), frame_len)
    }

    /// Registers the task to wake at the next commit (feature `embassy`). Register *before*
    /// looking at the queue, so a commit in between is never missed.
    #[cfg(feature = "embassy")]
    pub fn register_rx_waker(&self, waker: &core::task::Waker) {
        self.rx_waker.register(waker);
    }
}

/// The queue had no room for a maximum-size grant (or a grant is already open).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QueueFull;

/// Producer half of an [`RxQueue`]: used by the PHY, typically in an interrupt.
pub struct RxProducer<'q, S: Storage> {
    inner: FramedProducer<&'q Bbq<S>>,
    pub(crate) queue: &'q RxQueue<S>,
}

impl<'q, S: Storage> RxProducer<'q, S> {
    /// Takes a grant of [`RX_GRANT_LEN`] bytes for the PHY to write into.
    ///
    /// Failing is not counted by itself (the wake-up may be a link pulse): if a
    /// transmission is then lost, call [`RxProducer::record_missed`].
    pub fn grant(&self) -> Result<RxGrant<'q, S>, QueueFull> {
        match self.inner.grant(RX_GRANT_LEN as u16) {
            Ok(g) => Ok(RxGrant {
                inner: Some(g),
                queue: self.queue,
            }),
            Err(_) => Err(QueueFull),
        }
    }

    /// Counts a transmission lost for lack of room (`rx_missed_errors`).
    pub fn record_missed(&self) {
        ProducerCounters::bump(&self.queue.producer_counters.missed, 1);
    }

    /// Copies one whole transmission in (grant, copy, commit): for PHYs that have their own
    /// buffer (a simulator, a TAP). At most [`RX_GRANT_LEN`] bytes are kept; a longer input
    /// is truncated, which still classifies it as an error. Returns false and counts
    /// `rx_missed_errors` if the queue is full. An empty input is not a transmission.
    pub fn push(&self, transmission: &[u8]) -> bool {
        if transmission.is_empty() {
            return true;
        }
        match self.grant() {
            Ok(mut g) => {
                let n = transmission.len().min(RX_GRANT_LEN);
                g.buf()[..n].copy_from_slice(&transmission[..n]);
                g.commit(n);
                true
            }
            Err(QueueFull) => {
                self.record_missed();
                false
            }
        }
    }
}

/// An open producer grant of [`RX_GRANT_LEN`] bytes. Commit the used length, or cancel;
/// dropping it cancels.
pub struct RxGrant<'q, S: Storage> {
    inner: Option<FramedGrantW<&'q Bbq<S>>>,
    queue: &'q RxQueue<S>,
}

impl<S: Storage> RxGrant<'_, S> {
    /// The granted bytes, for the PHY to write into.
    pub fn buf(&mut self) -> &mut [u8] {
        match self.inner.as_mut() {
            Some(g) => g,
            None => &mut [],
        }
    }

    /// Makes the first `used` bytes one transmission for the consumer (capped at the grant
    /// length). `used == 0` is the same as [`RxGrant::cancel`].
    pub fn commit(mut self, used: usize) {
        let used = used.min(RX_GRANT_LEN);
        if used == 0 {
            return; // Drop cancels.
        }
        if let Some(g) = self.inner.take() {
            self.queue.commit(g, used);
        }
    }

    /// [`RxGrant::commit`] for a frame without its FCS, with 0–3 zero bytes of padding
    /// (never past a 1514-byte frame) so that the next grant starts at [`FRAME_ALIGN`] mod 4.
    ///
    /// bbqueue's framed ring puts each frame right after the previous one, so grants start
    /// at any byte, and every later copy of the frame's payload (the stack's, into a socket
    /// buffer) takes `memcpy`'s misaligned path (about 3.6 instructions per byte on a
    /// Cortex-M3 or a riscv32imac core, against ~1). Padding after the frame is what an
    /// Ethernet frame may carry (the stack reads IP's own lengths). The ring's storage must be
    /// word-aligned for a grant after the wrap to start at 2 mod 4 too (as `Inline` in a
    /// static is on the boards here).
    pub fn commit_padded(mut self, used: usize) {
        let buf = self.buf();
        let used = used.min(buf.len());
        // The next grant's data follows this one's data and its 2-byte length header.
        let end = buf.as_ptr() as usize + used + FRAME_HEADER_LEN;
        let pad = (FRAME_ALIGN + 4 - end % 4) % 4;
        let padded = (used + pad)
            .min(buf.len())
            .min(crate::frame::MAX_FRAME_LEN)
            .max(used);
        buf[used..padded].fill(0);
        self.commit(padded);
    }

    /// Commits the `used` bytes of a frame without its FCS followed by its [`RxTag`]
    /// (what the driver knows of its checksums) for [`crate::RxFormat::Tagged`], padded as
    /// [`RxGrant::commit_padded`] pads (the next grant starts at [`FRAME_ALIGN`] mod 4).
    pub fn commit_tagged(mut self, used: usize, checksums: RxChecksums) {
        let len = tag_frame(self.buf(), used, checksums, None);
        self.commit(len);
    }

    /// Gives the grant back without a transmission (`rx_cancelled`, outside the law).
    pub fn cancel(self) {}
}

impl<S: Storage> Drop for RxGrant<'_, S> {
    fn drop(&mut self) {
        if let Some(g) = self.inner.take() {
            ProducerCounters::bump(&self.queue.producer_counters.cancelled, 1);
            g.abort();
        }
    }
}

/// Writes the [`RxTag`] behind the first `used` bytes of `buf` (a grant's data; capped so
/// the tag fits) and returns the stored length: with `fill`, the tag ends `fill` bytes in (a
/// buffer of an [`crate::RxRun`]; the padding before it is left as it was, never read);
/// without, 0–3 zero bytes come first so that the next grant starts at [`FRAME_ALIGN`]
/// mod 4.
#[inline]
pub(crate) fn tag_frame(
    buf: &mut [u8],
    used: usize,
    checksums: RxChecksums,
    fill: Option<usize>,
) -> usize {
    let used = used.min(buf.len().saturating_sub(RX_TAG_LEN + 3));
    let at = match fill {
        Some(n) => n.min(buf.len()).saturating_sub(RX_TAG_LEN).max(used),
        None => {
            let end = buf.as_ptr() as usize + used + RX_TAG_LEN + FRAME_HEADER_LEN;
            let at = used + (FRAME_ALIGN + 4 - end % 4) % 4;
            buf[used..at].fill(0);
            at
        }
    };
    let tag = RxTag {
        checksums,
        padding: (at - used) as u16,
    };
    buf[at..at + RX_TAG_LEN].copy_from_slice(&tag.to_bytes());
    at + RX_TAG_LEN
}

impl<S: Storage> RxQueue<S> {
    /// Makes the first `used` bytes of `g` one transmission for the consumer, counted.
    pub(crate) fn commit(&self, g: FramedGrantW<&Bbq<S>>, used: usize) {
        let c = &self.producer_counters;
        // Count before the frame becomes visible, so the consumer can never have dequeued
        // more than was committed.
        ProducerCounters::bump(&c.committed, 1);
        ProducerCounters::bump(&c.committed_bytes, (used + FRAME_HEADER_LEN) as u32);
        g.commit(used as u16);
        // Lock-free: safe from the interrupt while the task registers.
        #[cfg(feature = "embassy")]
        self.rx_waker.wake();
    }

    /// The ring's first byte's address and its length.
    pub(crate) fn ring(&self) -> (usize, usize) {
        // SAFETY: only the address is taken; nothing is read or written through it.
        let (ptr, len) = unsafe { self.bbq.storage().ptr_len() };
        (ptr.as_ptr() as usize, len)
    }
}

/// Consumer half of an [`RxQueue`].
pub struct RxConsumer<'q, S: Storage> {
    inner: FramedConsumer<&'q Bbq<S>>,
    queue: &'q RxQueue<S>,
}

impl<'q, S: Storage> RxConsumer<'q, S> {
    /// The oldest committed transmission, in place, or None if the queue is empty.
    /// It counts as dequeued from now on, and its space is released when the returned
    /// [`RxRead`] is dropped.
    pub fn read(&self) -> Option<RxRead<'q, S>> {
        match self.inner.read() {
            Ok(g) => {
                self.queue.dequeued.fetch_add(1, Ordering::Release);
                Some(RxRead {
                    inner: Some(g),
                    queue: self.queue,
                })
            }
            Err(_) => None,
        }
    }

    /// Lends the oldest committed transmission to `f` without taking it out of the queue (it
    /// is neither counted as dequeued nor released), or None if the queue is empty.
    pub fn peek<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        // bbqueue keeps a read grant's bytes when the grant is dropped unreleased.
        self.inner.read().ok().map(|g| f(&g))
    }

    /// The queue this consumer reads from.
    pub fn queue(&self) -> &'q RxQueue<S> {
        self.queue
    }
}

/// One transmission read from the queue, in place and writable (for realignment).
/// Dropping it releases the space.
pub struct RxRead<'q, S: Storage> {
    inner: Option<FramedGrantR<&'q Bbq<S>>>,
    queue: &'q RxQueue<S>,
}

impl<S: Storage> RxRead<'_, S> {
    /// The transmission's bytes as committed by the producer.
    pub fn buf(&mut self) -> &mut [u8] {
        match self.inner.as_mut() {
            Some(g) => g,
            None => &mut [],
        }
    }

    /// The transmission's bytes, read-only.
    pub fn bytes(&self) -> &[u8] {
        match self.inner.as_ref() {
            Some(g) => g,
            None => &[],
        }
    }

    /// Releases the space (same as dropping).
    pub fn release(self) {}
}

impl<S: Storage> Drop for RxRead<'_, S> {
    fn drop(&mut self) {
        if let Some(g) = self.inner.take() {
            let len = g.len() + FRAME_HEADER_LEN;
            g.release();
            self.queue
                .released_bytes
                .fetch_add(len as u32, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests;
