//! What each TCP socket of the pool does in its slot: a listener becomes the control
//! connection, a would-be stream or a denied client; the control connection feeds the
//! session; closing sockets listen again.

use super::{Handshake, PoolServer, Slot, RST_GRACE_US};
use crate::iperf::json::Protocol;
use crate::iperf::session::Phase;
use crate::iperf::wire;
use crate::socket::{TcpOps, TcpState};
use crate::time::Micros;

impl<'a, E: Copy + PartialEq, const N: usize, const S: usize> PoolServer<'a, E, N, S> {
    /// The test holding the server has sent its results or ended: nothing but its end is
    /// left.
    fn test_ending(&self) -> bool {
        matches!(
            self.session.phase(),
            Phase::Display | Phase::Done | Phase::Failed(_)
        )
    }

    /// Does what TCP socket `i`'s slot asks of it now (see [`Slot`]).
    pub(super) fn service_slot(&mut self, sock: &mut impl TcpOps, i: usize, now: Micros) {
        match self.slots[i] {
            Slot::Listening => {
                let handshake = &mut self.handshakes[i];
                if !sock.is_open() {
                    *handshake = Handshake::default();
                    if !sock.rst_pending() {
                        let _ = sock.listen(self.port);
                    }
                    return;
                }
                match sock.state() {
                    TcpState::Listen => {
                        *handshake = Handshake::default();
                        return;
                    }
                    TcpState::SynReceived => {
                        handshake.seen.get_or_insert(now);
                        return;
                    }
                    _ => *handshake = Handshake::default(),
                }
                // A connection was established on this socket. While the test holding the
                // server has only its end left (results sent, the client's IPERF_DONE or our
                // close of the control connection to come), the new client waits for the
                // next poll instead of being denied: on a slow or lossy link the next
                // test's connection can come before the last test's IPERF_DONE (a stock
                // iperf3 client exits as soon as it has sent it).
                if self.held() && self.test_ending() {
                    self.client_waits = true;
                    return;
                }
                if !self.held() {
                    self.session.accept_control(now);
                    self.done = false;
                    #[cfg(feature = "iperf-udp")]
                    {
                        self.udp_peers = [None; S];
                    }
                    self.slots[i] = Slot::Control;
                } else if self.session.phase() == Phase::CreateStreams
                    && self.session.params().protocol == Protocol::Tcp
                {
                    self.slots[i] = Slot::Pending {
                        got: 0,
                        since: now,
                        ok: true,
                    };
                } else {
                    self.slots[i] = Slot::Denying;
                }
                self.service_slot(sock, i, now);
            }
            Slot::Control => {
                let session = &mut self.session;
                while sock.can_recv() && !session.is_finished() {
                    if sock.recv(|buf| session.control_input(buf, now)) == 0 {
                        break;
                    }
                }
                if !sock.may_recv() && !session.is_finished() {
                    session.control_closed(now);
                }
            }
            Slot::Pending { got, since, ok } => self.read_cookie(sock, i, got, since, ok, now),
            Slot::Data(idx) => {
                if self.session.should_read() {
                    self.read_stream(sock, i, idx, now);
                }
                if !sock.is_active() {
                    self.session.stream_failed(now);
                }
            }
            Slot::Denying => {
                if sock.can_send() {
                    let _ = sock.send_slice(&[wire::state::ACCESS_DENIED as u8]);
                    sock.close();
                    self.counters.denied += 1;
                    self.slots[i] = Slot::Closing { since: now };
                } else if !sock.may_send() {
                    sock.abort();
                    self.slots[i] = Slot::Closing { since: now };
                }
            }
            Slot::Evicted { since } => {
                // Listen once the evicted peer's RST has left (listening forgets the peer),
                // or after the grace (a peer that vanished never gets one).
                if !sock.rst_pending() || now.saturating_sub(since) >= RST_GRACE_US {
                    sock.abort();
                    let _ = sock.listen(self.port);
                    self.slots[i] = Slot::Listening;
                }
            }
            Slot::Parked => {}
            Slot::Closing { .. } => match sock.state() {
                // Aborted, its RST not sent yet (the next transmission sends it; listening
                // now would forget the peer). A SYN that needs the socket may take it before.
                TcpState::Closed if sock.rst_pending() => {}
                // Closed, or the peer has acknowledged our FIN and all data: nothing is
                // left to deliver, so free the socket now instead of waiting for the peer.
                TcpState::Closed | TcpState::TimeWait | TcpState::FinWait2 => {
                    sock.abort();
                    let _ = sock.listen(self.port);
                    self.slots[i] = Slot::Listening;
                }
                TcpState::CloseWait => sock.close(),
                _ => {}
            },
        }
    }
}
