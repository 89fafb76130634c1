//! The word path at 4x, written for the MCU's budget: a 32-sample word is eight cells, one
//! byte.
//!
//! Each cell's mid-bit transition must lie in the two samples around the loop's prediction
//! (a boundary edge is two samples from the mid-bit edge at 4x); the bit is the sample after
//! them, the edge's position feeds the loop. Quantized edges pile up where that window
//! shifts by a sample: the loop settles on the mean of the quantized edges, which is such a
//! point whenever the edges do not jitter across a sample boundary, and next to one when a
//! few of them do. So within [`NEAR`] of a shift both windows are tried. The common case is
//! checked at once: every edge at the one sample both windows share and no transition at the
//! others. Else both windows are read: both pass with the same bits, or only one passes, and
//! that one is taken; both pass with different bits (a cell holds a boundary edge in one and
//! its mid-bit edge in the other), and the data around settles it ([`super::ahead`]).
//!
//! The loop is updated once per 2, 4 or 8 words (a loop gain of at most one), with the
//! words' edge positions summed as they come. Nothing is called inside the word loop, so its
//! values stay in registers (RV32 has 31); a disagreement leaves the loop.

use super::ahead::rare_side_x4;
use super::dpll::{Dpll, Steady, FRAC, ONE};
use super::Bytes;
use crate::capture::Capture;

/// One bit per cell: the first sample of each nibble.
const MASK: u32 = 0x1111_1111;
/// Transitions into samples f + 1, f + 2, f + 3 of each cell (bits 4i, 4i + 1, 4i + 2 of
/// `w ^ (w >> 1)`): only the middle one.
const STRICT_MASK: u32 = 0x7777_7777;
const STRICT: u32 = 0x2222_2222;
/// Gathering bit 4i to bit i: fold pairs of nibbles, then one multiply.
const PAIRS: u32 = 0x0303_0303;
const GATHER_MUL: u32 = 0x0004_1041;
const GATHER_SHIFT: u32 = 18;
/// How close (fixed point) the prediction may come to a window shift before both windows
/// are tried, and how close while the loop is young (see [`super::words`]).
const NEAR: u32 = ONE / 8;
const NEAR_EARLY: u32 = ONE / 2;
/// Edges tracked before one window is trusted.
const EARLY_EDGES: u32 = 1024;
/// Edges tracked before the word path starts: the first gear's gain (1/8 per edge) would
/// overshoot with a whole word per update.
const FIRST_EDGES: u32 = 64;

/// The 8 bits of the cells in `s` (bit 4i for cell i), cell i in bit i (higher bits are
/// garbage; the caller keeps the low byte).
#[inline(always)]
fn gather(s: u32) -> u32 {
    (((s | (s >> 3)) & PAIRS).wrapping_mul(GATHER_MUL)) >> GATHER_SHIFT
}

/// Samples `f..f + 32` of the capture, if its words hold them.
#[inline(always)]
fn samples(words: &[u32], f: usize) -> Option<u32> {
    let shift = (f & 31) as u32;
    let &[w0, w1] = words.get(f >> 5..(f >> 5) + 2)? else {
        return None;
    };
    Some((w0 >> shift) | ((w1 << 1) << (31 - shift)))
}

/// Decodes whole bytes into `out` while their words pass (from the cell `dpll` predicts);
/// leaves the loop at the first byte it did not take.
/// (Not inlined into the frame loop: the word loop gets the registers to itself.)
#[inline(never)]
pub(super) fn decode(cap: &Capture<'_>, dpll: &mut Dpll, out: &mut Bytes<'_>) {
    // Bytes only start on a byte boundary (always true at 4x: the slow path goes by bytes).
    if out.count != 0 || dpll.edges < FIRST_EDGES {
        return;
    }
    loop {
        let gear_bits = dpll.next_gear_at.saturating_sub(dpll.edges);
        let max_bytes = gear_bits.div_ceil(8) as usize;
        let mut steady = dpll.steady();
        // As many words per update as keep the loop gain (words x 8 / 2^alpha) at most 1.
        let (bytes, stop) = match (dpll.edges < EARLY_EDGES, dpll.alpha) {
            (true, _) => run::<2, { 2 * NEAR_EARLY }>(cap, &mut steady, out, max_bytes),
            (false, ..=4) => run::<2, { 2 * NEAR }>(cap, &mut steady, out, max_bytes),
            (false, 5) => run::<4, { 2 * NEAR }>(cap, &mut steady, out, max_bytes),
            (false, _) => run::<8, { 2 * NEAR }>(cap, &mut steady, out, max_bytes),
        };
        dpll.settle(&steady, 8 * bytes);
        match stop {
            Stop::GearEnd => {}
            Stop::Word => return,
            Stop::Disagree(f) => {
                if !settle_disagreement(cap, f, dpll, out) {
                    return;
                }
            }
        }
    }
}

/// Why [`run`] returned.
enum Stop {
    /// The gear's bits are done: shift gears and go on.
    GearEnd,
    /// A word it could not take, or the end of the capture or the buffer: the slow path.
    Word,
    /// Both windows pass with different bits (the early one's samples start at the sample
    /// given): settle it on the data around.
    Disagree(usize),
}

/// The word the loop predicts next, whose two windows (samples from `f` on) disagree: takes
/// the side the data around it shows (writes its byte and updates the loop), or returns false
/// without any (no evidence either way: the slow path).
#[inline(never)]
fn settle_disagreement(cap: &Capture<'_>, f: usize, dpll: &mut Dpll, out: &mut Bytes<'_>) -> bool {
    let t = middle(dpll.t, dpll.period);
    let Some(w) = samples(cap.words(), f) else {
        return false;
    };
    let Some(slot) = out.buf.get_mut(out.len) else {
        return false;
    };
    let (s, late, f_used) = match rare_side_x4(cap, f + 2, dpll.period) {
        0 => return false,
        side if side > 0 => late_window(w, f),
        _ => early_window(w, f),
    };
    *slot = gather(s & MASK) as u8;
    out.len += 1;
    let firsts = (f_used << FRAC).wrapping_sub(t);
    dpll.advance(8, error(firsts, late, 1));
    true
}

/// Mean prediction of a word's cells whose first is predicted at `t`: t + 3.5 periods less
/// 3.5 x 4 samples.
#[inline(always)]
fn middle(t: u32, period: u32) -> u32 {
    t.wrapping_add_signed(((period as i32 - (4 * ONE) as i32) * 7) >> 1)
}

/// Words into bytes, one loop update per `WORDS` words, for at most `max_bytes` bytes; both
/// windows are tried within `SPAN / 2` of a window shift. Returns the bytes written and
/// whether it stopped at `max_bytes` (else at a word it could not take or the buffer's end).
/// The bytes are in line polarity (the caller flips them if the line is inverted).
#[inline(always)]
fn run<const WORDS: u32, const SPAN: u32>(
    cap: &Capture<'_>,
    d: &mut Steady,
    out: &mut Bytes<'_>,
    max_bytes: usize,
) -> (u32, Stop) {
    // Whole words of captured samples only: a window read from two of them never reaches past
    // the capture.
    let words = cap.words().get(..cap.len() / 32).unwrap_or_default();
    // The window of a word with mean prediction t: transitions into samples k with
    // a < k <= a + 2, a = t + 1/2 - 1 (a quarter bit each side of t + 1/2), moved by SPAN / 2
    // each way to see whether it is near a shift.
    let early = (ONE / 2).wrapping_sub(ONE + SPAN / 2);
    let start = out.len;
    let end = out.buf.len().min(start.saturating_add(max_bytes));
    let mut stop = if end - start == max_bytes {
        Stop::GearEnd
    } else {
        Stop::Word
    };
    let mut written = 0u32;
    let mut t = middle(d.t, d.period);
    let mut kp = d.period << 3;
    // Per word: the window's first transition (shifted up) less its mean prediction; and
    // the edges in the window's second sample (nibbles of up to 8 per cell).
    let (mut firsts, mut late, mut taken) = (0u32, 0u32, 0u32);
    for slot in out.buf[start..end].iter_mut() {
        let a = t.wrapping_add(early);
        let f = (a >> FRAC) as usize;
        let Some(w) = samples(words, f) else {
            stop = Stop::Word;
            break;
        };
        let (s, late_here, f_used) = if (a.wrapping_add(SPAN) >> FRAC) as usize == f {
            let (s, late, f) = early_window(w, f);
            if (w ^ s) & MASK != MASK {
                stop = Stop::Word;
                break;
            }
            (s, late, f)
        } else if (w ^ (w >> 1)) & STRICT_MASK == STRICT {
            // Near a shift, the common case: every edge at sample f + 2 and no other
            // transition at f + 1 .. f + 3, so both windows agree.
            (w >> 2, MASK, f as u32)
        } else {
            match both_windows(w, f) {
                Near::Take(cells) => cells,
                Near::Fail => {
                    stop = Stop::Word;
                    break;
                }
                Near::Disagree => {
                    stop = Stop::Disagree(f);
                    break;
                }
            }
        };
        *slot = gather(s & MASK) as u8;
        firsts = firsts.wrapping_add(f_used << FRAC).wrapping_sub(t);
        late += late_here;
        taken += 1;
        t = t.wrapping_add(kp);
        if taken == WORDS {
            d.advance(8 * WORDS, error(firsts, late, WORDS));
            t = middle(d.t, d.period);
            kp = d.period << 3;
            written += WORDS;
            (firsts, late, taken) = (0, 0, 0);
        }
    }
    if taken > 0 {
        d.advance(8 * taken, error(firsts, late, taken));
        written += taken;
    }
    out.len = start + written as usize;
    (written, stop)
}

/// Summed edge offsets of `taken` words from their cells' predictions: per word eight times
/// (f + 1/2 - t) (`firsts` sums f - t) plus the edges in the window's second sample (`late`:
/// nibbles of up to 8).
#[inline(always)]
fn error(firsts: u32, late: u32, taken: u32) -> i32 {
    let bytes = (late & 0x0F0F_0F0F) + ((late >> 4) & 0x0F0F_0F0F);
    let late_count = bytes.wrapping_mul(0x0101_0101) >> 24;
    firsts
        .wrapping_add(taken * (ONE / 2))
        .wrapping_mul(8)
        .wrapping_add(late_count << FRAC) as i32
}

/// The cells of `w` (samples from `f` on) in the window of transitions `f + 1, f + 2`: the
/// window's last samples, the edges in its second sample, `f`.
#[inline(always)]
fn early_window(w: u32, f: usize) -> (u32, u32, u32) {
    let s = w >> 2;
    (s, ((w >> 1) ^ s) & MASK, f as u32)
}

/// The same for the window a sample later (transitions `f + 2, f + 3`).
#[inline(always)]
fn late_window(w: u32, f: usize) -> (u32, u32, u32) {
    let s = w >> 3;
    (s, ((w >> 2) ^ s) & MASK, f as u32 + 1)
}

/// What [`both_windows`] found.
enum Near {
    Take((u32, u32, u32)),
    Fail,
    Disagree,
}

/// Near a window shift: the cells of `w` (samples from `f` on) in the window of transitions
/// `f + 1, f + 2` and in the one a sample later. Both pass with the same bits, or only one
/// passes: that one. Both pass with different bits: [`Near::Disagree`].
#[inline(always)]
fn both_windows(w: u32, f: usize) -> Near {
    let early = (w ^ (w >> 2)) & MASK == MASK;
    let late = ((w >> 1) ^ (w >> 3)) & MASK == MASK;
    match (early, late) {
        (true, true) if ((w >> 2) ^ (w >> 3)) & MASK == 0 => Near::Take(early_window(w, f)),
        (true, false) => Near::Take(early_window(w, f)),
        (false, true) => Near::Take(late_window(w, f)),
        (true, true) => Near::Disagree,
        (false, false) => Near::Fail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A word of eight cells (four samples each, from `f` on) whose edges are into sample
    /// `edges[i]` (1..=3) of cell i, from `from` to `!from`.
    fn word(edges: [u32; 8], from: [u32; 8]) -> u32 {
        let mut w = 0;
        for (i, (&edge, &level)) in edges.iter().zip(&from).enumerate() {
            for j in 0..4u32 {
                let sample = if j < edge { level } else { level ^ 1 };
                w |= sample << (4 * i as u32 + j);
            }
        }
        w
    }

    #[test]
    fn gather_packs_the_first_sample_of_each_nibble() {
        for v in 0..=255u32 {
            let x: u32 = (0..8).map(|i| ((v >> i) & 1) << (4 * i)).sum();
            assert_eq!(gather(x) & 0xFF, v);
        }
    }

    #[test]
    fn strict_pattern_is_every_edge_at_the_shared_sample() {
        let from = [0, 1, 1, 0, 1, 0, 0, 1];
        let w = word([2; 8], from);
        assert_eq!((w ^ (w >> 1)) & STRICT_MASK, STRICT);
        let mut edges = [2; 8];
        edges[5] = 3;
        let w = word(edges, from);
        assert_ne!((w ^ (w >> 1)) & STRICT_MASK, STRICT);
    }

    #[test]
    fn both_windows_take_the_one_that_holds_every_edge() {
        let from = [1, 0, 1, 1, 0, 0, 1, 0];
        // Edges into samples 1 and 2 (the early window): early.
        let w = word([1, 2, 2, 1, 2, 2, 2, 1], from);
        let Near::Take((s, _, f)) = both_windows(w, 100) else {
            panic!("early window");
        };
        assert_eq!((f, gather(s & MASK) & 0xFF), (100, 0b1011_0010));
        // Into samples 2 and 3 (the late window): late.
        let w = word([3, 2, 3, 3, 2, 2, 3, 3], from);
        let Near::Take((s, _, f)) = both_windows(w, 100) else {
            panic!("late window");
        };
        assert_eq!((f, gather(s & MASK) & 0xFF), (101, 0b1011_0010));
        // Edges spread over samples 1..=3: neither window holds them all.
        let w = word([1, 2, 3, 1, 2, 2, 2, 3], from);
        assert!(matches!(both_windows(w, 100), Near::Fail));
    }

    #[test]
    fn a_boundary_edge_in_one_window_and_the_mid_bit_edge_in_the_other_disagree() {
        // Cell 0: a (late) boundary edge into sample 1, then the mid-bit edge into sample 3
        // (back to the first level). Read early, the boundary passes for the mid-bit edge;
        // read late, the mid-bit edge is found. The other cells' edges are at sample 2.
        let mut w = word([2; 8], [0, 1, 0, 1, 0, 1, 0, 1]);
        w &= !0xF;
        w |= 0b0110; // samples 0..=3 of cell 0: 0, 1, 1, 0
        assert!(matches!(both_windows(w, 7), Near::Disagree));
    }
}
