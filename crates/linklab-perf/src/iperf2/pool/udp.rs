//! The pool's UDP socket: a flow's first datagram starts a test, every datagram is counted,
//! the FIN is answered with the server report.

use super::{Iperf2Pool, Iperf2Sockets};
use crate::iperf2::request::Protocol;
use crate::iperf2::wire::report::DATAGRAM_LEN as REPORT_LEN;
use crate::iperf2::{UdpPhase, UdpServer};
use crate::socket::UdpOps;
use crate::time::Micros;

impl<E: Copy + Eq, const M: usize> Iperf2Pool<E, M> {
    /// Takes what arrived on the UDP socket and sends the reports due. A datagram that
    /// would start a flow while the server is busy (another flow, a TCP test, an iperf3
    /// test) is dropped.
    pub(super) fn service_udp<P: Iperf2Sockets<Endpoint = E>>(&mut self, s: &mut P, now: Micros) {
        if !self.udp_armed {
            return;
        }
        loop {
            // A flow may start only while no test holds the server, or the memory would be
            // iperf3's (it claimed it: our slices are about to go back).
            let may_start = self.test.is_none() && !s.must_yield();
            let flowing = self.udp.is_busy();
            // The last flow's test is over: it only answers its client's FIN repeats.
            let lingering = self.udp_lingering();
            let udp = &mut self.udp;
            let cfg = self.udp_cfg;
            let mut taken = None;
            let got = s.udp().recv(|data, from| {
                if lingering.is_some_and(|peer| peer != from) && may_start {
                    // A new flow: the last one has had its report.
                    *udp = UdpServer::new(cfg);
                }
                if (udp.is_busy() || may_start) && udp.on_datagram(from, data, now) {
                    taken = Some((from, data.len()));
                }
            });
            if !got {
                break;
            }
            let Some((from, len)) = taken else {
                self.counters.datagrams_dropped += 1;
                continue;
            };
            if (!flowing || lingering.is_some_and(|p| p != from)) && self.udp_running() {
                // A flow started: its test, over the memory (nobody could claim it since
                // `may_start` was known).
                if !self.start_test(s, Protocol::Udp, P::udp_addr(from), now) {
                    self.udp = UdpServer::new(self.udp_cfg);
                    self.counters.datagrams_dropped += 1;
                    continue;
                }
                s.set_udp_busy();
                self.counters.streams += 1;
            }
            self.count_bytes_udp(len, now);
        }
        let mut report = [0u8; REPORT_LEN];
        while let Some((peer, n)) = self.udp.next_output(now, &mut report) {
            let Some(out) = report.get(..n) else { break };
            let queued = s.udp().send(n, peer, |buf| match buf.get_mut(..n) {
                Some(b) => {
                    b.copy_from_slice(out);
                    n
                }
                None => 0,
            });
            if !queued {
                // Lost; the client's next FIN asks again.
                break;
            }
        }
        self.udp.poll(now);
        while let Some((_, outcome)) = self.udp.take_finished() {
            if outcome.timed_out {
                linklab_fmt::debug!("iperf2: UDP flow timed out");
                self.fail();
            }
        }
    }

    /// True while a UDP flow runs: it receives, or waits for its FIN's report to go out.
    pub(super) fn udp_running(&self) -> bool {
        self.udp.is_busy() && self.udp_lingering().is_none()
    }

    /// The peer of a flow that only lingers: its FIN came and its report went out (it
    /// answers the client's FIN repeats until its linger is over, but its test is done).
    fn udp_lingering(&self) -> Option<E> {
        self.udp.sessions().find_map(|(peer, s)| {
            (s.phase() == UdpPhase::Reporting && s.outcome().reports_sent > 0).then_some(peer)
        })
    }

    fn count_bytes_udp(&mut self, len: usize, now: Micros) {
        self.counters.bytes_received += len as u64;
        self.progress(now);
    }
}
