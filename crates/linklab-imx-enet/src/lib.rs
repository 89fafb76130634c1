//! linklab-imx-enet: NXP's ENET Ethernet controller as linklab-mac's PHY, no heap. The same
//! block sits in the i.MX6/6UL/7, the i.MX RT1050/1060/1170 and the Kinetis K64/K66 (the
//! crate README says what differs), and in QEMU's `sabrelite`, `mcimx6ul-evk` and
//! `mcimx7d-sabre` machines (`imx.enet`).
//!
//! * [`Enet::new`] resets the block and programs it: enhanced buffer descriptors
//!   ([`descriptor`] says why), little-endian descriptors, the station address, store and
//!   forward both ways, `RACC[SHIFT16]`, the FCS forwarded to memory (QEMU always writes
//!   it; the driver drops it), flow control on received PAUSE frames; the MDC divider for
//!   [`mdio`], where [`mdio::scan`] finds the PHY and [`mdio::Phy`] brings up the link.
//! * [`Enet::start`] posts the receive buffers, enables the MAC and unmasks `RXF`, and
//!   splits the driver into its two halves: [`EnetRx`] for the ENET's interrupt, which
//!   receives straight into linklab-mac's RX queue ([`rx`]), and [`EnetTx`], linklab-mac's
//!   `PhyTx` for the main loop ([`tx`]), with TCP/UDP checksum insertion. The halves share
//!   no state, so neither needs a lock.
//!
//! The smoltcp `Device` and the embassy-net `Driver` come from linklab-mac's `Mac` over
//! these halves, as for linklab's other drivers.
//!
//! # Features
#![doc = document_features::document_features!()]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The logging macros (trace!, debug!, ...) for every module below; see linklab-fmt.
#[macro_use]
extern crate linklab_fmt;
linklab_fmt::exclusive_features!();

pub mod descriptor;
pub mod mdio;
pub mod regs;
pub mod rx;
pub mod tx;

pub use descriptor::{EnetMemory, BUFFER_LEN, RX_DESCRIPTORS, TX_DESCRIPTORS};
pub use linklab_mmio::{Mmio, Registers};
pub use mdio::{Link, Mdio, MdioTimeout, Phy, Speed};
pub use rx::{EnetRx, RxCounters};
pub use tx::{EnetTx, TxCounters};

use linklab_mac::{RxProducer, Storage};

use regs::*;

/// How the ENET reaches its PHY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum PhyInterface {
    /// MII (4 bits at 25 MHz).
    Mii,
    /// RMII (2 bits at 50 MHz: the i.MX RT boards, the i.MX6UL EVK).
    Rmii,
    /// RGMII (the gigabit ENETs: the i.MX6 SABRE boards).
    Rgmii,
}

/// How the driver sets up the block: what the chip needs and what the board chose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EnetConfig {
    /// The station address.
    pub mac: [u8; 6],
    /// The PHY's interface.
    pub interface: PhyInterface,
    /// `MSCR[MII_SPEED]`: MDC = the ENET's clock / ((this + 1) × 2), at most 2.5 MHz.
    pub mdc_divider: u8,
    /// What receive buffer addresses the DMA needs to be a multiple of (Linux's fec driver
    /// keeps them on 16 bytes on Arm); a run of the RX queue whose buffers are not is not
    /// posted (the spill buffer is, and frames are copied).
    pub rx_align: usize,
    /// Hand frames over with `TACC[SHIFT16]` (two bytes in front, skipped by the ENET) so
    /// the DMA starts on an aligned address; without, it starts at the frame. QEMU's ENET
    /// does not model the transmit shift (it would send the two bytes).
    pub tx_shift16: bool,
    /// Let the ENET insert TCP/UDP checksums (`PINS` in each descriptor).
    pub tx_checksum_insertion: bool,
    /// Trust the receive descriptors' checksum status (IPv4 TCP/UDP frames the accelerator
    /// checked without error are passed on as valid). QEMU's ENET never checks: off there
    /// (its frames would read as unchecked anyway).
    pub rx_checksum_status: bool,
}

impl EnetConfig {
    /// QEMU's `imx.enet` on the emulated i.MX6 (`-M sabrelite`): RGMII, the divider for a
    /// 66 MHz clock (QEMU ignores it), buffers aligned as on silicon, no transmit shift
    /// (not modelled), checksum insertion (modelled), no receive status (not modelled).
    pub const fn qemu_imx6(mac: [u8; 6]) -> EnetConfig {
        EnetConfig {
            mac,
            interface: PhyInterface::Rgmii,
            mdc_divider: 13,
            rx_align: 16,
            tx_shift16: false,
            tx_checksum_insertion: true,
            rx_checksum_status: false,
        }
    }
}

/// Why the ENET could not be brought up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum InitError {
    /// The block's reset did not complete.
    ResetTimeout,
    /// A descriptor ring is not reachable by the 32-bit DMA or not 8-byte aligned.
    Memory,
}

/// Reads of `ECR` waiting for the block's reset to complete.
const RESET_POLLS: u32 = 10_000;
/// The longest frame accepted without `LG` (an 802.1Q-tagged frame with its FCS).
const MAX_FRAME: u32 = 1522;
/// Where longer frames are cut (`FTRL`, flagged truncated): at least [`MAX_FRAME`], and with
/// the shift in front and the FCS still within one buffer, so every frame, however long on
/// the wire, is handed back in one descriptor (QEMU's ENET loses the rest of a frame that
/// finds the next descriptor not empty).
const TRUNCATE_AT: u32 = 1528;

/// The ENET, set up and stopped: [`Enet::mdio`] reaches the PHY, [`Enet::set_link`] takes
/// what it negotiated, [`Enet::start`] runs it.
pub struct Enet<R: Registers + Clone> {
    regs: R,
    mem: &'static EnetMemory,
    config: EnetConfig,
    /// The link runs at 1000 Mbit/s (`ECR[SPEED]`).
    speed_1000: bool,
}

impl<R: Registers + Clone> Enet<R> {
    /// Resets the ENET behind `regs` and programs it from `config` over the DMA memory
    /// `mem` (see [`EnetMemory`]), the MAC left off.
    pub fn new(
        regs: R,
        mem: &'static mut EnetMemory,
        config: EnetConfig,
    ) -> Result<Self, InitError> {
        let mem: &'static EnetMemory = mem;
        let rings = [mem.rx[0].address(), mem.tx[0].address()];
        let end =
            (mem as *const EnetMemory as usize).checked_add(core::mem::size_of::<EnetMemory>());
        if rings.iter().any(|&a| a & 7 != 0) || end.is_none_or(|e| e as u64 > 1 << 32) {
            return Err(InitError::Memory);
        }
        regs.write(ECR, ECR_RESET);
        if !(0..RESET_POLLS).any(|_| regs.read(ECR) & ECR_RESET == 0) {
            return Err(InitError::ResetTimeout);
        }
        regs.write(EIMR, 0);
        regs.write(EIR, u32::MAX);
        regs.write(
            MSCR,
            u32::from(config.mdc_divider & 0x3F) << MSCR_MII_SPEED_SHIFT,
        );
        let m = config.mac;
        regs.write(PALR, u32::from_be_bytes([m[0], m[1], m[2], m[3]]));
        regs.write(
            PAUR,
            (u32::from(m[4]) << 24) | (u32::from(m[5]) << 16) | 0x8808,
        );
        for hash in [IAUR, IALR, GAUR, GALR] {
            regs.write(hash, 0);
        }
        regs.write(TFWR, TFWR_STRFWD);
        regs.write(RSFL, 0);
        regs.write(MRBR, BUFFER_LEN as u32);
        regs.write(FTRL, TRUNCATE_AT);
        regs.write(RACC, RACC_SHIFT16);
        regs.write(TACC, if config.tx_shift16 { TACC_SHIFT16 } else { 0 });
        regs.write(MIBC, 0);
        regs.write(RDSR, rings[0]);
        regs.write(TDSR, rings[1]);
        let mut enet = Enet {
            regs,
            mem,
            config,
            speed_1000: false,
        };
        enet.set_link(Link {
            speed: Speed::Mbps100,
            full_duplex: true,
        });
        Ok(enet)
    }

    /// The MDIO master, to find and bring up the PHY ([`mdio::scan`], [`Phy`]).
    pub fn mdio(&self) -> Mdio<R> {
        Mdio::new(self.regs.clone())
    }

    /// Sets the MAC's speed and duplex to what the PHY negotiated (before [`Enet::start`]).
    pub fn set_link(&mut self, link: Link) {
        let interface = match self.config.interface {
            PhyInterface::Mii => RCR_MII_MODE,
            PhyInterface::Rmii => RCR_MII_MODE | RCR_RMII_MODE,
            PhyInterface::Rgmii => RCR_MII_MODE | RCR_RGMII_EN,
        };
        let ten = if self.config.interface == PhyInterface::Rmii && link.speed == Speed::Mbps10 {
            RCR_RMII_10T
        } else {
            0
        };
        let duplex = if link.full_duplex { 0 } else { RCR_DRT };
        self.regs.write(
            RCR,
            (MAX_FRAME << RCR_MAX_FL_SHIFT) | interface | ten | duplex | RCR_FCE,
        );
        self.regs
            .write(TCR, if link.full_duplex { TCR_FDEN } else { 0 });
        self.speed_1000 = link.speed == Speed::Mbps1000;
    }

    /// Enables the MAC and hands its halves out: the receive half (for the ENET's interrupt)
    /// filling `producer`'s queue, its buffers posted, and the transmit half. `RXF` is
    /// unmasked; the interrupt controller's line is the board's to enable.
    pub fn start<S: Storage + 'static>(
        self,
        producer: RxProducer<'static, S>,
    ) -> (EnetRx<S, R>, EnetTx<R>) {
        let Enet {
            regs,
            mem,
            config,
            speed_1000,
        } = self;
        let mut rx = EnetRx::new(
            regs.clone(),
            producer,
            &mem.rx,
            &mem.spill,
            config.rx_align,
            config.rx_checksum_status,
        );
        let tx = EnetTx::new(
            regs.clone(),
            &mem.tx,
            &mem.tx_buffers,
            config.tx_shift16,
            config.tx_checksum_insertion,
        );
        let speed = if speed_1000 { ECR_SPEED_1000 } else { 0 };
        regs.write(ECR, ECR_ETHEREN | ECR_EN1588 | ECR_DBSWP | speed);
        rx.start();
        regs.write(EIMR, EIR_RXF);
        (rx, tx)
    }
}

#[cfg(test)]
mod tests;
