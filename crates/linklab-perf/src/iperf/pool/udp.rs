//! UDP tests: the socket's buffers lent for the test, the streams' hellos answered, their
//! datagrams counted and sent.

use super::{PoolServer, PoolSockets};
#[cfg(feature = "iperf-udp")]
use crate::iperf::{json::Protocol, session::Phase, wire};
#[cfg(feature = "iperf-udp")]
use crate::socket::UdpOps;
#[cfg(feature = "iperf-udp")]
use crate::time::Micros;

impl<'a, E: Copy + PartialEq, const N: usize, const S: usize> PoolServer<'a, E, N, S> {
    /// Forgets the UDP test's peers and lets the UDP socket's buffers go.
    #[cfg_attr(not(feature = "iperf-udp"), allow(clippy::unused_self))]
    pub(super) fn end_udp<P: PoolSockets>(&mut self, _sockets: &mut P) {
        #[cfg(feature = "iperf-udp")]
        {
            self.udp_peers = [None; S];
            if self.udp_ready {
                self.udp_ready = false;
                _sockets.release_udp();
            }
        }
    }

    /// Lends the UDP socket its buffers once a UDP test creates its streams (again each
    /// poll until a chunk is free), and keeps it bound: made anew over its buffers, it is
    /// not, and a hello arriving before it is would be answered "port unreachable".
    #[cfg(feature = "iperf-udp")]
    pub(super) fn ready_udp<P: PoolSockets<Endpoint = E>>(&mut self, sockets: &mut P) {
        if self.held()
            && self.session.phase() == Phase::CreateStreams
            && self.session.params().protocol == Protocol::Udp
            && !self.udp_ready
        {
            let share = self.plan.map(|p| p.udp_share()).unwrap_or(self.share);
            self.udp_ready = sockets.prepare_udp(share);
        }
        let mut sock = sockets.udp();
        if !sock.is_open() {
            let _ = sock.bind(self.port);
        }
    }

    #[cfg(feature = "iperf-udp")]
    pub(super) fn service_udp<P: PoolSockets<Endpoint = E>>(
        &mut self,
        sockets: &mut P,
        now: Micros,
    ) {
        self.ready_udp(sockets);
        let sock = &mut sockets.udp();
        let reading = self.session.should_read();
        loop {
            let mut hello_from = None;
            let got = sock.recv(|data, from| {
                if let Some(idx) = self.udp_peers.iter().position(|p| *p == Some(from)) {
                    if reading {
                        self.session.on_udp_received(idx, data, now);
                    }
                    return;
                }
                if self.session.phase() == Phase::CreateStreams {
                    if let Some(idx) = self.session.accept_udp_stream(data, now) {
                        if let Some(p) = self.udp_peers.get_mut(idx) {
                            *p = Some(from);
                        }
                        hello_from = Some(from);
                    }
                }
            });
            if !got {
                break;
            }
            if let Some(from) = hello_from {
                let reply = wire::udp_hello_reply();
                let _ = sock.send(reply.len(), from, |buf| {
                    buf[..reply.len()].copy_from_slice(&reply);
                    reply.len()
                });
            }
        }
        if self.session.params().protocol != Protocol::Udp {
            return;
        }
        let len = self.session.params().len as usize;
        for idx in 0..self.session.streams().len() {
            let Some(peer) = self.udp_peers.get(idx).copied().flatten() else {
                continue;
            };
            while self.session.may_send(idx, now) {
                let session = &mut self.session;
                let mut sent = None;
                // `udp_next` fills the datagram (header and payload) in place; it cannot
                // fail here (may_send was true and the buffer has `len` bytes).
                let queued = sock.send(len, peer, |buf| {
                    sent = session.udp_next(idx, now, buf);
                    sent.unwrap_or(0)
                });
                match sent {
                    Some(n) if queued => self.session.on_udp_sent(idx, n, now),
                    _ => break,
                }
            }
        }
    }
}
