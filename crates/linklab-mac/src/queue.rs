//! The zero-copy RX queue between the PHY's interrupt (producer) and the main loop
//! (consumer), over bbqueue 0.7 in framed mode.
//!
//! The producer takes a grant of [`RX_GRANT_LEN`] bytes *before* it knows what is
//! coming, lets the PHY write straight into it, then commits the length it used, or
//! cancels (a link test pulse, noise). The consumer reads the oldest transmission in place
//! and releases it. SFD search, realignment and the FCS check happen on the consumer side
//! ([`crate::Mac::receive`]); the producer does no per-byte work at all.
//!
//! Lock-free and interrupt-safe: bbqueue's `Churrasco` flavour (inline storage, CAS
//! atomics, polling), which needs neither a critical section nor `alloc`.
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
//! checked at compile time by [`RxQueue::new`]. Under this rule, once the consumer has
//! drained the queue (a read returned nothing), a maximum-size grant always succeeds
//! (tests/queue_liveness.rs drives bbqueue to every reachable pointer position).
//!
//! How many frames a queue is guaranteed to hold, from any drained position, is
//! [`guaranteed_frames`]; [`crate::window`] turns that into a TCP receive window.

use bbqueue::nicknames::Churrasco;
use bbqueue::prod_cons::framed::{FramedConsumer, FramedGrantR, FramedGrantW, FramedProducer};
use core::sync::atomic::{AtomicU32, Ordering};

use crate::counters::ProducerCounters;

/// Size of every producer grant: a tagged maximum frame in raw form (8 bytes preamble/SFD,
/// 1522 bytes frame with FCS, 1 byte of bit shift) rounded up to 1536.
pub const RX_GRANT_LEN: usize = 1536;
/// Bytes bbqueue's framed mode stores in front of every frame (a `u16` length).
pub const FRAME_HEADER_LEN: usize = 2;
/// Contiguous bytes one maximum-size grant occupies in the ring.
pub const GRANT_FOOTPRINT: usize = RX_GRANT_LEN + FRAME_HEADER_LEN;
/// Smallest allowed queue capacity (see the capacity rule above).
pub const MIN_QUEUE_CAPACITY: usize = 2 * GRANT_FOOTPRINT;

type Bbq<const N: usize> = Churrasco<N>;

/// Number of frames of `frame_len` stored bytes a drained queue whose read and write
/// pointers both sit at byte `w` accepts in a row, when the producer always grants
/// [`RX_GRANT_LEN`] and commits `frame_len` (capped to 1..=`RX_GRANT_LEN`).
///
/// bbqueue 0.7 places grant `k` after the write pointer while `w + k·s + g <= N`; then,
/// wrapping to 0, grant `j` while `j·s + g < w` (strictly: the write pointer may never
/// catch up with the read pointer), with `s = frame_len + 2` and `g = RX_GRANT_LEN + 2`.
pub const fn frames_from(capacity: usize, w: usize, frame_len: usize) -> usize {
    let g = GRANT_FOOTPRINT;
    let f = if frame_len == 0 {
        1
    } else if frame_len > RX_GRANT_LEN {
        RX_GRANT_LEN
    } else {
        frame_len
    };
    let s = f + FRAME_HEADER_LEN;
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
/// over all positions `0..=capacity`.
pub const fn guaranteed_frames(capacity: usize, frame_len: usize) -> usize {
    let mut best = usize::MAX;
    let mut w = 0;
    while w <= capacity {
        let n = frames_from(capacity, w, frame_len);
        if n < best {
            best = n;
        }
        w += 1;
    }
    best
}

/// The RX queue: `N` bytes of ring storage plus counters. Put it in a `static` (or a
/// local) and hand out one producer and one consumer.
pub struct RxQueue<const N: usize> {
    bbq: Bbq<N>,
    pub(crate) producer_counters: ProducerCounters,
    pub(crate) dequeued: AtomicU32,
    pub(crate) released_bytes: AtomicU32,
}

impl<const N: usize> Default for RxQueue<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> RxQueue<N> {
    /// A new, empty queue. Fails to compile if `N < MIN_QUEUE_CAPACITY`.
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
        }
    }

    /// The producer half (the PHY's interrupt). Use one producer per queue.
    pub const fn producer(&self) -> RxProducer<'_, N> {
        RxProducer {
            inner: self.bbq.framed_producer(),
            queue: self,
        }
    }

    /// The consumer half (the main loop, usually inside a [`crate::Mac`]). Use one
    /// consumer per queue.
    pub const fn consumer(&self) -> RxConsumer<'_, N> {
        RxConsumer {
            inner: self.bbq.framed_consumer(),
            queue: self,
        }
    }

    /// Both halves at once.
    pub const fn split(&self) -> (RxProducer<'_, N>, RxConsumer<'_, N>) {
        (self.producer(), self.consumer())
    }

    /// Ring capacity in bytes.
    pub const fn capacity(&self) -> usize {
        N
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
    pub const fn guaranteed_frames(&self, frame_len: usize) -> usize {
        guaranteed_frames(N, frame_len)
    }
}

/// The queue had no room for a maximum-size grant (or a grant is already open).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueFull;

/// Producer half of an [`RxQueue`]: used by the PHY, typically in an interrupt.
pub struct RxProducer<'q, const N: usize> {
    inner: FramedProducer<&'q Bbq<N>>,
    queue: &'q RxQueue<N>,
}

impl<'q, const N: usize> RxProducer<'q, N> {
    /// Takes a grant of [`RX_GRANT_LEN`] bytes for the PHY to write into.
    ///
    /// Failing is not counted by itself (the wake-up may be a link pulse): if a
    /// transmission is then lost, call [`RxProducer::record_missed`].
    pub fn grant(&self) -> Result<RxGrant<'q, N>, QueueFull> {
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
pub struct RxGrant<'q, const N: usize> {
    inner: Option<FramedGrantW<&'q Bbq<N>>>,
    queue: &'q RxQueue<N>,
}

impl<const N: usize> RxGrant<'_, N> {
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
            let c = &self.queue.producer_counters;
            // Count before the frame becomes visible, so the consumer can never have
            // dequeued more than was committed.
            ProducerCounters::bump(&c.committed, 1);
            ProducerCounters::bump(&c.committed_bytes, (used + FRAME_HEADER_LEN) as u32);
            g.commit(used as u16);
        }
    }

    /// Gives the grant back without a transmission (`rx_cancelled`, outside the law).
    pub fn cancel(self) {}
}

impl<const N: usize> Drop for RxGrant<'_, N> {
    fn drop(&mut self) {
        if let Some(g) = self.inner.take() {
            ProducerCounters::bump(&self.queue.producer_counters.cancelled, 1);
            g.abort();
        }
    }
}

/// Consumer half of an [`RxQueue`].
pub struct RxConsumer<'q, const N: usize> {
    inner: FramedConsumer<&'q Bbq<N>>,
    queue: &'q RxQueue<N>,
}

impl<'q, const N: usize> RxConsumer<'q, N> {
    /// The oldest committed transmission, in place, or None if the queue is empty.
    /// It counts as dequeued from now on, and its space is released when the returned
    /// [`RxRead`] is dropped.
    pub fn read(&self) -> Option<RxRead<'q, N>> {
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
    pub fn queue(&self) -> &'q RxQueue<N> {
        self.queue
    }
}

/// One transmission read from the queue, in place and writable (for realignment).
/// Dropping it releases the space.
pub struct RxRead<'q, const N: usize> {
    inner: Option<FramedGrantR<&'q Bbq<N>>>,
    queue: &'q RxQueue<N>,
}

impl<const N: usize> RxRead<'_, N> {
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

impl<const N: usize> Drop for RxRead<'_, N> {
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
mod tests {
    use super::*;

    #[test]
    fn grant_commit_read_release() {
        let q: RxQueue<4096> = RxQueue::new();
        let (p, c) = q.split();
        let mut g = p.grant().unwrap();
        assert_eq!(g.buf().len(), RX_GRANT_LEN);
        g.buf()[..3].copy_from_slice(&[1, 2, 3]);
        g.commit(3);
        assert_eq!(q.occupancy(), 5);
        let r = c.read().unwrap();
        assert_eq!(r.bytes(), &[1, 2, 3]);
        drop(r);
        assert!(c.read().is_none());
        assert_eq!(q.occupancy(), 0);
        p.grant().unwrap().cancel();
        assert!(c.read().is_none());
        assert_eq!(q.producer_counters.cancelled.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn peek_leaves_the_transmission_in_the_queue() {
        let q: RxQueue<4096> = RxQueue::new();
        let (p, c) = q.split();
        assert_eq!(c.peek(|b| b.len()), None);
        assert!(p.push(&[7, 8, 9]));
        assert_eq!(
            c.peek(|b| <[u8; 3]>::try_from(b).ok()),
            Some(Some([7, 8, 9]))
        );
        assert_eq!(c.peek(|b| b.len()), Some(3));
        assert_eq!(q.dequeued.load(Ordering::Relaxed), 0);
        assert_eq!(c.read().unwrap().bytes(), &[7, 8, 9]);
        assert!(c.peek(|_| ()).is_none());
    }

    #[test]
    fn works_from_a_static() {
        static Q: RxQueue<{ MIN_QUEUE_CAPACITY }> = RxQueue::new();
        static P: RxProducer<'static, { MIN_QUEUE_CAPACITY }> = Q.producer();
        assert!(P.push(&[9; 100]));
        let c = Q.consumer();
        assert_eq!(c.read().unwrap().bytes().len(), 100);
    }

    #[test]
    fn guaranteed_frames_matches_niccle_size() {
        // A ring for ten full frames guarantees fewer: the wrap wastes up to one grant.
        let n = 10 * (1526 + 2);
        assert!(guaranteed_frames(n, 1526) >= 8);
        assert_eq!(guaranteed_frames(MIN_QUEUE_CAPACITY, RX_GRANT_LEN), 1);
    }
}
