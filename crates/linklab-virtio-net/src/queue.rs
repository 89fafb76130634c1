//! A split virtqueue (virtio 1.x, section 2.7): the descriptor table, the driver area
//! ("available" ring) and the device area ("used" ring) of a queue of [`QUEUE_SIZE`]
//! entries, in one block of memory the driver owns ([`QueueMemory`], 224 bytes), and the
//! driver's side of it (`Virtqueue`): chains of buffers offered, completions taken back.
//!
//! Everything the device reads or writes is accessed with volatile reads and writes, and
//! fences order them (the descriptors before the ring entry before the index; the used
//! index before the element it covers).

use core::ptr::{addr_of, addr_of_mut};
use core::sync::atomic::{fence, Ordering};

/// Entries of every queue (a power of two, as split queues require).
pub const QUEUE_SIZE: usize = 8;

/// The descriptor continues in `next`.
const DESC_F_NEXT: u16 = 1;
/// The device writes this buffer (receive), else reads it (transmit).
const DESC_F_WRITE: u16 = 2;
/// Driver area flag: no interrupt needed when the device uses a buffer.
const AVAIL_F_NO_INTERRUPT: u16 = 1;
/// Device area flag: the device needs no notification of new buffers.
const USED_F_NO_NOTIFY: u16 = 1;

#[repr(C)]
#[derive(Clone, Copy)]
struct Desc {
    addr: u64,
    len: u32,
    flags: u16,
    next: u16,
}

#[repr(C)]
struct AvailRing {
    flags: u16,
    idx: u16,
    ring: [u16; QUEUE_SIZE],
    used_event: u16,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct UsedElem {
    id: u32,
    len: u32,
}

#[repr(C, align(4))]
struct UsedRing {
    flags: u16,
    idx: u16,
    ring: [UsedElem; QUEUE_SIZE],
    avail_event: u16,
}

/// The memory of one virtqueue that the device shares: descriptor table (16-byte aligned),
/// driver area, device area (4-byte aligned). Zeroed (`.bss`) until the driver sets it up.
#[repr(C, align(16))]
pub struct QueueMemory {
    desc: [Desc; QUEUE_SIZE],
    avail: AvailRing,
    used: UsedRing,
}

impl QueueMemory {
    /// A zeroed queue.
    pub const fn new() -> Self {
        QueueMemory {
            desc: [Desc {
                addr: 0,
                len: 0,
                flags: 0,
                next: 0,
            }; QUEUE_SIZE],
            avail: AvailRing {
                flags: 0,
                idx: 0,
                ring: [0; QUEUE_SIZE],
                used_event: 0,
            },
            used: UsedRing {
                flags: 0,
                idx: 0,
                ring: [UsedElem { id: 0, len: 0 }; QUEUE_SIZE],
                avail_event: 0,
            },
        }
    }
}

impl Default for QueueMemory {
    fn default() -> Self {
        Self::new()
    }
}

/// One buffer of a chain: where it is, how long, and whether the device writes it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Buf {
    pub(crate) addr: usize,
    pub(crate) len: usize,
    pub(crate) device_writes: bool,
}

/// The device's areas, as the transport tells the device where they are.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Areas {
    pub(crate) desc: usize,
    pub(crate) driver: usize,
    pub(crate) device: usize,
}

/// The driver's side of one virtqueue over its [`QueueMemory`].
pub(crate) struct Virtqueue {
    mem: *mut QueueMemory,
    /// Free descriptors, one bit each.
    free: u32,
    /// The driver area's index as we last published it.
    avail_idx: u16,
    /// The device area's index up to which we have taken completions.
    last_used: u16,
}

impl Virtqueue {
    /// A queue over `mem` (zeroed here), which the device will use from now on.
    ///
    /// # Safety
    /// `mem` must be valid for as long as the queue and the device use it, and touched by
    /// nothing else.
    pub(crate) unsafe fn new(mem: *mut QueueMemory) -> Self {
        // SAFETY: the caller's contract.
        unsafe { mem.write(QueueMemory::new()) };
        Virtqueue {
            mem,
            free: (1u32 << QUEUE_SIZE) - 1,
            avail_idx: 0,
            last_used: 0,
        }
    }

    /// The addresses of the three areas.
    pub(crate) fn areas(&self) -> Areas {
        // SAFETY: projections of a valid pointer; nothing is read.
        unsafe {
            Areas {
                desc: addr_of!((*self.mem).desc) as usize,
                driver: addr_of!((*self.mem).avail) as usize,
                device: addr_of!((*self.mem).used) as usize,
            }
        }
    }

    /// Free descriptors.
    pub(crate) fn free(&self) -> usize {
        self.free.count_ones() as usize
    }

    /// Offers a chain of `bufs` to the device; its head descriptor (the token its
    /// completion will carry), or None if not enough descriptors are free. The caller
    /// notifies the device ([`Virtqueue::needs_notify`]).
    pub(crate) fn add(&mut self, bufs: &[Buf]) -> Option<u16> {
        if bufs.is_empty() || self.free() < bufs.len() {
            return None;
        }
        let mut head = None;
        let mut prev: Option<usize> = None;
        for b in bufs {
            let i = self.free.trailing_zeros() as usize;
            self.free &= !(1 << i);
            let d = Desc {
                addr: b.addr as u64,
                len: b.len as u32,
                flags: if b.device_writes { DESC_F_WRITE } else { 0 },
                next: 0,
            };
            // SAFETY: i < QUEUE_SIZE (a free bit); the device does not read a descriptor
            // before it is offered.
            unsafe {
                addr_of_mut!((*self.mem).desc[i]).write_volatile(d);
                if let Some(p) = prev {
                    let pd = addr_of_mut!((*self.mem).desc[p]);
                    let mut v = pd.read_volatile();
                    v.flags |= DESC_F_NEXT;
                    v.next = i as u16;
                    pd.write_volatile(v);
                }
            }
            prev = Some(i);
            head.get_or_insert(i as u16);
        }
        let head = head?;
        let slot = usize::from(self.avail_idx) % QUEUE_SIZE;
        // SAFETY: in bounds; the ring entry is published by the index write below.
        unsafe { addr_of_mut!((*self.mem).avail.ring[slot]).write_volatile(head) };
        fence(Ordering::SeqCst);
        self.avail_idx = self.avail_idx.wrapping_add(1);
        // SAFETY: as above.
        unsafe { addr_of_mut!((*self.mem).avail.idx).write_volatile(self.avail_idx) };
        fence(Ordering::SeqCst);
        Some(head)
    }

    /// False when the device asked not to be notified of new buffers.
    pub(crate) fn needs_notify(&self) -> bool {
        // SAFETY: a field of the queue memory, read as the device may write it.
        let flags = unsafe { addr_of!((*self.mem).used.flags).read_volatile() };
        flags & USED_F_NO_NOTIFY == 0
    }

    /// Asks the device to interrupt (or not) when it uses a buffer (a hint it may ignore).
    pub(crate) fn set_interrupts(&mut self, on: bool) {
        let flags = if on { 0 } else { AVAIL_F_NO_INTERRUPT };
        // SAFETY: a field of the queue memory.
        unsafe { addr_of_mut!((*self.mem).avail.flags).write_volatile(flags) };
    }

    /// The next completion: (head descriptor of the chain, bytes the device wrote into
    /// it), with the chain's descriptors freed; None when there is none. A completion that
    /// names a descriptor the driver did not offer is not one (None; the device is broken).
    pub(crate) fn pop_used(&mut self) -> Option<(u16, u32)> {
        // SAFETY: fields of the queue memory, read as the device writes them.
        let idx = unsafe { addr_of!((*self.mem).used.idx).read_volatile() };
        if idx == self.last_used {
            return None;
        }
        fence(Ordering::SeqCst);
        let slot = usize::from(self.last_used) % QUEUE_SIZE;
        // SAFETY: in bounds.
        let elem = unsafe { addr_of!((*self.mem).used.ring[slot]).read_volatile() };
        let head = elem.id as usize;
        if head >= QUEUE_SIZE || self.free & (1 << head) != 0 {
            return None;
        }
        self.last_used = self.last_used.wrapping_add(1);
        let mut i = head;
        for _ in 0..QUEUE_SIZE {
            self.free |= 1 << i;
            // SAFETY: i < QUEUE_SIZE (checked for the head, masked for the rest).
            let d = unsafe { addr_of!((*self.mem).desc[i]).read_volatile() };
            if d.flags & DESC_F_NEXT == 0 {
                break;
            }
            i = usize::from(d.next) % QUEUE_SIZE;
        }
        Some((head as u16, elem.len))
    }
}
