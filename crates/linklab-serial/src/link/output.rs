//! What goes out to the line: the frame being handed over, paced to the line's rate, and the
//! next frame chosen (control, retransmission, new data) and when it is due.

use super::*;

impl<const W: usize> Core<W> {
    pub(super) fn poll_output(&mut self, now: u64, out: &mut [u8]) -> usize {
        self.service();
        let mut n = 0;
        while n < out.len() {
            if self.out.pos == self.out.len {
                self.finish_frame(now);
                if self.paced_until(now).is_some() {
                    break;
                }
                if !self.next_frame(now) {
                    self.out.idle = true;
                    break;
                }
            }
            let k = (out.len() - n).min(self.out.len - self.out.pos);
            out[n..n + k].copy_from_slice(&self.out.wire[self.out.pos..self.out.pos + k]);
            self.out.pos += k;
            n += k;
        }
        if self.out.pos == self.out.len {
            self.finish_frame(now);
        }
        self.counters.tx_bytes += n as u64;
        n
    }

    /// With a known line rate, frames are handed over no more than one largest frame's line
    /// time ahead of the line: the rest wait here, where ACKs can still overtake them and
    /// every frame leaves with the newest ACK state (instead of a second of frames queued in
    /// driver buffers). Returns when the next frame may start, if not now.
    pub(super) fn paced_until(&self, now: u64) -> Option<u64> {
        let rate = self.config.line_bytes_per_s;
        if rate == 0 {
            return None;
        }
        let ahead = MAX_WIRE as u64 * 1_000_000 / rate;
        let resume = self.out.line_free_at.saturating_sub(ahead);
        (resume > now).then_some(resume)
    }

    /// The frame in the output buffer is wholly handed over: a DATA frame's timer starts when
    /// its last byte leaves the line (at the line's rate behind what was handed over before).
    pub(super) fn finish_frame(&mut self, now: u64) {
        if self.out.finished {
            return;
        }
        self.out.finished = true;
        let mut left = now;
        if let Some(line_us) =
            (self.out.len as u64 * 1_000_000).checked_div(self.config.line_bytes_per_s)
        {
            // Its bytes were handed over during the last `line_us` at the latest.
            let start = self.out.line_free_at.max(now.saturating_sub(line_us));
            self.out.line_free_at = start + line_us;
            left = self.out.line_free_at.max(now);
        }
        if let Some((seq, tx_no)) = self.out.data.take() {
            self.tx.mark_sent(seq, tx_no, left);
        }
    }

    /// Puts the next frame to send, if any, into the output buffer.
    pub(super) fn next_frame(&mut self, now: u64) -> bool {
        if self.synack_due {
            self.synack_due = false;
            return self.control(Kind::SynAck, 0);
        }
        if self.state == State::Connecting {
            if now >= self.next_syn_at {
                self.next_syn_at = now + self.config.syn_interval_us;
                return self.control(Kind::Syn, 0);
            }
            return false;
        }
        let window = self.peer_credits as usize;
        if let Some((seq, reason)) = self.tx.next(window, now, self.rto.timeout()) {
            match reason {
                Reason::New => {}
                Reason::Lost => self.counters.tx_fast_retransmissions += 1,
                Reason::Timeout => {
                    self.counters.tx_timeouts += 1;
                    if seq == self.tx.una() {
                        self.rto.back_off();
                    }
                }
            }
            return self.data(seq, now);
        }
        // Zero window: probe for credits at the retransmission timeout.
        if self.tx.unsent() > 0 && self.tx.unacked() == 0 && window == 0 {
            if self.probe_at.is_none() {
                self.probe_interval = self.rto.timeout();
                self.probe_at = Some(now + self.probe_interval);
            }
            if self.probe_at.is_some_and(|at| now >= at) {
                self.probe_interval = (2 * self.probe_interval).min(self.config.rto_max_us);
                self.probe_at = Some(now + self.probe_interval);
                self.counters.tx_window_probes += 1;
                return self.control(Kind::Ack, FLAG_POLL);
            }
        } else {
            self.probe_at = None;
        }
        // A window update when our credits reopen after running low.
        let credits = self.rx.credits();
        if (self.advertised as usize) < W.div_ceil(2) && credits > self.advertised {
            self.ack_due = true;
        }
        if self.ack_due {
            return self.control(Kind::Ack, 0);
        }
        false
    }

    pub(super) fn control(&mut self, kind: Kind, flags: u8) -> bool {
        let header = self.header(kind, flags, 0);
        let mut frame = [0u8; HEADER_LEN + CRC_LEN];
        let len = wire::seal(&mut frame, &header, 0);
        self.counters.tx_control += 1;
        self.load(&frame[..len], None, header.credits);
        true
    }

    pub(super) fn data(&mut self, seq: u8, _now: u64) -> bool {
        let mut header = self.header(Kind::Data, 0, seq);
        let out = self.tx.transmit(seq);
        header.flags = out.flags;
        let len = wire::seal(out.frame, &header, out.payload_len);
        let (repeat, tx_no) = (out.repeat, out.tx_no);
        self.out.len = framing::encode(&out.frame[..len], self.out.idle, &mut self.out.wire);
        self.loaded(Some((seq, tx_no)), header.credits);
        self.counters.tx_packets += 1;
        if repeat {
            self.counters.tx_retransmissions += 1;
        }
        true
    }

    pub(super) fn load(&mut self, frame: &[u8], data: Option<(u8, u32)>, credits: u8) {
        self.out.len = framing::encode(frame, self.out.idle, &mut self.out.wire);
        self.loaded(data, credits);
    }

    /// A frame was encoded into the output buffer: it carries the current ACK state.
    pub(super) fn loaded(&mut self, data: Option<(u8, u32)>, credits: u8) {
        self.out.pos = 0;
        self.out.idle = false;
        self.out.finished = false;
        self.out.data = data;
        self.advertised = credits;
        self.ack_due = false;
    }

    pub(super) fn poll_at(&self, now: u64) -> Option<u64> {
        if self.out.pos < self.out.len {
            return Some(now);
        }
        let due = self.due_at(now)?;
        Some(self.paced_until(now).map_or(due, |p| p.max(due)))
    }

    /// When the next frame is due, ignoring pacing.
    pub(super) fn due_at(&self, now: u64) -> Option<u64> {
        if self.synack_due {
            return Some(now);
        }
        if self.state == State::Connecting {
            return Some(self.next_syn_at);
        }
        if self.ack_due
            || self
                .tx
                .next(self.peer_credits as usize, 0, u64::MAX)
                .is_some()
            || ((self.advertised as usize) < W.div_ceil(2) && self.rx.credits() > self.advertised)
        {
            return Some(now);
        }
        [self.tx.deadline(self.rto.timeout()), self.probe_at]
            .into_iter()
            .flatten()
            .min()
            .or_else(|| {
                (self.tx.unsent() > 0 && self.peer_credits == 0).then(|| now + self.rto.timeout())
            })
    }
}
