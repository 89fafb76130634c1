//! RX: decode an oversampled capture into bytes, with clock recovery.
//!
//! The decoder works in three steps:
//! 1. **Lock** (`lock`): follow edges one bit time apart (the preamble's `1010...` has an
//!    edge in the middle of every bit and nowhere else) for more than [`LOCK_INTERVALS`] bits
//!    and fit phase and period to them by least squares. A capture that never locks is a link
//!    pulse (isolated 100 ns pulses) or noise.
//! 2. **Hunt the SFD**: decode bits until two equal bits follow each other: the `11` ending
//!    the SFD (`00` if the pair is swapped, which also tells the polarity). Byte alignment
//!    starts right after it.
//! 3. **Decode** the frame into the caller's buffer until a bit cell has no mid-bit transition
//!    (TP_IDL or idle: end of frame) or the capture or buffer runs out (truncated).
//!
//! Clock recovery (`dpll`) is edge tracking with a second-order DPLL: `t` (fixed point,
//! samples) predicts where the next mid-bit edge lies, and each edge's offset from it corrects
//! phase and period, with gains that shrink as the loop has seen more edges.
//!
//! The frame is decoded a word at a time (`x4` at 4x, `words` at 5x..8x): the cells of a
//! 32-sample window, each checked for its mid-bit transition where the loop predicts it,
//! their bits gathered with a multiply, their edge offsets summed, one loop update per 2, 4
//! or 8 words. Where a
//! word cannot be vouched for (a missing edge, an edge outside its window, the end of the
//! frame) and at 2x and 3x, the slow path (`cell`) reads one cell at a time: the transition
//! nearest the prediction is the mid-bit edge, near ties are settled on the data ahead.

mod ahead;
mod cell;
mod dpll;
mod lock;
mod words;
mod x4;

pub use lock::LOCK_INTERVALS;

use crate::capture::Capture;
use crate::oversample::Oversample;
use cell::{Cell, Search};
use dpll::Dpll;

/// Preamble bits decoded after lock without finding the SFD before giving up.
const SFD_HUNT_MAX_BITS: u32 = 160;
/// Bits the slow path decodes before the word path tries again.
const SLOW_BITS: u32 = 8;

/// What one capture turned out to be; each maps to one MAC/PHY counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RxOutcome {
    /// A frame ended cleanly (TP_IDL/idle on a byte boundary): `len` bytes after the SFD
    /// (destination address through FCS) were written to the buffer.
    Frame {
        /// Bytes written.
        len: usize,
    },
    /// One or more isolated 100 ns pulses and nothing else: link integrity, not data.
    LinkPulse,
    /// The preamble locked but the transmission stopped mid-byte, the capture ended before the
    /// end of frame, or the buffer filled up. `len` whole bytes were written.
    Truncated {
        /// Bytes written.
        len: usize,
    },
    /// Activity that is neither a frame nor link pulses (or no activity at all).
    Noise,
}

/// A Manchester decoder for one oversampling factor. Keeps no per-frame state between calls
/// except what [`Decoder::inverted`] reports about the last one.
#[derive(Clone, Debug)]
pub struct Decoder {
    os: Oversample,
    search: Search,
    inverted: bool,
}

impl Decoder {
    /// A decoder for captures taken at `os`.
    pub fn new(os: Oversample) -> Decoder {
        Decoder {
            os,
            search: Search::new(os),
            inverted: false,
        }
    }

    /// The oversampling factor this decoder expects.
    pub fn oversample(&self) -> Oversample {
        self.os
    }

    /// True if the last decoded frame arrived with swapped polarity (SFD ended in `00`).
    pub fn inverted(&self) -> bool {
        self.inverted
    }

    /// Decodes `capture` and writes the frame bytes after the SFD (destination address through
    /// FCS) into `out`, which can be a MAC RX grant: nothing is copied afterwards. Never panics
    /// and never writes past `out`; bytes past the returned length are left as they were.
    pub fn decode(&mut self, capture: &Capture<'_>, out: &mut [u8]) -> RxOutcome {
        self.search.slip_direction = 1;
        let Some((mut dpll, last_bit)) = lock::acquire(capture, self.os) else {
            return lock::classify_unlocked(capture, self.os);
        };
        match self.hunt_sfd(capture, &mut dpll, last_bit) {
            Ok(inverted) => self.inverted = inverted,
            Err(outcome) => return outcome,
        }
        self.decode_bytes(capture, &mut dpll, out)
    }

    /// Decodes preamble bits until two equal bits in a row (the end of the SFD). Returns the
    /// polarity (true = inverted) or the outcome if the transmission ends first.
    fn hunt_sfd(
        &mut self,
        cap: &Capture<'_>,
        dpll: &mut Dpll,
        last_bit: u32,
    ) -> Result<bool, RxOutcome> {
        let mut previous = last_bit;
        for _ in 0..SFD_HUNT_MAX_BITS {
            match self.search.next_bit(cap, dpll) {
                Cell::Bit { value, error } => {
                    dpll.advance(1, error);
                    if previous == value {
                        return Ok(value == 0);
                    }
                    previous = value;
                }
                Cell::Violation | Cell::CaptureEnd => {
                    return Err(RxOutcome::Truncated { len: 0 });
                }
            }
        }
        Err(RxOutcome::Noise)
    }

    /// Decodes the frame after the SFD into `out`: words of cells while they can be vouched
    /// for, single cells otherwise, until the end of the frame, capture or buffer.
    fn decode_bytes(&mut self, cap: &Capture<'_>, dpll: &mut Dpll, out: &mut [u8]) -> RxOutcome {
        let mut bytes = Bytes::new(out);
        let outcome = self.fill(cap, dpll, &mut bytes);
        // Decoded in line polarity; a swapped pair inverts every bit.
        if self.inverted {
            let len = bytes.len;
            for byte in bytes.buf.iter_mut().take(len) {
                *byte = !*byte;
            }
        }
        outcome
    }

    /// The loop of [`Decoder::decode_bytes`]: words while they pass, then bits.
    fn fill(&mut self, cap: &Capture<'_>, dpll: &mut Dpll, bytes: &mut Bytes<'_>) -> RxOutcome {
        loop {
            words::decode(self.os, cap, dpll, bytes);
            for _ in 0..SLOW_BITS {
                let len = bytes.len;
                if !bytes.has_room() {
                    // Buffer full: a clean end right here is still a whole frame.
                    let clean_end =
                        bytes.count == 0 && self.search.next_bit(cap, dpll) == Cell::Violation;
                    return if clean_end {
                        RxOutcome::Frame { len }
                    } else {
                        RxOutcome::Truncated { len }
                    };
                }
                match self.search.next_bit(cap, dpll) {
                    Cell::Bit { value, error } => {
                        dpll.advance(1, error);
                        bytes.push(value, 1);
                    }
                    Cell::Violation if bytes.count == 0 => return RxOutcome::Frame { len },
                    Cell::Violation | Cell::CaptureEnd => return RxOutcome::Truncated { len },
                }
            }
        }
    }
}

/// The caller's buffer filling up with decoded bits (line polarity), LSB first, a byte at a
/// time.
pub(super) struct Bytes<'a> {
    buf: &'a mut [u8],
    /// Whole bytes written.
    len: usize,
    /// Bits of the byte in progress (and, after a word, up to 7 bits past it).
    bits: u32,
    /// Number of bits in `bits`.
    count: u32,
}

impl<'a> Bytes<'a> {
    fn new(buf: &'a mut [u8]) -> Bytes<'a> {
        Bytes {
            buf,
            len: 0,
            bits: 0,
            count: 0,
        }
    }

    /// True while another byte fits.
    #[inline(always)]
    pub(super) fn has_room(&self) -> bool {
        self.len < self.buf.len()
    }

    /// Appends the low `n` (<= 8) bits of `bits`; a completed byte goes to the buffer (the
    /// caller checked [`Bytes::has_room`] before starting it).
    #[inline(always)]
    pub(super) fn push(&mut self, bits: u32, n: u32) {
        self.bits |= bits << self.count;
        self.count += n;
        if self.count >= 8 {
            if let Some(slot) = self.buf.get_mut(self.len) {
                *slot = self.bits as u8;
                self.len += 1;
            }
            self.bits >>= 8;
            self.count -= 8;
        }
    }
}
