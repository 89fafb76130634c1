//! Socket roles: data sockets (large buffers) listen only while a test's streams are being
//! connected, control sockets (small buffers) the rest of the time.

use super::{Handshake, PoolServer, PoolSockets, Slot};
use crate::data_memory::{DataPlan, Share};
use crate::iperf::json::Protocol;
use crate::iperf::session::Phase;
use crate::socket::{TcpOps, TcpState};

impl<'a, E: Copy + PartialEq, const N: usize, const S: usize> PoolServer<'a, E, N, S> {
    /// Gives the sockets roles: sockets `..d` (at most the socket count less one) are data
    /// sockets, which listen only while a test's TCP streams are being connected and are
    /// parked (closed, their buffers back with the adapter: [`PoolSockets::release`])
    /// otherwise; the rest carry control connections (one for the test, one more to answer
    /// a second client ACCESS_DENIED) and need only small buffers. While streams are being
    /// connected the control sockets do not listen, so a stream never lands on one. A test
    /// needing more streams than `d` is refused (`IENUMSTREAMS`). Without roles (`d` = 0,
    /// the default) every socket takes any role and all listen.
    pub fn set_data_slots(&mut self, d: usize) {
        self.data_slots = d.min(N.saturating_sub(1));
        for i in 0..self.data_slots {
            self.slots[i] = Slot::Parked;
        }
    }

    /// [`set_data_slots`](Self::set_data_slots), with the data memory the data sockets are
    /// lent shared as `plan` says: each test's streams get an equal share of it
    /// ([`DataPlan::stream_share`]), so a test may have as many streams as there are data
    /// sockets and the memory gives each a window of two segments (and a sending one a
    /// segment to send).
    pub fn set_data_memory(&mut self, d: usize, plan: DataPlan) {
        self.set_data_slots(d);
        self.plan = Some(plan);
    }

    /// True while a test's TCP streams are being connected (data sockets listen then).
    pub(super) fn streams_connecting(&self) -> bool {
        self.held()
            && self.session.phase() == Phase::CreateStreams
            && self.session.params().protocol == Protocol::Tcp
    }

    /// Listens on the sockets whose role wants a listener now and parks the others (see
    /// [`set_data_slots`](Self::set_data_slots)): data sockets while streams are being
    /// connected, control sockets otherwise. A socket holding a connection keeps it.
    pub(super) fn apply_roles<P: PoolSockets>(&mut self, sockets: &mut P, n: usize) {
        let streams = self.streams_connecting();
        // Data sockets listen for the streams still to come, no more (each takes a share; a
        // build of one stream at a time has one data socket).
        let mut wanted = if cfg!(any(feature = "iperf-parallel", feature = "iperf-bidir")) {
            self.test_streams()
                .saturating_sub(self.data_sockets_ready(n))
        } else {
            usize::MAX
        };
        for i in 0..n {
            let data = i < self.data_slots;
            let listen = data == streams;
            match self.slots[i] {
                Slot::Parked if listen && data && wanted == 0 => {}
                Slot::Parked if listen && (!data || sockets.prepare(i, self.share)) => {
                    if data {
                        wanted -= 1;
                    }
                    let mut s = sockets.tcp(i);
                    s.abort();
                    let _ = s.listen(self.port);
                    self.slots[i] = Slot::Listening;
                }
                Slot::Listening if !listen => self.park_if_idle(sockets, i),
                _ => {}
            }
        }
        // All or nothing while CREATE_STREAMS waits for them (it has not left: the session
        // still holds it): when a stream's share cannot be lent, the shares lent so far go
        // back, so that the next try lends them side by side. Left where first fit put them
        // (around iperf 2's idle slice, which it gives back only after iperf3's claim), they
        // could split the memory into holes that no share fits, and CREATE_STREAMS would
        // wait until the watchdog ended the test (seen with `-P 3` then `-P 3 -R`).
        let short = cfg!(any(feature = "iperf-parallel", feature = "iperf-bidir")) && wanted > 0;
        if streams && short && !self.session.control_output().is_empty() {
            for i in 0..n.min(self.data_slots) {
                if self.slots[i] == Slot::Listening {
                    self.park_if_idle(sockets, i);
                }
            }
        }
    }

    /// Parks listening socket `i` (a data socket's buffers back with the adapter) unless a
    /// connection is arriving on it or its RST has not left yet.
    fn park_if_idle<P: PoolSockets>(&mut self, sockets: &mut P, i: usize) {
        let idle = {
            let mut s = sockets.tcp(i);
            let idle = matches!(
                s.state(),
                TcpState::Listen | TcpState::Closed | TcpState::TimeWait
            ) && !s.rst_pending();
            if idle {
                s.abort();
            }
            idle
        };
        if idle {
            self.slots[i] = Slot::Parked;
            self.handshakes[i] = Handshake::default();
            if i < self.data_slots {
                sockets.release(i);
            }
        }
    }

    /// How many streams a test of `p` may have: the data sockets (with roles: as many as
    /// the data memory gives a share, [`DataPlan::stream_share`]), else every socket but the
    /// control and the spare one; at most the session's `S`.
    pub(super) fn stream_capacity(&self, n: usize, p: &crate::iperf::json::Params) -> usize {
        let sockets = if self.data_slots > 0 {
            self.data_slots
        } else {
            n.saturating_sub(2)
        };
        let (receives, sends) = directions(p);
        let memory = |streams: usize| {
            self.plan
                .is_none_or(|plan: DataPlan| share_of(&plan, streams, receives, sends).is_some())
        };
        (1..=sockets.min(S))
            .take_while(|&k| memory(k))
            .last()
            .unwrap_or(0)
    }

    /// The TCP streams of the test under way (0 for UDP or without one).
    pub(super) fn test_streams(&self) -> usize {
        let p = self.session.params();
        if !self.held() || p.protocol != Protocol::Tcp {
            return 0;
        }
        usize::from(p.parallel.max(1)) * if p.bidirectional { 2 } else { 1 }
    }

    /// True once a data socket listens for each stream still to connect (always without
    /// roles: every socket listens).
    pub(super) fn listening_for_streams(&self, n: usize) -> bool {
        self.data_slots == 0 || self.data_sockets_ready(n) >= self.test_streams()
    }

    /// The data sockets (of the first `n` sockets) that listen for a stream, read one's
    /// cookie or carry one.
    fn data_sockets_ready(&self, n: usize) -> usize {
        self.slots[..n.min(self.data_slots)]
            .iter()
            .filter(|s| matches!(s, Slot::Data(_) | Slot::Pending { .. } | Slot::Listening))
            .count()
    }
}

/// What each of `streams` streams gets of the data memory ([`DataPlan::stream_share`]). A
/// build that serves one stream at a time (without `iperf-parallel` and `iperf-bidir`: the
/// minimal images) gives its one stream, whichever way it goes, the window and send buffer
/// it was sized for, and links none of the sharing.
pub(super) fn share_of(
    plan: &DataPlan,
    streams: usize,
    receives: bool,
    sends: bool,
) -> Option<Share> {
    if cfg!(any(feature = "iperf-parallel", feature = "iperf-bidir")) {
        return plan.stream_share(streams, receives, sends);
    }
    (streams <= 1).then_some(Share {
        rx: plan.window,
        tx: plan.tx,
    })
}

/// Which ways a test's TCP data go: (the device receives, the device sends).
pub(super) fn directions(p: &crate::iperf::json::Params) -> (bool, bool) {
    (!p.reverse || p.bidirectional, p.reverse || p.bidirectional)
}
