//! The event queue: what can happen, and when, and what the events carry (a capture's
//! [`LineRx`]). Virtual time in nanoseconds; events at the same time run in the order they
//! were scheduled, so a run is the same event for event. This file imports nothing from the
//! rest of the simulation: the interrupt (`isr`) and the main loop use it, `isr` uses the
//! main loop's state, and no arrow runs back.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The two ends of the link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Node {
    Host,
    Device,
}

impl Node {
    /// Index into the per-node arrays.
    pub(super) fn idx(self) -> usize {
        match self {
            Node::Host => 0,
            Node::Device => 1,
        }
    }
}

/// What the line carried while the receive interrupt sampled it, captured at its exit.
pub(super) enum LineRx {
    /// Nothing to capture: a link pulse, or a line already idle when the interrupt entered.
    Nothing,
    /// Byte wire: the bits of `wire` from bit `start_bit` on, `shift` idle bits late and
    /// inverted if `invert`.
    Bytes {
        wire: Vec<u8>,
        start_bit: usize,
        shift: usize,
        invert: bool,
    },
    /// Sample-level wire: `wire` through the line, sampled from receiver sample
    /// `first_sample` on.
    Samples { wire: Vec<u8>, first_sample: usize },
}

/// Something that happens at a point of virtual time.
pub(super) enum Ev {
    /// A node tries to start its next transmission.
    TxAttempt(Node),
    /// A node's transmission ended (at the sender).
    TxEnd(Node),
    /// First bit of a transmission reaches the device.
    DevRxStart { wire: Vec<u8> },
    /// Last bit of a transmission reaches the host.
    HostRx { wire: Vec<u8> },
    /// RX interrupt entry.
    IsrEnter,
    /// RX interrupt exit, with what the line carried while it sampled.
    IsrExit { line: LineRx },
    /// A main-loop iteration completes (generation).
    MainDone(u64),
    /// The device's timers (smoltcp, MAC, app) may be due.
    DevWake,
    /// The host's smoltcp timers may be due.
    HostWake,
    /// Link pulse check for a node.
    Nlp(Node),
}

struct Scheduled {
    at: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// Pending events, earliest first (ties in scheduling order).
#[derive(Default)]
pub(super) struct Events {
    seq: u64,
    queue: BinaryHeap<Reverse<Scheduled>>,
}

impl Events {
    /// Schedules `ev` at `at`.
    pub(super) fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse(Scheduled {
            at,
            seq: self.seq,
            ev,
        }));
    }

    /// The earliest event and its time.
    pub(super) fn pop(&mut self) -> Option<(u64, Ev)> {
        self.queue.pop().map(|Reverse(s)| (s.at, s.ev))
    }
}
