//! linklab-virtio-net: a virtio-net device (virtio-mmio) as linklab-mac's PHY, no heap.
//!
//! The queues are driven by the `virtio-drivers` crate's `VirtIONetRaw` (MIT), which needs no
//! `alloc`: its DMA memory comes from a static page pool ([`PoolHal`]). Both the legacy
//! (QEMU 7.2's default for `virt`) and the virtio 1.x interface work; `linklab emu` boots with
//! `-global virtio-mmio.force-legacy=false`, i.e. virtio 1.x, whose 12-byte header the library
//! handles.
//!
//! * RX, in the interrupt handler: [`VirtioNet::on_interrupt`] takes each frame the device
//!   filled into one of the posted receive buffers, copies it (the one copy the path has; a
//!   PIO controller such as the LAN9118 has the same one) into a grant of linklab-mac's RX
//!   queue, commits it and posts the buffer again. A full queue counts `rx_missed_errors`.
//! * TX, in the main loop: [`VirtioNet::transmit`] (linklab-mac's `PhyTx` through
//!   [`crate::SharedTx`]) puts the virtio-net header and the frame into a free transmit buffer.
//!
//! RX and TX share one `VirtIONetRaw`, so the main loop reaches it only with interrupts masked
//! ([`SharedTx`] takes the board's critical section).
#![no_std]

// The logging macros (trace!, debug!, ...) for every module below; see linklab-fmt.
#[macro_use]
extern crate linklab_fmt;
linklab_fmt::exclusive_features!();

use core::cell::UnsafeCell;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub mod capture;

use linklab_mac::{PhyTx, RxProducer, Storage, FRAME_ALIGN};
use virtio_drivers::device::net::VirtIONetRaw;
use virtio_drivers::transport::mmio::{MmioTransport, VirtIOHeader};
use virtio_drivers::transport::{DeviceType, Transport};
use virtio_drivers::{BufferDirection, Hal, PhysAddr, PAGE_SIZE};

/// Pages of DMA memory: two virtqueues of [`QUEUE_SIZE`] need two pages each (legacy layout)
/// or two each (driver and device areas, virtio 1.x).
pub const POOL_PAGES: usize = 4;
/// Descriptors per virtqueue.
pub const QUEUE_SIZE: usize = 8;
/// Receive buffers kept posted.
pub const RX_BUFFERS: usize = 4;
/// Transmit buffers.
pub const TX_BUFFERS: usize = 8;
/// Size of each buffer: the 12-byte header plus a 1514-byte frame, rounded up (room to start
/// a buffer up to 3 bytes in, to keep copies word-aligned, see `RxAlignment`).
pub const BUFFER_LEN: usize = 1536;

#[repr(C, align(4096))]
struct Pages(UnsafeCell<[[u8; PAGE_SIZE]; POOL_PAGES]>);

// SAFETY: pages are handed out at most once each (the bump pointer below), to the device.
unsafe impl Sync for Pages {}

/// In section `.bss.dma_pages`, which a linker script can place first in `.bss` (where the
/// section's own page alignment costs nothing; anywhere else it may leave up to 4 KiB of
/// padding before it).
#[link_section = ".bss.dma_pages"]
static POOL: Pages = Pages(UnsafeCell::new([[0; PAGE_SIZE]; POOL_PAGES]));
static NEXT_PAGE: AtomicUsize = AtomicUsize::new(0);

/// `virtio_drivers::Hal` over a static pool of [`POOL_PAGES`] pages; physical addresses are
/// virtual ones (no MMU on the MCUs this serves). Pages are never given back: the driver
/// lives as long as the firmware.
pub struct PoolHal;

// SAFETY: dma_alloc returns distinct, zeroed, page-aligned pages from a static pool, or panics
// when the pool is exhausted (a configuration error found at the first boot, not input).
unsafe impl Hal for PoolHal {
    fn dma_alloc(pages: usize, _direction: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        let first = NEXT_PAGE.fetch_add(pages, Ordering::AcqRel);
        assert!(first + pages <= POOL_PAGES, "DMA pool exhausted");
        // SAFETY: in bounds (checked above); the pages are handed out once.
        let ptr = unsafe { (POOL.0.get() as *mut u8).add(first * PAGE_SIZE) };
        let ptr = NonNull::new(ptr).expect("static pool is not null");
        (ptr.as_ptr() as usize as PhysAddr, ptr)
    }

    unsafe fn dma_dealloc(_paddr: PhysAddr, _vaddr: NonNull<u8>, _pages: usize) -> i32 {
        0
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, _size: usize) -> NonNull<u8> {
        NonNull::new(paddr as usize as *mut u8).expect("MMIO address is not null")
    }

    unsafe fn share(buffer: NonNull<[u8]>, _direction: BufferDirection) -> PhysAddr {
        buffer.as_ptr() as *mut u8 as usize as PhysAddr
    }

    unsafe fn unshare(_paddr: PhysAddr, _buffer: NonNull<[u8]>, _direction: BufferDirection) {}
}

/// Why the device could not be brought up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum InitError {
    /// No virtio-mmio network device in the probed slots.
    NotFound,
    /// The device refused the driver (feature negotiation, queue setup), or a second
    /// `VirtioNet` was asked for (the buffers are statics, for one device).
    Device,
}

/// Counters of what the driver could not do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DriverCounters {
    /// Frames dropped on transmit: no free buffer in time, or longer than a buffer.
    pub tx_dropped: u64,
    /// Received buffers whose length the device reported wrong (dropped).
    pub rx_bad_length: u64,
}

/// One buffer, aligned for the device.
#[repr(C, align(16))]
struct Buffer([u8; BUFFER_LEN]);

/// The receive and transmit buffers: a static of this crate, like the DMA pool, so that a
/// [`VirtioNet`] is small enough to build on the stack and move (with its buffers inline it
/// was 19 KB, and the board's `main` held that much stack for its whole life).
struct Buffers {
    rx: [Buffer; RX_BUFFERS],
    tx: [Buffer; TX_BUFFERS],
}

struct BufferCell(UnsafeCell<Buffers>);

// SAFETY: handed out once (BUFFERS_TAKEN), to the one VirtioNet.
unsafe impl Sync for BufferCell {}

static BUFFERS: BufferCell = BufferCell(UnsafeCell::new(Buffers {
    rx: [const { Buffer([0; BUFFER_LEN]) }; RX_BUFFERS],
    tx: [const { Buffer([0; BUFFER_LEN]) }; TX_BUFFERS],
}));
static BUFFERS_TAKEN: AtomicBool = AtomicBool::new(false);

/// Keeps the interrupt's copy from a receive buffer into a grant, and the stack's copy of
/// the TCP payload out of it, word-aligned.
///
/// linklab-mac's RX queue (bbqueue's framed ring) puts each frame right after the previous
/// one, so a grant started at any byte offset and `memcpy` ran its misaligned path (2.6
/// instructions per byte on riscv32imac). Here each frame is committed with
/// `RxGrant::commit_padded`, so the next grant starts at 2 mod 4: the IPv4 header (14 bytes
/// in) and a TCP payload (54 bytes in) are then word-aligned. The receive buffers are posted
/// so that the frame the device writes after its header starts at 2 mod 4 too.
#[derive(Clone, Copy, Debug)]
struct RxAlignment {
    /// The virtio-net header's length (12 for virtio 1.x; learned from each completion).
    header: usize,
}

impl Default for RxAlignment {
    fn default() -> Self {
        RxAlignment { header: 12 }
    }
}

impl RxAlignment {
    /// Where to post a receive buffer (buffers are 16-byte aligned) so that the frame after
    /// the header starts at [`FRAME_ALIGN`] mod 4.
    fn buffer_offset(&self) -> usize {
        (FRAME_ALIGN + 4 - self.header % 4) % 4
    }

    /// Copies `frame` into a grant, padded so that the next grant starts at [`FRAME_ALIGN`]
    /// mod 4, and commits it; false (counted missed) if the queue is full. An empty frame is
    /// no transmission.
    fn push<S: Storage>(&mut self, producer: &RxProducer<'_, S>, frame: &[u8]) -> bool {
        if frame.is_empty() {
            return false;
        }
        let Ok(mut grant) = producer.grant() else {
            producer.record_missed();
            return false;
        };
        let buf = grant.buf();
        let len = frame.len().min(buf.len());
        buf[..len].copy_from_slice(&frame[..len]);
        grant.commit_padded(len);
        true
    }
}

/// A virtio-net device with its posted receive buffers and its transmit buffers.
pub struct VirtioNet {
    raw: Raw,
    buffers: &'static mut Buffers,
    rx_token: [Option<u16>; RX_BUFFERS],
    /// Where in each receive buffer it was posted (see [`RxAlignment`]).
    rx_offset: [usize; RX_BUFFERS],
    rx_align: RxAlignment,
    /// (token, offset, bytes submitted) of each transmit buffer in flight: the library
    /// checks that a completion names the same slice.
    tx_token: [Option<(u16, usize, usize)>; TX_BUFFERS],
    irq: u32,
    counters: DriverCounters,
}

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
        let magic = unsafe { core::ptr::read_volatile(s.base as *const u32) };
        let id = unsafe { core::ptr::read_volatile((s.base + 8) as *const u32) };
        magic == MAGIC && id == NET
    })
}

/// The queues of the virtio-mmio network device in `slot`, brought up by `virtio-drivers`.
///
/// # Safety
/// As [`VirtioNet::new`].
unsafe fn open(slot: Slot) -> Result<Raw, InitError> {
    let header = NonNull::new(slot.base as *mut VirtIOHeader).ok_or(InitError::NotFound)?;
    // SAFETY: forwarded from the caller; a virtio-mmio slot is 0x200 bytes.
    let transport =
        unsafe { MmioTransport::new(header, 0x200) }.map_err(|_| InitError::NotFound)?;
    if transport.device_type() != DeviceType::Network {
        return Err(InitError::NotFound);
    }
    VirtIONetRaw::new(transport).map_err(|_| {
        warn!("virtio-net: the device refused the driver");
        InitError::Device
    })
}

/// `virtio-drivers`' raw network device over our DMA pool and MMIO transport.
type Raw = VirtIONetRaw<PoolHal, MmioTransport<'static>, QUEUE_SIZE>;

impl VirtioNet {
    /// Brings up the device in `slot` and posts the receive buffers.
    ///
    /// # Safety
    /// `slot` must be a virtio-mmio network device (see [`probe`]) not used by anything
    /// else, and this must be called once (the DMA pool is static).
    pub unsafe fn new(slot: Slot) -> Result<VirtioNet, InitError> {
        // SAFETY: forwarded from the caller.
        let raw = unsafe { open(slot) }?;
        if BUFFERS_TAKEN.swap(true, Ordering::AcqRel) {
            return Err(InitError::Device);
        }
        // SAFETY: BUFFERS_TAKEN makes this the only reference, created once.
        let buffers = unsafe { &mut *BUFFERS.0.get() };
        info!("virtio-net: up at {:#x}, irq {}", slot.base, slot.irq);
        Ok(VirtioNet {
            raw,
            buffers,
            rx_token: [None; RX_BUFFERS],
            rx_offset: [0; RX_BUFFERS],
            rx_align: RxAlignment::default(),
            tx_token: [None; TX_BUFFERS],
            irq: slot.irq,
            counters: DriverCounters::default(),
        })
    }

    /// Posts every receive buffer and enables the device's interrupts. Call once the value
    /// has reached its final place in memory (the device keeps the buffers' addresses).
    pub fn start(&mut self) -> Result<(), InitError> {
        for i in 0..RX_BUFFERS {
            self.post_rx(i)?;
        }
        self.raw.enable_interrupts();
        Ok(())
    }

    fn post_rx(&mut self, i: usize) -> Result<(), InitError> {
        let offset = self.rx_align.buffer_offset();
        // SAFETY: the buffer stays untouched until the device gives it back (receive_complete).
        let token = unsafe { self.raw.receive_begin(&mut self.buffers.rx[i].0[offset..]) }
            .map_err(|_| InitError::Device)?;
        self.rx_token[i] = Some(token);
        self.rx_offset[i] = offset;
        Ok(())
    }

    /// The interrupt this device raises.
    pub fn irq(&self) -> u32 {
        self.irq
    }

    /// The device's MAC address (from its configuration space).
    pub fn mac_address(&self) -> [u8; 6] {
        self.raw.mac_address()
    }

    /// What the driver dropped.
    pub fn counters(&self) -> DriverCounters {
        self.counters
    }

    /// The interrupt handler's work: acknowledges the interrupt and moves every received
    /// frame into a grant of `producer` (or counts it missed), re-posting each buffer.
    /// Returns the frames committed.
    pub fn on_interrupt<S: Storage>(&mut self, producer: &RxProducer<'_, S>) -> usize {
        let _ = self.raw.ack_interrupt();
        let mut committed = 0;
        while let Some(token) = self.raw.poll_receive() {
            let Some(i) = self.rx_token.iter().position(|t| *t == Some(token)) else {
                // Not one of ours: nothing sane to do but stop.
                break;
            };
            self.rx_token[i] = None;
            let offset = self.rx_offset[i];
            // SAFETY: the same buffer slice that was posted with this token.
            let got = unsafe {
                self.raw
                    .receive_complete(token, &mut self.buffers.rx[i].0[offset..])
            };
            match got {
                Ok((hdr, len)) if offset + hdr + len <= BUFFER_LEN => {
                    self.rx_align.header = hdr;
                    let frame = &self.buffers.rx[i].0[offset + hdr..offset + hdr + len];
                    if self.rx_align.push(producer, frame) {
                        committed += 1;
                    }
                }
                _ => {
                    debug!("virtio-net: RX buffer with a bad length dropped");
                    self.counters.rx_bad_length += 1
                }
            }
            if self.post_rx(i).is_err() {
                break;
            }
        }
        committed
    }

    /// Reclaims the transmit buffers the device has finished with.
    fn reclaim_tx(&mut self) {
        while let Some(token) = self.raw.poll_transmit() {
            let Some(i) = self
                .tx_token
                .iter()
                .position(|t| matches!(t, Some((tok, _, _)) if *tok == token))
            else {
                break;
            };
            let (at, len) = self.tx_token[i].map_or((0, 0), |(_, at, len)| (at, len));
            // SAFETY: the same slice that was submitted with this token.
            if unsafe {
                self.raw
                    .transmit_complete(token, &self.buffers.tx[i].0[at..at + len])
            }
            .is_err()
            {
                break;
            }
            self.tx_token[i] = None;
        }
    }

    /// True if a transmit buffer is free now (after reclaiming what the device finished).
    pub fn tx_ready(&mut self) -> bool {
        self.reclaim_tx();
        self.tx_token.iter().any(Option::is_none)
    }

    /// Sends one plain Ethernet frame (the device adds nothing on the wire but what virtio
    /// says): waits a bounded time for a free buffer, else drops and counts it.
    pub fn transmit(&mut self, frame: &[u8]) {
        const WAIT_ROUNDS: usize = 1;
        let mut free = None;
        for _ in 0..WAIT_ROUNDS {
            self.reclaim_tx();
            free = self.tx_token.iter().position(Option::is_none);
            if free.is_some() {
                break;
            }
        }
        let Some(i) = free else {
            self.counters.tx_dropped += 1;
            return;
        };
        // Start the header where the frame after it lands at the same offset mod 4 as
        // `frame` (buffers are 16-byte aligned, virtio 1.x's header 12 bytes): the copy is
        // then word by word, not memcpy's misaligned path.
        let at = (frame.as_ptr() as usize + 4 - self.rx_align.header % 4) % 4;
        let buf = &mut self.buffers.tx[i].0[at..];
        let Ok(hdr) = self.raw.fill_buffer_header(buf) else {
            self.counters.tx_dropped += 1;
            return;
        };
        let Some(dst) = buf.get_mut(hdr..hdr + frame.len()) else {
            self.counters.tx_dropped += 1;
            return;
        };
        dst.copy_from_slice(frame);
        // SAFETY: the buffer is not touched again until transmit_complete reclaims it.
        let len = hdr + frame.len();
        match unsafe { self.raw.transmit_begin(&self.buffers.tx[i].0[at..at + len]) } {
            Ok(token) => self.tx_token[i] = Some((token, at, len)),
            Err(_) => self.counters.tx_dropped += 1,
        }
    }
}

/// The main loop's transmit side of a [`VirtioNet`] that the interrupt handler also uses:
/// every access runs inside the board's critical section `cs` (interrupts masked).
pub struct SharedTx<F> {
    with_device: F,
}

impl<F: FnMut(&mut dyn FnMut(&mut VirtioNet))> SharedTx<F> {
    /// `with_device` must run its argument on the device with interrupts masked.
    pub fn new(with_device: F) -> Self {
        SharedTx { with_device }
    }
}

impl<F: FnMut(&mut dyn FnMut(&mut VirtioNet))> PhyTx for SharedTx<F> {
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
}
