//! linklab-w5500: a `no_std` driver for the WIZnet W5500 in MACRAW mode over SPI, for
//! [linklab-mac](linklab_mac): received frames are read from the chip straight into grants
//! of the MAC's RX queue, and the MAC builds each frame to send in place in one of the
//! driver's slots ([`TxQueue`]), so it serves smoltcp and embassy-net through linklab-mac as
//! linklab's other NIC drivers do. No heap, no panics on what the chip hands over.
//!
//! It keeps the bus busy (the W5500-EVB-Pico's SPI is its link: docs/w5500.md):
//!
//! * **Few small transactions.** One batched read of Sn_TX_RD, Sn_TX_WR and Sn_RX_RSR per
//!   service of the chip; the RX size read once per burst and counted down as frames are
//!   read; the read and write pointers kept in RAM, never read back; Sn_RX_RD and RECV once
//!   per burst.
//! * **The length header read with its frame**, under one SCSn: the header polled, judged,
//!   then the frame by DMA.
//! * **Every buffered frame drained per interrupt** (Sn_IR.RECV cleared first, so a frame
//!   arriving meanwhile raises INTn again): the frames that pile up in embassy issue #6456
//!   cannot.
//! * **Polled SPI for small accesses, DMA for frames** ([`bus::POLLED_MAX`]).
//! * **The next frame written while the last is sent**: a frame's bytes go into the chip's
//!   TX buffer while the one before is still on the line; its SEND waits for that one's
//!   completion (Sn_TX_RD reaching its end), as WIZnet's ioLibrary, Linux and Zephyr wait
//!   for SEND_OK, because what the chip does with a SEND before SEND_OK is not documented.
//! * **SPI mode 3** on the board (the W5500 takes modes 0 and 3, datasheet §2.1): the
//!   RP2040's PL022 leaves 0.5 SCK periods between bytes in mode 3 against 1.5 in mode 0.
//!
//! Nothing from the wire is trusted: a length header under 60 or over 1514 bytes is refused
//! and counted ([`Counters::rx_bad_headers`]), read again, and if it still makes no sense the
//! driver resynchronises on the chip's write pointer ([`Counters::rx_resyncs`]); a SEND that
//! does not complete is issued again, then the socket reopened; every frame either way is
//! counted ([`Counters`]).
//!
//! * [`W5500::init`]: reset, version check, MAC address, socket 0 with the chip's whole
//!   16 KB each way, MACRAW with the MAC filter, open.
//! * [`Runner::run`]: the driver's task (an interrupt executor above the stack's, on an
//!   RP2040: it resumes the moment a DMA transfer ends).
//! * [`TxQueue::producer`]: the MAC's `PhyTx`.
//!
//! # Features
#![doc = document_features::document_features!()]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The logging macros (trace!, debug!, ...) for every module below; see linklab-fmt.
#[macro_use]
extern crate linklab_fmt;
linklab_fmt::exclusive_features!();

pub mod bus;
mod counters;
pub mod regs;
mod runner;
mod rx;
mod send;
mod tx;

pub use bus::{Bus, BusError};
pub use counters::{Counters, SharedCounters};
pub use runner::{Next, Runner, LINK_POLL_NS, RETRY_NS, SEND_TIMEOUT_NS};
pub use tx::{TxQueue, W5500Tx, SLOT_LEN};

use embedded_hal::digital::OutputPin;
use embedded_hal::spi::SpiBus;
use embedded_hal_async::delay::DelayNs;
use embedded_hal_async::spi::SpiBus as AsyncSpiBus;
use linklab_mac::RxFormat;

use regs::{common, socket, Block};

/// How the MAC reads the frames the driver commits: aligned, without FCS (the chip checks
/// and strips it).
pub const RX_FORMAT: RxFormat = RxFormat::Aligned { fcs: false };

/// What socket 0 receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Config {
    /// The MAC address (the W5500 has none of its own).
    pub mac: [u8; 6],
    /// Let the chip drop IPv6 frames (Sn_MR.MIP6B), for a stack without IPv6: they then
    /// cost no SPI time.
    pub block_ipv6: bool,
    /// Let the chip drop IPv4 multicast frames (Sn_MR.MMB).
    pub block_ipv4_multicast: bool,
}

impl Config {
    /// MAC address `mac`, IPv6 and IPv4 multicast dropped by the chip.
    pub const fn new(mac: [u8; 6]) -> Self {
        Config {
            mac,
            block_ipv6: true,
            block_ipv4_multicast: true,
        }
    }
}

/// Why the chip could not be brought up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum InitError {
    /// VERSIONR was not 0x04: no W5500 answers (this is what it read).
    NotFound(u8),
    /// The software reset, or opening the socket, never completed.
    Timeout,
    /// The bus failed.
    Bus(BusError),
}

impl From<BusError> for InitError {
    fn from(e: BusError) -> Self {
        InitError::Bus(e)
    }
}

/// Register polls before giving up on the chip (a register that never changes is a missing
/// or broken device, not something to hang on).
const POLLS: u32 = 1000;

/// The W5500 on its bus, before [`W5500::init`].
pub struct W5500<S, CS> {
    bus: Bus<S, CS>,
}

/// The chip brought up: socket 0 open in MACRAW, its pointers as the chip holds them. Give
/// it to [`Runner::new`].
pub struct Initialised<S, CS> {
    pub(crate) bus: Bus<S, CS>,
    pub(crate) config: Config,
    pub(crate) rx_rd: u16,
    pub(crate) tx_wr: u16,
}

impl<S, CS> W5500<S, CS>
where
    S: SpiBus<u8> + AsyncSpiBus<u8>,
    CS: OutputPin,
{
    /// The W5500 on `spi` with SCSn on `cs` (SPI mode 0 or 3, up to 80 MHz: datasheet §2.1,
    /// §5); nothing is sent until [`W5500::init`].
    pub fn new(spi: S, cs: CS) -> Self {
        W5500 {
            bus: Bus::new(spi, cs),
        }
    }

    /// Brings the chip up: RSTn low for 1 ms if given (at least 500 µs, datasheet §5.5.1),
    /// then 2 ms for its PLL to lock (at most 1 ms there); a software reset; VERSIONR must be
    /// 0x04; the MAC address; socket 0 with the whole 16 KB of each buffer (the chip's
    /// memory goes to the sockets in order, so socket 0 takes all of it, as
    /// embassy-net-wiznet sets it); only socket 0's RECV reaches INTn; MACRAW with the MAC
    /// filter (and the blocks of `config`); OPEN.
    pub async fn init<R: OutputPin>(
        mut self,
        reset: Option<&mut R>,
        config: Config,
        delay: &mut impl DelayNs,
    ) -> Result<Initialised<S, CS>, InitError> {
        if let Some(rst) = reset {
            rst.set_low().map_err(|_| BusError::Pin)?;
            delay.delay_ms(1).await;
            rst.set_high().map_err(|_| BusError::Pin)?;
            delay.delay_ms(2).await;
        }
        let bus = &mut self.bus;
        bus.write(Block::Common, common::MR, &[0x80])?;
        wait(|| Ok(read_u8(bus, Block::Common, common::MR)? & 0x80 == 0))?;
        let version = read_u8(bus, Block::Common, common::VERSIONR)?;
        if version != regs::VERSION {
            return Err(InitError::NotFound(version));
        }
        bus.write(Block::Common, common::SHAR, &config.mac)?;
        bus.write(Block::Socket0, socket::RXBUF_SIZE, &[regs::BUFFER_KB])?;
        bus.write(Block::Socket0, socket::TXBUF_SIZE, &[regs::BUFFER_KB])?;
        bus.write(Block::Socket0, socket::IMR, &[regs::IR_RECV])?;
        bus.write(Block::Common, common::SIMR, &[0x01])?;
        let rx_rd = open_macraw(bus, &config)?;
        let tx_wr = bus.read_u16(Block::Socket0, socket::TX_WR)?;
        info!("w5500: up, MACRAW on socket 0");
        Ok(Initialised {
            bus: self.bus,
            config,
            rx_rd,
            tx_wr,
        })
    }
}

/// Sn_MR for `config`: MACRAW with the MAC filter and the blocks asked for.
fn socket_mode(config: &Config) -> u8 {
    let mut mode = regs::MR_MACRAW | regs::MR_MFEN;
    if config.block_ipv6 {
        mode |= regs::MR_MIP6B;
    }
    if config.block_ipv4_multicast {
        mode |= regs::MR_MMB;
    }
    mode
}

/// Sets socket 0 to MACRAW and opens it, waiting for Sn_SR to say so; answers Sn_RX_RD.
pub(crate) fn open_macraw<S, CS>(bus: &mut Bus<S, CS>, config: &Config) -> Result<u16, InitError>
where
    S: SpiBus<u8> + AsyncSpiBus<u8>,
    CS: OutputPin,
{
    bus.write(Block::Socket0, socket::MR, &[socket_mode(config)])?;
    bus.write(Block::Socket0, socket::CR, &[regs::CMD_OPEN])?;
    wait(|| Ok(read_u8(bus, Block::Socket0, socket::SR)? == regs::SR_MACRAW))?;
    Ok(bus.read_u16(Block::Socket0, socket::RX_RD)?)
}

/// One byte register, polled.
fn read_u8<S, CS>(bus: &mut Bus<S, CS>, block: Block, offset: u16) -> Result<u8, BusError>
where
    S: SpiBus<u8> + AsyncSpiBus<u8>,
    CS: OutputPin,
{
    let mut b = [0];
    bus.read(block, offset, &mut b)?;
    Ok(b[0])
}

/// Polls `done` a bounded number of times.
fn wait(mut done: impl FnMut() -> Result<bool, BusError>) -> Result<(), InitError> {
    for _ in 0..POLLS {
        if done()? {
            return Ok(());
        }
    }
    Err(InitError::Timeout)
}
