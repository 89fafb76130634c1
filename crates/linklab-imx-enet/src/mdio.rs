//! MDIO through the ENET's management frame register, every transfer bounded (a PHY or an
//! ENET that never answers costs [`MDIO_POLLS`] register reads and a counted timeout, never
//! a hang), and the PHY found by scanning the 32 addresses ([`scan`]), brought up and read
//! for its link with the IEEE 802.3 clause 22 registers every PHY has ([`Phy`]).

use core::cell::Cell;

use linklab_mmio::Registers;

use crate::regs::*;

/// Reads of `EIR` waiting for one MDIO transfer before it counts as timed out. A transfer is
/// 64 MDC cycles (25.6 µs at 2.5 MHz); a register read takes well under 1 µs on these chips.
pub const MDIO_POLLS: u32 = 20_000;

/// Basic mode control (register 0).
pub const BMCR: u8 = 0;
/// Basic mode status (register 1).
pub const BMSR: u8 = 1;
/// PHY identifier, high (register 2).
pub const PHYSID1: u8 = 2;
/// PHY identifier, low (register 3).
pub const PHYSID2: u8 = 3;
/// Auto-negotiation advertisement (register 4).
pub const ANAR: u8 = 4;
/// Link partner ability (register 5).
pub const ANLPAR: u8 = 5;
/// 1000BASE-T control (register 9).
pub const CTRL1000: u8 = 9;
/// 1000BASE-T status (register 10).
pub const STAT1000: u8 = 10;

const BMCR_ANEG_ENABLE: u16 = 1 << 12;
const BMCR_ANEG_RESTART: u16 = 1 << 9;
const BMSR_LINK: u16 = 1 << 2;
const BMSR_ANEG_COMPLETE: u16 = 1 << 5;
const BMSR_EXTENDED_STATUS: u16 = 1 << 8;
const ADVERTISE_100_FULL: u16 = 1 << 8;
const ADVERTISE_100_HALF: u16 = 1 << 7;
const ADVERTISE_10_FULL: u16 = 1 << 6;
const CTRL1000_FULL: u16 = 1 << 9;
const STAT1000_PARTNER_FULL: u16 = 1 << 11;

/// An MDIO transfer did not complete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MdioTimeout;

/// The ENET's MDIO master: clause 22 reads and writes, each waiting at most [`MDIO_POLLS`]
/// reads of `EIR[MII]`.
pub struct Mdio<R: Registers> {
    regs: R,
    timeouts: Cell<u32>,
}

impl<R: Registers> Mdio<R> {
    /// The MDIO master of the ENET behind `regs` (its `MSCR` already set: [`crate::Enet::new`]).
    pub fn new(regs: R) -> Mdio<R> {
        Mdio {
            regs,
            timeouts: Cell::new(0),
        }
    }

    /// Transfers that timed out since this value was made.
    pub fn timeouts(&self) -> u32 {
        self.timeouts.get()
    }

    /// Starts the transfer `frame` and waits for it; the management frame register after.
    fn transfer(&self, frame: u32) -> Result<u32, MdioTimeout> {
        // A stale completion would end the wait at once: clear it first.
        self.regs.write(EIR, EIR_MII);
        self.regs.write(MMFR, frame);
        for _ in 0..MDIO_POLLS {
            if self.regs.read(EIR) & EIR_MII != 0 {
                self.regs.write(EIR, EIR_MII);
                return Ok(self.regs.read(MMFR));
            }
        }
        self.timeouts.set(self.timeouts.get().saturating_add(1));
        debug!("imx-enet: MDIO transfer timed out");
        Err(MdioTimeout)
    }

    fn frame(op: u32, phy: u8, reg: u8) -> u32 {
        MMFR_ST
            | op
            | (u32::from(phy & 0x1F) << MMFR_PA_SHIFT)
            | (u32::from(reg & 0x1F) << MMFR_RA_SHIFT)
            | MMFR_TA
    }

    /// Reads register `reg` of the PHY at address `phy`.
    pub fn read(&self, phy: u8, reg: u8) -> Result<u16, MdioTimeout> {
        self.transfer(Self::frame(MMFR_OP_READ, phy, reg))
            .map(|v| (v & 0xFFFF) as u16)
    }

    /// Writes `value` to register `reg` of the PHY at address `phy`.
    pub fn write(&self, phy: u8, reg: u8, value: u16) -> Result<(), MdioTimeout> {
        self.transfer(Self::frame(MMFR_OP_WRITE, phy, reg) | u32::from(value))
            .map(|_| ())
    }
}

/// The first PHY that answers, scanning addresses 0 to 31: an address nobody answers at
/// reads all ones (the bus's pull-up), and a timed-out read counts as nobody.
pub fn scan<R: Registers>(mdio: &Mdio<R>) -> Option<Phy> {
    (0..32u8).find_map(|address| {
        let high = mdio.read(address, PHYSID1).ok()?;
        if high == 0xFFFF || high == 0 {
            return None;
        }
        let low = mdio.read(address, PHYSID2).ok()?;
        Some(Phy {
            address,
            id: (u32::from(high) << 16) | u32::from(low),
        })
    })
}

/// A link's speed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Speed {
    /// 10 Mbit/s.
    Mbps10,
    /// 100 Mbit/s.
    Mbps100,
    /// 1000 Mbit/s (the gigabit ENETs).
    Mbps1000,
}

/// A link that is up: what auto-negotiation resolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Link {
    /// The speed.
    pub speed: Speed,
    /// Full duplex (else half).
    pub full_duplex: bool,
}

/// Why [`Phy::wait_link`] gave up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum LinkError {
    /// The PHY never reported a link in the polls allowed.
    NoLink,
    /// The MDIO transfers timed out.
    Mdio(MdioTimeout),
}

impl From<MdioTimeout> for LinkError {
    fn from(e: MdioTimeout) -> Self {
        LinkError::Mdio(e)
    }
}

/// A PHY on the ENET's MDIO bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Phy {
    /// Its MDIO address.
    pub address: u8,
    /// Its identifier (registers 2 and 3: OUI, model, revision).
    pub id: u32,
}

impl Phy {
    /// Enables and restarts auto-negotiation.
    pub fn restart_autoneg<R: Registers>(&self, mdio: &Mdio<R>) -> Result<(), MdioTimeout> {
        mdio.write(self.address, BMCR, BMCR_ANEG_ENABLE | BMCR_ANEG_RESTART)
    }

    /// The link now: None while it is down or auto-negotiation has not completed, else the
    /// best mode both ends advertise (1000BASE-T where the PHY has extended status).
    pub fn link<R: Registers>(&self, mdio: &Mdio<R>) -> Result<Option<Link>, MdioTimeout> {
        // The link bit latches low: the first read says whether it dropped since the last.
        let _ = mdio.read(self.address, BMSR)?;
        let status = mdio.read(self.address, BMSR)?;
        if status & BMSR_LINK == 0 {
            return Ok(None);
        }
        let control = mdio.read(self.address, BMCR)?;
        if control & BMCR_ANEG_ENABLE != 0 && status & BMSR_ANEG_COMPLETE == 0 {
            return Ok(None);
        }
        if status & BMSR_EXTENDED_STATUS != 0 {
            let ours = mdio.read(self.address, CTRL1000)?;
            let theirs = mdio.read(self.address, STAT1000)?;
            if ours & CTRL1000_FULL != 0 && theirs & STAT1000_PARTNER_FULL != 0 {
                return Ok(Some(Link {
                    speed: Speed::Mbps1000,
                    full_duplex: true,
                }));
            }
        }
        let common = mdio.read(self.address, ANAR)? & mdio.read(self.address, ANLPAR)?;
        let (speed, full_duplex) = if common & ADVERTISE_100_FULL != 0 {
            (Speed::Mbps100, true)
        } else if common & ADVERTISE_100_HALF != 0 {
            (Speed::Mbps100, false)
        } else if common & ADVERTISE_10_FULL != 0 {
            (Speed::Mbps10, true)
        } else {
            (Speed::Mbps10, false)
        };
        Ok(Some(Link { speed, full_duplex }))
    }

    /// True if the link is up now (false when MDIO times out).
    pub fn link_up<R: Registers>(&self, mdio: &Mdio<R>) -> bool {
        matches!(self.link(mdio), Ok(Some(_)))
    }

    /// Polls [`Phy::link`] up to `polls` times for a link.
    pub fn wait_link<R: Registers>(&self, mdio: &Mdio<R>, polls: u32) -> Result<Link, LinkError> {
        let mut last = LinkError::NoLink;
        for _ in 0..polls {
            match self.link(mdio) {
                Ok(Some(link)) => return Ok(link),
                Ok(None) => last = LinkError::NoLink,
                Err(e) => last = LinkError::Mdio(e),
            }
        }
        Err(last)
    }
}
