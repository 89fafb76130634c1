//! A simulated serial line in virtual time for the link's tests and figures: two links, each
//! direction a UART that moves `rate` bytes per second out of a small transmit FIFO, through an
//! impairer, into the other link. Deterministic for a given seed.
#![allow(dead_code)]

use std::collections::VecDeque;

use linklab_serial::impair::{Impairer, Impairment};
use linklab_serial::{Config, Link};

/// Bytes of a UART's transmit FIFO plus driver buffer: what the link may hand over ahead of
/// the line.
pub const FIFO: usize = 256;

/// One direction of the line.
pub struct Pipe {
    /// Bytes per second.
    pub rate: u64,
    fifo: VecDeque<u8>,
    /// Bytes the line may still move in this step (fractional part carried).
    budget_millionths: u64,
    /// The impairment on the way.
    pub impairer: Impairer,
    /// When false, the line delivers nothing (the far end's receiver is stalled or the
    /// cable is pulled); bytes keep leaving the FIFO and are lost.
    pub connected: bool,
    /// Bytes moved over the line.
    pub moved: u64,
}

impl Pipe {
    /// A pipe of `rate` bytes/s with `impairment`.
    pub fn new(rate: u64, impairment: Impairment, seed: u64) -> Pipe {
        Pipe {
            rate,
            fifo: VecDeque::new(),
            budget_millionths: 0,
            impairer: Impairer::new(impairment, seed),
            connected: true,
            moved: 0,
        }
    }

    /// Moves `dt` µs worth of bytes from `from`'s FIFO to `to`, then refills the FIFO.
    fn step(&mut self, now: u64, dt: u64, from: &mut Link, to: &mut Link, out: &mut Vec<u8>) {
        self.budget_millionths += self.rate * dt;
        let n = ((self.budget_millionths / 1_000_000) as usize).min(self.fifo.len());
        self.budget_millionths -= n as u64 * 1_000_000;
        if self.fifo.is_empty() {
            self.budget_millionths = 0; // an idle line saves no time for later
        }
        out.clear();
        let bytes: Vec<u8> = self.fifo.drain(..n).collect();
        self.moved += n as u64;
        if self.connected {
            self.impairer.apply(&bytes, |b| out.push(b));
            if !out.is_empty() {
                to.handle_input(now, out);
            }
        }
        let room = FIFO - self.fifo.len();
        if room > 0 {
            let mut buf = [0u8; FIFO];
            let k = from.poll_output(now, &mut buf[..room]);
            self.fifo.extend(&buf[..k]);
        }
    }

    /// True when nothing is queued on the line.
    pub fn is_idle(&self) -> bool {
        self.fifo.is_empty()
    }
}

/// Two links joined by two pipes.
pub struct Sim {
    /// End A.
    pub a: Box<Link>,
    /// End B.
    pub b: Box<Link>,
    /// A to B.
    pub ab: Pipe,
    /// B to A.
    pub ba: Pipe,
    /// Virtual time, µs.
    pub now: u64,
    scratch: Vec<u8>,
}

impl Sim {
    /// Two fresh links over a line of `rate` bytes/s, impaired the same way both ways.
    pub fn new(rate: u64, impairment: Impairment, seed: u64) -> Sim {
        let config = Config::for_line_rate(rate);
        Sim {
            a: Box::new(Link::new(config, seed as u32 ^ 0xA)),
            b: Box::new(Link::new(config, seed as u32 ^ 0xB0B)),
            ab: Pipe::new(rate, impairment, seed.wrapping_mul(3)),
            ba: Pipe::new(rate, impairment, seed.wrapping_mul(5) + 1),
            now: 0,
            scratch: Vec::new(),
        }
    }

    /// Advances time by `dt` µs.
    pub fn step(&mut self, dt: u64) {
        self.now += dt;
        let now = self.now;
        self.ab
            .step(now, dt, &mut self.a, &mut self.b, &mut self.scratch);
        self.ba
            .step(now, dt, &mut self.b, &mut self.a, &mut self.scratch);
    }

    /// Advances by `dt`, or when both lines are idle straight to the links' next timer (at
    /// most `max_skip`).
    pub fn advance(&mut self, dt: u64, max_skip: u64) {
        if self.ab.is_idle() && self.ba.is_idle() {
            let next = [self.a.poll_at(self.now), self.b.poll_at(self.now)]
                .into_iter()
                .flatten()
                .min()
                .unwrap_or(self.now + max_skip);
            let skip = next.saturating_sub(self.now).clamp(dt, max_skip.max(dt));
            self.step(skip);
        } else {
            self.step(dt);
        }
    }
}

/// The payload of test frame `index`: its length and bytes follow from the index.
pub fn test_frame(index: u32, max_len: usize, buf: &mut Vec<u8>) {
    let mut x = (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let len = 4 + (x % (max_len as u64 - 3)) as usize;
    buf.clear();
    buf.extend_from_slice(&index.to_le_bytes());
    while buf.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf.push(x as u8);
    }
}
