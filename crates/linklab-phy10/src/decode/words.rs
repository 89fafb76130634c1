//! The word path (4x and up): the cells of a 32-sample window at once, one loop update per
//! window.
//!
//! The loop predicts cell `i`'s mid-bit edge at `t + i * period`. All cells of a window share
//! one search window on the sample grid, taken for their mean prediction `t_eff`: the
//! transitions into samples `k` with `k - 1/2` within `N/4` of `t_eff` (2 at 4x, 2 or 3 at 5x,
//! 3 at 6x, 3 or 4 at 7x, 4 at 8x; a boundary edge is `N/2` away). With `f` the sample before
//! that window and `s` its last sample, every cell must show `s != f` (its mid-bit transition
//! in the window); the bit is sample `s`, and the number of samples between `f` and `s` still
//! at the old level is where the edge was, which feeds the loop.
//!
//! When the prediction is within [`NEAR`] of a point where the window shifts by a sample
//! (quantized edges pile up there: a sample boundary the edges straddle, or the middle of a
//! sample when they never jitter across one) both windows are tried: when both pass with the
//! same bits, or only one passes, that one is taken; otherwise the word is left to the slow
//! path. A window that vouches for every cell of a word but holds boundary edges instead of
//! mid-bit edges needs the prediction off by more than a quarter bit less the jitter.

use super::dpll::{Dpll, Steady, FRAC, ONE};
use super::Bytes;
use crate::capture::Capture;
use crate::oversample::Oversample;

/// How close (fixed point) the prediction may come to a window shift before both windows
/// are tried. (Tuned with examples/phy_goals.rs, see README.)
const NEAR: u32 = ONE / 8;
/// Until the loop has tracked this many edges (the preamble's included) both windows are
/// tried for every word: the preamble fit's phase can be a few tenths of a sample off.
const EARLY_EDGES: u32 = 128;

/// Decodes words of cells into `out` while they pass, starting at the cell `dpll` predicts;
/// leaves the loop at the first cell it did not take. Does nothing below 4x.
pub(super) fn decode(os: Oversample, cap: &Capture<'_>, dpll: &mut Dpll, out: &mut Bytes<'_>) {
    match os.get() {
        4 => super::x4::decode(cap, dpll, out),
        5 => decode_n::<5>(cap, dpll, out),
        6 => decode_n::<6>(cap, dpll, out),
        7 => decode_n::<7>(cap, dpll, out),
        8 => decode_n::<8>(cap, dpll, out),
        _ => {}
    }
}

/// Constants of the word path at `N` samples per bit.
struct Lanes<const N: usize>;

impl<const N: usize> Lanes<N> {
    /// Widest search window: `ceil(N / 2)` transitions.
    const MAX_WIDTH: usize = N.div_ceil(2);
    /// Cells per word: the last cell's window (from `f` to `s`) must end inside the word.
    const CELLS: u32 = ((31 - Self::MAX_WIDTH) / N + 1) as u32;
    /// One bit per cell, at bit `N * i`.
    const MASK: u32 = {
        let mut m = 0;
        let mut i = 0;
        while i < Self::CELLS {
            m |= 1 << (N as u32 * i);
            i += 1;
        }
        m
    };
    /// Groups of two cells after folding each odd cell's bit next to its even neighbour.
    const PAIRS: u32 = {
        let mut m = 0;
        let mut g = 0;
        while 2 * g < Self::CELLS {
            m |= 3 << (2 * N as u32 * g);
            g += 1;
        }
        m
    };
    /// Where the gather multiply puts the first bit.
    const GATHER_SHIFT: u32 = (2 * N as u32 - 2) * (Self::CELLS.div_ceil(2) - 1);
    /// Moves pair `g` (at bit `2 N g`) to bit `GATHER_SHIFT + 2 g`.
    const GATHER_MUL: u32 = {
        let mut m = 0;
        let mut g = 0;
        while 2 * g < Self::CELLS {
            m |= 1 << (Self::GATHER_SHIFT + 2 * g - 2 * N as u32 * g);
            g += 1;
        }
        m
    };
    /// The sum of all cells' fields lands in the last cell's field.
    const COUNT_SHIFT: u32 = N as u32 * (Self::CELLS - 1);
    /// Quarter of a bit, fixed point: the search window's half-width.
    const QUARTER: u32 = N as u32 * ONE / 4;

    /// The cells' bits of `x` (bit `N * i` for cell `i`) packed into bit `i`.
    #[inline(always)]
    fn gather(x: u32) -> u32 {
        let pairs = (x | (x >> (N - 1))) & Self::PAIRS;
        (pairs.wrapping_mul(Self::GATHER_MUL) >> Self::GATHER_SHIFT) & ((1 << Self::CELLS) - 1)
    }

    /// The sum of the fields (each < 2^N) at bits `N * i`.
    #[inline(always)]
    fn sum_fields(x: u32) -> u32 {
        (x.wrapping_mul(Self::MASK) >> Self::COUNT_SHIFT) & ((1 << N) - 1)
    }

    /// The search window for mean prediction `t`: its first transition `lo` (the sample
    /// index) and its width. Transitions into samples `k` with `t + 1/2 - N/4 < k <=
    /// t + 1/2 + N/4`.
    #[inline(always)]
    fn window(t: u32) -> (usize, usize) {
        let a = t.wrapping_add(ONE / 2).wrapping_sub(Self::QUARTER);
        let lo = (a >> FRAC) as usize + 1;
        if N % 2 == 0 {
            (lo, N / 2)
        } else {
            let hi = (a.wrapping_add(2 * Self::QUARTER) >> FRAC) as usize;
            (lo, hi.wrapping_sub(lo).wrapping_add(1))
        }
    }
}

/// The cells of `w` (samples from the one before the window on) whose windows hold `width`
/// transitions: their bits and the summed positions of their edges in the window (0 = all
/// at the first transition), unless a cell has no transition there.
#[inline(always)]
fn cells_in<const N: usize>(w: u32, width: usize) -> Option<(u32, u32)> {
    let m = Lanes::<N>::MASK;
    let s = w >> width;
    if (w ^ s) & m != m {
        return None;
    }
    // Samples between the first and the last still at the old level (differing from s).
    let old = |j: usize| ((w >> j) ^ s) & m;
    let late = match width {
        0 | 1 => 0,
        2 => old(1),
        3 => old(1) + old(2),
        _ => old(1) + old(2) + old(3),
    };
    Some((s & m, Lanes::<N>::sum_fields(late)))
}

/// Reads the word of cells whose mean prediction is `t_eff` (the cells are `period` apart):
/// their bits and their summed edge offsets from the predictions, trying both windows when
/// `t_eff` is within `near` of a window shift. `None` when a cell has no transition in its
/// window, the windows disagree (the slow path takes it) or leave the capture.
#[inline(always)]
fn read_word<const N: usize>(
    cap: &Capture<'_>,
    last_start: usize,
    t_eff: u32,
    period: u32,
    near: u32,
) -> Option<(u32, i32)> {
    let (lo, width) = Lanes::<N>::window(t_eff.wrapping_sub(near));
    let (lo_late, width_late) = Lanes::<N>::window(t_eff.wrapping_add(near));
    // The sample before the window, where the word's samples start.
    let f = lo.wrapping_sub(1);
    if lo_late.wrapping_sub(1) > last_start {
        return None;
    }
    let shift = (f & 31) as u32;
    let &[w0, w1] = cap.words().get(f >> 5..(f >> 5) + 2)? else {
        return None;
    };
    let w = (w0 >> shift) | ((w1 << 1) << (31 - shift));
    let first = cells_in::<N>(w, width);
    let (start, (cells, late)) = if lo_late == lo && width_late == width {
        (lo, first?)
    } else {
        // Near a shift of the window: both; the late one starts at most a sample later.
        let second = cells_in::<N>(w >> (lo_late - lo), width_late);
        match (first, second) {
            (Some(a), Some(b)) if a.0 == b.0 => (lo, a),
            (Some(a), None) => (lo, a),
            (None, Some(b)) => (lo_late, b),
            // Both pass with different bits: a cell holds a boundary edge in one window and
            // its mid-bit edge in the other. At 4x the cells around tell which.
            (Some(a), Some(b)) if N == 4 => match super::ahead::rare_side_x4(cap, lo + 1, period) {
                0 => return None,
                side if side > 0 => (lo_late, b),
                _ => (lo, a),
            },
            _ => return None,
        }
    };
    // Edge offsets from the predictions: the window's first transition lies in
    // (start - 1, start], its middle is start - 1/2; `late` samples further per cell.
    let first_offset = ((start as u32) << FRAC).wrapping_sub(t_eff.wrapping_add(ONE / 2));
    let error = Lanes::<N>::CELLS as i32 * first_offset as i32 + (late << FRAC) as i32;
    Some((Lanes::<N>::gather(cells), error))
}

/// The word path at `N` samples per bit, gear by gear.
#[inline(never)]
fn decode_n<const N: usize>(cap: &Capture<'_>, dpll: &mut Dpll, out: &mut Bytes<'_>) {
    // Last sample a word may start at (`f`), so that every sample it reads is captured.
    let Some(last_start) = cap.len().checked_sub(32) else {
        return;
    };
    loop {
        // Early on, the loop's phase is too rough to pick one window: try both.
        let near = if dpll.edges < EARLY_EDGES {
            ONE / 2
        } else {
            NEAR
        };
        let gear_bits = dpll.next_gear_at.saturating_sub(dpll.edges);
        let mut steady = dpll.steady();
        let (bits, more) = words::<N>(cap, last_start, &mut steady, out, gear_bits, near);
        dpll.settle(&steady, bits);
        if !more {
            return;
        }
    }
}

/// Two words of cells per loop update, for at most `max_bits` bits (the rest of the gear);
/// the loop and the output in registers. Returns the bits decoded and whether it stopped at
/// `max_bits` (else at a word it could not take, the end of the capture or of the buffer).
#[inline(always)]
fn words<const N: usize>(
    cap: &Capture<'_>,
    last_start: usize,
    d: &mut Steady,
    out: &mut Bytes<'_>,
    max_bits: u32,
    near: u32,
) -> (u32, bool) {
    let cells = Lanes::<N>::CELLS;
    let grid = (N as u32 * ONE) as i32;
    let (mut len, mut acc, mut count) = (out.len, out.bits, out.count);
    let buf = &mut *out.buf;
    // Each update writes at most two bytes (`count` < 8 and at most 16 new bits).
    let room = buf.len().saturating_sub(len) / 2;
    let gear_updates = max_bits.div_ceil(2 * cells) as usize;
    let updates = gear_updates.min(room);
    // Whether the loop ends at the gear's end (not at the buffer's).
    let mut more = updates > 0 && updates == gear_updates;
    let mut done = 0;
    // Mean prediction of a word's cells minus its first cell's prediction.
    let mut offset = ((d.period as i32 - grid) * (cells as i32 - 1)) >> 1;
    while done < updates {
        let t1 = d.t.wrapping_add_signed(offset);
        let Some((bits1, error1)) = read_word::<N>(cap, last_start, t1, d.period, near) else {
            more = false;
            break;
        };
        let t2 = t1.wrapping_add(d.period.wrapping_mul(cells));
        let second = read_word::<N>(cap, last_start, t2, d.period, near);
        let (bits, taken, error) = match second {
            Some((bits2, error2)) => (bits1 | (bits2 << cells), 2 * cells, error1 + error2),
            None => (bits1, cells, error1),
        };
        acc |= bits << count;
        count += taken;
        while count >= 8 {
            if let Some(slot) = buf.get_mut(len) {
                *slot = acc as u8;
            }
            len += 1;
            acc >>= 8;
            count -= 8;
        }
        d.advance(taken, error);
        offset = ((d.period as i32 - grid) * (cells as i32 - 1)) >> 1;
        done += 1;
        if second.is_none() {
            more = false;
            break;
        }
    }
    let bits = (len - out.len) as u32 * 8 + count - out.count;
    (out.len, out.bits, out.count) = (len, acc, count);
    (bits, more)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gather_is_exact<const N: usize>() {
        let cells = Lanes::<N>::CELLS;
        for v in 0..1u32 << cells {
            let mut x = 0;
            for i in 0..cells {
                x |= ((v >> i) & 1) << (N as u32 * i);
            }
            assert_eq!(Lanes::<N>::gather(x), v, "N {N} v {v:#x}");
        }
    }

    fn sums_are_exact<const N: usize>() {
        let cells = Lanes::<N>::CELLS;
        // Every cell field 0..width - 1 (the samples inside a window), in base 4.
        let most = Lanes::<N>::MAX_WIDTH as u32 - 1;
        for v in 0..1u32 << (2 * cells) {
            let mut x = 0;
            let mut sum = 0;
            for i in 0..cells {
                let field = ((v >> (2 * i)) & 3).min(most);
                x |= field << (N as u32 * i);
                sum += field;
            }
            assert_eq!(Lanes::<N>::sum_fields(x), sum, "N {N} v {v:#x}");
        }
    }

    #[test]
    fn lanes_fit_a_word_and_gather_and_count_exactly() {
        assert_eq!(
            [
                Lanes::<4>::CELLS,
                Lanes::<5>::CELLS,
                Lanes::<6>::CELLS,
                Lanes::<7>::CELLS,
                Lanes::<8>::CELLS
            ],
            [8, 6, 5, 4, 4]
        );
        gather_is_exact::<4>();
        gather_is_exact::<5>();
        gather_is_exact::<6>();
        gather_is_exact::<7>();
        gather_is_exact::<8>();
        sums_are_exact::<4>();
        sums_are_exact::<5>();
        sums_are_exact::<6>();
        sums_are_exact::<7>();
        sums_are_exact::<8>();
    }

    #[test]
    fn windows_hold_a_quarter_bit_each_side() {
        // 4x: prediction 10.3 -> transitions k with 9.8 < k <= 11.8: 10, 11.
        assert_eq!(Lanes::<4>::window(10 * ONE + ONE * 3 / 10), (10, 2));
        // 5x: 10.5 -> 9.75 < k <= 12.25: 10, 11, 12; 10.0 -> 9.25 < k <= 11.75: 10, 11.
        assert_eq!(Lanes::<5>::window(10 * ONE + ONE / 2), (10, 3));
        assert_eq!(Lanes::<5>::window(10 * ONE), (10, 2));
        assert_eq!(Lanes::<8>::window(10 * ONE), (9, 4));
    }
}
