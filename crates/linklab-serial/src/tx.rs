//! The transmit store: up to `W` frames from the moment the app queues them until the peer
//! acknowledges them, in sequence order (slot = sequence mod `W`), and which of them to send
//! next — a lost one, a new one the peer's credits allow, or the oldest one whose timer expired.
//!
//! Loss is inferred exactly where it can be: the line is a FIFO, so when the peer acknowledges
//! a frame sent once, every unacknowledged frame transmitted before it was lost (the idea of
//! RACK, RFC 8985, without the reordering allowance a FIFO does not need). Only the tail of a
//! burst waits for the timer.

use crate::wire::{HEADER_LEN, MAX_FRAME};

/// One queued frame with its transmission record.
struct Slot {
    /// Header space, payload, CRC space: the frame is sealed in place at each transmission.
    frame: [u8; MAX_FRAME],
    payload_len: u16,
    flags: u8,
    transmissions: u16,
    /// Number of its latest transmission (all DATA transmissions are numbered in order).
    tx_no: u32,
    /// Number of its first transmission.
    first_tx_no: u32,
    /// When its latest transmission was fully handed to the line; `None` before that.
    sent_at: Option<u64>,
    sacked: bool,
    lost: bool,
}

const EMPTY: Slot = Slot {
    frame: [0; MAX_FRAME],
    payload_len: 0,
    flags: 0,
    transmissions: 0,
    tx_no: 0,
    first_tx_no: 0,
    sent_at: None,
    sacked: false,
    lost: false,
};

/// What an acknowledgement did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Acked {
    /// Frames newly acknowledged cumulatively.
    pub frames: u64,
    /// Their payload bytes.
    pub bytes: u64,
    /// A round-trip sample (a newly acknowledged frame sent exactly once).
    pub rtt: Option<u64>,
    /// Frames newly found lost.
    pub lost: u64,
}

/// A frame chosen for transmission.
pub struct Outgoing<'a> {
    /// Its `FLAG_ECHO_*` bits.
    pub flags: u8,
    /// Payload length.
    pub payload_len: usize,
    /// The whole frame buffer (header at 0, payload at `HEADER_LEN`).
    pub frame: &'a mut [u8; MAX_FRAME],
    /// Number of this transmission, for [`TxStore::mark_sent`].
    pub tx_no: u32,
    /// True when this repeats an earlier transmission.
    pub repeat: bool,
}

/// Why a frame was chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Found lost by a later frame's acknowledgement.
    Lost,
    /// First transmission.
    New,
    /// Its retransmission timer expired.
    Timeout,
}

/// Frames from queueing to acknowledgement (see the module documentation).
pub struct TxStore<const W: usize> {
    slots: [Slot; W],
    /// Oldest unacknowledged sequence number.
    una: u8,
    /// Next sequence number never transmitted.
    nxt: u8,
    /// Next sequence number to assign.
    end: u8,
    tx_no: u32,
    /// Frames queued by [`TxStore::push`] without echo flags (the application's).
    pub pushed: u64,
    /// Frames queued with [`crate::wire::FLAG_ECHO_REPLY`] (echoes the link answers).
    pub pushed_echoes: u64,
    /// Frames built with no slot to take them (see `tx_dropped` in the counters).
    pub dropped: u64,
}

impl<const W: usize> Default for TxStore<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const W: usize> TxStore<W> {
    /// An empty store.
    pub const fn new() -> Self {
        TxStore {
            slots: [EMPTY; W],
            una: 0,
            nxt: 0,
            end: 0,
            tx_no: 0,
            pushed: 0,
            pushed_echoes: 0,
            dropped: 0,
        }
    }

    fn slot(&self, seq: u8) -> &Slot {
        &self.slots[seq as usize % W]
    }

    fn slot_mut(&mut self, seq: u8) -> &mut Slot {
        &mut self.slots[seq as usize % W]
    }

    /// Sequence numbers `una..nxt`: transmitted, not yet acknowledged.
    fn in_flight(&self) -> impl Iterator<Item = u8> {
        let una = self.una;
        (0..self.nxt.wrapping_sub(una)).map(move |i| una.wrapping_add(i))
    }

    /// Frames held (queued or in flight).
    pub fn len(&self) -> usize {
        self.end.wrapping_sub(self.una) as usize
    }

    /// True when no frame can be queued.
    pub fn is_full(&self) -> bool {
        self.len() >= W
    }

    /// Frames queued but never transmitted.
    pub fn unsent(&self) -> usize {
        self.end.wrapping_sub(self.nxt) as usize
    }

    /// Frames transmitted and not yet acknowledged.
    pub fn unacked(&self) -> usize {
        self.nxt.wrapping_sub(self.una) as usize
    }

    /// The oldest unacknowledged sequence number.
    pub fn una(&self) -> u8 {
        self.una
    }

    /// Queues a frame of `len` payload bytes written by `fill`; `None` when full.
    pub fn push<R>(
        &mut self,
        flags: u8,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> R,
    ) -> Option<R> {
        if self.is_full() || len > MAX_FRAME - HEADER_LEN - crate::wire::CRC_LEN {
            return None;
        }
        let seq = self.end;
        let slot = self.slot_mut(seq);
        let r = fill(&mut slot.frame[HEADER_LEN..HEADER_LEN + len]);
        slot.payload_len = len as u16;
        slot.flags = flags;
        slot.transmissions = 0;
        slot.sent_at = None;
        slot.sacked = false;
        slot.lost = false;
        self.end = seq.wrapping_add(1);
        if flags & crate::wire::FLAG_ECHO_REPLY != 0 {
            self.pushed_echoes += 1;
        } else {
            self.pushed += 1;
        }
        Some(r)
    }

    /// Forgets every frame (a new session); returns how many were held.
    pub fn clear(&mut self) -> usize {
        let n = self.len();
        self.una = 0;
        self.nxt = 0;
        self.end = 0;
        n
    }

    /// Applies the peer's cumulative `ack` and selective `sack`. `None` when `ack` is not
    /// within what was sent (a stale or bogus acknowledgement: ignored).
    pub fn on_ack(&mut self, ack: u8, sack: u16, now: u64) -> Option<Acked> {
        let advance = ack.wrapping_sub(self.una);
        if advance as usize > self.unacked() {
            return None;
        }
        let mut out = Acked::default();
        // The latest transmission known to have arrived. For a repeated frame only its
        // first transmission is certain to have been sent before the one that arrived, so
        // that one counts: a spurious timeout must not declare the whole window lost.
        let mut arrived: Option<u32> = None;
        for i in 0..advance {
            let slot = self.slot(self.una.wrapping_add(i));
            out.frames += 1;
            out.bytes += u64::from(slot.payload_len);
            if slot.sent_at.is_some() && !slot.sacked {
                arrived = arrived.max(Some(slot.first_tx_no));
            }
            // Karn's rule: only a frame sent once gives an unambiguous round trip.
            if slot.transmissions == 1 {
                if let Some(at) = slot.sent_at {
                    out.rtt = Some(now.saturating_sub(at));
                }
            }
        }
        self.una = ack;
        for i in 0..16u8 {
            let seq = ack.wrapping_add(1 + i);
            if sack & (1 << i) == 0 || seq.wrapping_sub(self.una) as usize >= self.unacked() {
                continue;
            }
            let slot = self.slot_mut(seq);
            if !slot.sacked && slot.sent_at.is_some() {
                arrived = arrived.max(Some(slot.first_tx_no));
            }
            slot.sacked = true;
        }
        if let Some(arrived) = arrived {
            let una = self.una;
            for i in 0..self.unacked() as u8 {
                let slot = self.slot_mut(una.wrapping_add(i));
                if !slot.sacked && !slot.lost && slot.sent_at.is_some() && slot.tx_no < arrived {
                    slot.lost = true;
                    out.lost += 1;
                }
            }
        }
        Some(out)
    }

    /// The next frame to transmit: a lost one first, then a new one if fewer than `window`
    /// frames are unacknowledged, then the oldest whose timer of `rto` expired at `now`.
    pub fn next(&self, window: usize, now: u64, rto: u64) -> Option<(u8, Reason)> {
        if let Some(seq) = self.in_flight().find(|&s| {
            let slot = self.slot(s);
            slot.lost && !slot.sacked
        }) {
            return Some((seq, Reason::Lost));
        }
        if self.unsent() > 0 && self.unacked() < window.min(W) {
            return Some((self.nxt, Reason::New));
        }
        self.in_flight()
            .find(|&s| {
                let slot = self.slot(s);
                !slot.sacked && slot.sent_at.is_some_and(|at| now >= at.saturating_add(rto))
            })
            .map(|s| (s, Reason::Timeout))
    }

    /// When the oldest retransmission timer of `rto` expires, if one runs.
    pub fn deadline(&self, rto: u64) -> Option<u64> {
        self.in_flight()
            .filter_map(|s| {
                let slot = self.slot(s);
                (!slot.sacked).then_some(slot.sent_at?.saturating_add(rto))
            })
            .min()
    }

    /// Starts a transmission of `seq` (from [`TxStore::next`]): the frame to seal and send.
    pub fn transmit(&mut self, seq: u8) -> Outgoing<'_> {
        if seq == self.nxt {
            self.nxt = seq.wrapping_add(1);
        }
        self.tx_no = self.tx_no.wrapping_add(1);
        let tx_no = self.tx_no;
        let slot = self.slot_mut(seq);
        slot.transmissions = slot.transmissions.saturating_add(1);
        slot.tx_no = tx_no;
        if slot.transmissions == 1 {
            slot.first_tx_no = tx_no;
        }
        slot.sent_at = None;
        slot.lost = false;
        Outgoing {
            flags: slot.flags,
            payload_len: slot.payload_len as usize,
            repeat: slot.transmissions > 1,
            frame: &mut slot.frame,
            tx_no,
        }
    }

    /// The transmission `tx_no` of `seq` has left (or will have left) the line at `now`: its
    /// timer runs from then.
    pub fn mark_sent(&mut self, seq: u8, tx_no: u32, now: u64) {
        if (seq.wrapping_sub(self.una) as usize) < self.unacked() {
            let slot = self.slot_mut(seq);
            if slot.tx_no == tx_no {
                slot.sent_at = Some(now);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(store: &mut TxStore<8>, now: u64) -> u8 {
        let (seq, _) = store.next(8, now, 1000).unwrap();
        let tx_no = store.transmit(seq).tx_no;
        store.mark_sent(seq, tx_no, now);
        seq
    }

    #[test]
    fn a_later_frame_acknowledged_marks_earlier_ones_lost() {
        let mut s = TxStore::<8>::new();
        for i in 0..4u8 {
            s.push(0, 1, |b| b[0] = i).unwrap();
        }
        for t in 0..4 {
            sent(&mut s, t);
        }
        // Frame 0 lost, 1..3 held out of order by the peer.
        let a = s.on_ack(0, 0b111, 10).unwrap();
        assert_eq!(a.lost, 1);
        assert_eq!(s.next(8, 10, 1000), Some((0, Reason::Lost)));
        let tx = s.transmit(0).tx_no;
        s.mark_sent(0, tx, 11);
        let a = s.on_ack(4, 0, 20).unwrap();
        assert_eq!((a.frames, a.lost, a.rtt), (4, 0, Some(17)));
        assert_eq!(s.len(), 0);
    }

    #[test]
    fn window_limits_new_frames_and_timeouts_fire_for_the_oldest() {
        let mut s = TxStore::<8>::new();
        for _ in 0..8 {
            s.push(0, 0, |_| ()).unwrap();
        }
        assert!(s.push(0, 0, |_| ()).is_none());
        sent(&mut s, 0);
        sent(&mut s, 1);
        assert_eq!(s.next(2, 5, 1000), None);
        assert_eq!(s.deadline(1000), Some(1000));
        assert_eq!(s.next(2, 1000, 1000), Some((0, Reason::Timeout)));
        assert_eq!(s.on_ack(5, 0, 0), None, "beyond what was sent");
        assert_eq!(s.clear(), 8);
    }
}
