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
mod rx;
mod tx;

pub use tx::SharedTx;

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
}

#[cfg(test)]
mod tests;
