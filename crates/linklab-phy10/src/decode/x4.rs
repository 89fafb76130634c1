//! The word path at 4x, written for the MCU's budget: a word of 32 samples is eight cells, one
//! byte; the loop is updated once per two or four words (bytes), with the words' edge
//! positions summed as they come. Same rules as [`super::words`] (which handles 5x..8x):
//! each cell's mid-bit transition must lie in the two samples around the prediction, both
//! windows are tried near a window shift, and the data around settles a disagreement.

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
const EARLY_EDGES: u32 = 128;
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
            (t, kp) = update(d, firsts, late, WORDS);
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

/// Updates the loop with `taken` words; returns the next word's mean prediction and the
/// distance between words. Not inlined: the loop's state then stays in memory between
/// updates and the word loop has the registers.
#[inline(never)]
fn update(d: &mut Steady, firsts: u32, late: u32, taken: u32) -> (u32, u32) {
    d.advance(8 * taken, error(firsts, late, taken));
    (middle(d.t, d.period), d.period << 3)
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
