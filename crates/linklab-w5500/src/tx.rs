//! The frames on their way to the chip: a ring of `N` frame slots between the MAC (which
//! builds each frame in place in a slot, through [`W5500Tx`], its `PhyTx`) and the runner
//! (which writes the oldest to the chip and sends it). One producer and one consumer, each
//! owning its end: plain atomic loads and stores (no compare-and-swap), so it works on a
//! Cortex-M0+ and from an interrupt executor.

use core::cell::UnsafeCell;
use core::future::poll_fn;
use core::sync::atomic::{AtomicUsize, Ordering};
use core::task::Poll;

use atomic_waker::AtomicWaker;
use linklab_mac::PhyTx;

use crate::regs::MAX_FRAME;

/// A slot's bytes: a full frame without FCS, rounded up to a word.
pub const SLOT_LEN: usize = MAX_FRAME.next_multiple_of(4);
/// Where a frame starts in its slot: at 2 mod 4 (linklab-mac's `FRAME_ALIGN`), as the MAC's
/// own TX buffer and its RX grants start them, so the IP header and the TCP payload (54
/// bytes in) are word-aligned and the stack's copy of each payload into the frame takes
/// `memcpy`'s word path: from a slot at 0 mod 4 the image's profile had `memcpy` at 30 % of
/// the CPU sending at 62.5 MHz.
const FRAME_OFFSET: usize = linklab_mac::queue::FRAME_ALIGN;

/// One frame slot.
#[repr(C, align(4))]
struct Slot {
    buf: [u8; FRAME_OFFSET + SLOT_LEN],
    len: usize,
}

impl Slot {
    /// The frame's bytes, `len` of them from [`FRAME_OFFSET`].
    fn frame(&mut self, len: usize) -> &mut [u8] {
        &mut self.buf[FRAME_OFFSET..FRAME_OFFSET + len.min(SLOT_LEN)]
    }
}

/// `N` frame slots: while the runner writes one to the chip over SPI (hundreds of µs at
/// 31.25 MHz), the stack builds the next in another, so the bus never waits for the stack.
/// Put it in a `static`; [`TxQueue::producer`] is the MAC's `PhyTx`.
pub struct TxQueue<const N: usize> {
    slots: [UnsafeCell<Slot>; N],
    /// Frames taken by the runner (it alone stores it).
    head: AtomicUsize,
    /// Frames handed over by the MAC (it alone stores it).
    tail: AtomicUsize,
    /// The runner, waiting for a frame.
    waker: AtomicWaker,
}

// SAFETY: a slot is only touched by the producer between its `tail` and the next store of
// `tail` (Release), and by the consumer between seeing it published (Acquire) and storing
// `head` (Release); the two ends are one writer each.
unsafe impl<const N: usize> Sync for TxQueue<N> {}

impl<const N: usize> Default for TxQueue<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> TxQueue<N> {
    /// Empty slots (for a `static`: zeroed, so it is `.bss`).
    pub const fn new() -> Self {
        TxQueue {
            slots: [const {
                UnsafeCell::new(Slot {
                    buf: [0; FRAME_OFFSET + SLOT_LEN],
                    len: 0,
                })
            }; N],
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            waker: AtomicWaker::new(),
        }
    }

    /// The MAC's side: its `PhyTx`. Take it once.
    pub const fn producer(&self) -> W5500Tx<'_, N> {
        W5500Tx {
            queue: self,
            dropped: 0,
        }
    }

    /// Frames handed over and not yet taken.
    pub fn len(&self) -> usize {
        let tail = self.tail.load(Ordering::Acquire);
        tail.wrapping_sub(self.head.load(Ordering::Acquire))
    }

    /// No frame waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The oldest frame handed over (the consumer's: the runner's).
    pub(crate) fn front(&self) -> Option<&[u8]> {
        let head = self.head.load(Ordering::Relaxed);
        if self.tail.load(Ordering::Acquire) == head {
            return None;
        }
        // SAFETY: the slot at `head` was published (tail past it) and stays the consumer's
        // until `pop` stores head + 1; the producer touches no slot between head and tail.
        let slot = unsafe { &*self.slots[head % N].get() };
        Some(&slot.buf[FRAME_OFFSET..FRAME_OFFSET + slot.len.min(SLOT_LEN)])
    }

    /// Frees the oldest frame's slot.
    pub(crate) fn pop(&self) {
        let head = self.head.load(Ordering::Relaxed);
        if self.tail.load(Ordering::Acquire) != head {
            self.head.store(head.wrapping_add(1), Ordering::Release);
        }
    }

    /// Waits until a frame is waiting.
    pub(crate) async fn wait(&self) {
        poll_fn(|cx| {
            self.waker.register(cx.waker());
            if self.is_empty() {
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        })
        .await
    }
}

/// The MAC's transmitter (`linklab_mac::PhyTx`): lends the MAC a free slot to build each
/// frame in place (`tx_buffer`), hands it to the runner (`transmit_buffer`) and wakes it.
pub struct W5500Tx<'q, const N: usize> {
    queue: &'q TxQueue<N>,
    dropped: u64,
}

impl<const N: usize> W5500Tx<'_, N> {
    /// The free slot at the tail, if any.
    fn free_slot(&mut self) -> Option<&mut Slot> {
        let q = self.queue;
        let tail = q.tail.load(Ordering::Relaxed);
        if tail.wrapping_sub(q.head.load(Ordering::Acquire)) >= N {
            return None;
        }
        // SAFETY: the slot at `tail` is not published (the consumer reads only below tail)
        // and is free (fewer than N frames wait); only this one producer writes it.
        Some(unsafe { &mut *q.slots[tail % N].get() })
    }

    /// Publishes the slot at the tail with `len` bytes and wakes the runner.
    fn publish(&mut self, len: usize) {
        let q = self.queue;
        let tail = q.tail.load(Ordering::Relaxed);
        if let Some(slot) = self.free_slot() {
            slot.len = len.min(SLOT_LEN);
            q.tail.store(tail.wrapping_add(1), Ordering::Release);
            q.waker.wake();
        }
    }
}

impl<const N: usize> PhyTx for W5500Tx<'_, N> {
    /// Copies `wire` into a free slot (the MAC built it in its own buffer: a PAUSE frame,
    /// or no slot was free when it asked); without one, or over 1514 bytes, it is dropped
    /// and counted.
    fn transmit(&mut self, wire: &[u8]) {
        let len = wire.len();
        match self.free_slot() {
            Some(slot) if len <= MAX_FRAME => {
                slot.frame(len).copy_from_slice(wire);
                self.publish(len);
            }
            _ => self.dropped += 1,
        }
    }

    fn dropped(&mut self) -> u64 {
        self.dropped
    }

    fn ready(&mut self) -> bool {
        self.free_slot().is_some()
    }

    fn tx_buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        if len > MAX_FRAME {
            return None;
        }
        self.free_slot().map(|s| s.frame(len))
    }

    fn transmit_buffer(&mut self, len: usize) {
        self.publish(len);
    }
}
