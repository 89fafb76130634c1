//! embassy-net support (feature `embassy`): [`EmbassyMac`] owns a [`Mac`] and a
//! [`LinkStatus`] and is an `embassy_net_driver::Driver` (embassy-net-driver 0.2).
//!
//! The same zero-copy path as the smoltcp `Device`: the RX token lends the frame in place in
//! the RX queue (released when the token is consumed or dropped), the TX token builds the
//! frame in place in the MAC's TX buffer. What embassy adds is the wakers:
//!
//! * **RX**: `receive` registers the task's waker in the RX queue *before* reading it; every
//!   commit (the PHY's interrupt, [`crate::RxProducer::push`]) wakes it. The queue's waker
//!   is a lock-free `AtomicWaker` (CAS, no critical section), present only with this feature.
//! * **TX**: while a frame waits for the inter-packet gap or a received PAUSE, the driver
//!   hands out no tokens and asks the clock's [`WakeAt`] to wake the task when it may go
//!   ([`Mac::poll_at_ns`]); PAUSE refreshes are timed the same way. While the PHY has no room
//!   for a frame ([`PhyTx::ready`]: every transmit buffer in flight), it hands out none
//!   either and looks again [`TX_FULL_RETRY_NS`] later (a driver says nothing when a buffer
//!   frees; what it was handed meanwhile it would drop).
//! * **Link**: [`LinkStatus`] either wakes the task on a change ([`LinkSignal`]) or is read
//!   again every [`LINK_POLL_NS`] on the clock's timer.
//! * **A look at each frame** ([`FrameGate`], [`EmbassyMac::with_gate`]): each received frame
//!   is shown to the gate before it is lent to embassy-net, which may hold it at the head of
//!   the queue until it wakes the task, or drop it; each frame sent is shown to it once built
//!   (linklab-perf's `ServiceGate` holds a SYN until its service has freed a socket for it, or
//!   drops it while a handshake the service answered may complete, notes the SYN-ACKs that
//!   leave, and holds a UDP echo request until the reply before it had its turn to leave:
//!   embassy-net itself gives no such look).
//!
//! embassy-net brings its own smoltcp; this module never names a smoltcp type, so the two
//! stacks' smoltcp versions never meet (see the crate README).

mod link;
mod timer;

use core::task::{Context, Waker};

use embassy_net_driver::{Capabilities, Checksum, Driver, HardwareAddress, LinkState};

pub use link::{AlwaysUp, LinkSignal, LinkStatus, LINK_POLL_NS};
#[cfg(feature = "embassy-time")]
pub use timer::EmbassyTimeClock;
pub use timer::WakeAt;

use crate::frame::MAX_FRAME_LEN;
use crate::mac::{Mac, PhyTx, RxFrame, TxSide};
use crate::queue::Storage;
use crate::timing::Clock;

/// How soon the driver looks again when the PHY had no room for a frame, in ns of the MAC's
/// clock: 50 µs, under half the time a full-size frame takes on a 100 Mbit/s line, so a
/// buffer that frees is used within a frame time; a wake-up every 50 µs only while full.
pub const TX_FULL_RETRY_NS: u64 = 50_000;

/// What the driver does with a received frame ([`FrameGate::admit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Admit {
    /// Lend it to the stack.
    Pass,
    /// Keep it at the head of the queue (nothing behind it is received either) until the
    /// gate wakes the stack's task, which asks again.
    Hold,
    /// Take it from the queue without lending it to the stack (counted as received by the
    /// MAC: it was a good frame, refused above it).
    Drop,
}

/// Looks at each frame: received ones before the stack does, sent ones once the stack built
/// them.
pub trait FrameGate {
    /// Called with the next good frame, the one the stack receives next (see [`Mac::peek`]),
    /// before it is lent to the stack: pass it, hold it until the gate wakes `waker` (the
    /// stack's task), or drop it. Keep holds short.
    fn admit(&mut self, frame: &[u8], waker: &Waker) -> Admit;

    /// Called with each frame the stack built, before it leaves. Nothing by default.
    fn sent(&mut self, _frame: &[u8]) {}

    /// Called before the driver hands the stack a token to transmit: true refuses it, and
    /// the gate wakes `waker` (the stack's task) when it may send. Keep holds short. Never
    /// by default.
    fn hold_tx(&mut self, _waker: &Waker) -> bool {
        false
    }
}

/// No gate: every frame goes to the stack at once.
#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OpenGate;

impl FrameGate for OpenGate {
    fn admit(&mut self, _frame: &[u8], _waker: &Waker) -> Admit {
        Admit::Pass
    }
}

/// A [`Mac`] and its link source as an `embassy_net_driver::Driver`.
///
/// Give it to `embassy_net::new` by value, or as `&mut` to keep it (and read its counters)
/// after the stack is gone.
pub struct EmbassyMac<
    'q,
    S: Storage,
    T: PhyTx,
    C: Clock + WakeAt,
    L: LinkStatus,
    G: FrameGate = OpenGate,
> {
    mac: Mac<'q, S, T, C>,
    link: L,
    gate: G,
    /// The last link state read (for the up/down log line).
    link_up: Option<bool>,
    /// Clock time from which a polled link source gets a new timer wake-up.
    next_link_wake_ns: u64,
    /// The stack task's waker, for a TX token that defers its frame.
    waker: Option<Waker>,
}

impl<'q, S: Storage, T: PhyTx, C: Clock + WakeAt, L: LinkStatus> EmbassyMac<'q, S, T, C, L> {
    /// The driver for `mac`, with the link state from `link`.
    pub fn new(mac: Mac<'q, S, T, C>, link: L) -> Self {
        EmbassyMac {
            mac,
            link,
            gate: OpenGate,
            link_up: None,
            next_link_wake_ns: 0,
            waker: None,
        }
    }
}

impl<'q, S: Storage, T: PhyTx, C: Clock + WakeAt, L: LinkStatus, G: FrameGate>
    EmbassyMac<'q, S, T, C, L, G>
{
    /// The same driver with `gate` looking at each frame ([`FrameGate`]).
    pub fn with_gate<H: FrameGate>(self, gate: H) -> EmbassyMac<'q, S, T, C, L, H> {
        EmbassyMac {
            mac: self.mac,
            link: self.link,
            gate,
            link_up: self.link_up,
            next_link_wake_ns: self.next_link_wake_ns,
            waker: self.waker,
        }
    }

    /// The MAC (counters, filter, configuration).
    pub fn mac(&self) -> &Mac<'q, S, T, C> {
        &self.mac
    }

    /// The MAC, mutably.
    pub fn mac_mut(&mut self) -> &mut Mac<'q, S, T, C> {
        &mut self.mac
    }

    /// The link source.
    pub fn link(&self) -> &L {
        &self.link
    }

    /// The MAC and the link source back.
    pub fn into_inner(self) -> (Mac<'q, S, T, C>, L) {
        (self.mac, self.link)
    }

    /// Sends what time allows; if a frame is still deferred, asks the clock to wake `waker`
    /// when it may go and answers true; if the PHY has no room for a frame
    /// ([`crate::PhyTx::ready`]), asks for a wake-up [`TX_FULL_RETRY_NS`] later and answers
    /// true. Also schedules any other timed MAC work.
    fn tx_blocked(&mut self, waker: &Waker) -> bool {
        // Called for every token: without timed work the MAC's poll would only read the clock.
        if self.mac.has_timed_work() {
            self.mac.poll();
            if let Some(at) = self.mac.poll_at_ns() {
                self.mac.clock().wake_at(at, waker);
            }
            if self.mac.tx_deferred() {
                return true;
            }
        }
        if !self.mac.phy_mut().ready() {
            let at = self.mac.clock().now_ns().saturating_add(TX_FULL_RETRY_NS);
            self.mac.clock().wake_at(at, waker);
            return true;
        }
        false
    }
}

/// Keeps a clone of the task's waker (cloned again only when the task changes).
fn remember<'w>(slot: &'w mut Option<Waker>, waker: &Waker) -> &'w Waker {
    if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
        *slot = Some(waker.clone());
    }
    slot.get_or_insert_with(|| waker.clone())
}

/// A received frame lent to embassy-net in place (released when consumed or dropped).
pub struct EmbassyRxToken<'q, S: Storage> {
    frame: RxFrame<'q, S>,
}

/// Permission to build one frame in place in the MAC's TX buffer.
pub struct EmbassyTxToken<'a, T: PhyTx, C: Clock + WakeAt, G: FrameGate> {
    tx: &'a mut TxSide<T, C>,
    waker: &'a Waker,
    gate: &'a mut G,
}

impl<S: Storage> embassy_net_driver::RxToken for EmbassyRxToken<'_, S> {
    fn consume<R, F>(mut self, f: F) -> R
    where
        F: FnOnce(&mut [u8]) -> R,
    {
        f(&mut self.frame)
    }
}

impl<T: PhyTx, C: Clock + WakeAt, G: FrameGate> embassy_net_driver::TxToken
    for EmbassyTxToken<'_, T, C, G>
{
    fn consume<R, F>(self, len: usize, f: F) -> R
    where
        F: FnOnce(&mut [u8]) -> R,
    {
        self.tx.count_request();
        let gate = self.gate;
        let r = self.tx.send(len, |frame| {
            let r = f(frame);
            gate.sent(frame);
            r
        });
        if self.tx.has_deferred() {
            // The frame waits for the gap or a PAUSE: wake the stack when it may go.
            self.tx.clock().wake_at(self.tx.ready_at_ns(), self.waker);
        }
        r
    }
}

impl<'q, S: Storage, T: PhyTx, C: Clock + WakeAt, L: LinkStatus, G: FrameGate> Driver
    for EmbassyMac<'q, S, T, C, L, G>
{
    type RxToken<'a>
        = EmbassyRxToken<'q, S>
    where
        Self: 'a;
    type TxToken<'a>
        = EmbassyTxToken<'a, T, C, G>
    where
        Self: 'a;

    fn receive(&mut self, cx: &mut Context<'_>) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        // As the smoltcp Device: no token pair while a frame is deferred (the TX token could
        // not send); the timer wakes the task when it may.
        if self.tx_blocked(cx.waker()) {
            return None;
        }
        // Register first: a commit after the read finds the waker in place.
        self.mac.rx_queue().register_rx_waker(cx.waker());
        let gate = &mut self.gate;
        loop {
            match self.mac.peek(|f| gate.admit(f, cx.waker())) {
                Some(Admit::Pass) => break,
                Some(Admit::Drop) => {
                    self.mac.drop_next();
                }
                // Nothing queued (a commit from now on wakes the task), or the gate holds it.
                Some(Admit::Hold) | None => return None,
            }
        }
        let frame = self.mac.receive()?;
        let waker = remember(&mut self.waker, cx.waker());
        let tx = self.mac.tx_side();
        let gate = &mut self.gate;
        Some((EmbassyRxToken { frame }, EmbassyTxToken { tx, waker, gate }))
    }

    /// None while a frame is deferred, or while the PHY has no room for one (its buffers all
    /// in flight: virtio-net's driver would drop the frame, and the TCP stream lose the
    /// segment to a retransmission timeout); the stack is woken to try again
    /// [`TX_FULL_RETRY_NS`] later (a NIC that frees its transmit buffers without an interrupt
    /// says nothing when it does).
    fn transmit(&mut self, cx: &mut Context<'_>) -> Option<Self::TxToken<'_>> {
        if self.gate.hold_tx(cx.waker()) || self.tx_blocked(cx.waker()) {
            return None;
        }
        let waker = remember(&mut self.waker, cx.waker());
        let tx = self.mac.tx_side();
        let gate = &mut self.gate;
        Some(EmbassyTxToken { tx, waker, gate })
    }

    fn link_state(&mut self, cx: &mut Context<'_>) -> LinkState {
        let now = self.mac.clock().now_ns();
        if let Some(every) = self.link.watch(cx.waker()) {
            if now >= self.next_link_wake_ns {
                self.next_link_wake_ns = now.saturating_add(every);
                self.mac.clock().wake_at(self.next_link_wake_ns, cx.waker());
            }
        }
        let up = self.link.is_up(now);
        if self.link_up != Some(up) {
            info!("link {}", if up { "up" } else { "down" });
            self.link_up = Some(up);
        }
        if up {
            LinkState::Up
        } else {
            LinkState::Down
        }
    }

    /// Ethernet, MTU 1514 (embassy-net's MTU counts the Ethernet header), and the burst size
    /// derived from the RX queue that keeps smoltcp's TCP window within it, as for the
    /// smoltcp `Device` ([`Mac::max_burst_size`]). Checksums in software, unless the MAC
    /// verifies and fills the IPv4/TCP/UDP ones ([`Mac::set_checksum_offload`]; ICMP stays
    /// with the stack).
    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::default();
        caps.max_transmission_unit = MAX_FRAME_LEN;
        caps.max_burst_size = self.mac.max_burst_size();
        if self.mac.checksum_offload() {
            caps.checksum.ipv4 = Checksum::None;
            caps.checksum.tcp = Checksum::None;
            caps.checksum.udp = Checksum::None;
        }
        caps
    }

    fn hardware_address(&self) -> HardwareAddress {
        HardwareAddress::Ethernet(self.mac.address().0)
    }
}
