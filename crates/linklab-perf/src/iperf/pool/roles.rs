//! Socket roles: data sockets (large buffers) listen only while a test's streams are being
//! connected, control sockets (small buffers) the rest of the time.

use super::{Handshake, PoolServer, PoolSockets, Slot};
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
        for i in 0..n {
            let data = i < self.data_slots;
            let listen = data == streams;
            match self.slots[i] {
                Slot::Parked if listen && (!data || sockets.prepare(i)) => {
                    let mut s = sockets.tcp(i);
                    s.abort();
                    let _ = s.listen(self.port);
                    self.slots[i] = Slot::Listening;
                }
                Slot::Listening if !listen => {
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
                        if data {
                            sockets.release(i);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// How many streams a test may have: the data sockets (with roles), else every socket
    /// but the control and the spare one; at most the session's `S`.
    pub(super) fn stream_capacity(&self, n: usize) -> usize {
        let sockets = if self.data_slots > 0 {
            self.data_slots
        } else {
            n.saturating_sub(2)
        };
        sockets.min(S)
    }
}
