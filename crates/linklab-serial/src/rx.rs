//! The receive store: `W` slots (slot = sequence mod `W`) holding frames that arrived in order
//! but the application has not taken yet, and frames that arrived ahead of a gap. It grants the
//! sender exactly as many credits as it has free slots beyond the cumulative ACK, so a slow
//! reader stops the sender instead of losing frames.
//!
//! Held in-order frames have sequence numbers `nxt - undelivered .. nxt`, out-of-order ones lie
//! in `nxt + 1 .. nxt + credits`: together at most `W` consecutive numbers, so slots never
//! collide.

use crate::wire::MAX_PAYLOAD;

struct Slot {
    payload: [u8; MAX_PAYLOAD],
    len: u16,
    flags: u8,
    full: bool,
}

const EMPTY: Slot = Slot {
    payload: [0; MAX_PAYLOAD],
    len: 0,
    flags: 0,
    full: false,
};

/// What became of a received DATA frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accept {
    /// The next in sequence (possibly completing a run of held frames).
    InOrder,
    /// Ahead of a gap; held until the gap fills.
    OutOfOrder,
    /// Already held or delivered.
    Duplicate,
    /// Beyond the credits granted.
    OutOfWindow,
}

/// Frames from arrival until the application takes them (see the module documentation).
pub struct RxStore<const W: usize> {
    slots: [Slot; W],
    nxt: u8,
    undelivered: u8,
    /// Frames released by [`RxStore::release_head`].
    pub released: u64,
    /// Their payload bytes.
    pub released_bytes: u64,
}

impl<const W: usize> Default for RxStore<W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const W: usize> RxStore<W> {
    /// An empty store expecting sequence number 0.
    pub const fn new() -> Self {
        RxStore {
            slots: [EMPTY; W],
            nxt: 0,
            undelivered: 0,
            released: 0,
            released_bytes: 0,
        }
    }

    fn slot_mut(&mut self, seq: u8) -> &mut Slot {
        &mut self.slots[seq as usize % W]
    }

    /// The cumulative ACK: the next sequence number expected.
    pub fn ack(&self) -> u8 {
        self.nxt
    }

    /// Frames the sender may send beyond [`RxStore::ack`].
    pub fn credits(&self) -> u8 {
        (W - self.undelivered as usize) as u8
    }

    /// Selective ACK: bit i set when `ack + 1 + i` is held out of order.
    pub fn sack(&self) -> u16 {
        let mut bits = 0;
        for i in 0..(self.credits() as usize).saturating_sub(1).min(16) {
            let seq = self.nxt.wrapping_add(1 + i as u8);
            if self.slots[seq as usize % W].full {
                bits |= 1 << i;
            }
        }
        bits
    }

    /// Frames held: in order and not yet taken, or out of order.
    pub fn held(&self) -> usize {
        self.slots.iter().filter(|s| s.full).count()
    }

    /// Takes DATA frame `seq` with `flags` and `payload` (at most [`MAX_PAYLOAD`] bytes).
    pub fn accept(&mut self, seq: u8, flags: u8, payload: &[u8]) -> Accept {
        let ahead = seq.wrapping_sub(self.nxt);
        if ahead >= 128 {
            return Accept::Duplicate;
        }
        if ahead >= self.credits() {
            return Accept::OutOfWindow;
        }
        let slot = self.slot_mut(seq);
        if slot.full {
            return Accept::Duplicate;
        }
        let len = payload.len().min(MAX_PAYLOAD);
        slot.payload[..len].copy_from_slice(&payload[..len]);
        slot.len = len as u16;
        slot.flags = flags;
        slot.full = true;
        if ahead != 0 {
            return Accept::OutOfOrder;
        }
        while (self.undelivered as usize) < W && self.slots[self.nxt as usize % W].full {
            self.nxt = self.nxt.wrapping_add(1);
            self.undelivered += 1;
        }
        Accept::InOrder
    }

    /// The oldest frame in sequence not yet taken: its flags and payload.
    pub fn head(&self) -> Option<(u8, &[u8])> {
        if self.undelivered == 0 {
            return None;
        }
        let seq = self.nxt.wrapping_sub(self.undelivered);
        let slot = &self.slots[seq as usize % W];
        Some((slot.flags, &slot.payload[..slot.len as usize]))
    }

    /// The payload of [`RxStore::head`], writable (embassy-net's receive token lends it so).
    #[cfg(feature = "embassy")]
    pub fn head_payload_mut(&mut self) -> Option<&mut [u8]> {
        if self.undelivered == 0 {
            return None;
        }
        let seq = self.nxt.wrapping_sub(self.undelivered);
        let slot = self.slot_mut(seq);
        let len = slot.len as usize;
        Some(&mut slot.payload[..len])
    }

    /// Frees the slot of [`RxStore::head`].
    pub fn release_head(&mut self) {
        if self.undelivered == 0 {
            return;
        }
        let seq = self.nxt.wrapping_sub(self.undelivered);
        let slot = self.slot_mut(seq);
        slot.full = false;
        let len = slot.len;
        self.undelivered -= 1;
        self.released += 1;
        self.released_bytes += u64::from(len);
    }

    /// Forgets every frame (a new session); returns how many were held.
    pub fn clear(&mut self) -> usize {
        let n = self.held();
        for s in &mut self.slots {
            s.full = false;
        }
        self.nxt = 0;
        self.undelivered = 0;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn holds_out_of_order_delivers_in_order_and_grants_free_slots() {
        let mut r = RxStore::<4>::new();
        assert_eq!(r.credits(), 4);
        assert_eq!(r.accept(2, 0, b"c"), Accept::OutOfOrder);
        assert_eq!(r.accept(1, 0, b"b"), Accept::OutOfOrder);
        assert_eq!(r.sack(), 0b11);
        assert_eq!(r.accept(4, 0, b"e"), Accept::OutOfWindow);
        assert_eq!(r.accept(2, 0, b"c"), Accept::Duplicate);
        assert_eq!(r.accept(0, 0, b"a"), Accept::InOrder);
        assert_eq!((r.ack(), r.credits(), r.sack()), (3, 1, 0));
        assert_eq!(r.accept(3, 0, b"d"), Accept::InOrder);
        assert_eq!(r.credits(), 0);
        assert_eq!(r.accept(4, 0, b"e"), Accept::OutOfWindow);
        assert_eq!(r.accept(0, 0, b"a"), Accept::Duplicate);
        let mut got = Vec::new();
        while let Some((_, p)) = r.head() {
            got.extend_from_slice(p);
            r.release_head();
        }
        assert_eq!(got, b"abcd");
        assert_eq!((r.credits(), r.held()), (4, 0));
    }
}
