//! The MAC of a soft-PHY board: linklab-mac's RX queue (the PHY's receive side commits into
//! it), the MAC over the board's transmitter, as embassy-net's driver with the link from the
//! [`LinkMonitor`]. The MAC checks every frame's FCS and frames what the stack sends
//! (preamble, SFD, FCS: `MacConfig::decoding_phy`) for the transmitter to encode, and does
//! the IPv4, TCP and UDP checksums (checksum offload).

use core::task::Context;

use embassy_net_driver::{Capabilities, Driver as NetDriver, HardwareAddress, LinkState};
use linklab_mac::window::{capacity_for_frames, tcp_rx_window};
use linklab_mac::{
    EmbassyMac, EmbassyTimeClock, Inline, Mac, MacAddr, MacConfig, PhyTx, RxFormat, RxQueue,
};

use crate::counters::MacCounters;
use crate::rx::{LinkMonitor, MonitoredLink};

/// Full-length frames the RX queue holds: the TCP window below is this many segments less
/// two frames of slack for ACKs and ARP, so a window sent back to back is never dropped here.
pub const QUEUE_FRAMES: usize = 8;
/// The RX queue's bytes.
pub const QUEUE_BYTES: usize = capacity_for_frames(QUEUE_FRAMES, RxFormat::Aligned { fcs: true });
/// A full-size TCP segment's payload.
pub const MSS: usize = 1460;
/// The TCP receive window the queue carries at line rate.
pub const TCP_WINDOW: usize =
    tcp_rx_window(QUEUE_BYTES, RxFormat::Aligned { fcs: true }, MSS) - 2 * MSS;
/// 10BASE-T: the MAC times its inter-packet gap at this rate.
pub const LINE_RATE_BPS: u64 = 10_000_000;

/// The RX queue.
pub type Queue = RxQueue<Inline<QUEUE_BYTES>>;

/// embassy-net's driver over the board's transmitter `T`.
pub type Driver<T> = EmbassyMac<'static, Inline<QUEUE_BYTES>, T, EmbassyTimeClock, MonitoredLink>;

/// The MAC at address `mac` over `queue` (whose producer the receive side holds) and the
/// transmitter `tx`, as embassy-net's driver.
pub fn driver<T: PhyTx>(
    queue: &'static Queue,
    tx: T,
    mac: [u8; 6],
    link: &'static LinkMonitor,
) -> Driver<T> {
    let mut mac = Mac::new(
        queue.consumer(),
        tx,
        EmbassyTimeClock,
        MacConfig::decoding_phy(MacAddr(mac), LINE_RATE_BPS),
    );
    // The MAC checks and fills the IPv4, TCP and UDP checksums a word at a time (embassy-net's
    // smoltcp then does neither): on the RP2040's M0+ the stack's core is the busier one
    // sending at line rate.
    mac.set_checksum_offload(true);
    EmbassyMac::new(mac, MonitoredLink(link))
}

/// The MAC's driver publishing the MAC's counters into a [`MacCounters`] (for `/stats`) after
/// each poll that lent a frame or handed out a TX token: the MAC itself belongs to
/// embassy-net's runner.
pub struct CountingDriver<T: PhyTx + 'static> {
    driver: Driver<T>,
    counters: &'static MacCounters,
    /// A frame or a TX token was handed out since the last publication.
    busy: bool,
}

impl<T: PhyTx + 'static> CountingDriver<T> {
    /// `driver`, publishing into `counters`.
    pub fn new(driver: Driver<T>, counters: &'static MacCounters) -> Self {
        CountingDriver {
            driver,
            counters,
            busy: true,
        }
    }
}

impl<T: PhyTx + 'static> NetDriver for CountingDriver<T> {
    type RxToken<'a>
        = <Driver<T> as NetDriver>::RxToken<'a>
    where
        Self: 'a;
    type TxToken<'a>
        = <Driver<T> as NetDriver>::TxToken<'a>
    where
        Self: 'a;

    fn receive(&mut self, cx: &mut Context<'_>) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        let tokens = self.driver.receive(cx);
        self.busy |= tokens.is_some();
        tokens
    }

    fn transmit(&mut self, cx: &mut Context<'_>) -> Option<Self::TxToken<'_>> {
        let token = self.driver.transmit(cx);
        self.busy |= token.is_some();
        token
    }

    /// Called on every poll of embassy-net's runner: publishes the counters if a frame
    /// went either way since the last time.
    fn link_state(&mut self, cx: &mut Context<'_>) -> LinkState {
        if self.busy {
            self.busy = false;
            self.counters.publish(self.driver.mac().counters());
        }
        self.driver.link_state(cx)
    }

    fn capabilities(&self) -> Capabilities {
        self.driver.capabilities()
    }

    fn hardware_address(&self) -> HardwareAddress {
        self.driver.hardware_address()
    }
}
