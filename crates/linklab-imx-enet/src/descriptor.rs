//! The ENET's enhanced buffer descriptors (32 bytes, little-endian with `ECR[DBSWP]`) and the
//! memory the driver shares with the ENET's DMA: both rings, the transmit buffers and the
//! receive spill buffer ([`EnetMemory`]).
//!
//! A descriptor is eight 32-bit words, read and written volatile (the DMA reads and writes
//! them too). The driver uses five:
//!
//! | word | bytes | receive | transmit |
//! |---|---|---|---|
//! | 0 | 0-3 | length (15:0), flags (31:16): empty, wrap, last, errors | length, flags: ready, wrap, last, append FCS |
//! | 1 | 4-7 | buffer address | buffer address |
//! | 2 | 8-11 | checksum status (15:0), MAC errors and interrupt (31:16) | errors (15:0), interrupt and checksum insertion (31:16) |
//! | 3 | 12-15 | payload checksum (15:0), header length and protocol (31:16) | — |
//! | 4 | 16-19 | "descriptor updated" (31) | the same |
//!
//! Why enhanced and not the legacy 8-byte descriptors: the checksum insertion and the
//! receive checksum status exist only there, and QEMU's `imx.enet` honours both its
//! transmit checksum insertion and `RACC[SHIFT16]` only with enhanced descriptors
//! (`ECR[EN1588]`); every ENET the crate README lists has them (the legacy format is the
//! older FEC's, i.MX25/28/53).

use core::cell::UnsafeCell;

/// Receive descriptors in the ring.
pub const RX_DESCRIPTORS: usize = 8;
/// Transmit descriptors (and transmit buffers).
pub const TX_DESCRIPTORS: usize = 4;
/// Bytes of a transmit buffer and of the spill buffer, and the receive buffer size
/// programmed in `MRBR` (a multiple of 16): a tagged 1518-byte frame, the two bytes
/// `SHIFT16` puts in front and the FCS fit, as do a run's buffers
/// ([`linklab_mac::RUN_STRIDE`]: a 1534-byte slot and the two bytes before it).
pub const BUFFER_LEN: usize = linklab_mac::RUN_STRIDE;

/// Word 0 flag (receive): the descriptor is empty, the ENET may fill it.
pub const RX_EMPTY: u32 = 1 << 31;
/// Word 0 flag (transmit): the descriptor is ready, the ENET may send it.
pub const TX_READY: u32 = 1 << 31;
/// Word 0 flag: the last descriptor of the ring (the ENET goes back to the first).
pub const WRAP: u32 = 1 << 29;
/// Word 0 flag: the last descriptor of a frame.
pub const LAST: u32 = 1 << 27;
/// Word 0 flag (transmit): the ENET appends the FCS.
pub const TX_CRC: u32 = 1 << 26;
/// Word 0 flag (receive): longer than `RCR[MAX_FL]`.
pub const RX_LG: u32 = 1 << 21;
/// Word 0 flag (receive): not a whole number of octets.
pub const RX_NO: u32 = 1 << 20;
/// Word 0 flag (receive): bad FCS.
pub const RX_CR: u32 = 1 << 18;
/// Word 0 flag (receive): the receive FIFO overran.
pub const RX_OV: u32 = 1 << 17;
/// Word 0 flag (receive): truncated at `FTRL`.
pub const RX_TR: u32 = 1 << 16;
/// Word 0: the data length.
pub const LENGTH: u32 = 0xFFFF;

/// Word 2 (receive): a MAC error (typically the FIFO overran).
pub const RX_ME: u32 = 1 << 31;
/// Word 2 (receive): the PHY signalled an error.
pub const RX_PE: u32 = 1 << 26;
/// Word 2 (receive): a collision (half duplex).
pub const RX_CE: u32 = 1 << 25;
/// Word 2 (receive): raise RXF/RXB for this descriptor.
pub const RX_INT: u32 = 1 << 23;
/// Word 2 (receive): the IPv4 header checksum is wrong.
pub const RX_ICE: u32 = 1 << 5;
/// Word 2 (receive): the TCP/UDP/ICMP checksum is wrong.
pub const RX_PCR: u32 = 1 << 4;
/// Word 2 (receive): an IPv6 frame.
pub const RX_IPV6: u32 = 1 << 1;
/// Word 2 (receive): an IPv4 fragment (its payload is not checked).
pub const RX_FRAG: u32 = 1 << 0;
/// Word 2 (transmit): insert the TCP/UDP checksum (the field must be zero).
pub const TX_PINS: u32 = 1 << 28;
/// Word 2 (transmit): one of the transmit errors below happened.
pub const TX_ERROR: u32 = 1 << 15;
/// Word 2 (transmit): every transmit error bit (TXE, UE, EE, FE, LCE, OE, TSE).
pub const TX_ERRORS: u32 = 0xBF00;
/// Word 3 (receive): the protocol the checksum accelerator found (IP's protocol number).
pub const RX_PROTOCOL_SHIFT: u32 = 16;

/// One enhanced buffer descriptor.
#[repr(C, align(32))]
pub struct Descriptor {
    words: [UnsafeCell<u32>; 8],
}

impl Descriptor {
    /// An all-zero descriptor (neither empty nor ready: the ENET leaves it alone).
    pub const fn new() -> Descriptor {
        Descriptor {
            words: [const { UnsafeCell::new(0) }; 8],
        }
    }

    /// Word `i` (0..8), as the DMA last wrote it.
    pub fn read(&self, i: usize) -> u32 {
        match self.words.get(i) {
            // SAFETY: a word of a descriptor this crate owns; volatile, the DMA writes it.
            Some(w) => unsafe { core::ptr::read_volatile(w.get()) },
            None => 0,
        }
    }

    /// Writes word `i` (0..8).
    pub fn write(&self, i: usize, value: u32) {
        if let Some(w) = self.words.get(i) {
            // SAFETY: as `read`.
            unsafe { core::ptr::write_volatile(w.get(), value) }
        }
    }

    /// Hands the descriptor to the ENET: words 1 to 4 (`address`, `control`, 0, 0) first,
    /// then word 0 with `flags_and_length` behind a barrier, so the DMA never sees the
    /// ownership bit before the rest.
    pub fn give(&self, address: u32, control: u32, flags_and_length: u32) {
        self.write(1, address);
        self.write(2, control);
        self.write(3, 0);
        self.write(4, 0);
        dma_barrier();
        self.write(0, flags_and_length);
    }

    /// The ring address of this descriptor (what `RDSR`/`TDSR` take).
    pub fn address(&self) -> u32 {
        dma_address(self.words.as_ptr().cast())
    }
}

// SAFETY: a descriptor is reached by volatile accesses from one half of the driver (each
// half owns its ring) and by the DMA; the halves may run in different contexts (the receive
// half in the interrupt handler), never both on the same descriptor.
unsafe impl Sync for Descriptor {}

impl Default for Descriptor {
    fn default() -> Self {
        Self::new()
    }
}

/// One buffer, aligned for the DMA and for the cache lines of a Cortex-A9 or -M7 (32 bytes;
/// 64 as Linux's fec driver keeps its multi-queue ENETs' buffers).
#[repr(C, align(64))]
pub struct Buffer(pub(crate) UnsafeCell<[u8; BUFFER_LEN]>);

// SAFETY: as for `Descriptor`: each buffer belongs to one half of the driver (a transmit
// buffer to the transmit half, the spill buffer to the receive half) and the DMA.
unsafe impl Sync for Buffer {}

impl Buffer {
    const fn new() -> Buffer {
        Buffer(UnsafeCell::new([0; BUFFER_LEN]))
    }

    /// The buffer's first byte.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.0.get().cast()
    }
}

/// Everything the driver shares with the ENET's DMA: the receive and transmit rings, the
/// transmit buffers and the spill buffer (7.9 KB). The board gives a `'static` one to
/// [`crate::Enet::new`], placed where the DMA reaches it and, on a chip with a data cache,
/// in memory the cache leaves alone (the crate does no cache maintenance: crate README).
#[repr(C, align(64))]
pub struct EnetMemory {
    pub(crate) rx: [Descriptor; RX_DESCRIPTORS],
    pub(crate) tx: [Descriptor; TX_DESCRIPTORS],
    pub(crate) tx_buffers: [Buffer; TX_DESCRIPTORS],
    pub(crate) spill: Buffer,
}

impl EnetMemory {
    /// Zeroed memory (a static lands in `.bss`).
    pub const fn new() -> EnetMemory {
        EnetMemory {
            rx: [const { Descriptor::new() }; RX_DESCRIPTORS],
            tx: [const { Descriptor::new() }; TX_DESCRIPTORS],
            tx_buffers: [const { Buffer::new() }; TX_DESCRIPTORS],
            spill: Buffer::new(),
        }
    }
}

impl Default for EnetMemory {
    fn default() -> Self {
        Self::new()
    }
}

/// The 32-bit bus address of `p`: the ENET's DMA sees the CPU's addresses (no IOMMU on these
/// chips). The host tests keep their DMA memory below 4 GiB so nothing is lost here.
pub fn dma_address(p: *const u8) -> u32 {
    p as usize as u32
}

/// Orders the CPU's writes to descriptors and buffers before what follows (the ownership
/// bit, a doorbell register): `dsb` on Arm, where the DMA is another observer that a `dmb`
/// between CPU accesses does not order; a full fence elsewhere (the host tests).
pub fn dma_barrier() {
    #[cfg(target_arch = "arm")]
    // SAFETY: a barrier instruction; touches no register or memory.
    unsafe {
        core::arch::asm!("dsb sy", options(nostack, preserves_flags))
    };
    #[cfg(not(target_arch = "arm"))]
    core::sync::atomic::fence(core::sync::atomic::Ordering::SeqCst);
}
