//! The gate between an embassy-net driver and the apps ([`ServiceGate`]). embassy-net gives
//! an app no look at a frame before the stack handles it, and no say in when the stack
//! transmits; a driver that can hold a frame at the head of its receive queue (linklab-mac's
//! `EmbassyMac::with_gate`) gives both back, one frame at a time, for what needs them:
//!
//! - **a SYN to a served TCP port** is held until that service has had a turn to free a
//!   socket for it (spent, idle beyond the grace, or half-open: [`crate::evict::choose`], as
//!   the smoltcp `DeviceApps` does before smoltcp sees the SYN), and dropped instead when a
//!   handshake we answered may be completing ([`ServiceGate::defer`]: its client sends it
//!   again);
//! - **a SYN-ACK leaving** is noted ([`ServiceGate::sent`]), so a service knows which of its
//!   half-open connections a peer may already believe complete ([`ServiceGate::answered`]);
//! - **any TCP segment to a watched port** wakes the service that asked
//!   ([`ServiceGate::wake_on_segment`]): the iperf3 server while a stream receives, which
//!   leaves up to three bytes of a stream in its socket to keep the read position on a word
//!   (the receive slow mode, `crate::iperf::pool`), and which embassy-net would not wake for
//!   more while the socket still holds some; and the stack sends nothing until that service
//!   ran ([`ServiceGate::hold_tx`]), so its ACK carries the window the service's read opened;
//! - **a datagram to a served UDP port** (UDP echo) is held until the service has answered
//!   the one before it. The stack's pass that then takes it in also transmits what the
//!   service queued for the one before, so when the service reads it, a reply still queued
//!   did not leave when it could: its next hop does not answer ARP (the smoltcp main loop
//!   knows the same by running the egress after each frame; see [`crate::echo::ReplyLane`]).
//!
//! The driver calls [`ServiceGate::admit`] with every frame before lending it to the stack,
//! and [`ServiceGate::sent`] with every frame the stack built; a service asks
//! [`ServiceGate::asked`] on each poll and, when asked, does its part and calls
//! [`ServiceGate::answer`] (or [`ServiceGate::defer`]). One executor turn per new connection
//! and per echo request, and one iperf3 turn per segment while a stream receives; every
//! other frame passes at once.

use core::task::{Context, Waker};
use portable_atomic::{AtomicBool, AtomicU32, AtomicU8, Ordering};

use atomic_waker::AtomicWaker;

use crate::rules::{syn_ack, syn_port, tcp_port, udp_port, Peer};

/// Ports a gate can serve (HTTP, TCP echo, UDP echo, iperf3, one spare).
pub const WATCHED_PORTS: usize = 5;

/// A served port: the frames a gate holds for its service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Port {
    /// SYNs opening a connection to this TCP port.
    Tcp(u16),
    /// Datagrams to this UDP port.
    Udp(u16),
}

impl Port {
    /// The entry key: protocol above the port number; 0 is no port.
    fn key(self) -> u32 {
        match self {
            Port::Tcp(0) | Port::Udp(0) => 0,
            Port::Tcp(p) => 1 << 16 | u32::from(p),
            Port::Udp(p) => 2 << 16 | u32::from(p),
        }
    }

    /// The served port `frame` is for, if it is one the gate may hold (see the module docs).
    fn of(frame: &[u8]) -> Option<Port> {
        syn_port(frame)
            .map(Port::Tcp)
            .or_else(|| udp_port(frame).map(Port::Udp))
    }
}

const IDLE: u8 = 0;
const ASKED: u8 = 1;
const ANSWERED: u8 = 2;
const DEFERRED: u8 = 3;

/// What the driver does with a received frame ([`ServiceGate::admit`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Admit {
    /// Lend it to the stack.
    Pass,
    /// Keep it first in the queue until the gate wakes the stack's task.
    Hold,
    /// Take it from the queue unread: a SYN its service deferred.
    Drop,
}

/// SYN-ACKs remembered (the newest; see [`ServiceGate::answered`]). A service looks each
/// of its half-open sockets up on its next poll, so this only needs to outlast a turn of
/// the executor.
pub const ANSWERS: usize = 8;

/// One SYN-ACK that left: our port and the peer, packed (0: none).
struct Answer {
    addr: AtomicU32,
    ports: AtomicU32,
}

/// One served port: whose, whether a frame waits for it.
struct Entry {
    key: AtomicU32,
    state: AtomicU8,
    service: AtomicWaker,
}

impl Entry {
    const fn new() -> Entry {
        Entry {
            key: AtomicU32::new(0),
            state: AtomicU8::new(IDLE),
            service: AtomicWaker::new(),
        }
    }
}

/// The gate between an embassy-net driver and the apps (see the module docs). Lock-free;
/// put it in a `static`.
pub struct ServiceGate {
    entries: [Entry; WATCHED_PORTS],
    /// The stack's task, waiting for an answer.
    runner: AtomicWaker,
    /// The last SYN-ACKs that left, a ring.
    answers: [Answer; ANSWERS],
    next_answer: AtomicU8,
    /// The TCP port whose next segment wakes `segment` (0: none).
    segment_port: AtomicU32,
    /// The service waiting for a segment to `segment_port`.
    segment: AtomicWaker,
    /// Transmit tokens the driver still refuses the stack ([`ServiceGate::hold_tx`]) since a
    /// segment woke its service, which has not run since.
    tx_hold: AtomicU8,
    /// A token was refused since the service last ran: the stack's task waits to be woken.
    tx_refused: AtomicBool,
}

/// How many transmit tokens the driver refuses after a segment woke its service
/// ([`ServiceGate::hold_tx`]) until the service ran: the runner's pass that took the segment
/// in is refused once and waits; should something else run the runner before the service,
/// it is refused once more; a service that does not run holds the stack no longer.
pub const TX_HOLD_PASSES: u8 = 2;

impl Default for ServiceGate {
    fn default() -> Self {
        Self::new()
    }
}

impl ServiceGate {
    /// A gate with no port served yet.
    pub const fn new() -> ServiceGate {
        ServiceGate {
            entries: [const { Entry::new() }; WATCHED_PORTS],
            runner: AtomicWaker::new(),
            answers: [const {
                Answer {
                    addr: AtomicU32::new(0),
                    ports: AtomicU32::new(0),
                }
            }; ANSWERS],
            next_answer: AtomicU8::new(0),
            segment_port: AtomicU32::new(0),
            segment: AtomicWaker::new(),
            tx_hold: AtomicU8::new(0),
            tx_refused: AtomicBool::new(false),
        }
    }

    fn entry(&self, port: Port) -> Option<&Entry> {
        let key = port.key();
        self.entries
            .iter()
            .find(|e| key != 0 && e.key.load(Ordering::Acquire) == key)
    }

    /// A service starts answering for `port`; false if every entry is taken (its frames then
    /// pass unwatched).
    pub fn serve(&self, port: Port) -> bool {
        if port.key() == 0 {
            return false;
        }
        if self.entry(port).is_some() {
            return true;
        }
        self.entries.iter().any(|e| {
            e.key
                .compare_exchange(0, port.key(), Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        })
    }

    /// The driver, before lending `frame` to the stack: what to do with it ([`Admit`]) — pass
    /// it; hold it (it stays first in the queue) until the service of its port has answered,
    /// which wakes `waker` (the stack's task); or drop it, when the service deferred it.
    pub fn admit(&self, frame: &[u8], waker: &Waker) -> Admit {
        let watched = self.segment_port.load(Ordering::Acquire);
        if watched != 0 && tcp_port(frame).is_some_and(|p| u32::from(p) == watched) {
            self.segment_port.store(0, Ordering::Release);
            self.tx_hold.store(TX_HOLD_PASSES, Ordering::Release);
            self.segment.wake();
        }
        let Some(entry) = Port::of(frame).and_then(|p| self.entry(p)) else {
            return Admit::Pass;
        };
        match entry.state.load(Ordering::Acquire) {
            ANSWERED => {
                entry.state.store(IDLE, Ordering::Release);
                Admit::Pass
            }
            DEFERRED => {
                entry.state.store(IDLE, Ordering::Release);
                Admit::Drop
            }
            IDLE => {
                self.runner.register(waker);
                entry.state.store(ASKED, Ordering::Release);
                entry.service.wake();
                Admit::Hold
            }
            _ => {
                self.runner.register(waker);
                Admit::Hold
            }
        }
    }

    /// The driver, with each frame the stack built (once built): a SYN-ACK is remembered,
    /// so the service of its port can tell the half-open connection was answered.
    pub fn sent(&self, frame: &[u8]) {
        let Some((port, peer)) = syn_ack(frame) else {
            return;
        };
        let i = usize::from(self.next_answer.load(Ordering::Relaxed)) % ANSWERS;
        self.next_answer
            .store(((i + 1) % ANSWERS) as u8, Ordering::Relaxed);
        let a = &self.answers[i];
        a.addr
            .store(u32::from_be_bytes(peer.addr), Ordering::Relaxed);
        a.ports.store(
            u32::from(port) << 16 | u32::from(peer.port),
            Ordering::Release,
        );
    }

    /// True when a SYN-ACK from our `port` to `peer` left lately (one of the last
    /// [`ANSWERS`]).
    pub fn answered(&self, port: u16, peer: Peer) -> bool {
        let ports = u32::from(port) << 16 | u32::from(peer.port);
        let addr = u32::from_be_bytes(peer.addr);
        port != 0
            && self.answers.iter().any(|a| {
                a.ports.load(Ordering::Acquire) == ports && a.addr.load(Ordering::Relaxed) == addr
            })
    }

    /// The service of `port`, on each poll: true when a frame waits for its answer.
    /// Registers the service's task to be woken when one arrives.
    pub fn asked(&self, port: Port, cx: &mut Context<'_>) -> bool {
        let Some(entry) = self.entry(port) else {
            return false;
        };
        entry.service.register(cx.waker());
        entry.state.load(Ordering::Acquire) == ASKED
    }

    /// A service, on a poll: wake its task when the driver admits the next IPv4 TCP segment
    /// to `port` (once; the service asks again on each poll it still needs it), for a socket
    /// that keeps bytes it has seen (embassy-net wakes a reader only when its socket is
    /// empty), or to read before the stack sends its ACK ([`ServiceGate::hold_tx`], which
    /// the wake starts; call [`ServiceGate::service_runs`] on each poll). The wake comes as
    /// the driver lends the frame, before the stack has it: the service must run after the
    /// stack's pass (the images' single executor polls a woken task after the runner's pass
    /// returns; a service at a higher priority than the runner would read one segment
    /// early). One service per gate: a second call replaces the first's port and task. A
    /// frame the gate holds or drops wakes it too.
    pub fn wake_on_segment(&self, port: u16, cx: &mut Context<'_>) {
        self.segment.register(cx.waker());
        self.segment_port.store(u32::from(port), Ordering::Release);
    }

    /// The driver, before it hands the stack a token to transmit: true to refuse it, while
    /// the service a segment woke ([`ServiceGate::wake_on_segment`]) has not run (at most
    /// [`TX_HOLD_PASSES`] tokens). The stack's pass that took the segment in would send its
    /// ACK at once, with the window the unread segment left; after the service's read the
    /// next pass sends it again to update the window. Held, one ACK leaves, after the read,
    /// with the whole window: as the main loop sends it (ingress, apps, egress in one pass).
    /// A refused stack's task (`waker`; embassy-net sets no timer for a pass the driver
    /// refused) is woken when the service runs ([`ServiceGate::service_runs`]).
    pub fn hold_tx(&self, waker: &Waker) -> bool {
        // A load and a store, not one atomic step: only the stack's task calls this, and the
        // service, which clears the hold, never preempts it (it runs at no higher priority:
        // `wake_on_segment`).
        let left = self.tx_hold.load(Ordering::Acquire);
        if left == 0 {
            return false;
        }
        self.runner.register(waker);
        self.tx_refused.store(true, Ordering::Release);
        self.tx_hold.store(left - 1, Ordering::Release);
        true
    }

    /// The service that asked [`ServiceGate::wake_on_segment`], at the start of each poll:
    /// it runs, so the stack may transmit again ([`ServiceGate::hold_tx`]); a stack refused
    /// meanwhile is woken.
    pub fn service_runs(&self) {
        self.tx_hold.store(0, Ordering::Release);
        if self.tx_refused.swap(false, Ordering::AcqRel) {
            self.runner.wake();
        }
    }

    /// The service of `port` has done its part: the waiting frame goes to the stack.
    pub fn answer(&self, port: Port) {
        self.settle(port, ANSWERED);
    }

    /// The service of `port` defers the waiting SYN ([`crate::evict::Choice::Defer`]): it
    /// is dropped unanswered, and its client sends it again.
    pub fn defer(&self, port: Port) {
        self.settle(port, DEFERRED);
    }

    fn settle(&self, port: Port, verdict: u8) {
        if let Some(entry) = self.entry(port) {
            if entry
                .state
                .compare_exchange(ASKED, verdict, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            {
                self.runner.wake();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::task::Wake;

    struct Count(AtomicUsize);
    impl Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// An Ethernet/IPv4 frame of `protocol` with a 20-byte transport header to `port`.
    fn frame(protocol: u8, port: u16) -> [u8; 54] {
        let mut f = [0u8; 54];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&40u16.to_be_bytes());
        f[23] = protocol;
        f[46] = 5 << 4;
        f[36..38].copy_from_slice(&port.to_be_bytes());
        f[47] = 0x02;
        f
    }

    fn syn(port: u16) -> [u8; 54] {
        frame(6, port)
    }

    #[test]
    fn a_syn_for_a_served_port_waits_for_the_service() {
        let gate = ServiceGate::new();
        let runner = Arc::new(Count(AtomicUsize::new(0)));
        let service = Arc::new(Count(AtomicUsize::new(0)));
        let runner_waker = Waker::from(runner.clone());
        let service_waker = Waker::from(service.clone());
        let mut cx = Context::from_waker(&service_waker);
        assert!(gate.serve(Port::Tcp(80)));
        // Not served, not a SYN: pass.
        assert_eq!(Admit::Pass, gate.admit(&syn(81), &runner_waker));
        assert_eq!(Admit::Pass, gate.admit(&[0u8; 60], &runner_waker));
        assert!(!gate.asked(Port::Tcp(80), &mut cx));
        // A SYN for 80: held, the service woken and asked.
        assert_eq!(Admit::Hold, gate.admit(&syn(80), &runner_waker));
        assert_eq!(service.0.load(Ordering::Relaxed), 1);
        assert_eq!(Admit::Hold, gate.admit(&syn(80), &runner_waker));
        assert!(gate.asked(Port::Tcp(80), &mut cx));
        gate.answer(Port::Tcp(80));
        assert_eq!(runner.0.load(Ordering::Relaxed), 1);
        assert!(!gate.asked(Port::Tcp(80), &mut cx));
        // The same SYN passes once, the next one is held again.
        assert_eq!(Admit::Pass, gate.admit(&syn(80), &runner_waker));
        assert_eq!(Admit::Hold, gate.admit(&syn(80), &runner_waker));
    }

    #[test]
    fn a_deferred_syn_is_dropped_once() {
        let gate = ServiceGate::new();
        let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        let mut cx = Context::from_waker(&waker);
        assert!(gate.serve(Port::Tcp(80)));
        assert_eq!(Admit::Hold, gate.admit(&syn(80), &waker));
        assert!(gate.asked(Port::Tcp(80), &mut cx));
        gate.defer(Port::Tcp(80));
        assert_eq!(Admit::Drop, gate.admit(&syn(80), &waker));
        // The next SYN is asked about again.
        assert_eq!(Admit::Hold, gate.admit(&syn(80), &waker));
        // A verdict without a question changes nothing.
        gate.answer(Port::Tcp(80));
        gate.defer(Port::Tcp(7));
        assert_eq!(Admit::Pass, gate.admit(&syn(80), &waker));
    }

    #[test]
    fn syn_acks_that_left_are_remembered() {
        let gate = ServiceGate::new();
        let syn_ack = |port: u16, peer_port: u16| {
            let mut f = frame(6, peer_port);
            f[47] = 0x12;
            f[34..36].copy_from_slice(&port.to_be_bytes());
            f[30..34].copy_from_slice(&[198, 18, 0, 1]);
            f
        };
        let peer = |port| Peer {
            addr: [198, 18, 0, 1],
            port,
        };
        assert!(!gate.answered(80, peer(40000)));
        gate.sent(&syn_ack(80, 40000));
        gate.sent(&syn(80)); // not a SYN-ACK
        assert!(gate.answered(80, peer(40000)));
        assert!(!gate.answered(7, peer(40000)));
        assert!(!gate.answered(80, peer(40001)));
        // The ring keeps the last ANSWERS.
        for p in 1..=ANSWERS as u16 {
            gate.sent(&syn_ack(80, p));
        }
        assert!(!gate.answered(80, peer(40000)));
        assert!((1..=ANSWERS as u16).all(|p| gate.answered(80, peer(p))));
    }

    #[test]
    fn udp_and_tcp_on_one_port_are_served_apart() {
        let gate = ServiceGate::new();
        let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        let mut cx = Context::from_waker(&waker);
        assert!(gate.serve(Port::Udp(7)));
        // TCP 7 is not served: its SYN passes; a datagram to UDP 7 waits.
        assert_eq!(Admit::Pass, gate.admit(&syn(7), &waker));
        let mut datagram = frame(17, 7);
        datagram[16..18].copy_from_slice(&28u16.to_be_bytes());
        assert_eq!(Admit::Hold, gate.admit(&datagram, &waker));
        assert!(!gate.asked(Port::Tcp(7), &mut cx));
        assert!(gate.asked(Port::Udp(7), &mut cx));
        gate.answer(Port::Udp(7));
        assert_eq!(Admit::Pass, gate.admit(&datagram, &waker));
        // Port 0 is never served; entries run out after WATCHED_PORTS.
        assert!(!gate.serve(Port::Tcp(0)));
        for p in 1..WATCHED_PORTS as u16 {
            assert!(gate.serve(Port::Tcp(p)));
        }
        assert!(!gate.serve(Port::Tcp(999)));
    }

    #[test]
    fn a_watched_port_wakes_its_service_once_per_ask() {
        let gate = ServiceGate::new();
        let runner = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        let service = Arc::new(Count(AtomicUsize::new(0)));
        let service_waker = Waker::from(service.clone());
        let mut cx = Context::from_waker(&service_waker);
        let mut segment = frame(6, 5201);
        // An ACK: a data segment, not a SYN. Not asked: nothing wakes.
        segment[47] = 0x10;
        assert_eq!(Admit::Pass, gate.admit(&segment, &runner));
        assert_eq!(service.0.load(Ordering::Relaxed), 0);
        gate.wake_on_segment(5201, &mut cx);
        // Other ports, UDP to the port, and bytes that are no frame pass without waking.
        assert_eq!(Admit::Pass, gate.admit(&frame(6, 80), &runner));
        let mut datagram = frame(17, 5201);
        datagram[16..18].copy_from_slice(&28u16.to_be_bytes());
        assert_eq!(Admit::Pass, gate.admit(&datagram, &runner));
        assert_eq!(Admit::Pass, gate.admit(&[0u8; 60], &runner));
        assert_eq!(service.0.load(Ordering::Relaxed), 0);
        // The segment passes (the gate holds nothing for it) and wakes the service once.
        assert_eq!(Admit::Pass, gate.admit(&segment, &runner));
        assert_eq!(Admit::Pass, gate.admit(&segment, &runner));
        assert_eq!(service.0.load(Ordering::Relaxed), 1);
        gate.wake_on_segment(5201, &mut cx);
        assert_eq!(Admit::Pass, gate.admit(&segment, &runner));
        assert_eq!(service.0.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn the_stack_waits_to_transmit_until_the_woken_service_ran() {
        let gate = ServiceGate::new();
        let stack = Arc::new(Count(AtomicUsize::new(0)));
        let runner = Waker::from(stack.clone());
        let service = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        let mut cx = Context::from_waker(&service);
        let mut segment = frame(6, 5201);
        segment[47] = 0x10;
        // Nothing woken: the stack transmits.
        assert!(!gate.hold_tx(&runner));
        assert_eq!(Admit::Pass, gate.admit(&segment, &runner));
        assert!(!gate.hold_tx(&runner));
        gate.service_runs();
        assert_eq!(stack.0.load(Ordering::Relaxed), 0);
        // A segment wakes the service: the stack waits for it to run, and is woken then.
        gate.wake_on_segment(5201, &mut cx);
        assert_eq!(Admit::Pass, gate.admit(&segment, &runner));
        assert!(gate.hold_tx(&runner));
        assert_eq!(stack.0.load(Ordering::Relaxed), 0);
        gate.service_runs();
        assert_eq!(stack.0.load(Ordering::Relaxed), 1);
        assert!(!gate.hold_tx(&runner));
        gate.service_runs();
        assert_eq!(stack.0.load(Ordering::Relaxed), 1);
        // A service that does not run holds the stack for TX_HOLD_PASSES tokens, no more.
        gate.wake_on_segment(5201, &mut cx);
        assert_eq!(Admit::Pass, gate.admit(&segment, &runner));
        for _ in 0..TX_HOLD_PASSES {
            assert!(gate.hold_tx(&runner));
        }
        assert!(!gate.hold_tx(&runner));
        assert!(!gate.hold_tx(&runner));
    }
}
