//! The slow path: one bit cell at a time. Used for the SFD hunt, at 2x and 3x, and wherever
//! the word-parallel path ([`super::words`]) cannot vouch for a whole word of cells: near
//! ties between a mid-bit edge and a boundary edge, missing edges, the end of the frame.

use super::dpll::{Dpll, FRAC, ONE};
use crate::capture::Capture;
use crate::oversample::Oversample;

/// Result of reading one bit cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cell {
    /// A bit (0 or 1, line polarity) and the edge's offset from the prediction.
    Bit { value: u32, error: i32 },
    /// No transition near the prediction: end of frame (or a code violation).
    Violation,
    /// The cell runs past the end of the capture.
    CaptureEnd,
}

/// Where [`read_cell`] looks for a mid-bit edge.
#[derive(Clone, Copy, Debug)]
pub(super) struct Search {
    /// How far (samples) from `ceil(t)` a transition is looked for.
    reach: usize,
    /// Edges at least this far (fixed point) from `t` need a short run after them.
    max_offset: u32,
    /// Longest run (samples) after such an edge: 1.5 bit times.
    max_run: usize,
    /// Samples per bit.
    samples_per_bit: usize,
    /// At 2x/3x the preferred direction (+1/-1 sample) to re-align after a clock slip.
    pub slip_direction: i32,
}

impl Search {
    /// The search for factor `os`.
    pub fn new(os: Oversample) -> Search {
        // Boundary edges sit half a bit from the mid-bit edge: the reach must stay below that.
        let n = os.samples_per_bit();
        let reach = match os.get() {
            2 | 3 => 0,
            4 => 1,
            _ => 2,
        };
        Search {
            reach,
            max_offset: (n as u32 * ONE / 4).max(ONE),
            max_run: 3 * n / 2,
            samples_per_bit: n,
            slip_direction: 1,
        }
    }

    /// Reads the next bit. At 2x and 3x, where a boundary edge can sit one sample from the
    /// mid-bit edge, the search has no reach; a missing edge is first tried as a one-sample
    /// clock slip (with three good cells after it) before it counts as a violation.
    pub fn next_bit(&mut self, cap: &Capture<'_>, dpll: &mut Dpll) -> Cell {
        let cell = read_cell(cap, *self, dpll);
        if cell != Cell::Violation || self.reach != 0 {
            return cell;
        }
        // Try the direction of the last slip first (drift keeps its sign), then the other.
        let preferred = self.slip_direction;
        for direction in [preferred, -preferred] {
            let mut trial = *dpll;
            trial.t = trial.t.wrapping_add_signed(direction * ONE as i32);
            if slip_fits(cap, *self, trial) {
                self.slip_direction = direction;
                *dpll = trial;
                return read_cell(cap, *self, dpll);
            }
        }
        Cell::Violation
    }
}

/// True if three bit cells starting at `trial` all have their mid-bit transition.
fn slip_fits(cap: &Capture<'_>, search: Search, mut trial: Dpll) -> bool {
    for _ in 0..3 {
        match read_cell(cap, search, &trial) {
            Cell::Bit { error, .. } => trial.advance(1, error),
            _ => return false,
        }
    }
    true
}

/// Finds the mid-bit edge `dpll` predicts: the transition within `reach` samples of
/// `ceil(t)` that is nearest to `t`.
#[inline]
pub(super) fn read_cell(cap: &Capture<'_>, search: Search, dpll: &Dpll) -> Cell {
    let reach = search.reach;
    let c = dpll.first_new();
    if c < reach + 1 || c + reach >= cap.len() {
        return Cell::CaptureEnd;
    }
    // The nearest transition, and the runner-up if it is almost as near.
    let mut best: Option<(u32, usize)> = None;
    let mut second: Option<(u32, usize)> = None;
    for k in c - reach..=c + reach {
        if cap.sample(k - 1) != cap.sample(k) {
            let centre = ((k as u32) << FRAC).wrapping_sub(ONE / 2);
            let distance = centre.abs_diff(dpll.t);
            if best.is_none_or(|(d, _)| distance < d) {
                second = best;
                best = Some((distance, k));
            } else if second.is_none_or(|(d, _)| distance < d) {
                second = Some((distance, k));
            }
        }
    }
    let Some((mut distance, mut k)) = best else {
        return Cell::Violation;
    };
    // Near tie at 4x, where boundary edges are only two samples from the mid-bit edge: a
    // mid-bit edge that drifted a sample one way looks like a boundary edge a sample the other
    // way. Settle it on the data ahead (see `ahead`). At 5x and up, boundary edges are out of
    // reach.
    if let (4, Some((d2, k2))) = (search.samples_per_bit, second) {
        if d2 - distance < ONE && k.abs_diff(k2) == 2 {
            let side = super::ahead::rare_side_x4(cap, (k + k2) / 2, dpll.period);
            if (side > 0 && k2 > k) || (side < 0 && k2 < k) {
                (distance, k) = (d2, k2);
            }
        }
    }
    // An edge further off than a quarter bit is only a mid-bit edge if the line keeps
    // changing after it (a run of at most 1.5 bit times). This rejects the rising edge into
    // TP_IDL, which a frame ending in a 0 bit shows half a bit before the missing next edge.
    if distance >= search.max_offset {
        let run = cap.next_edge(k).unwrap_or(cap.len()) - k;
        if run > search.max_run {
            return Cell::Violation;
        }
    }
    // The edge lies in (k - 1, k]: measure from the middle of that interval.
    let centre = ((k as u32) << FRAC).wrapping_sub(ONE / 2);
    let error = centre.wrapping_sub(dpll.t) as i32;
    Cell::Bit {
        value: cap.sample(k),
        error,
    }
}
