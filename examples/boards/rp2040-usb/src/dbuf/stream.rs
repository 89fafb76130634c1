//! Bulk endpoints fed by the interrupt: a ring of packets between each bulk endpoint and its
//! task, and the controller's two buffers refilled (IN) or emptied (OUT) by the interrupt
//! handler the moment one completes. The bus then keeps moving packets while the CPU spends a
//! few hundred microseconds on one frame (its CRC, its COBS encoding, a TCP segment):
//! measured, two hardware buffers alone (128 bytes, 110 µs of the bus) left a gap of ~300 µs
//! per frame in every 1.5 KB sent (docs/usb.md).
//!
//! Each ring has one producer and one consumer (IN: the task pushes, the interrupt pops; OUT:
//! the interrupt pushes, the task pops); their indices are atomics loaded and stored, never
//! read-modify-written. What moves packets between a ring and the controller's buffers
//! ([`service_in`], [`service_out`]) runs in the interrupt or, from a task, with interrupts
//! masked, so the two never run at once.

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};

use super::regs;

/// Packets a ring holds: 16 of 64 bytes, 0.9 ms of the bus.
pub const RING: usize = 16;
/// Bulk endpoints that can have rings (indices 1..STREAMS).
pub const STREAMS: usize = 4;

/// A single-producer single-consumer ring of packets (up to 64 bytes each).
pub struct PacketRing {
    data: UnsafeCell<[[u8; 64]; RING]>,
    len: UnsafeCell<[u8; RING]>,
    /// Packets pushed (the producer's), and popped (the consumer's); both wrap.
    head: AtomicUsize,
    tail: AtomicUsize,
}

// SAFETY: one producer writes a slot before publishing it with `head`, one consumer reads it
// before releasing it with `tail` (see the module docs for who is which).
unsafe impl Sync for PacketRing {}

impl PacketRing {
    const fn new() -> Self {
        PacketRing {
            data: UnsafeCell::new([[0; 64]; RING]),
            len: UnsafeCell::new([0; RING]),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.head.load(Ordering::Acquire) == self.tail.load(Ordering::Acquire)
    }

    pub fn is_full(&self) -> bool {
        self.head
            .load(Ordering::Acquire)
            .wrapping_sub(self.tail.load(Ordering::Acquire))
            >= RING
    }

    /// The producer: fills the next slot with `fill` (returns its length) and publishes it.
    /// False if the ring is full.
    pub fn push(&self, fill: impl FnOnce(&mut [u8; 64]) -> usize) -> bool {
        if self.is_full() {
            return false;
        }
        let head = self.head.load(Ordering::Relaxed);
        let slot = head % RING;
        // SAFETY: slot `head` is the producer's until `head` moves past it.
        let n = fill(unsafe { &mut (*self.data.get())[slot] });
        unsafe { (*self.len.get())[slot] = n as u8 };
        self.head.store(head.wrapping_add(1), Ordering::Release);
        true
    }

    /// The consumer: hands the oldest packet to `take`, then releases it. False if empty.
    pub fn pop(&self, take: impl FnOnce(&[u8])) -> bool {
        if self.is_empty() {
            return false;
        }
        let tail = self.tail.load(Ordering::Relaxed);
        let slot = tail % RING;
        // SAFETY: slot `tail` was published by the producer and is the consumer's until `tail`
        // moves past it.
        let (data, n) = unsafe { (&(*self.data.get())[slot], (*self.len.get())[slot]) };
        take(&data[..usize::from(n)]);
        self.tail.store(tail.wrapping_add(1), Ordering::Release);
        true
    }

    /// Empties it (with interrupts masked: both ends are still).
    pub fn clear(&self) {
        self.tail
            .store(self.head.load(Ordering::Relaxed), Ordering::Release);
    }
}

/// An endpoint's ring and where its controller buffers are, shared by its task and the
/// interrupt.
pub struct Stream {
    pub ring: PacketRing,
    /// 0: no stream on this endpoint index.
    buffer: AtomicUsize,
    mps: AtomicU8,
    /// The buffer whose turn it is, and (IN) the next DATA PID.
    turn: AtomicU8,
    data1: AtomicBool,
}

impl Stream {
    const fn new() -> Self {
        Stream {
            ring: PacketRing::new(),
            buffer: AtomicUsize::new(0),
            mps: AtomicU8::new(64),
            turn: AtomicU8::new(0),
            data1: AtomicBool::new(false),
        }
    }

    /// Makes this endpoint's stream use the buffers at `buffer` (two of 64 bytes).
    pub fn attach(&self, buffer: usize, mps: u16) {
        self.buffer.store(buffer, Ordering::Relaxed);
        self.mps.store(mps as u8, Ordering::Relaxed);
    }

    pub fn attached(&self) -> bool {
        self.buffer.load(Ordering::Relaxed) != 0
    }

    /// Starts over (the endpoint enabled again): empty ring, buffer 0, DATA0.
    pub fn restart(&self) {
        self.ring.clear();
        self.turn.store(0, Ordering::Relaxed);
        self.data1.store(false, Ordering::Relaxed);
    }
}

/// The streams of bulk IN and OUT endpoints, by endpoint index.
pub static IN_STREAMS: [Stream; STREAMS] = [const { Stream::new() }; STREAMS];
pub static OUT_STREAMS: [Stream; STREAMS] = [const { Stream::new() }; STREAMS];

/// Moves queued packets of IN endpoint `ep` into its controller buffers while they are free.
/// Interrupt context, or interrupts masked. True if it moved one (the ring has room again).
pub fn service_in(ep: usize) -> bool {
    let s = &IN_STREAMS[ep];
    let bc = regs::buffer_control(ep, false);
    let mut moved = false;
    loop {
        let turn = usize::from(s.turn.load(Ordering::Relaxed));
        if regs::half_read(bc, turn) & regs::BUF_AVAILABLE != 0 {
            return moved;
        }
        let at = s.buffer.load(Ordering::Relaxed) + 64 * turn;
        let mut len = 0;
        if !s.ring.pop(|p| {
            regs::copy_to(at, p);
            len = p.len();
        }) {
            return moved;
        }
        let data1 = s.data1.load(Ordering::Relaxed);
        let pid = if data1 { regs::BUF_DATA1 } else { 0 };
        regs::arm(bc, turn, len as u16 | pid | regs::BUF_FULL);
        s.data1.store(!data1, Ordering::Relaxed);
        s.turn.store((turn ^ 1) as u8, Ordering::Relaxed);
        moved = true;
    }
}

/// Moves received packets of OUT endpoint `ep` from its controller buffers into its ring while
/// it has room, arming each buffer again. Interrupt context, or interrupts masked. True if it
/// moved one.
pub fn service_out(ep: usize) -> bool {
    let s = &OUT_STREAMS[ep];
    let bc = regs::buffer_control(ep, true);
    let mut moved = false;
    loop {
        let turn = usize::from(s.turn.load(Ordering::Relaxed));
        let half = regs::half_read(bc, turn);
        if half & regs::BUF_AVAILABLE != 0 || half & regs::BUF_FULL == 0 {
            return moved;
        }
        let at = s.buffer.load(Ordering::Relaxed) + 64 * turn;
        let n = usize::from(half & regs::BUF_LEN).min(64);
        if !s.ring.push(|slot| {
            regs::copy_from(at, &mut slot[..n]);
            n
        }) {
            // No room: the buffer stays full and the host is NAKed until the task reads.
            return moved;
        }
        // Its next packet is two on: the same PID.
        let mps = u16::from(s.mps.load(Ordering::Relaxed));
        regs::arm(bc, turn, mps | (half & regs::BUF_DATA1));
        s.turn.store((turn ^ 1) as u8, Ordering::Relaxed);
        moved = true;
    }
}
