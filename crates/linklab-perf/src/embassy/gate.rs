//! The gate between an embassy-net driver and the apps ([`ServiceGate`]). embassy-net gives
//! an app no look at a frame before the stack handles it, and no say in when the stack
//! transmits; a driver that can hold a frame at the head of its receive queue (linklab-mac's
//! `EmbassyMac::with_gate`) gives both back, one frame at a time, for what needs them:
//!
//! - **a SYN to a served TCP port** is held until that service has had a turn to free a
//!   socket for it (spent, idle beyond the grace, or half-open: [`crate::evict::idlest`], as
//!   the smoltcp `DeviceApps` does before smoltcp sees the SYN);
//! - **a datagram to a served UDP port** (UDP echo) is held until the service has answered
//!   the one before it. The stack's pass that then takes it in also transmits what the
//!   service queued for the one before, so when the service reads it, a reply still queued
//!   did not leave when it could: its next hop does not answer ARP (the smoltcp main loop
//!   knows the same by running the egress after each frame; see [`crate::echo::ReplyLane`]).
//!
//! The driver calls [`ServiceGate::admit`] with every frame before lending it to the stack;
//! a service asks [`ServiceGate::asked`] on each poll and, when asked, does its part and
//! calls [`ServiceGate::answer`]. One executor turn per new connection and per echo
//! request; every other frame passes at once.

use core::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use core::task::{Context, Waker};

use atomic_waker::AtomicWaker;

use crate::rules::{syn_port, udp_port};

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
}

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

    /// The driver, before lending `frame` to the stack: true to let it pass; false to hold it
    /// (it stays first in the queue) until the service of its port has answered, which wakes
    /// `waker` (the stack's task).
    pub fn admit(&self, frame: &[u8], waker: &Waker) -> bool {
        let Some(entry) = Port::of(frame).and_then(|p| self.entry(p)) else {
            return true;
        };
        match entry.state.load(Ordering::Acquire) {
            ANSWERED => {
                entry.state.store(IDLE, Ordering::Release);
                true
            }
            IDLE => {
                self.runner.register(waker);
                entry.state.store(ASKED, Ordering::Release);
                entry.service.wake();
                false
            }
            _ => {
                self.runner.register(waker);
                false
            }
        }
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

    /// The service of `port` has done its part: the waiting frame goes to the stack.
    pub fn answer(&self, port: Port) {
        if let Some(entry) = self.entry(port) {
            if entry
                .state
                .compare_exchange(ASKED, ANSWERED, Ordering::AcqRel, Ordering::Acquire)
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
        assert!(gate.admit(&syn(81), &runner_waker));
        assert!(gate.admit(&[0u8; 60], &runner_waker));
        assert!(!gate.asked(Port::Tcp(80), &mut cx));
        // A SYN for 80: held, the service woken and asked.
        assert!(!gate.admit(&syn(80), &runner_waker));
        assert_eq!(service.0.load(Ordering::Relaxed), 1);
        assert!(!gate.admit(&syn(80), &runner_waker));
        assert!(gate.asked(Port::Tcp(80), &mut cx));
        gate.answer(Port::Tcp(80));
        assert_eq!(runner.0.load(Ordering::Relaxed), 1);
        assert!(!gate.asked(Port::Tcp(80), &mut cx));
        // The same SYN passes once, the next one is held again.
        assert!(gate.admit(&syn(80), &runner_waker));
        assert!(!gate.admit(&syn(80), &runner_waker));
    }

    #[test]
    fn udp_and_tcp_on_one_port_are_served_apart() {
        let gate = ServiceGate::new();
        let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
        let mut cx = Context::from_waker(&waker);
        assert!(gate.serve(Port::Udp(7)));
        // TCP 7 is not served: its SYN passes; a datagram to UDP 7 waits.
        assert!(gate.admit(&syn(7), &waker));
        let mut datagram = frame(17, 7);
        datagram[16..18].copy_from_slice(&28u16.to_be_bytes());
        assert!(!gate.admit(&datagram, &waker));
        assert!(!gate.asked(Port::Tcp(7), &mut cx));
        assert!(gate.asked(Port::Udp(7), &mut cx));
        gate.answer(Port::Udp(7));
        assert!(gate.admit(&datagram, &waker));
        // Port 0 is never served; entries run out after WATCHED_PORTS.
        assert!(!gate.serve(Port::Tcp(0)));
        for p in 1..WATCHED_PORTS as u16 {
            assert!(gate.serve(Port::Tcp(p)));
        }
        assert!(!gate.serve(Port::Tcp(999)));
    }
}
