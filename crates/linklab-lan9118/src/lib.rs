//! linklab-lan9118: a no_std driver for the SMSC LAN9118 family (the LAN9220 of Arm's MPS2
//! boards, QEMU's `lan9118`), written from the controller's register map, whose receive
//! interrupt moves each frame from the controller's RX data FIFO straight into a grant of
//! linklab-mac's RX queue: the one copy on the path is the PIO read itself, and the
//! frame's IPv4/TCP/UDP checksums are summed during it.
//!
//! * [`Lan9118::init`]: soft reset, chip check, MAC address, receiver and transmitter on, an
//!   RX data offset of [`RX_DATA_OFFSET`] bytes (so the IPv4 header and every later FIFO word
//!   land on a word of the grant), the RX status FIFO level interrupt (one frame is enough)
//!   on an active-high push-pull line.
//! * [`Lan9118Rx::on_interrupt`] (interrupt handler): for every frame in the RX status FIFO,
//!   grant, read the frame into the grant (eight words per load/store-multiple on an Arm
//!   core, summing them as they pass: `fifo`), commit it tagged with what the sum says of its
//!   checksums ([`RX_FORMAT`]: `RxFormat::Tagged`; right ones are vouched for, so neither
//!   the MAC nor smoltcp sums the frame again; everything else the MAC verifies, dropping
//!   and counting bad ones). The controller checks the FCS itself and flags bad frames in
//!   their status; by default the driver commits frames without their FCS and drops flagged
//!   ones (counted in [`RxCounters::flagged`]). QEMU's model appends a CRC that is not the
//!   Ethernet FCS (zlib's crc32 seeded with !0, byte-swapped), so the MAC cannot check it
//!   there; [`Lan9118Rx::set_keep_fcs`] passes the FCS on, untagged, for silicon, so the MAC
//!   checks it on the consumer side. A full queue drains the frame from the controller and
//!   counts `rx_missed_errors`.
//! * [`Lan9118Tx`] (main loop): `linklab_mac::PhyTx`; writes TX command A/B and the frame
//!   into the TX data FIFO from the word that holds its first byte (command A's data start
//!   offset skips the bytes before it), a burst of eight words at a time; the controller
//!   pads and appends the FCS.
//!
//! The two halves touch disjoint registers (RX FIFOs and status vs. TX FIFOs), so the
//! interrupt handler and the main loop use them concurrently without a lock; `INT_STS` is
//! write-one-to-clear, so acknowledging RX never disturbs TX.
//!
//! Registers are reached through [`Registers`], so the logic is tested on the host against a
//! model of the controller.
//!
//! # Features
#![doc = document_features::document_features!()]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The logging macros (trace!, debug!, ...) for every module below; see linklab-fmt.
#[macro_use]
extern crate linklab_fmt;
linklab_fmt::exclusive_features!();

mod fifo;
mod rx;
mod tx;
mod verdict;

pub use rx::{Lan9118Rx, RxCounters};
pub use tx::Lan9118Tx;

use linklab_mac::RxFormat;
/// The register access the driver is generic over (linklab-mmio): [`Mmio`] on a board (its
/// window is the controller's 0x100 bytes), a model of the controller in the tests.
pub use linklab_mmio::{Mmio, Registers};

/// Register offsets (bytes from the base), from the LAN9118 register map.
pub mod reg {
    /// RX data FIFO port (reads pop the current frame's next word); it answers at every
    /// word up to [`RX_DATA_FIFO_LAST`] too (aliases, for burst reads).
    pub const RX_DATA_FIFO: usize = 0x00;
    /// The last alias of the RX data FIFO port.
    pub const RX_DATA_FIFO_LAST: usize = 0x1C;
    /// TX data FIFO port (command words, then the frame's words); it takes writes at every
    /// word up to [`TX_DATA_FIFO_LAST`] too (aliases, for burst writes).
    pub const TX_DATA_FIFO: usize = 0x20;
    /// The last alias of the TX data FIFO port.
    pub const TX_DATA_FIFO_LAST: usize = 0x3C;
    /// RX status FIFO port (one status word per received frame).
    pub const RX_STATUS_FIFO: usize = 0x40;
    /// Chip ID (upper 16 bits) and revision.
    pub const ID_REV: usize = 0x50;
    /// Interrupt pin configuration.
    pub const IRQ_CFG: usize = 0x54;
    /// Interrupt status (write one to clear).
    pub const INT_STS: usize = 0x58;
    /// Interrupt enables.
    pub const INT_EN: usize = 0x5C;
    /// Byte order test (reads 0x8765_4321).
    pub const BYTE_TEST: usize = 0x64;
    /// FIFO level interrupt thresholds.
    pub const FIFO_INT: usize = 0x68;
    /// Receive configuration (the RX data offset).
    pub const RX_CFG: usize = 0x6C;
    /// Transmit configuration.
    pub const TX_CFG: usize = 0x70;
    /// Hardware configuration (soft reset).
    pub const HW_CFG: usize = 0x74;
    /// RX FIFO levels.
    pub const RX_FIFO_INF: usize = 0x7C;
    /// TX FIFO levels.
    pub const TX_FIFO_INF: usize = 0x80;
    /// Power management (READY bit).
    pub const PMT_CTRL: usize = 0x84;
    /// MAC CSR indirect access: command.
    pub const MAC_CSR_CMD: usize = 0xA4;
    /// MAC CSR indirect access: data.
    pub const MAC_CSR_DATA: usize = 0xA8;
}

/// MAC control and status registers (indirect, through `MAC_CSR_CMD`).
mod mac_csr {
    pub const MAC_CR: u32 = 1;
    pub const ADDRH: u32 = 2;
    pub const ADDRL: u32 = 3;
    pub const MII_ACC: u32 = 6;
    pub const MII_DATA: u32 = 7;
}

const CSR_BUSY: u32 = 1 << 31;
const CSR_READ: u32 = 1 << 30;
const MAC_CR_TXEN: u32 = 1 << 3;
const MAC_CR_RXEN: u32 = 1 << 2;
const MAC_CR_FDPX: u32 = 1 << 20;
const HW_CFG_SRST: u32 = 1;
const PMT_READY: u32 = 1;
const TX_CFG_TX_ON: u32 = 1 << 1;
/// TX status allow overrun: the TX status FIFO is never read, so let it overrun.
const TX_CFG_TXSAO: u32 = 1 << 2;
const IRQ_EN: u32 = 1 << 8;
const IRQ_POL_HIGH: u32 = 1 << 4;
const IRQ_PUSH_PULL: u32 = 1;
/// RX status FIFO level interrupt.
pub const INT_RSFL: u32 = 1 << 3;
/// PHY basic status register and its link bit, PHY address 1.
const PHY_ADDR: u32 = 1;
const PHY_BSR: u32 = 1;
const PHY_BSR_LINK: u32 = 1 << 2;
/// The chip ID of the LAN9118 family member QEMU models.
pub const CHIP_ID: u32 = 0x0118;
/// Bounded waits: register polls before giving up (a register that never changes is a
/// missing or broken device, not something to hang on).
const POLLS: u32 = 100_000;
/// Bytes the controller puts in front of every received frame (`RX_CFG.RXDOFF`): the
/// frame's first two bytes then end the first FIFO word, so its IPv4 header (14 bytes in)
/// and every later word land on a word of a grant that starts at 2 mod 4, as linklab-mac's
/// grants do (`FRAME_ALIGN`): the interrupt moves them with aligned load/store-multiples.
pub const RX_DATA_OFFSET: usize = 2;
/// How the MAC reads the frames [`Lan9118Rx`] commits by default: without FCS, each
/// followed by the tag that says whether its checksums were found right.
pub const RX_FORMAT: RxFormat = RxFormat::Tagged;

/// Why the controller could not be brought up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum InitError {
    /// Byte test or chip ID wrong: not a LAN9118 at that address (or wrong bus width).
    NotFound(u32),
    /// The soft reset or a MAC CSR access never completed.
    Timeout,
}

/// The controller, before it is split into its interrupt and main-loop halves.
pub struct Lan9118<R: Registers> {
    regs: R,
}

impl<R: Registers + Clone> Lan9118<R> {
    /// A driver over `regs`; nothing is touched until [`Lan9118::init`].
    pub fn new(regs: R) -> Self {
        Lan9118 { regs }
    }

    /// Resets the controller and starts it with MAC address `mac`: receiver and transmitter
    /// on, full duplex, [`RX_DATA_OFFSET`] bytes in front of every received frame, the RX
    /// status FIFO level interrupt enabled on an active-high line.
    pub fn init(&mut self, mac: [u8; 6]) -> Result<(), InitError> {
        let r = &self.regs;
        let test = r.read(reg::BYTE_TEST);
        if test != 0x8765_4321 {
            return Err(InitError::NotFound(test));
        }
        let id = r.read(reg::ID_REV);
        if id >> 16 != CHIP_ID {
            return Err(InitError::NotFound(id));
        }
        r.write(reg::HW_CFG, HW_CFG_SRST);
        wait(|| r.read(reg::HW_CFG) & HW_CFG_SRST == 0)?;
        wait(|| r.read(reg::PMT_CTRL) & PMT_READY != 0)?;
        let low = u32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]);
        let high = u32::from(mac[4]) | u32::from(mac[5]) << 8;
        self.mac_write(mac_csr::ADDRL, low)?;
        self.mac_write(mac_csr::ADDRH, high)?;
        // Exact address filtering (not promiscuous), broadcast accepted.
        self.mac_write(mac_csr::MAC_CR, MAC_CR_TXEN | MAC_CR_RXEN | MAC_CR_FDPX)?;
        let r = &self.regs;
        r.write(reg::TX_CFG, TX_CFG_TX_ON | TX_CFG_TXSAO);
        r.write(reg::RX_CFG, (RX_DATA_OFFSET as u32) << 8);
        // Interrupt as soon as the RX status FIFO holds one entry (level 0: "more than 0").
        r.write(reg::FIFO_INT, 0x4800_0000);
        r.write(reg::INT_STS, u32::MAX);
        r.write(reg::INT_EN, INT_RSFL);
        r.write(reg::IRQ_CFG, IRQ_EN | IRQ_POL_HIGH | IRQ_PUSH_PULL);
        info!("lan9118: up, chip id/rev {:#x}", id);
        Ok(())
    }

    /// The PHY's link bit (basic status register).
    pub fn link_up(&self) -> bool {
        self.mii_read(PHY_BSR).is_ok_and(|v| v & PHY_BSR_LINK != 0)
    }

    /// Splits into the interrupt handler's RX half and the main loop's TX half.
    pub fn split(self) -> (Lan9118Rx<R>, Lan9118Tx<R>) {
        (
            Lan9118Rx {
                regs: self.regs.clone(),
                counters: RxCounters::default(),
                keep_fcs: false,
            },
            Lan9118Tx {
                regs: self.regs,
                dropped: 0,
            },
        )
    }

    fn mac_wait(&self) -> Result<(), InitError> {
        wait(|| self.regs.read(reg::MAC_CSR_CMD) & CSR_BUSY == 0)
    }

    fn mac_write(&self, csr: u32, value: u32) -> Result<(), InitError> {
        self.mac_wait()?;
        self.regs.write(reg::MAC_CSR_DATA, value);
        self.regs.write(reg::MAC_CSR_CMD, CSR_BUSY | csr);
        self.mac_wait()
    }

    fn mac_read(&self, csr: u32) -> Result<u32, InitError> {
        self.mac_wait()?;
        self.regs.write(reg::MAC_CSR_CMD, CSR_BUSY | CSR_READ | csr);
        self.mac_wait()?;
        Ok(self.regs.read(reg::MAC_CSR_DATA))
    }

    fn mii_read(&self, phy_reg: u32) -> Result<u32, InitError> {
        const MII_BUSY: u32 = 1;
        let acc = PHY_ADDR << 11 | phy_reg << 6 | MII_BUSY;
        self.mac_write(mac_csr::MII_ACC, acc)?;
        let mut polls = 0;
        while self.mac_read(mac_csr::MII_ACC)? & MII_BUSY != 0 {
            polls += 1;
            if polls == POLLS {
                return Err(InitError::Timeout);
            }
        }
        self.mac_read(mac_csr::MII_DATA).map(|v| v & 0xffff)
    }
}

/// Polls `done` a bounded number of times.
fn wait(mut done: impl FnMut() -> bool) -> Result<(), InitError> {
    for _ in 0..POLLS {
        if done() {
            return Ok(());
        }
    }
    Err(InitError::Timeout)
}

#[cfg(test)]
mod tests;
