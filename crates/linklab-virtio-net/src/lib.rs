//! linklab-virtio-net: a virtio-net device (virtio-mmio, virtio 1.x) as linklab-mac's PHY,
//! no heap, with our own split virtqueues ([`queue`]) of 8 entries (224 bytes each).
//!
//! Written here rather than over `virtio-drivers`' `VirtIONetRaw` because of what that
//! measured: its DMA memory came in whole 4 KiB pages (16 KB of RAM for two queues that use
//! 440 bytes), it negotiates a fixed feature set (no `VIRTIO_NET_F_CSUM` or
//! `VIRTIO_NET_F_GUEST_CSUM`), and it receives into buffers of its own, from which the
//! interrupt copied every frame into the MAC's queue (1.4 instructions per byte on
//! riscv32imac).
//!
//! * RX, in the interrupt handler ([`VirtioNet::on_interrupt`]): the device writes each
//!   frame straight into linklab-mac's RX queue. Up to [`RX_POSTED`] buffers are posted at
//!   once, the buffers of one `RxRun` (one grant cut into frame buffers), each a chain of two
//!   descriptors: a 12-byte virtio-net header into the driver's memory and the frame into
//!   the run. The interrupt commits each frame, oldest first, with a tag
//!   (`RxRun::commit_first_tagged`, for `RxFormat::Tagged`) saying what the device knows of
//!   the frame's checksums: with `VIRTIO_NET_F_GUEST_CSUM`, a frame the host validated
//!   (`DATA_VALID`) or whose checksum it leaves partial because the frame never crossed a
//!   wire (`NEEDS_CSUM`) is vouched for, so the MAC does not sum it again; the others (a
//!   frame from a raw socket, say) the MAC verifies, dropping and counting bad ones. The
//!   run keeps the buffers behind it in place and grows behind them where the ring has
//!   room; the new ones are posted. With one buffer posted (bbqueue lends one grant at a
//!   time), QEMU held the next frame until the interrupt posted another and read no more
//!   from its TAP until its main loop's next turn, in real time: 0.30-0.37 main-loop passes
//!   per received frame where a window's burst takes 0.17. When the queue is full, the
//!   driver's spill buffer is posted instead, and a frame that lands there is copied into a
//!   grant if one has come free by then, else dropped and counted (`rx_missed_errors`), as
//!   a NIC whose DMA ring ran dry.
//! * TX, in the main loop (linklab-mac's `PhyTx` through [`SharedTx`]): the MAC builds
//!   each frame straight in one of [`TX_BUFFERS`] driver buffers, behind room for the
//!   virtio-net header ([`VirtioNet::tx_buffer`], `PhyTx::tx_buffer`), so nothing is copied;
//!   a frame handed over in the MAC's own buffer ([`VirtioNet::transmit`]) is copied
//!   (word-aligned). With `VIRTIO_NET_F_CSUM` the header asks the device to complete the
//!   TCP or UDP checksum, and the MAC writes only the pseudo-header sum
//!   (`PhyTx::completes_l4_checksums`). Transmit completions raise no interrupt: buffers
//!   are reclaimed when the next frame needs one.
//!
//! RX and TX share one device, so the main loop reaches it only with interrupts masked
//! ([`SharedTx`] takes the board's critical section).
//!
//! # Features
#![doc = document_features::document_features!()]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The logging macros (trace!, debug!, ...) for every module below; see linklab-fmt.
#[macro_use]
extern crate linklab_fmt;
linklab_fmt::exclusive_features!();

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicBool, Ordering};

pub mod capture;
pub mod mmio;
pub mod queue;

use linklab_mac::checksum::l4_checksum_field;
use linklab_mac::{PhyTx, RxChecksums, RxProducer, RxRun, Storage, RUN_SLOT_LEN};

use mmio::{feature, Mmio, Registers};
use queue::{Buf, QueueMemory, Virtqueue, QUEUE_SIZE};

/// Transmit buffers (a frame each): four; six with feature `deep-tx` (a frame for every
/// segment a socket keeps in flight, and one for an ACK or a control segment); two with
/// feature `lean-tx` alone (images that keep at most two segments in flight).
pub const TX_BUFFERS: usize = if cfg!(feature = "deep-tx") {
    6
} else if cfg!(feature = "lean-tx") {
    2
} else {
    4
};
/// Receive buffers posted at once: chains of two descriptors fill the queue.
pub const RX_POSTED: usize = QUEUE_SIZE / 2;
/// Size of a transmit buffer and of the spill buffer: the 12-byte header plus a 1514-byte
/// frame (1518 with a VLAN tag), rounded up, with room to start 0–3 bytes in (word-aligned
/// copies).
pub const BUFFER_LEN: usize = 1536;
/// The virtio 1.x network header: flags, GSO type, header length, GSO size, checksum start
/// and offset, buffer count.
pub const HEADER_LEN: usize = 12;

/// Header flag: the checksum from `csum_start` on is to be completed.
const HDR_F_NEEDS_CSUM: u8 = 1;
/// Header flag: the host validated the frame's checksums.
const HDR_F_DATA_VALID: u8 = 2;

/// The features the network device is asked for.
const WANTED: u64 = feature::VERSION_1 | feature::MAC | feature::CSUM | feature::GUEST_CSUM;

/// Queue indices of a network device.
const RX_QUEUE: u32 = 0;
const TX_QUEUE: u32 = 1;

/// Why the device could not be brought up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum InitError {
    /// No virtio-mmio network device in the probed slots.
    NotFound,
    /// The device refused the driver (the legacy interface, feature negotiation, queue
    /// setup), or a second `VirtioNet` was asked for (its memory is a static, for one).
    Device,
}

/// Counters of what the driver could not do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DriverCounters {
    /// Frames dropped on transmit: no free buffer, or longer than a buffer.
    pub tx_dropped: u64,
    /// Received buffers whose length the device reported wrong: dropped, or, with buffers
    /// posted behind (which must stay where they are), passed on empty, which the MAC then
    /// also counts (`rx_short_length_errors`).
    pub rx_bad_length: u64,
    /// Frames that landed in the spill buffer (the RX queue had no room when it was
    /// posted): copied into a grant if one had come free, else dropped (and counted
    /// `rx_missed_errors` in the MAC's queue).
    pub rx_spilled: u64,
}

/// The buffers of a [`NicMemory`], field by field. What the device writes (the receive
/// headers, the spill buffer) is reached only through raw pointers, never a reference: a
/// reference taken between the device's writes would, under the aliasing rules, take back
/// the permission to write the driver lent it with the buffer's address (Miri, Stacked
/// Borrows). The queues' own memory is reached only through `rx` and `tx`, so nothing here
/// covers it (a reference to the whole `NicMemory` moved into the driver invalidated the
/// queues' pointers, Miri's first finding). The transmit buffers, which the device only
/// reads, are the driver's to write by reference.
struct Buffers {
    rx_headers: *mut Header,
    spill: *mut u8,
    tx: &'static mut [Buffer; TX_BUFFERS],
}

/// One buffer, aligned for the device.
#[repr(C, align(16))]
struct Buffer([u8; BUFFER_LEN]);

/// The receive header, aligned for the device.
#[repr(C, align(16))]
struct Header([u8; HEADER_LEN]);

/// Everything the driver shares with the device: both queues, a receive header per posted
/// buffer, the spill buffer, the transmit buffers (8 KB with four transmit buffers, 5 KB with
/// `lean-tx`, 11 KB with `deep-tx`). [`VirtioNet::new`] takes the crate's static once;
/// [`VirtioNet::with_memory`] is handed one.
pub struct NicMemory {
    rx_queue: QueueMemory,
    tx_queue: QueueMemory,
    rx_headers: [Header; RX_POSTED],
    spill: Buffer,
    tx: [Buffer; TX_BUFFERS],
}

impl NicMemory {
    /// Zeroed memory (a static lands in `.bss`).
    pub const fn new() -> Self {
        NicMemory {
            rx_queue: QueueMemory::new(),
            tx_queue: QueueMemory::new(),
            rx_headers: [const { Header([0; HEADER_LEN]) }; RX_POSTED],
            spill: Buffer([0; BUFFER_LEN]),
            tx: [const { Buffer([0; BUFFER_LEN]) }; TX_BUFFERS],
        }
    }
}

impl Default for NicMemory {
    fn default() -> Self {
        Self::new()
    }
}

struct MemoryCell(UnsafeCell<NicMemory>);

// SAFETY: handed out once (MEMORY_TAKEN), to the one VirtioNet.
unsafe impl Sync for MemoryCell {}

static MEMORY: MemoryCell = MemoryCell(UnsafeCell::new(NicMemory::new()));
static MEMORY_TAKEN: AtomicBool = AtomicBool::new(false);

/// Where a virtio-mmio device sits: base address and the interrupt it raises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Slot {
    /// MMIO base address.
    pub base: usize,
    /// Interrupt number at the platform's interrupt controller.
    pub irq: u32,
}

/// Finds the first virtio-mmio network device among `slots` (by magic and device id).
///
/// # Safety
/// Every `slot.base` must be a readable virtio-mmio region (or unused MMIO that reads 0).
pub unsafe fn probe(slots: impl IntoIterator<Item = Slot>) -> Option<Slot> {
    const MAGIC: u32 = 0x7472_6976; // "virt"
    const NET: u32 = 1;
    slots.into_iter().find(|s| {
        // SAFETY: the caller vouches for the region.
        let regs = unsafe { Mmio::new(s.base) };
        regs.read(mmio::reg::MAGIC) == MAGIC && regs.read(mmio::reg::DEVICE_ID) == NET
    })
}

/// A virtio-net device: its queues, the receive buffers posted (a run of the RX queue, or
/// the spill buffer) and its transmit buffers. `S` is the RX queue's storage; `R` how its
/// registers are reached.
pub struct VirtioNet<S: Storage + 'static, R: Registers = Mmio> {
    regs: R,
    irq: u32,
    features: u64,
    producer: RxProducer<'static, S>,
    rx: Virtqueue,
    tx: Virtqueue,
    /// The rest of [`NicMemory`], field by field (see [`Buffers`]).
    mem: Buffers,
    /// The run whose first `posted` buffers are posted, one chain each, in order (None: no
    /// buffer of the RX queue is posted).
    run: Option<RxRun<'static, S>>,
    /// True while the spill buffer is posted (alone).
    spill_posted: bool,
    /// Chains posted and not yet used.
    posted: usize,
    /// Chains used since start: the oldest posted chain's number (its header is
    /// `rx_headers[number % RX_POSTED]`).
    used: usize,
    /// The head descriptor of each posted chain, at its number % RX_POSTED.
    heads: [u16; RX_POSTED],
    /// The head descriptor of each transmit buffer in flight.
    tx_heads: [Option<u16>; TX_BUFFERS],
    /// The transmit buffer lent to the MAC ([`VirtioNet::tx_buffer`]), not yet sent.
    lent: Option<usize>,
    counters: DriverCounters,
}

impl<S: Storage + 'static> VirtioNet<S, Mmio> {
    /// Brings up the device in `slot` with the crate's static memory; its frames go into
    /// `producer`'s queue. [`VirtioNet::start`] posts the first receive buffer.
    ///
    /// # Safety
    /// `slot` must be a virtio-mmio network device (see [`probe`]) not used by anything
    /// else.
    pub unsafe fn new(slot: Slot, producer: RxProducer<'static, S>) -> Result<Self, InitError> {
        if MEMORY_TAKEN.swap(true, Ordering::AcqRel) {
            return Err(InitError::Device);
        }
        // SAFETY: MEMORY_TAKEN makes this the only reference, created once.
        let mem = unsafe { &mut *MEMORY.0.get() };
        // SAFETY: forwarded from the caller.
        let regs = unsafe { Mmio::new(slot.base) };
        let dev = Self::with_memory(regs, slot.irq, producer, mem)?;
        info!("virtio-net: up at {:#x}, irq {}", slot.base, slot.irq);
        Ok(dev)
    }
}

impl<S: Storage + 'static, R: Registers> VirtioNet<S, R> {
    /// Brings up the network device behind `regs` (raising interrupt `irq`) over `mem`.
    pub fn with_memory(
        regs: R,
        irq: u32,
        producer: RxProducer<'static, S>,
        mem: &'static mut NicMemory,
    ) -> Result<Self, InitError> {
        let features = mmio::negotiate(&regs, WANTED)?;
        let NicMemory {
            rx_queue,
            tx_queue,
            rx_headers,
            spill,
            tx: tx_buffers,
        } = mem;
        // SAFETY: each queue's memory is its own 'static field, reached only through that
        // queue from now on (its reference is consumed here).
        let (rx, mut tx) = unsafe {
            (
                Virtqueue::new(core::ptr::from_mut(rx_queue)),
                Virtqueue::new(core::ptr::from_mut(tx_queue)),
            )
        };
        // Transmit buffers are reclaimed when needed, not on an interrupt.
        tx.set_interrupts(false);
        mmio::setup_queue(&regs, RX_QUEUE, QUEUE_SIZE, rx.areas())?;
        mmio::setup_queue(&regs, TX_QUEUE, QUEUE_SIZE, tx.areas())?;
        mmio::driver_ok(&regs);
        Ok(VirtioNet {
            regs,
            irq,
            features,
            producer,
            rx,
            tx,
            mem: Buffers {
                rx_headers: core::ptr::from_mut(rx_headers).cast(),
                spill: core::ptr::from_mut(spill).cast(),
                tx: tx_buffers,
            },
            run: None,
            spill_posted: false,
            posted: 0,
            used: 0,
            heads: [0; RX_POSTED],
            tx_heads: [None; TX_BUFFERS],
            lent: None,
            counters: DriverCounters::default(),
        })
    }

    /// Posts the first receive buffer. Call once the value has reached its final place
    /// (the device keeps the addresses of what is posted).
    pub fn start(&mut self) -> Result<(), InitError> {
        self.post_rx();
        if self.posted == 0 {
            return Err(InitError::Device);
        }
        Ok(())
    }

    /// The interrupt this device raises.
    pub fn irq(&self) -> u32 {
        self.irq
    }

    /// The device's MAC address (from its configuration space; zero without
    /// `VIRTIO_NET_F_MAC`).
    pub fn mac_address(&self) -> [u8; 6] {
        if self.features & feature::MAC == 0 {
            return [0; 6];
        }
        mmio::mac_address(&self.regs)
    }

    /// The features negotiated (virtio feature bits, [`mmio::feature`]).
    pub fn features(&self) -> u64 {
        self.features
    }

    /// What the driver dropped or spilled.
    pub fn counters(&self) -> DriverCounters {
        self.counters
    }

    /// True if the device completes the TCP/UDP checksums of what is sent
    /// (`VIRTIO_NET_F_CSUM`): the MAC then writes only their pseudo-header sums.
    pub fn completes_l4_checksums(&self) -> bool {
        self.features & feature::CSUM != 0
    }

    /// Posts the run's buffers that are not posted yet, taking a run if there is none; the
    /// spill buffer when the queue has no room and nothing is posted.
    fn post_rx(&mut self) {
        if self.spill_posted {
            return;
        }
        if self.run.is_none() && self.posted == 0 {
            self.run = self.producer.grant_run().ok();
            if self.run.is_none() {
                let spill = Buf {
                    addr: self.mem.spill as usize,
                    len: BUFFER_LEN,
                    device_writes: true,
                };
                self.spill_posted = self.post_chain(spill);
                self.notify_rx();
                return;
            }
        }
        let mut added = false;
        while let Some(run) = self.run.as_mut() {
            let slot = run.slot(self.posted);
            if slot.is_empty() {
                break;
            }
            let frame = Buf {
                addr: slot.as_mut_ptr() as usize,
                len: slot.len(),
                device_writes: true,
            };
            if !self.post_chain(frame) {
                break; // Cannot happen: RX_POSTED chains of two fill the queue exactly.
            }
            added = true;
        }
        if added {
            self.notify_rx();
        }
    }

    /// Offers `frame` behind the next chain's header; true if the queue took it.
    fn post_chain(&mut self, frame: Buf) -> bool {
        let number = self.used.wrapping_add(self.posted) % RX_POSTED;
        let header = Buf {
            addr: self.header(number) as usize,
            len: HEADER_LEN,
            device_writes: true,
        };
        match self.rx.add(&[header, frame]) {
            Some(head) => {
                self.heads[number] = head;
                self.posted += 1;
                true
            }
            None => false,
        }
    }

    /// Receive header `number` (taken modulo [`RX_POSTED`]): its first byte's address.
    fn header(&self, number: usize) -> *mut u8 {
        self.mem.rx_headers.wrapping_add(number % RX_POSTED).cast()
    }

    /// Tells the device the receive queue has new buffers.
    fn notify_rx(&mut self) {
        // Always notified, whatever the device's no-notify flag says: a missed notification
        // with nothing else posted stops receiving for good. And one can be missed under
        // QEMU: on a single-vCPU guest TCG drops our fence, so the flag read may pass the
        // index store while the device thread re-enables notifications and re-reads the
        // index, each side seeing the other's old value (seen after UDP floods: the device's
        // available index one behind ours, notifications on, no interrupt; a probe run in
        // ~30). A notification is a register write per interrupt.
        self.regs.write(mmio::reg::QUEUE_NOTIFY, RX_QUEUE);
    }

    /// What receive header `number` says of its frame's checksums.
    fn rx_checksums(&self, number: usize) -> RxChecksums {
        // Volatile: the device wrote it.
        // SAFETY: the first byte of receive header `number` of our 'static memory (see
        // `header`), which the device finished writing (its chain was used).
        let flags = unsafe { core::ptr::read_volatile(self.header(number)) };
        if self.features & feature::GUEST_CSUM != 0
            && flags & (HDR_F_NEEDS_CSUM | HDR_F_DATA_VALID) != 0
        {
            RxChecksums::Valid
        } else {
            RxChecksums::Unchecked
        }
    }

    /// The interrupt handler's work: acknowledges the interrupt, commits every frame the
    /// device wrote, oldest first (from the run, or from the spill buffer into a grant if
    /// one is free now, else counted missed), posts what has room, and looks again: QEMU
    /// hands over a frame it held as the notification is written, and taking it here costs
    /// less than another interrupt. Returns the frames committed.
    pub fn on_interrupt(&mut self) -> usize {
        mmio::ack_interrupt(&self.regs);
        let mut committed = 0;
        loop {
            let mut took = false;
            while let Some((head, written)) = self.rx.pop_used() {
                let number = self.used % RX_POSTED;
                if self.posted == 0 || head != self.heads[number] {
                    // Not the chain posted first: the device is broken; stop receiving.
                    return committed;
                }
                took = true;
                self.used = self.used.wrapping_add(1);
                self.posted -= 1;
                let len = (written as usize).saturating_sub(HEADER_LEN);
                if self.take_frame(len, number) {
                    committed += 1;
                }
            }
            if !took {
                return committed;
            }
            self.post_rx();
        }
    }

    /// Commits the frame of `len` bytes the device wrote into the oldest posted chain
    /// (header `number`): from the run, or copied from the spill buffer. True if committed.
    fn take_frame(&mut self, len: usize, number: usize) -> bool {
        let checksums = self.rx_checksums(number);
        if self.spill_posted {
            self.spill_posted = false;
            if (1..=BUFFER_LEN).contains(&len) {
                self.counters.rx_spilled += 1;
                return self.commit_spilled(len, checksums);
            }
        } else if let Some(run) = self.run.as_mut() {
            if (1..=RUN_SLOT_LEN).contains(&len) {
                if !run.commit_first_tagged(len, checksums, self.posted, RX_POSTED) {
                    self.run = None;
                }
                return true;
            }
            // With buffers behind (the device's), pass this one on empty (the MAC counts it
            // short) to keep them where they are; else give it back.
            if self.posted == 0
                || !run.commit_first_tagged(0, RxChecksums::Unchecked, self.posted, RX_POSTED)
            {
                self.run = None;
            }
        }
        debug!("virtio-net: RX buffer with a bad length dropped");
        self.counters.rx_bad_length += 1;
        false
    }

    /// Copies the frame in the spill buffer into a grant, if one is free; else counts it
    /// missed.
    fn commit_spilled(&mut self, len: usize, checksums: RxChecksums) -> bool {
        let Ok(mut grant) = self.producer.grant() else {
            self.producer.record_missed();
            return false;
        };
        let buf = grant.buf();
        let n = len.min(buf.len()).min(BUFFER_LEN);
        // SAFETY: the spill buffer is BUFFER_LEN bytes of our 'static memory, which the device
        // finished writing (its chain was used) and nothing else references; `buf` is the
        // grant's, elsewhere.
        unsafe { core::ptr::copy_nonoverlapping(self.mem.spill, buf.as_mut_ptr(), n) };
        grant.commit_tagged(n, checksums);
        true
    }

    /// Reclaims the transmit buffers the device has finished with.
    fn reclaim_tx(&mut self) {
        while let Some((head, _)) = self.tx.pop_used() {
            if let Some(slot) = self.tx_heads.iter_mut().find(|h| **h == Some(head)) {
                *slot = None;
            }
        }
    }

    /// A transmit buffer neither in flight nor lent, after reclaiming what the device
    /// finished.
    fn free_tx(&mut self) -> Option<usize> {
        self.reclaim_tx();
        let lent = self.lent;
        (0..TX_BUFFERS).find(|&i| self.tx_heads[i].is_none() && lent != Some(i))
    }

    /// True if a transmit buffer is free now (after reclaiming what the device finished).
    pub fn tx_ready(&mut self) -> bool {
        self.free_tx().is_some()
    }

    /// Lends a free transmit buffer's frame area (`len` bytes, starting at
    /// `linklab_mac::FRAME_ALIGN` mod 4, behind room for the header) for the MAC to build
    /// the next frame in place ([`VirtioNet::transmit_buffer`] sends it): no copy. None
    /// when no buffer is free or `len` does not fit.
    pub fn tx_buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        if self.lent.is_some() || LENT_AT + HEADER_LEN + len > BUFFER_LEN {
            return None;
        }
        let i = self.free_tx()?;
        self.lent = Some(i);
        Some(&mut self.mem.tx[i].0[LENT_AT + HEADER_LEN..LENT_AT + HEADER_LEN + len])
    }

    /// Sends the first `len` bytes of the frame area [`VirtioNet::tx_buffer`] lent.
    pub fn transmit_buffer(&mut self, len: usize) {
        let Some(i) = self.lent.take() else {
            return;
        };
        if LENT_AT + HEADER_LEN + len > BUFFER_LEN {
            self.counters.tx_dropped += 1;
            return;
        }
        self.send_slot(i, LENT_AT, len);
    }

    /// Sends one plain Ethernet frame: copied behind its header into a free transmit
    /// buffer, or dropped and counted when none is free.
    pub fn transmit(&mut self, frame: &[u8]) {
        let Some(i) = self.free_tx() else {
            self.counters.tx_dropped += 1;
            return;
        };
        // Start the header where the frame after it lands at the same offset mod 4 as
        // `frame` (buffers are 16-byte aligned): the copy is then word by word.
        let at = (frame.as_ptr() as usize + 4 - HEADER_LEN % 4) % 4;
        let Some(dst) = self.mem.tx[i]
            .0
            .get_mut(at + HEADER_LEN..at + HEADER_LEN + frame.len())
        else {
            self.counters.tx_dropped += 1;
            return;
        };
        dst.copy_from_slice(frame);
        self.send_slot(i, at, frame.len());
    }

    /// Offers transmit buffer `i` to the device: its header at `at` (with
    /// `VIRTIO_NET_F_CSUM`, asking the device to complete the TCP or UDP checksum), the
    /// `len`-byte frame behind it.
    fn send_slot(&mut self, i: usize, at: usize, len: usize) {
        let buf = &mut self.mem.tx[i].0[at..at + HEADER_LEN + len];
        let mut header = [0u8; HEADER_LEN];
        if self.features & feature::CSUM != 0 {
            if let Some((start, offset)) = l4_checksum_field(&buf[HEADER_LEN..]) {
                header[0] = HDR_F_NEEDS_CSUM;
                header[6..8].copy_from_slice(&(start as u16).to_le_bytes());
                header[8..10].copy_from_slice(&(offset as u16).to_le_bytes());
            }
        }
        buf[..HEADER_LEN].copy_from_slice(&header);
        let chain = [Buf {
            addr: buf.as_ptr() as usize,
            len: buf.len(),
            device_writes: false,
        }];
        match self.tx.add(&chain) {
            Some(head) => {
                self.tx_heads[i] = Some(head);
                if self.tx.needs_notify() {
                    self.regs.write(mmio::reg::QUEUE_NOTIFY, TX_QUEUE);
                }
            }
            None => self.counters.tx_dropped += 1,
        }
    }
}

/// Where in a transmit buffer a lent frame's header starts: the frame behind it then
/// starts at `linklab_mac::FRAME_ALIGN` mod 4 (buffers are 16-byte aligned), as the MAC's
/// own buffer does, so the stack's copies into it are word-aligned.
const LENT_AT: usize = (linklab_mac::FRAME_ALIGN + 4 - HEADER_LEN % 4) % 4;

/// The main loop's transmit side of a [`VirtioNet`] that the interrupt handler also uses:
/// every access runs inside the board's critical section `with_device` (interrupts
/// masked).
pub struct SharedTx<S: Storage + 'static, F> {
    with_device: F,
    storage: PhantomData<S>,
}

impl<S: Storage + 'static, F: FnMut(&mut dyn FnMut(&mut VirtioNet<S>))> SharedTx<S, F> {
    /// `with_device` must run its argument on the device with interrupts masked.
    pub fn new(with_device: F) -> Self {
        SharedTx {
            with_device,
            storage: PhantomData,
        }
    }
}

impl<S: Storage + 'static, F: FnMut(&mut dyn FnMut(&mut VirtioNet<S>))> PhyTx for SharedTx<S, F> {
    fn transmit(&mut self, wire: &[u8]) {
        (self.with_device)(&mut |dev| dev.transmit(wire));
    }

    fn dropped(&mut self) -> u64 {
        let mut n = 0;
        (self.with_device)(&mut |dev| n = dev.counters().tx_dropped);
        n
    }

    fn ready(&mut self) -> bool {
        let mut free = false;
        (self.with_device)(&mut |dev| free = dev.tx_ready());
        free
    }

    fn completes_l4_checksums(&mut self) -> bool {
        let mut on = false;
        (self.with_device)(&mut |dev| on = dev.completes_l4_checksums());
        on
    }

    fn tx_buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        let mut lent = None;
        (self.with_device)(&mut |dev| {
            lent = dev.tx_buffer(len).map(|b| (b.as_mut_ptr(), b.len()));
        });
        // SAFETY: the transmit buffers are the main loop's alone (the interrupt handler
        // touches only the receive queue), and the driver leaves a lent one untouched until
        // transmit_buffer; the slice borrows `self`, so no other call on it comes first.
        lent.map(|(p, n)| unsafe { core::slice::from_raw_parts_mut(p, n) })
    }

    fn transmit_buffer(&mut self, len: usize) {
        (self.with_device)(&mut |dev| dev.transmit_buffer(len));
    }
}

#[cfg(test)]
mod tests;
