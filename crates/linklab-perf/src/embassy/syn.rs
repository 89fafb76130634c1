//! Making room for a SYN on embassy-net, whose stack gives no look at a frame before it
//! answers it: the driver holds each SYN for a served port at the head of its receive queue
//! until that service has had a turn to free a socket for it ([`SynWatch`]).
//!
//! The driver side calls [`SynWatch::admit`] with every frame before lending it to the stack
//! (linklab-mac's `EmbassyMac::with_gate`); the service side asks [`SynWatch::asked`] on each
//! poll and, when asked, frees a socket if none listens (by [`crate::evict::idlest`], as the
//! smoltcp `DeviceApps`) and calls [`SynWatch::answer`]. One executor turn per new
//! connection; everything else passes at once.

use core::sync::atomic::{AtomicU16, AtomicU8, Ordering};
use core::task::{Context, Waker};

use atomic_waker::AtomicWaker;

use crate::rules::syn_port;

/// Ports a watch can serve (HTTP, echo, iperf3, one spare).
pub const WATCHED_PORTS: usize = 4;

const IDLE: u8 = 0;
const ASKED: u8 = 1;
const ANSWERED: u8 = 2;

/// One watched port: who serves it, whether a SYN waits for it.
struct Entry {
    port: AtomicU16,
    state: AtomicU8,
    service: AtomicWaker,
}

impl Entry {
    const fn new() -> Entry {
        Entry {
            port: AtomicU16::new(0),
            state: AtomicU8::new(IDLE),
            service: AtomicWaker::new(),
        }
    }
}

/// The SYN gate between an embassy-net driver and the services (see the module docs).
/// Lock-free; put it in a `static`.
pub struct SynWatch {
    entries: [Entry; WATCHED_PORTS],
    /// The stack's task, waiting for an answer.
    runner: AtomicWaker,
}

impl Default for SynWatch {
    fn default() -> Self {
        Self::new()
    }
}

impl SynWatch {
    /// A watch with no port served yet.
    pub const fn new() -> SynWatch {
        SynWatch {
            entries: [Entry::new(), Entry::new(), Entry::new(), Entry::new()],
            runner: AtomicWaker::new(),
        }
    }

    fn entry(&self, port: u16) -> Option<&Entry> {
        self.entries
            .iter()
            .find(|e| port != 0 && e.port.load(Ordering::Acquire) == port)
    }

    /// A service starts answering for `port`; false if every entry is taken (its SYNs then
    /// pass unwatched).
    pub fn serve(&self, port: u16) -> bool {
        if self.entry(port).is_some() {
            return true;
        }
        self.entries.iter().any(|e| {
            e.port
                .compare_exchange(0, port, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
        })
    }

    /// The driver, before lending `frame` to the stack: true to let it pass; false to hold it
    /// (it stays first in the queue) until the service of its port has answered, which wakes
    /// `waker` (the stack's task).
    pub fn admit(&self, frame: &[u8], waker: &Waker) -> bool {
        let Some(entry) = syn_port(frame).and_then(|p| self.entry(p)) else {
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

    /// The service of `port`, on each poll: true when a SYN waits for its answer. Registers
    /// the service's task to be woken when one arrives.
    pub fn asked(&self, port: u16, cx: &mut Context<'_>) -> bool {
        let Some(entry) = self.entry(port) else {
            return false;
        };
        entry.service.register(cx.waker());
        entry.state.load(Ordering::Acquire) == ASKED
    }

    /// The service of `port` has made what room it could: the waiting SYN goes to the stack.
    pub fn answer(&self, port: u16) {
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

    fn syn(port: u16) -> [u8; 54] {
        let mut f = [0u8; 54];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45;
        f[16..18].copy_from_slice(&40u16.to_be_bytes());
        f[23] = 6;
        f[46] = 5 << 4;
        f[36..38].copy_from_slice(&port.to_be_bytes());
        f[47] = 0x02;
        f
    }

    #[test]
    fn a_syn_for_a_served_port_waits_for_the_service() {
        let watch = SynWatch::new();
        let runner = Arc::new(Count(AtomicUsize::new(0)));
        let service = Arc::new(Count(AtomicUsize::new(0)));
        let runner_waker = Waker::from(runner.clone());
        let service_waker = Waker::from(service.clone());
        let mut cx = Context::from_waker(&service_waker);
        assert!(watch.serve(80));
        // Not served, not a SYN: pass.
        assert!(watch.admit(&syn(81), &runner_waker));
        assert!(watch.admit(&[0u8; 60], &runner_waker));
        assert!(!watch.asked(80, &mut cx));
        // A SYN for 80: held, the service woken and asked.
        assert!(!watch.admit(&syn(80), &runner_waker));
        assert_eq!(service.0.load(Ordering::Relaxed), 1);
        assert!(!watch.admit(&syn(80), &runner_waker));
        assert!(watch.asked(80, &mut cx));
        watch.answer(80);
        assert_eq!(runner.0.load(Ordering::Relaxed), 1);
        assert!(!watch.asked(80, &mut cx));
        // The same SYN passes once, the next one is held again.
        assert!(watch.admit(&syn(80), &runner_waker));
        assert!(!watch.admit(&syn(80), &runner_waker));
    }
}
