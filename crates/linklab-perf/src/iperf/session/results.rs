//! Results: the document we send in the results exchange, the peer's document read into
//! the streams, and the report that combines both.

use super::{Failure, PeerSummary, Session};
use crate::iperf::json::{Protocol, Results};
use crate::iperf::report::{DirectionReport, TestReport};

impl<const S: usize> Session<'_, S> {
    /// Reads the peer's results document into the streams; false (and failed) if it is
    /// unreadable or names a stream we do not have. Without feature `iperf-host` the
    /// document is taken as it is (it only feeds the report).
    pub(super) fn take_peer_results(&mut self) -> bool {
        if !cfg!(feature = "iperf-host") {
            // A device's server only answers with its own results.
            return true;
        }
        let r = match Results::<S>::from_json(self.reader.payload()) {
            Ok(r) => r,
            Err(e) => {
                self.fail(Failure::BadJson(e));
                return false;
            }
        };
        for entry in &r.streams {
            match self.streams_mut().iter_mut().find(|s| s.id == entry.id) {
                Some(s) => s.peer = Some(*entry),
                None => {
                    self.fail(Failure::UnknownStream);
                    return false;
                }
            }
        }
        self.test.peer = Some(PeerSummary {
            cpu_util: r.cpu_util,
            sender_has_retransmits: r.sender_has_retransmits,
            congestion_used: r.congestion_used,
        });
        true
    }

    /// Our results document (iperf3 `send_results`).
    pub fn our_results(&self) -> Results<S> {
        let elapsed = self.elapsed_us();
        let tcp = self.test.params.protocol == Protocol::Tcp;
        let mut r = Results {
            cpu_util: self.cpu_util,
            sender_has_retransmits: -1,
            congestion_used: self.congestion_used.clone().filter(|_| tcp),
            streams: heapless::Vec::new(),
        };
        let mut senders = self.streams().iter().filter(|s| s.sender).peekable();
        if senders.peek().is_some() {
            let all = senders.all(|s| s.retransmits.is_some());
            r.sender_has_retransmits = i64::from(all && self.test.params.protocol == Protocol::Tcp);
        }
        for s in self.streams() {
            let _ = r.streams.push(s.result(elapsed));
        }
        r
    }

    /// The test's figures as far as known; complete once [`phase`](Self::phase) is
    /// [`Phase::Done`](super::Phase::Done).
    pub fn report(&self) -> TestReport<S> {
        let params = self.test.params;
        let mut rep = TestReport {
            params,
            seconds: self.elapsed_s(),
            forward: None,
            reverse: None,
            streams: heapless::Vec::new(),
        };
        for s in self.streams() {
            let forward = (self.is_client()) == s.sender;
            let d = DirectionReport::from_stream(s, params.protocol);
            let slot = if forward {
                &mut rep.forward
            } else {
                &mut rep.reverse
            };
            match slot {
                Some(acc) => acc.add(&d),
                None => *slot = Some(d),
            }
            let _ = rep.streams.push((s.id, forward, d));
        }
        let secs = rep.seconds;
        for d in [&mut rep.forward, &mut rep.reverse].into_iter().flatten() {
            d.finish(secs);
        }
        rep
    }
}
