//! The built-in self-test (the wish that closes CBA's link speed tests: a link layer that
//! measures itself). Any end runs a [`Tester`] over its [`Link`]; the other end needs no app:
//! its link sends every self-test frame back by itself.
//!
//! For each payload size the tester runs two phases:
//! 1. round trips: `rtt_frames` frames one at a time — each reply gives an unloaded round trip;
//! 2. stream: `stream_frames` frames with the window kept full — the replies' inter-arrival
//!    times, and the goodput (echoed payload bytes per second, each way) to compare with the
//!    raw byte rate of the line.
//!
//! Payloads are PRBS-31 (x³¹ + x²⁸ + 1) after a 16-byte head (tag, index, send time), so a
//! reply that comes back altered is caught even if it passed the CRC. The tester reports each
//! reply as a [`Sample`] (the host side puts them in HDR histograms) and each finished phase as
//! a [`Phase`] with the link's counters before and after.

use crate::counters::Counters;
use crate::link::Link;
use crate::wire::FLAG_ECHO_REQUEST;

/// Smallest self-test payload: tag, index and send time.
pub const MIN_SIZE: usize = 16;

/// What to measure.
#[derive(Clone, Copy, Debug)]
pub struct Plan<'a> {
    /// Payload sizes, each `MIN_SIZE..=` the link's MTU.
    pub sizes: &'a [usize],
    /// Frames sent one at a time per size (round trips).
    pub rtt_frames: u32,
    /// Frames streamed per size (goodput, inter-arrival).
    pub stream_frames: u32,
}

/// Which phase a sample or result belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhaseKind {
    /// One frame at a time.
    RoundTrip,
    /// Window kept full.
    Stream,
}

/// One reply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Payload size.
    pub size: usize,
    /// Its phase.
    pub phase: PhaseKind,
    /// Round trip: from queueing the frame to taking its echo (µs).
    pub rtt_us: u64,
    /// Time since the previous reply of the same phase and size (µs); `None` for the first.
    pub gap_us: Option<u64>,
}

/// One finished phase of one size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Phase {
    /// Payload size.
    pub size: usize,
    /// Which phase.
    pub kind: PhaseKind,
    /// Frames sent.
    pub sent: u32,
    /// Replies with the right content.
    pub received: u32,
    /// Replies whose length or content was wrong.
    pub corrupt: u32,
    /// When the first frame was queued (µs).
    pub started_us: u64,
    /// When the last reply was taken (µs).
    pub ended_us: u64,
    /// This end's counters when the phase started.
    pub before: Counters,
    /// And when it ended.
    pub after: Counters,
}

impl Phase {
    /// Echoed payload bytes per second, each way.
    pub fn goodput_bytes_per_s(&self) -> f64 {
        let secs = self.ended_us.saturating_sub(self.started_us) as f64 / 1e6;
        if secs > 0.0 {
            self.received as f64 * self.size as f64 / secs
        } else {
            0.0
        }
    }
}

/// What [`Tester::poll`] reports.
#[derive(Clone, Copy, Debug)]
#[allow(clippy::large_enum_variant)] // no heap to box the phase into; events are passed by value once
pub enum Event {
    /// A reply with the right content.
    Reply(Sample),
    /// A phase ended.
    PhaseDone(Phase),
}

/// The PRBS-31 generator (x³¹ + x²⁸ + 1), eight bits per byte.
#[derive(Clone, Copy, Debug)]
pub struct Prbs31(u32);

impl Prbs31 {
    /// A generator from `seed` (any value; 0 is mapped to a valid state).
    pub fn new(seed: u32) -> Prbs31 {
        let s = seed & 0x7FFF_FFFF;
        Prbs31(if s == 0 { 0x5A5A_5A5A } else { s })
    }

    /// The next byte.
    pub fn next_byte(&mut self) -> u8 {
        let mut b = 0u8;
        for _ in 0..8 {
            let bit = ((self.0 >> 30) ^ (self.0 >> 27)) & 1;
            self.0 = ((self.0 << 1) | bit) & 0x7FFF_FFFF;
            b = (b << 1) | bit as u8;
        }
        b
    }
}

fn seed_for(tag: u32, size: usize, index: u32) -> u32 {
    tag ^ (size as u32).wrapping_mul(0x0100_0193) ^ index.wrapping_mul(0x9E37_79B9)
}

/// Writes the self-test payload `index` of `buf.len()` bytes sent at `now`.
pub fn fill_payload(buf: &mut [u8], tag: u32, index: u32, now: u64) {
    let size = buf.len();
    let (head, rest) = buf.split_at_mut(MIN_SIZE.min(size));
    let mut h = [0u8; MIN_SIZE];
    h[0..4].copy_from_slice(&tag.to_le_bytes());
    h[4..8].copy_from_slice(&index.to_le_bytes());
    h[8..16].copy_from_slice(&now.to_le_bytes());
    head.copy_from_slice(&h[..head.len()]);
    let mut prbs = Prbs31::new(seed_for(tag, size, index));
    for b in rest {
        *b = prbs.next_byte();
    }
}

/// Checks a reply of `tag`: its index and send time when head and PRBS are right.
pub fn check_payload(buf: &[u8], tag: u32) -> Option<(u32, u64)> {
    let head = buf.get(..MIN_SIZE)?;
    if head[0..4] != tag.to_le_bytes() {
        return None;
    }
    let index = u32::from_le_bytes(head[4..8].try_into().ok()?);
    let sent = u64::from_le_bytes(head[8..16].try_into().ok()?);
    let mut prbs = Prbs31::new(seed_for(tag, buf.len(), index));
    buf[MIN_SIZE..]
        .iter()
        .all(|&b| b == prbs.next_byte())
        .then_some((index, sent))
}

/// Runs a [`Plan`] over a link (see the module documentation).
pub struct Tester<'a> {
    plan: Plan<'a>,
    tag: u32,
    size_index: usize,
    phase: PhaseKind,
    sent: u32,
    received: u32,
    corrupt: u32,
    started_us: u64,
    last_reply_us: Option<u64>,
    before: Counters,
}

impl<'a> Tester<'a> {
    /// A tester for `plan`; `tag` marks its frames (pick one per run).
    pub fn new(plan: Plan<'a>, tag: u32) -> Tester<'a> {
        Tester {
            plan,
            tag,
            size_index: 0,
            phase: PhaseKind::RoundTrip,
            sent: 0,
            received: 0,
            corrupt: 0,
            started_us: 0,
            last_reply_us: None,
            before: Counters::default(),
        }
    }

    /// True when every phase of every size is done.
    pub fn is_done(&self) -> bool {
        self.size_index >= self.plan.sizes.len()
    }

    /// The size being measured, if any.
    pub fn current_size(&self) -> Option<usize> {
        self.plan.sizes.get(self.size_index).copied()
    }

    fn target(&self) -> u32 {
        match self.phase {
            PhaseKind::RoundTrip => self.plan.rtt_frames,
            PhaseKind::Stream => self.plan.stream_frames,
        }
    }

    /// Takes the replies waiting in `link` and queues what the phase allows; call after each
    /// [`Link::handle_input`]. Frames the application sent over the link are taken and
    /// dropped (the self-test owns the link while it runs).
    pub fn poll<const W: usize>(
        &mut self,
        link: &mut Link<W>,
        now: u64,
        mut on_event: impl FnMut(Event),
    ) {
        loop {
            let Some(size) = self.current_size() else {
                return;
            };
            while let Some(frame) = link.receive() {
                if !frame.is_echo_reply() {
                    continue;
                }
                match check_payload(frame.payload(), self.tag) {
                    Some((_, sent)) if frame.payload().len() == size => {
                        self.received += 1;
                        let gap = self.last_reply_us.map(|t| now.saturating_sub(t));
                        self.last_reply_us = Some(now);
                        on_event(Event::Reply(Sample {
                            size,
                            phase: self.phase,
                            rtt_us: now.saturating_sub(sent),
                            gap_us: gap,
                        }));
                    }
                    _ => self.corrupt += 1,
                }
            }
            if self.sent == 0 {
                self.started_us = now;
                self.before = link.counters();
            }
            let target = self.target();
            if self.received + self.corrupt >= target {
                on_event(Event::PhaseDone(Phase {
                    size,
                    kind: self.phase,
                    sent: self.sent,
                    received: self.received,
                    corrupt: self.corrupt,
                    started_us: self.started_us,
                    ended_us: self.last_reply_us.unwrap_or(now),
                    before: self.before,
                    after: link.counters(),
                }));
                self.next_phase();
                continue;
            }
            while self.sent < target {
                let outstanding = self.sent - self.received - self.corrupt;
                if self.phase == PhaseKind::RoundTrip && outstanding >= 1 {
                    break;
                }
                let (tag, index) = (self.tag, self.sent);
                let queued = link.send_flagged(FLAG_ECHO_REQUEST, size, |buf| {
                    fill_payload(buf, tag, index, now)
                });
                if queued.is_err() {
                    break;
                }
                self.sent += 1;
            }
            return;
        }
    }

    fn next_phase(&mut self) {
        match self.phase {
            PhaseKind::RoundTrip => self.phase = PhaseKind::Stream,
            PhaseKind::Stream => {
                self.phase = PhaseKind::RoundTrip;
                self.size_index += 1;
            }
        }
        self.sent = 0;
        self.received = 0;
        self.corrupt = 0;
        self.last_reply_us = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_check_and_any_change_is_caught() {
        let mut buf = [0u8; 300];
        fill_payload(&mut buf, 77, 5, 123_456);
        assert_eq!(check_payload(&buf, 77), Some((5, 123_456)));
        assert_eq!(check_payload(&buf, 78), None);
        for i in [0, 20, 299] {
            let mut b = buf;
            b[i] ^= 0x10;
            assert_eq!(check_payload(&b, 77), None, "byte {i}");
        }
        assert_eq!(check_payload(&buf[..299], 77), None, "truncated");
    }

    #[test]
    fn prbs31_is_balanced() {
        // Balanced (about half the bits are ones) and never stuck.
        let mut p = Prbs31::new(0x1234_5678);
        let ones: u32 = (0..10_000).map(|_| p.next_byte().count_ones()).sum();
        assert!((39_000..41_000).contains(&ones), "{ones}");
    }
}
