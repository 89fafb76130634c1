//! What became of every SYN a service saw: passed to a listening socket at once, held in
//! the device until a socket was freed for it, or dropped unanswered for its client to send
//! again. No SYN to a served port is refused with a RST: a client that finds every socket
//! busy waits, as lwIP's clients do (`tcp_listen_input` drops a SYN it has no PCB for) and as
//! Linux's wait in a listen backlog, and is served when a connection ends. A refusal, where a
//! protocol has one, is the protocol's (iperf3's ACCESS_DENIED: the service's `denied`).
//!
//! Each home of the apps tells a service's [`SynCounts`] what it did with the SYN it looks
//! at: the smoltcp main loop before smoltcp sees the SYN (`apps::DeviceApps`), the embassy
//! apps when the driver's `ServiceGate` asks (a held SYN is asked about again on each turn
//! until it passes or is dropped). Their law: `syns` is the SYNs passed at once plus
//! `syns_held` plus `listen_drops`, plus one while a SYN is held; the ones passed at once,
//! the rest, are not counted apart (`/stats` has a body of 2 KB on a device).

/// Every SYN a service saw, by what became of it (see the module docs). Wraps at 2^32.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SynCounts {
    /// SYNs seen: those passed at once to a socket that listened (or was freed for them at
    /// once), `held` and `listen_drops`, plus one while a SYN is held.
    pub syns: u32,
    /// Passed once a socket was freed for them: held in the device meanwhile (the embassy
    /// gate), answered late without a retransmission of the client's.
    pub held: u32,
    /// Dropped unanswered (Linux's name): every socket was busy, or a handshake we answered
    /// may be completing; the client sends its SYN again (1, 3, 7 … s later).
    pub listen_drops: u32,
    /// The SYN looked at now is held (it is asked about again).
    holding: bool,
}

impl SynCounts {
    /// No SYN seen yet.
    pub const fn new() -> SynCounts {
        SynCounts {
            syns: 0,
            held: 0,
            listen_drops: 0,
            holding: false,
        }
    }

    /// The SYN looked at goes to a listening socket now.
    pub fn pass(&mut self) {
        self.see();
        if self.holding {
            self.held = self.held.wrapping_add(1);
        }
        self.holding = false;
    }

    /// The SYN looked at waits in the device while a socket is freed for it.
    pub fn hold(&mut self) {
        self.see();
        self.holding = true;
    }

    /// The SYN looked at is dropped unanswered (held before or not).
    pub fn drop_unanswered(&mut self) {
        self.see();
        self.listen_drops = self.listen_drops.wrapping_add(1);
        self.holding = false;
    }

    /// True while a SYN is held.
    pub fn holding(&self) -> bool {
        self.holding
    }

    /// A SYN not held already is a new one.
    fn see(&mut self) {
        if !self.holding {
            self.syns = self.syns.wrapping_add(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The law of the module docs, with the SYNs passed at once counted by the test.
    fn law(c: &SynCounts, passed: u32) -> bool {
        c.syns == passed + c.held + c.listen_drops + u32::from(c.holding())
    }

    #[test]
    fn every_syn_is_counted_once_by_what_became_of_it() {
        let mut c = SynCounts::new();
        c.pass();
        c.drop_unanswered();
        assert!(law(&c, 1));
        // Held over three turns, then passed: one SYN, held.
        c.hold();
        assert!(law(&c, 1));
        c.hold();
        c.hold();
        assert!(law(&c, 1));
        c.pass();
        // Held, then dropped: one SYN, dropped.
        c.hold();
        c.drop_unanswered();
        assert!(law(&c, 1));
        assert_eq!((c.syns, c.held, c.listen_drops), (4, 1, 2), "{c:?}");
    }
}
