//! linklab-lan9118: a no_std driver for the SMSC LAN9118 family (the LAN9220 of Arm's MPS2
//! boards, QEMU's `lan9118`), written from the controller's register map, whose receive
//! interrupt moves each frame from the controller's RX data FIFO straight into a grant of
//! linklab-mac's RX queue: the one copy on the path is the PIO read itself.
//!
//! * [`Lan9118::init`]: soft reset, chip check, MAC address, receiver and transmitter on, the
//!   RX status FIFO level interrupt (one frame is enough) on an active-high push-pull line.
//! * [`Lan9118Rx::on_interrupt`] (interrupt handler): for every frame in the RX status FIFO,
//!   grant, read the frame into the grant, commit. The controller checks the FCS itself and
//!   flags bad frames in their status; by default the driver commits frames without their
//!   FCS (`RxFormat::Aligned { fcs: false }` for the MAC) and drops flagged ones (counted in
//!   [`RxCounters::flagged`]). QEMU's model appends a CRC that is not the Ethernet FCS (zlib's
//!   crc32 seeded with !0, byte-swapped), so the MAC cannot check it there;
//!   [`Lan9118Rx::set_keep_fcs`] passes the FCS on, for silicon, so the MAC checks it on the
//!   consumer side. A full queue drains the frame from the controller and counts
//!   `rx_missed_errors`.
//! * [`Lan9118Tx`] (main loop): `linklab_mac::PhyTx`; writes TX command A/B and the frame
//!   into the TX data FIFO; the controller pads and appends the FCS.
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

use linklab_mac::{PhyTx, RxProducer, Storage, RX_GRANT_LEN};
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
/// RX status: error summary bit.
const RX_STS_ES: u32 = 1 << 15;
/// PHY basic status register and its link bit, PHY address 1.
const PHY_ADDR: u32 = 1;
const PHY_BSR: u32 = 1;
const PHY_BSR_LINK: u32 = 1 << 2;
/// TX command A: first and last segment of a frame in one buffer.
const TX_CMD_A_FIRST: u32 = 1 << 13;
const TX_CMD_A_LAST: u32 = 1 << 12;
/// The chip ID of the LAN9118 family member QEMU models.
pub const CHIP_ID: u32 = 0x0118;
/// Bounded waits: register polls before giving up (a register that never changes is a
/// missing or broken device, not something to hang on).
const POLLS: u32 = 100_000;
/// Longest frame the TX path accepts (without FCS).
const MAX_TX_FRAME: usize = 1514;

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
    /// on, full duplex, the RX status FIFO level interrupt enabled on an active-high line.
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

/// Words moved per burst: the FIFO ports' alias range (8 words), so a block of 32 bytes is
/// read or written at consecutive addresses, one load or store each, with one loop step
/// per block instead of per word (RX 1.19 -> see the firmware README, TX likewise).
const BURST: usize = 8;

/// Reads `dst.len()` bytes of the current frame from the RX data FIFO (little endian): 32
/// bytes at a time through the port's aliases, then whole words, then the last partial
/// word byte by byte.
fn read_words<R: Registers>(regs: &R, dst: &mut [u8]) {
    let mut blocks = dst.chunks_exact_mut(4 * BURST);
    for block in &mut blocks {
        // Spelled out, so that each word is one load at its alias and one store.
        let word = |k: usize| regs.read(reg::RX_DATA_FIFO + 4 * k).to_le_bytes();
        block[0..4].copy_from_slice(&word(0));
        block[4..8].copy_from_slice(&word(1));
        block[8..12].copy_from_slice(&word(2));
        block[12..16].copy_from_slice(&word(3));
        block[16..20].copy_from_slice(&word(4));
        block[20..24].copy_from_slice(&word(5));
        block[24..28].copy_from_slice(&word(6));
        block[28..32].copy_from_slice(&word(7));
    }
    let mut words = blocks.into_remainder().chunks_exact_mut(4);
    for w in &mut words {
        w.copy_from_slice(&regs.read(reg::RX_DATA_FIFO).to_le_bytes());
    }
    let rest = words.into_remainder();
    if !rest.is_empty() {
        let last = regs.read(reg::RX_DATA_FIFO).to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&last[..n]);
    }
}

/// What the receive half saw that the MAC does not (frames it never committed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RxCounters {
    /// Frames taken off the controller into grants.
    pub frames: u64,
    /// Frames read out and dropped because the queue was full (also `rx_missed_errors`).
    pub missed: u64,
    /// Frames the controller flagged bad: dropped, unless the FCS is kept (then committed and
    /// the MAC's FCS check counts them).
    pub flagged: u64,
}

/// The receive half, for the NIC's interrupt handler.
pub struct Lan9118Rx<R: Registers> {
    regs: R,
    counters: RxCounters,
    keep_fcs: bool,
}

impl<R: Registers> Lan9118Rx<R> {
    /// Commit frames with their FCS (for `RxFormat::Aligned { fcs: true }`), so the MAC
    /// checks it; off by default (see the crate docs for why QEMU needs it off).
    pub fn set_keep_fcs(&mut self, keep: bool) {
        self.keep_fcs = keep;
    }

    /// The interrupt handler's work: acknowledges the RX interrupt, then moves every frame
    /// waiting in the controller into a grant of `producer`. Returns the frames committed.
    ///
    /// The interrupt is acknowledged *before* the FIFO is drained, so a frame arriving while
    /// this runs raises it again instead of waiting unnoticed.
    pub fn on_interrupt<S: Storage>(&mut self, producer: &RxProducer<'_, S>) -> usize {
        self.regs.write(reg::INT_STS, INT_RSFL);
        let mut committed = 0;
        // Bounded: the status FIFO never holds more frames than it can (176 on QEMU).
        for _ in 0..256 {
            let waiting = (self.regs.read(reg::RX_FIFO_INF) >> 16) & 0xff;
            if waiting == 0 {
                break;
            }
            let status = self.regs.read(reg::RX_STATUS_FIFO);
            let len = ((status >> 16) & 0x3fff) as usize;
            let words = len.div_ceil(4);
            let flagged = status & RX_STS_ES != 0;
            if flagged {
                debug!("lan9118: frame flagged bad, status {:#x}", status);
                self.counters.flagged += 1;
                if !self.keep_fcs {
                    self.skip(words);
                    continue;
                }
            }
            let keep = if self.keep_fcs {
                len
            } else {
                len.saturating_sub(4)
            };
            match producer.grant() {
                Ok(mut grant) if keep > 0 && len <= RX_GRANT_LEN => {
                    read_words(&self.regs, &mut grant.buf()[..len]);
                    if self.keep_fcs {
                        grant.commit(keep);
                    } else {
                        // The next frame's payload word-aligned (the FCS bytes read above
                        // become the 0-3 bytes of padding, zeroed).
                        grant.commit_padded(keep);
                    }
                    self.counters.frames += 1;
                    committed += 1;
                }
                other => {
                    // No room (or a length no frame has): drop it in the controller.
                    drop(other);
                    self.skip(words);
                    producer.record_missed();
                    self.counters.missed += 1;
                }
            }
        }
        committed
    }

    /// Discards the current frame's `words` data words by reading them out. The datasheet's
    /// fast-forward (`RX_DP_CTRL.RX_FFWD`) would be cheaper for long frames, but QEMU 7.2's
    /// model does not give the skipped words back to its FIFO accounting, which then fills up
    /// for good after a few hundred dropped frames; reading works on silicon and model alike.
    fn skip(&self, words: usize) {
        for _ in 0..words {
            let _ = self.regs.read(reg::RX_DATA_FIFO);
        }
    }

    /// What this half counted.
    pub fn counters(&self) -> RxCounters {
        self.counters
    }
}

/// The transmit half, for the main loop: linklab-mac's `PhyTx`.
pub struct Lan9118Tx<R: Registers> {
    regs: R,
    dropped: u64,
}

impl<R: Registers> Lan9118Tx<R> {
    /// Frames dropped: too long, or no TX FIFO space in time.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

impl<R: Registers> PhyTx for Lan9118Tx<R> {
    fn transmit(&mut self, frame: &[u8]) {
        let len = frame.len();
        let words = len.div_ceil(4);
        // Command A and B plus the data words must fit in the TX data FIFO.
        let need = (words as u32 + 2) * 4;
        let room = || self.regs.read(reg::TX_FIFO_INF) & 0xffff >= need;
        if len == 0 || len > MAX_TX_FRAME || wait(room).is_err() {
            self.dropped += 1;
            return;
        }
        let len32 = len as u32;
        self.regs
            .write(reg::TX_DATA_FIFO, TX_CMD_A_FIRST | TX_CMD_A_LAST | len32);
        self.regs.write(reg::TX_DATA_FIFO, len32 << 16 | len32);
        // 32 bytes at a time through the port's aliases, then whole words.
        let mut blocks = frame.chunks_exact(4 * BURST);
        for block in &mut blocks {
            // Spelled out, so that each word is one load and one store at its alias.
            let put = |k: usize| {
                let c = &block[4 * k..4 * k + 4];
                let w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                self.regs.write(reg::TX_DATA_FIFO + 4 * k, w);
            };
            put(0);
            put(1);
            put(2);
            put(3);
            put(4);
            put(5);
            put(6);
            put(7);
        }
        let mut chunks = blocks.remainder().chunks_exact(4);
        for c in &mut chunks {
            self.regs.write(
                reg::TX_DATA_FIFO,
                u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            );
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut last = [0u8; 4];
            last[..rest.len()].copy_from_slice(rest);
            self.regs.write(reg::TX_DATA_FIFO, u32::from_le_bytes(last));
        }
    }

    fn dropped(&mut self) -> u64 {
        self.dropped
    }

    fn ready(&mut self) -> bool {
        let need = (MAX_TX_FRAME.div_ceil(4) as u32 + 2) * 4;
        self.regs.read(reg::TX_FIFO_INF) & 0xffff >= need
    }
}

#[cfg(test)]
mod tests;
