//! What comes in from the line: frames checked and answered (handshake, ACKs, data, echo).

use super::*;

impl<const W: usize> Core<W> {
    pub(super) fn header(&self, kind: Kind, flags: u8, seq: u8) -> Header {
        Header {
            kind,
            flags,
            seq,
            ack: self.rx.ack(),
            credits: self.rx.credits(),
            sack: self.rx.sack(),
            src_epoch: self.my_epoch,
            dst_epoch: self.peer_epoch.unwrap_or(0),
        }
    }

    /// One delimited chunk from the deframer.
    pub(super) fn on_chunk(&mut self, chunk: Result<&[u8], FrameError>, now: u64) {
        let c = &mut self.counters;
        c.rx_chunks += 1;
        let frame = match chunk {
            Ok(frame) => frame,
            Err(FrameError::TooLong) => return c.rx_length_errors += 1,
            Err(FrameError::Cobs) => return c.rx_frame_errors += 1,
        };
        let (h, payload) = match wire::open(frame) {
            Ok(x) => x,
            Err(WireError::Length) => return c.rx_length_errors += 1,
            Err(WireError::Crc) => return c.rx_crc_errors += 1,
            Err(WireError::Header) => return c.rx_header_errors += 1,
        };
        match h.kind {
            Kind::Syn => {
                self.counters.rx_control += 1;
                self.meet(h.src_epoch, h.credits, now);
                self.synack_due = true;
                if h.dst_epoch == self.my_epoch {
                    self.state = State::Established;
                }
            }
            Kind::SynAck => {
                if h.dst_epoch != self.my_epoch {
                    return self.counters.rx_stale += 1;
                }
                self.counters.rx_control += 1;
                self.meet(h.src_epoch, h.credits, now);
                self.state = State::Established;
                self.ack_due = true; // confirms the session to the peer
            }
            Kind::Data | Kind::Ack => {
                if h.dst_epoch != self.my_epoch || self.peer_epoch != Some(h.src_epoch) {
                    return self.counters.rx_stale += 1;
                }
                self.state = State::Established;
                self.on_ack(&h, now);
                if h.flags & FLAG_POLL != 0 {
                    self.ack_due = true;
                }
                if h.kind == Kind::Ack {
                    return self.counters.rx_control += 1;
                }
                let echo = h.flags & (FLAG_ECHO_REQUEST | FLAG_ECHO_REPLY);
                match self.rx.accept(h.seq, echo, payload) {
                    Accept::InOrder | Accept::OutOfOrder => self.counters.rx_data += 1,
                    Accept::Duplicate => self.counters.rx_duplicates += 1,
                    Accept::OutOfWindow => self.counters.rx_window_errors += 1,
                }
                self.ack_due = true;
            }
        }
    }

    /// A SYN or SYN-ACK from epoch `epoch`: a new peer (or the known one again).
    pub(super) fn meet(&mut self, epoch: u16, credits: u8, now: u64) {
        if self.peer_epoch == Some(epoch) {
            return;
        }
        if self.peer_epoch.is_some() {
            // The peer restarted: whatever we held for its old incarnation is void.
            self.counters.resets += 1;
            self.counters.tx_aborted += self.tx.clear() as u64;
            self.counters.rx_reset_dropped += self.rx.clear() as u64;
            self.probe_at = None;
        }
        self.peer_epoch = Some(epoch);
        self.peer_credits = credits;
        self.state = State::Connecting;
        self.next_syn_at = now;
    }

    pub(super) fn on_ack(&mut self, h: &Header, now: u64) {
        if let Some(acked) = self.tx.on_ack(h.ack, h.sack, now) {
            self.counters.tx_acked += acked.frames;
            self.counters.tx_acked_bytes += acked.bytes;
            if let Some(rtt) = acked.rtt {
                self.rto.sample(rtt);
            }
            self.peer_credits = h.credits;
        }
    }

    /// Answers self-test requests at the head of the receive store while transmit slots last.
    pub(super) fn service(&mut self) {
        while let Some((flags, payload)) = self.rx.head() {
            if flags & FLAG_ECHO_REQUEST == 0 {
                return;
            }
            let len = payload.len();
            if self
                .tx
                .push(FLAG_ECHO_REPLY, len, |dst| dst.copy_from_slice(payload))
                .is_none()
            {
                return;
            }
            self.rx.release_head();
            self.counters.rx_echoed += 1;
            self.echoed_bytes += len as u64;
        }
    }
}
