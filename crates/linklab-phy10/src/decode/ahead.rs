//! At 4x, settling a near tie on the data around it: which side of the usual edge position
//! the rare edges fall on.
//!
//! At 4x a boundary edge is only two samples from the mid-bit edge. When the edges of a frame
//! straddle a sample boundary, most mid-bit edges show up at one sample `c` and a few at a
//! neighbour, `c + 1` (late side) or `c - 1` (early side): which side depends on where the
//! true edges lie between samples, a quarter sample the loop cannot resolve from the frequent
//! edges alone. A cell with transitions at `c - 1` and `c + 1` and none at `c` is then
//! ambiguous on its own: a late mid-bit edge after a late boundary edge, or an early mid-bit
//! edge before an early boundary edge. The cells around it tell the side: a lone transition
//! at `c + 1`, or transitions at `c - 1` and `c` (a late boundary edge, then the mid-bit
//! edge), mean late; the mirror images mean early. Both directions count, nearest words
//! first: drift brings the rare edges in on one side (evidence ahead) and takes them away on
//! the other (evidence behind). Only words whose every cell has a transition there count:
//! past the end of the frame, TP_IDL's two edges would look like rare ones.

use super::dpll::{FRAC, ONE};
use crate::capture::Capture;

/// Words of eight cells looked at on each side at most (fewer once the evidence is clear).
const WORDS_EACH_SIDE: u32 = 16;
/// Evidence that settles it.
const CLEAR: i32 = 3;
/// One bit per 4x cell.
const MASK: u32 = 0x1111_1111;

/// Late minus early evidence in the cells around a reference cell whose usual transition is
/// sample `c` (the cells are `period` apart; 4x only). Positive: the rare mid-bit edges come
/// late; negative: early; zero: no evidence.
pub(super) fn rare_side_x4(cap: &Capture<'_>, c: usize, period: u32) -> i32 {
    let mut score = 0;
    for word in 0..WORDS_EACH_SIDE as i32 {
        // Eight cells starting one cell after the reference, and eight ending one before.
        score += word_evidence(cap, c, period, 1 + 8 * word)
            + word_evidence(cap, c, period, -8 - 8 * word);
        if score.abs() >= CLEAR {
            break;
        }
    }
    score
}

/// Late minus early evidence in the eight cells from cell `first` (relative to the
/// reference cell with usual transition `c`); 0 outside the capture.
fn word_evidence(cap: &Capture<'_>, c: usize, period: u32, first: i32) -> i32 {
    // The usual transition of the word's first cell: c plus `first` periods, rounded at the
    // word's middle cell (the eight cells share one grid of four samples).
    let middle = (first * 2 + 7) as i64 * i64::from(period);
    let drift = (middle - (first * 2 + 7) as i64 * i64::from(4 * ONE)) / 2;
    let shift_samples = ((drift + i64::from(ONE / 2)) >> FRAC) as isize;
    let c = (c as isize + 4 * first as isize + shift_samples) as usize;
    let f = c.wrapping_sub(2);
    if f.saturating_add(32) > cap.len() {
        return 0;
    }
    let shift = (f & 31) as u32;
    let Some(&[w0, w1]) = cap.words().get(f >> 5..(f >> 5) + 2) else {
        return 0;
    };
    let w = (w0 >> shift) | ((w1 << 1) << (31 - shift));
    // Transitions into samples c - 1, c and c + 1 of each cell.
    let before = (w ^ (w >> 1)) & MASK;
    let usual = ((w >> 1) ^ (w >> 2)) & MASK;
    let after = ((w >> 2) ^ (w >> 3)) & MASK;
    // Only words of data count (past the frame, TP_IDL's edges would pass for rare ones).
    if before | usual | after != MASK {
        return 0;
    }
    let late = (after & !before & !usual) | (before & usual & !after);
    let early = (before & !usual & !after) | (usual & after & !before);
    count(late) as i32 - count(early) as i32
}

/// Set bits of `x` (bits at nibble starts only).
#[inline(always)]
fn count(x: u32) -> u32 {
    x.wrapping_mul(MASK) >> 28
}
