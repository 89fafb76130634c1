//! Lock: find the preamble's run of edges one bit apart and fit phase and period to it; and,
//! for captures that never lock, tell link pulses from noise.

use super::dpll::{Dpll, FRAC, ONE};
use crate::capture::Capture;
use crate::decode::RxOutcome;
use crate::oversample::Oversample;

/// Consecutive bit-time intervals between edges needed to declare lock.
pub const LOCK_INTERVALS: u32 = 8;
/// Edges the preamble fit takes at most (a preamble has 56): keeps its sums small.
const MAX_FIT_EDGES: u32 = 128;
/// Below this many edges the fit is too noisy to predict from (quantization alone moves a
/// two-point slope by half a sample per bit): only the distance to the last edge counts.
const EARLY_FIT_EDGES: u32 = 8;

/// Locks on the preamble: follows edges one bit time apart for as long as they last (at
/// least `LOCK_INTERVALS`), fits phase and period to all of them by least squares, and
/// returns a DPLL predicting the next mid-bit edge plus the level after the last edge
/// (the value of the last preamble bit seen).
pub(super) fn acquire(cap: &Capture<'_>, os: Oversample) -> Option<(Dpll, u32)> {
    let n = os.samples_per_bit();
    let long_run = |from: usize, to: Option<usize>| to.is_none_or(|to| 4 * (to - from) >= 3 * n);
    let mut fit = LineFit::new();
    let mut prev = cap.next_edge(0)?;
    fit.push(prev);
    let mut next = cap.next_edge(prev)?;
    loop {
        let after = cap.next_edge(next);
        if fit.count < MAX_FIT_EDGES && fit.accepts(next, n) && long_run(next, after) {
            prev = next;
            fit.push(prev);
            next = after?;
            continue;
        }
        // An edge off the line: either a mid-bit edge pushed away by jitter (then the edge
        // after it is on the line one bit later) or a boundary edge between two equal
        // bits (then the edge after it is the predicted one: in the preamble this is the
        // SFD's `11`, and the lock ends here).
        if let (2..MAX_FIT_EDGES, Some(after)) = (fit.count, after) {
            fit.skip();
            let beyond = cap.next_edge(after);
            if fit.accepts(after, n) && long_run(after, beyond) {
                prev = after;
                fit.push(prev);
                next = beyond?;
                continue;
            }
            fit.unskip();
        }
        if fit.count > LOCK_INTERVALS {
            let (last, period) = fit.solve(os)?;
            // The fitted last edge lies between two samples; predict the next one.
            let mut dpll = Dpll::new(last.checked_sub(ONE / 2)?, period, fit.count, os);
            dpll.t = dpll.t.wrapping_add(dpll.period);
            return Some((dpll, cap.sample(prev)));
        }
        prev = next;
        fit = LineFit::new();
        fit.push(prev);
        next = after?;
    }
}

/// Least-squares line through edge positions `e_i` against their index `i`.
#[derive(Clone, Copy, Debug)]
struct LineFit {
    /// Points pushed.
    count: u32,
    /// Bit index the next point gets (ahead of `count` after skipped outliers).
    next_index: u32,
    /// First and last points (index, position): the line edges are accepted against.
    first: (u32, usize),
    last: (u32, usize),
    /// Sums over the points of i, i^2, e - e_first and i (e - e_first): at most 128 points
    /// about a bit apart, so they fit 32 bits.
    sum_i: u32,
    sum_ii: u32,
    sum_e: u32,
    sum_ie: u32,
}

impl LineFit {
    fn new() -> LineFit {
        LineFit {
            count: 0,
            next_index: 0,
            first: (0, 0),
            last: (0, 0),
            sum_i: 0,
            sum_ii: 0,
            sum_e: 0,
            sum_ie: 0,
        }
    }

    /// True if `edge` continues the line: one bit time (+-1/4) after the last edge while the
    /// fit has fewer than [`EARLY_FIT_EDGES`] edges, then less than 3/8 bit from the line
    /// through the first and last edges (quantization and jitter). The SFD's boundary edge,
    /// half a bit early, may pass this; the run after it (half a bit) rejects it.
    fn accepts(&self, edge: usize, n: usize) -> bool {
        if self.count < EARLY_FIT_EDGES {
            let interval = edge.saturating_sub(self.last.1);
            return 4 * interval >= 3 * n && 4 * interval <= 5 * n;
        }
        // Bit period of the line, fixed point (edges are at most 2^19 samples apart).
        let bits = (self.last.0 - self.first.0) as usize;
        let period = ((self.last.1 - self.first.1) << FRAC) / bits;
        let ahead = (self.next_index - self.last.0) as usize;
        let predicted = (self.last.1 << FRAC) + ahead * period;
        (edge << FRAC).abs_diff(predicted) < 3 * n * ONE as usize / 8
    }

    /// Leaves out one bit index (an outlier edge).
    fn skip(&mut self) {
        self.next_index += 1;
    }

    /// Takes back a `skip`.
    fn unskip(&mut self) {
        self.next_index -= 1;
    }

    fn push(&mut self, edge: usize) {
        let index = self.next_index;
        if self.count == 0 {
            self.first = (index, edge);
        }
        self.last = (index, edge);
        self.next_index += 1;
        self.count += 1;
        let e = (edge - self.first.1) as u32;
        self.sum_i = self.sum_i.wrapping_add(index);
        self.sum_ii = self.sum_ii.wrapping_add(index.wrapping_mul(index));
        self.sum_e = self.sum_e.wrapping_add(e);
        self.sum_ie = self.sum_ie.wrapping_add(index.wrapping_mul(e));
    }

    /// Fitted position of the last edge and the slope (bit period), fixed point. The slope
    /// is clamped to +-3 % of nominal (the DPLL clamps it further).
    fn solve(&self, os: Oversample) -> Option<(u32, u32)> {
        let n = self.count as i64;
        let (sum_i, sum_ii) = (self.sum_i as i64, self.sum_ii as i64);
        let (sum_e, sum_ie) = (self.sum_e as i64, self.sum_ie as i64);
        let denominator = n * sum_ii - sum_i * sum_i;
        if denominator <= 0 {
            return None;
        }
        let slope = ((n * sum_ie - sum_i * sum_e) << FRAC) / denominator;
        let intercept = ((sum_e << FRAC) - slope * sum_i) / n + ((self.first.1 as i64) << FRAC);
        let last = intercept + slope * (self.next_index as i64 - 1);
        let nominal = os.get() as i64 * ONE as i64;
        let slope = slope.clamp(nominal - nominal / 32, nominal + nominal / 32);
        Some((u32::try_from(last).ok()?, slope as u32))
    }
}

/// Tells link pulses from noise in a capture the decoder could not lock on: every run of the
/// non-idle level (idle = the capture's last sample) must be 50..200 ns wide, and runs of idle
/// between pulses at least four bit times long.
pub(super) fn classify_unlocked(cap: &Capture<'_>, os: Oversample) -> RxOutcome {
    let n = os.samples_per_bit();
    if cap.is_empty() {
        return RxOutcome::Noise;
    }
    let idle = cap.sample(cap.len() - 1);
    let mut pulses = 0u32;
    let mut start = 0;
    loop {
        let level = cap.sample(start);
        let end = cap.next_edge(start).unwrap_or(cap.len());
        let width = end - start;
        if level != idle {
            if width < (n / 2).max(1) || width > 2 * n || end == cap.len() {
                return RxOutcome::Noise;
            }
            pulses += 1;
        } else if start != 0 && end != cap.len() && width < 4 * n {
            return RxOutcome::Noise;
        }
        if end >= cap.len() {
            break;
        }
        start = end;
    }
    if pulses > 0 {
        RxOutcome::LinkPulse
    } else {
        RxOutcome::Noise
    }
}
