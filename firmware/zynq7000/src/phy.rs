//! The PHY QEMU's xilinx-zynq-a9 models behind the GEM's MDIO: a Marvell 88E1116R at address
//! 7 (not the Zedboard's 88E1518), read and written through zynq7000-hal's MDIO.

use arbitrary_int::u5;
use zynq7000_hal::eth::mdio::Mdio;
use zynq7000_hal::eth::{Duplex, Speed};

/// The PHY's MDIO address on QEMU's board.
pub const ADDRESS: u8 = 7;
/// The 88E1116R's identifier (registers 2 and 3).
pub const ID: (u16, u16) = (0x0141, 0x0CC2);

const CONTROL: u8 = 0;
const STATUS: u8 = 1;
const ID1: u8 = 2;
const ID2: u8 = 3;
/// Marvell's copper specific status: speed (15:14), duplex (13), resolved (11), link (10).
const SPECIFIC_STATUS: u8 = 17;
const CONTROL_ANEG_ENABLE: u16 = 1 << 12;
const CONTROL_ANEG_RESTART: u16 = 1 << 9;
const STATUS_LINK: u16 = 1 << 2;
const STATUS_ANEG_DONE: u16 = 1 << 5;
/// MDIO reads to wait for auto-negotiation (each a few microseconds).
const ANEG_POLLS: u32 = 100_000;

/// What went wrong bringing the PHY up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhyError {
    /// Another PHY (or none) answers at the address.
    NotThe88E1116R,
    /// Auto-negotiation did not complete.
    NoLink,
}

impl PhyError {
    /// For the console.
    pub fn as_str(self) -> &'static str {
        match self {
            PhyError::NotThe88E1116R => "no Marvell 88E1116R at MDIO address 7",
            PhyError::NoLink => "the PHY's auto-negotiation did not complete",
        }
    }
}

/// The PHY on the GEM's MDIO bus.
pub struct Phy {
    mdio: Mdio,
}

impl Phy {
    /// The PHY behind `mdio`.
    pub fn new(mdio: Mdio) -> Phy {
        Phy { mdio }
    }

    fn read(&mut self, reg: u8) -> u16 {
        self.mdio.read_blocking(u5::new(ADDRESS), u5::new(reg))
    }

    /// Checks the PHY's identity, (re)starts auto-negotiation and waits for it; the speed and
    /// duplex it resolved.
    pub fn bring_up(&mut self) -> Result<(Speed, Duplex), PhyError> {
        if (self.read(ID1), self.read(ID2)) != ID {
            return Err(PhyError::NotThe88E1116R);
        }
        self.mdio.write_blocking(
            u5::new(ADDRESS),
            u5::new(CONTROL),
            CONTROL_ANEG_ENABLE | CONTROL_ANEG_RESTART,
        );
        for _ in 0..ANEG_POLLS {
            let status = self.read(STATUS);
            if status & (STATUS_LINK | STATUS_ANEG_DONE) == STATUS_LINK | STATUS_ANEG_DONE {
                let specific = self.read(SPECIFIC_STATUS);
                let speed = match specific >> 14 {
                    0b10 => Speed::Mbps1000,
                    0b01 => Speed::Mbps100,
                    _ => Speed::Mbps10,
                };
                let duplex = if specific & (1 << 13) != 0 {
                    Duplex::Full
                } else {
                    Duplex::Half
                };
                return Ok((speed, duplex));
            }
        }
        Err(PhyError::NoLink)
    }

    /// The link bit (status register).
    pub fn link_up(&mut self) -> bool {
        self.read(STATUS) & STATUS_LINK != 0
    }
}

/// The link bit, read through GEM 0's MDIO (for a task that does not own the [`Phy`]).
pub fn link_up_now() -> bool {
    // SAFETY: one MDIO read on GEM 0's bus, which is up once the image serves `/stats`.
    Phy::new(unsafe { Mdio::steal(zynq7000_hal::eth::EthernetId::Eth0, true) }).link_up()
}
