//! Time: the test clock (start, `-O` omitted period, end), `-i` intervals, the client's
//! end-of-test decision, the server's grace and the watchdog.

use super::{Failure, Phase, Session, Totals, QUIET_END_US, SERVER_GRACE_US};
use crate::iperf::json::Protocol;
use crate::iperf::report::{Interval, IntervalStream};
use crate::iperf::stream::IntervalBase;
use crate::iperf::wire::state;
use crate::time::Micros;

/// The clock of one test.
pub(super) struct Clock<const S: usize> {
    /// When the test clock started (TEST_START).
    pub(super) start: Option<Micros>,
    /// When counting stopped.
    pub(super) end: Option<Micros>,
    /// When the omitted period (`-O`) ends.
    omit_end: Option<Micros>,
    /// True during the omitted period.
    pub(super) omitting: bool,
    /// When the current `-i` interval ends.
    next_interval: Option<Micros>,
    /// When the current `-i` interval started.
    interval_start: Micros,
    /// Finished intervals not yet taken.
    pub(super) pending: heapless::Deque<Interval<S>, 2>,
}

impl<const S: usize> Default for Clock<S> {
    fn default() -> Self {
        Clock {
            start: None,
            end: None,
            omit_end: None,
            omitting: false,
            next_interval: None,
            interval_start: 0,
            pending: heapless::Deque::new(),
        }
    }
}

impl<const S: usize> Session<'_, S> {
    pub(super) fn start_clock(&mut self, now: Micros) {
        let omit_s = self.test.params.omit_s;
        let interval_us = self.interval_us;
        let c = &mut self.test.clock;
        c.start = Some(now);
        c.end = None;
        c.interval_start = now;
        if omit_s > 0 {
            c.omitting = true;
            c.omit_end = Some(now.saturating_add(u64::from(omit_s) * 1_000_000));
        }
        if interval_us > 0 {
            c.next_interval = Some(now.saturating_add(interval_us));
        }
    }

    pub(super) fn stop_clock(&mut self) {
        if self.test.clock.start.is_some() && self.test.clock.end.is_none() {
            let now = self.now;
            self.emit_interval(now, true);
            self.test.clock.end = Some(now);
            self.test.clock.next_interval = None;
        }
    }

    /// Seconds from the test start (after omitting) to the end (or now).
    pub fn elapsed_s(&self) -> f64 {
        self.elapsed_us() as f64 / 1e6
    }

    /// [`elapsed_s`](Self::elapsed_s) in microseconds.
    pub fn elapsed_us(&self) -> Micros {
        let c = &self.test.clock;
        let Some(start) = c.start else { return 0 };
        let start = if self.test.params.omit_s > 0 && !c.omitting {
            c.omit_end.unwrap_or(start)
        } else {
            start
        };
        let end = c.end.unwrap_or(self.now);
        end.saturating_sub(start)
    }

    /// Runs the clocks: end of the omitted period, intervals, the client's end of test,
    /// the watchdog. Call whenever [`poll_at`](Self::poll_at) passes and after I/O.
    pub fn poll(&mut self, now: Micros) {
        self.now = now;
        if self.is_finished() || self.test.phase == Phase::Idle {
            return;
        }
        if self.test.clock.end.is_none() {
            let step = self.interval_us.max(1);
            while let Some(t) = self.test.clock.next_interval.filter(|t| now >= *t) {
                self.emit_interval(t, false);
                // A late poll (clock jump, stalled caller) must not emit one interval per
                // missed period: only 2 are kept, so the ones holding the data would be
                // pushed out by empty ones, and a big jump would loop for ages. The next
                // interval spans the whole gap up to the last boundary not after `now`.
                let periods = ((now - t) / step).max(1);
                self.test.clock.next_interval = t.checked_add(periods.saturating_mul(step));
            }
        }
        if self.test.clock.omitting && self.test.clock.omit_end.is_some_and(|t| now >= t) {
            self.end_omitting(now);
        }
        let running = self.test.phase == Phase::Running;
        if self.is_client() && running && self.client_done(now) {
            self.stop_clock();
            self.push_state(state::TEST_END);
            self.test.phase = Phase::Ending;
        }
        if !self.is_client() && running && self.test.params.duration_s > 0 {
            let limit = self.timed_us().saturating_add(SERVER_GRACE_US);
            if self
                .test
                .clock
                .start
                .is_some_and(|s| now >= s.saturating_add(limit))
            {
                self.fail(Failure::Timeout);
            }
        }
        if now.saturating_sub(self.test.last_activity) >= self.watchdog_us && !self.is_finished() {
            self.fail(Failure::Timeout);
        }
    }

    /// The omitted period is over: start counting from zero (iperf3 `iperf_reset_stats`).
    fn end_omitting(&mut self, now: Micros) {
        self.test.clock.omitting = false;
        self.test.totals = Totals::default();
        for s in self.streams_mut() {
            s.reset_after_omit();
        }
        self.test.clock.interval_start = now;
        if self.interval_us > 0 {
            self.test.clock.next_interval = Some(now.saturating_add(self.interval_us));
        }
    }

    /// `-t` plus `-O` in microseconds (0 if the test is not timed).
    fn timed_us(&self) -> Micros {
        let p = &self.test.params;
        if p.duration_s == 0 {
            return 0;
        }
        (u64::from(p.duration_s) + u64::from(p.omit_s)).saturating_mul(1_000_000)
    }

    /// Client: true when the test should end now.
    fn client_done(&self, now: Micros) -> bool {
        if self.test.clock.omitting {
            return false;
        }
        let p = &self.test.params;
        let timed = p.duration_s != 0
            && self
                .test
                .clock
                .start
                .is_some_and(|s| now >= s.saturating_add(self.timed_us()));
        let sends = self.streams().iter().any(|s| s.sender);
        if sends {
            return timed || self.sender_done();
        }
        // Receiving only (-R) with -n/-k: done when that much arrived (TCP blocks are
        // `len` bytes), or when the sender has been quiet for QUIET_END_US after sending
        // something (lost datagrams would otherwise keep the test open forever).
        let totals = &self.test.totals;
        let blocks_received = match p.protocol {
            Protocol::Udp => totals.datagrams_received,
            Protocol::Tcp => totals.bytes_received / u64::from(p.len.max(1)),
        };
        let counted = p.bytes != 0 || p.blocks != 0;
        timed
            || (p.bytes != 0 && totals.bytes_received >= p.bytes)
            || (p.blocks != 0 && blocks_received >= p.blocks)
            || (counted && self.quiet_end().is_some_and(|t| now >= t))
    }

    /// Receiving-only count-based test: when the sender's silence ends it.
    fn quiet_end(&self) -> Option<Micros> {
        let p = &self.test.params;
        let receiving_only = self.is_client() && !self.streams().iter().any(|s| s.sender);
        if receiving_only && (p.bytes != 0 || p.blocks != 0) {
            self.test
                .totals
                .last_rx
                .map(|t| t.saturating_add(QUIET_END_US))
        } else {
            None
        }
    }

    /// When [`poll`](Self::poll) next has something to do (or a paced stream may send);
    /// `None` if nothing is scheduled.
    pub fn poll_at(&self) -> Option<Micros> {
        if self.is_finished() || self.test.phase == Phase::Idle {
            return None;
        }
        let c = &self.test.clock;
        let mut t = self.test.last_activity.saturating_add(self.watchdog_us);
        let mut take = |x: Option<Micros>| {
            if let Some(x) = x {
                t = t.min(x);
            }
        };
        if c.omitting {
            take(c.omit_end);
        }
        take(c.next_interval);
        if self.test.phase == Phase::Running {
            if let Some(start) = c.start {
                if self.test.params.duration_s > 0 {
                    let grace = if self.is_client() { 0 } else { SERVER_GRACE_US };
                    take(Some(
                        start.saturating_add(self.timed_us()).saturating_add(grace),
                    ));
                }
            }
            for s in self.streams().iter().filter(|s| s.sender) {
                take(self.paced_until(s).filter(|x| *x > self.now));
            }
            take(self.quiet_end());
        }
        Some(t)
    }

    /// Closes the current `-i` interval at `at` and queues its figures.
    fn emit_interval(&mut self, at: Micros, last: bool) {
        let interval_us = self.interval_us;
        let t = &mut self.test;
        if !cfg!(feature = "iperf-host") || interval_us == 0 || at <= t.clock.interval_start {
            return;
        }
        // iperf3 drops a final fragment shorter than a tenth of the interval.
        if last && at - t.clock.interval_start < interval_us / 10 {
            return;
        }
        // Like iperf3, which restarts its clock when the omitted period ends, counted
        // intervals are timed from there.
        let start = match (t.clock.omitting, t.clock.omit_end) {
            (false, Some(end)) => end,
            _ => t.clock.start.unwrap_or(at),
        };
        let mut iv = Interval {
            start_s: t.clock.interval_start.saturating_sub(start) as f64 / 1e6,
            end_s: at.saturating_sub(start) as f64 / 1e6,
            omitted: t.clock.omitting,
            streams: heapless::Vec::new(),
        };
        for s in &mut t.streams[..t.nstreams] {
            let b = s.interval_base;
            let _ = iv.streams.push(IntervalStream {
                id: s.id,
                sender: s.sender,
                bytes: s.bytes_for_interval().saturating_sub(b.bytes),
                packets: s.packet_count.saturating_sub(b.packets),
                lost: s.cnt_error.saturating_sub(b.lost),
                outoforder: s.outoforder.saturating_sub(b.outoforder),
                jitter_s: s.jitter,
            });
            s.interval_base = IntervalBase {
                bytes: s.bytes_for_interval(),
                packets: s.packet_count,
                lost: s.cnt_error,
                outoforder: s.outoforder,
            };
        }
        t.clock.interval_start = at;
        if t.clock.pending.is_full() {
            t.clock.pending.pop_front();
        }
        let _ = t.clock.pending.push_back(iv);
    }
}
