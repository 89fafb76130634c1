//! The word path at 5x..8x (4x has its own, [`super::x4`]): the cells of a 32-sample
//! window at once, a loop update per two to eight words.
//!
//! The loop predicts cell `i`'s mid-bit edge at `t + i * period`. All cells of a word share
//! one search window on the sample grid, placed for their mean prediction `t`: the
//! `floor(N/2)` transitions into samples `k` with `k - 1/2` nearest `t` (2 at 5x, 3 at 6x and
//! 7x, 4 at 8x; a boundary edge is `N/2` from the mid-bit edge, so it stays outside). With
//! `f` the sample before the window and `s` its last sample, every cell must show `s != f`
//! (its mid-bit transition in the window); the bit is sample `s`, and the samples between
//! `f` and `s` still at the old level tell where the edge was, which feeds the loop. A word
//! whose window misses a cell's edge is tried once more with the window a sample towards the
//! side the prediction leans to (the edges straddle a sample boundary there); if that misses
//! too, the slow path takes the word.
//!
//! A window holds only mid-bit edges as long as the prediction is within `N/4 - 1/2 - J`
//! samples of the true edges (`J` the edge jitter; 1/4 sample at 5x with +-0.5 sample).
//! The 5x bench keeps it there (see README); beyond it a cell fails its check or, rarely,
//! a boundary edge passes for a mid-bit edge and the MAC's FCS rejects the frame.

use super::dpll::{Dpll, Steady, FRAC, ONE};
use super::Bytes;
use crate::capture::Capture;
use crate::oversample::Oversample;

/// Edges tracked before the word path starts: the first gear's gain (1/8 per edge) would
/// overshoot with a whole word per update.
const FIRST_EDGES: u32 = 64;

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
    /// Cells per word: the last cell's window (from `f` to `s`) must end inside the word.
    const CELLS: u32 = ((31 - Self::WIDTH) / N + 1) as u32;
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

    /// True if a window one transition wider still ends inside the word for every cell
    /// (5x: yes; 7x: the last cell's would need sample 32).
    const UNION_FITS: bool = (Self::CELLS as usize - 1) * N + Self::WIDTH < 31;

    /// Transitions in a search window: `floor(N / 2)` (a boundary edge is `N / 2` from the
    /// mid-bit edge, so two windows of neighbouring cells never meet).
    const WIDTH: usize = N / 2;

    /// The first transition (sample index) of the search window for mean prediction `t`: the
    /// [`Self::WIDTH`] transitions into samples `k` with `k - 1/2` within `WIDTH / 2` of `t`.
    #[inline(always)]
    fn window(t: u32) -> usize {
        let a = t
            .wrapping_add(ONE / 2)
            .wrapping_sub(Self::WIDTH as u32 * ONE / 2);
        (a >> FRAC) as usize + 1
    }

    /// The first transition of the window next to [`Self::window`] on the side `t` leans to.
    #[inline(always)]
    fn neighbour(t: u32) -> usize {
        let a = t
            .wrapping_add(ONE / 2)
            .wrapping_sub(Self::WIDTH as u32 * ONE / 2);
        let lo = (a >> FRAC) as usize + 1;
        if a & (ONE / 2) != 0 {
            lo + 1
        } else {
            lo.wrapping_sub(1)
        }
    }
}

/// The cells of the word whose search window of `width` transitions starts at transition
/// `lo`, if all pass (see
/// [`cells_in`]) and its samples are in `words`.
#[inline(always)]
fn read<const N: usize>(words: &[u32], lo: usize, width: usize) -> Option<(u32, u32)> {
    let f = lo.wrapping_sub(1);
    let shift = (f & 31) as u32;
    let &[w0, w1] = words.get(f >> 5..(f >> 5) + 2)? else {
        return None;
    };
    cells_in::<N>((w0 >> shift) | ((w1 << 1) << (31 - shift)), width)
}

/// The cells of `w` (samples from the one before the window on) whose windows hold `width`
/// (<= 4) transitions: their last samples and the
/// summed positions of their edges in the window (0 = all at the first transition), unless a
/// cell has no transition there.
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
    Some((s, Lanes::<N>::sum_fields(late)))
}

/// Why [`run`] returned.
enum Stop {
    /// The gear's bits are done: shift gears and go on.
    GearEnd,
    /// A word it could not take, or the end of the capture or the buffer: the slow path.
    Word,
}

/// The word path at `N` samples per bit, gear by gear.
#[inline(never)]
fn decode_n<const N: usize>(cap: &Capture<'_>, dpll: &mut Dpll, out: &mut Bytes<'_>) {
    if dpll.edges < FIRST_EDGES {
        return;
    }
    loop {
        let gear_bits = dpll.next_gear_at.saturating_sub(dpll.edges);
        let mut steady = dpll.steady();
        // As many words per update as keep the loop gain (words x cells / 2^alpha) at most 1.
        // The union of two windows only once the loop has settled (see `run`).
        let (bits, stop) = match dpll.alpha {
            ..=4 => run::<N, 2, false>(cap, &mut steady, out, gear_bits),
            5 => run::<N, 4, false>(cap, &mut steady, out, gear_bits),
            6 => run::<N, 8, false>(cap, &mut steady, out, gear_bits),
            _ => run::<N, 8, true>(cap, &mut steady, out, gear_bits),
        };
        dpll.settle(&steady, bits);
        if let Stop::Word = stop {
            return;
        }
    }
}

/// Words of cells into `out`, one loop update per `WORDS` words, for at most `max_bits`
/// bits; `UNION`: a word that neither its window nor the neighbour takes is tried with both
/// together. Returns the bits decoded and why it stopped.
#[inline(always)]
fn run<const N: usize, const WORDS: u32, const UNION: bool>(
    cap: &Capture<'_>,
    d: &mut Steady,
    out: &mut Bytes<'_>,
    max_bits: u32,
) -> (u32, Stop) {
    let cells = Lanes::<N>::CELLS;
    // Whole words of captured samples only: a window read from two of them never reaches past
    // the capture.
    let words = cap.words().get(..cap.len() / 32).unwrap_or_default();
    let (mut len, mut acc, mut count) = (out.len, out.bits, out.count);
    let buf = &mut *out.buf;
    // Words that fit: the gear's bits, and the bytes left (a word adds up to `cells` bits to
    // the `count` already there).
    let room_bits = (buf.len().saturating_sub(len) as u32)
        .saturating_mul(8)
        .saturating_sub(count);
    let gear_words = max_bits.div_ceil(cells);
    let max_words = gear_words.min(room_bits / cells);
    let mut stop = if max_words == gear_words {
        Stop::GearEnd
    } else {
        Stop::Word
    };
    let grid = (N as u32 * ONE) as i32;
    let middle = |d: &Steady| {
        d.t.wrapping_add_signed(((d.period as i32 - grid) * (cells as i32 - 1)) >> 1)
    };
    let mut t = middle(d);
    let mut step = d.period.wrapping_mul(cells);
    // Per word: the window's first transition (shifted up) less its mean prediction; and
    // the edges' positions in their windows.
    let (mut firsts, mut late, mut taken, mut done) = (0u32, 0u32, 0u32, 0u32);
    while done < max_words {
        let mut start = Lanes::<N>::window(t);
        let mut found = read::<N>(words, start, Lanes::<N>::WIDTH);
        if found.is_none() && N % 2 == 1 {
            // A rare edge just outside: the prediction sits near a shift of the window (the
            // edges straddle a sample boundary), and the window on its other side takes it;
            // or, with more jitter, edges on both sides, and the union of the two (short of
            // the boundary edges, which are half a bit away, only while the prediction is
            // close: from the seventh gear on, 512 edges). Only at odd factors,
            // whose windows are half a sample narrower than a quarter bit each side; at even
            // ones a shifted window would reach within half a bit less a sample of the edge,
            // where TP_IDL's edge can be under jitter.
            let other = Lanes::<N>::neighbour(t);
            found = read::<N>(words, other, Lanes::<N>::WIDTH);
            if found.is_some() {
                start = other;
            } else if UNION && Lanes::<N>::UNION_FITS {
                start = start.min(other);
                found = read::<N>(words, start, Lanes::<N>::WIDTH + 1);
            }
        }
        let Some((s, late_here)) = found else {
            stop = Stop::Word;
            break;
        };
        acc |= Lanes::<N>::gather(s & Lanes::<N>::MASK) << count;
        count += cells;
        if count >= 8 {
            if let Some(slot) = buf.get_mut(len) {
                *slot = acc as u8;
            }
            len += 1;
            acc >>= 8;
            count -= 8;
        }
        firsts = firsts.wrapping_add((start as u32) << FRAC).wrapping_sub(t);
        late += late_here;
        taken += 1;
        done += 1;
        t = t.wrapping_add(step);
        if taken == WORDS {
            d.advance(cells * WORDS, error::<N>(firsts, late, WORDS));
            t = middle(d);
            step = d.period.wrapping_mul(cells);
            (firsts, late, taken) = (0, 0, 0);
        }
    }
    if taken > 0 {
        d.advance(cells * taken, error::<N>(firsts, late, taken));
    }
    (out.len, out.bits, out.count) = (len, acc, count);
    (done * cells, stop)
}

/// Summed edge offsets of `taken` words of cells from their predictions: per cell the
/// middle of its window's first transition less the prediction (`firsts` sums, per word,
/// the first transition less the word's mean prediction), plus `late` samples summed.
#[inline(always)]
fn error<const N: usize>(firsts: u32, late: u32, taken: u32) -> i32 {
    firsts
        .wrapping_sub(taken * (ONE / 2))
        .wrapping_mul(Lanes::<N>::CELLS)
        .wrapping_add(late << FRAC) as i32
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
        let most = Lanes::<N>::WIDTH as u32 - 1;
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
            [8, 6, 5, 5, 4]
        );
        // The wider window only where its last cell still ends inside the word.
        assert_eq!(
            [Lanes::<5>::UNION_FITS, Lanes::<7>::UNION_FITS],
            [true, false]
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
    fn windows_centre_on_the_prediction() {
        // 5x: two transitions, k - 1/2 within one sample of t: t = 10.0 -> 10, 11; t = 10.6
        // -> 11, 12 (9.6 < k - 1/2 <= 11.6).
        assert_eq!(Lanes::<5>::window(10 * ONE), 10);
        assert_eq!(Lanes::<5>::window(10 * ONE + ONE * 6 / 10), 11);
        // 8x: four transitions, within two samples: t = 10.0 -> 9..=12.
        assert_eq!(Lanes::<8>::window(10 * ONE), 9);
        // 6x: three, within 1.5: t = 10.0 -> 9.5 < k <= 12.5 -> 10..=12.
        assert_eq!(Lanes::<6>::window(10 * ONE), 10);
    }
}
