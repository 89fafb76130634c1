//! The driver embassy-net runs on: linklab-mac's `EmbassyMac` over the board's NIC, with
//! linklab-perf's service gate, publishing the MAC's counters for `/stats` after each pass of
//! the stack that lent it a received frame (the runner owns the driver, so the app tasks
//! cannot read it).

use core::cell::Cell;
use core::task::Context;

use critical_section::Mutex;
use embassy_net_driver::{Capabilities, Driver, HardwareAddress, LinkState};
pub use linklab_app_gate::AppGate;
use linklab_mac::embassy::{EmbassyMac, EmbassyTimeClock, LinkStatus, LINK_POLL_NS};
use linklab_mac::{Counters, Inline, PhyTx};

use crate::memory::QUEUE_BYTES;

/// The board's transmit side, behind a reference (one driver type for every board).
pub struct DynPhy(pub &'static mut dyn PhyTx);

impl PhyTx for DynPhy {
    fn transmit(&mut self, wire: &[u8]) {
        self.0.transmit(wire)
    }

    fn dropped(&mut self) -> u64 {
        self.0.dropped()
    }

    fn ready(&mut self) -> bool {
        self.0.ready()
    }

    fn completes_l4_checksums(&mut self) -> bool {
        self.0.completes_l4_checksums()
    }

    fn tx_buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        self.0.tx_buffer(len)
    }

    fn transmit_buffer(&mut self, len: usize) {
        self.0.transmit_buffer(len)
    }
}

/// The board's link bit as the driver's link source, read once per [`LINK_POLL_NS`]: the
/// driver asks for the link on every pass of the stack, and on mps2-an385 the bit is behind
/// the LAN9118's indirect PHY registers. The driver's timer wakes the stack every
/// [`LINK_POLL_NS`] (the default [`LinkStatus::watch`]), so an idle stack sees a change as
/// soon as it did when every pass read the bit; a busy one, at most that much later.
pub struct BoardLink {
    read: fn() -> bool,
    up: bool,
    /// Clock time (ns) from which the bit is read again.
    next_read_ns: u64,
}

impl BoardLink {
    /// The link bit `read`, read on the first pass.
    pub fn new(read: fn() -> bool) -> BoardLink {
        BoardLink {
            read,
            up: false,
            next_read_ns: 0,
        }
    }
}

impl LinkStatus for BoardLink {
    fn is_up(&mut self, now_ns: u64) -> bool {
        if now_ns >= self.next_read_ns {
            self.up = (self.read)();
            self.next_read_ns = now_ns.saturating_add(LINK_POLL_NS);
        }
        self.up
    }
}

/// The MAC as embassy-net's driver.
pub type Mac =
    EmbassyMac<'static, Inline<QUEUE_BYTES>, DynPhy, EmbassyTimeClock, BoardLink, AppGate>;

/// The MAC's counters as of the last pass of the stack that received a frame.
static COUNTERS: Mutex<Cell<Option<Counters>>> = Mutex::new(Cell::new(None));

/// The MAC's counters as of the last pass of the stack that received a frame: every
/// `/stats` request is such a frame, so its document has the counters of the pass that took
/// it in — everything received before it, and everything sent until then.
pub fn counters() -> Counters {
    critical_section::with(|cs| COUNTERS.borrow(cs).get()).unwrap_or_default()
}

/// [`Mac`], publishing its counters after each pass of the stack that lent it a received
/// frame (embassy-net reads the link state once per pass, after the frames). A pass that only
/// sends — every other pass while the device sends: one takes in the peer's ACK, the next
/// sends what the app then wrote — publishes nothing.
pub struct NetDriver {
    mac: Mac,
    /// A received frame was lent to the stack since the counters were last published.
    lent: bool,
}

impl NetDriver {
    /// Wraps the MAC.
    pub fn new(mac: Mac) -> NetDriver {
        NetDriver { mac, lent: false }
    }
}

impl Driver for NetDriver {
    type RxToken<'a>
        = <Mac as Driver>::RxToken<'a>
    where
        Self: 'a;
    type TxToken<'a>
        = <Mac as Driver>::TxToken<'a>
    where
        Self: 'a;

    fn receive(&mut self, cx: &mut Context<'_>) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        let tokens = self.mac.receive(cx);
        self.lent |= tokens.is_some();
        tokens
    }

    fn transmit(&mut self, cx: &mut Context<'_>) -> Option<Self::TxToken<'_>> {
        self.mac.transmit(cx)
    }

    fn link_state(&mut self, cx: &mut Context<'_>) -> LinkState {
        if self.lent {
            self.lent = false;
            let c = self.mac.mac().counters();
            critical_section::with(|cs| COUNTERS.borrow(cs).set(Some(c)));
        }
        self.mac.link_state(cx)
    }

    fn capabilities(&self) -> Capabilities {
        self.mac.capabilities()
    }

    fn hardware_address(&self) -> HardwareAddress {
        self.mac.hardware_address()
    }
}
