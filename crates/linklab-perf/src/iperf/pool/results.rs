//! The end of a test: its streams and control connection closed, its outcome counted and
//! kept until taken.

use super::{PoolServer, PoolSockets, Slot};
use crate::iperf::report::TestReport;
use crate::iperf::session::{Failure, Phase};
use crate::socket::TcpOps;

impl<'a, E: Copy + PartialEq, const N: usize, const S: usize> PoolServer<'a, E, N, S> {
    /// Takes the outcome of the last finished test, if any is new: its report is made
    /// now, from the finished test the session keeps until the next client connects (a
    /// device that never asks carries no report code).
    pub fn take_outcome(&mut self) -> Option<Result<TestReport<S>, Failure>> {
        let last = self.last.take()?;
        Some(last.map(|()| self.session.report()))
    }

    /// Closes data streams after the test and everything after a finished test.
    pub(super) fn after_phase<P: PoolSockets>(&mut self, sockets: &mut P, n: usize) {
        let finished = self.session.is_finished();
        let streams_over =
            !self.session.should_read() && self.session.phase() != Phase::CreateStreams;
        for i in 0..n {
            match self.slots[i] {
                Slot::Data(_) if streams_over || finished => {
                    sockets.tcp(i).close();
                    self.slots[i] = Slot::Closing { since: self.now };
                }
                Slot::Pending { .. } if finished => {
                    sockets.tcp(i).abort();
                    self.slots[i] = Slot::Closing { since: self.now };
                }
                // Close the control connection once our last bytes are queued.
                Slot::Control if finished => {
                    let mut sock = sockets.tcp(i);
                    if self.session.control_output().is_empty() || !sock.may_send() {
                        sock.close();
                        self.slots[i] = Slot::Closing { since: self.now };
                    }
                }
                _ => {}
            }
        }
        if finished && !self.done && !self.slots.contains(&Slot::Control) {
            match self.session.phase() {
                Phase::Failed(f) => {
                    linklab_fmt::debug!("iperf: test failed: {:?}", f);
                    self.counters.tests_failed += 1;
                    self.last = Some(Err(f));
                }
                _ => {
                    linklab_fmt::debug!("iperf: test done");
                    self.counters.tests_done += 1;
                    self.last = Some(Ok(()));
                }
            }
            // The session keeps the finished test for its report until the next client.
            self.done = true;
            self.end_udp(sockets);
        }
    }
}
