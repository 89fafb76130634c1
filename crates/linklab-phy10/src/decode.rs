//! RX: decode an oversampled capture into bytes, with clock recovery.
//!
//! The decoder works in three steps:
//! 1. **Acquire**: follow edges one bit time apart (the preamble's `1010...` has an edge in
//!    the middle of every bit and nowhere else) for more than [`LOCK_INTERVALS`] bits and fit
//!    phase and period to them by least squares. A capture that never locks is a link pulse (isolated 100 ns pulses) or noise.
//! 2. **Hunt the SFD**: decode bits until two equal bits follow each other: the `11` ending
//!    the SFD (`00` if the pair is swapped, which also tells the polarity). Byte alignment
//!    starts right after it.
//! 3. **Decode** bytes into the caller's buffer until a bit cell has no mid-bit transition
//!    (TP_IDL or idle: end of frame) or the capture or buffer runs out (truncated).
//!
//! Clock recovery is edge tracking with a second-order DPLL. `t` (fixed point, samples)
//! predicts where the next mid-bit edge lies. The decoder looks for a transition within
//! `reach` samples of `c = ceil(t)` (the sample that should show the new level), takes the one
//! nearest to `t` as the mid-bit edge (boundary edges between equal bits are half a bit away,
//! beyond `reach`), reads the bit as the level after it, and feeds the edge's offset from `t`
//! back into the phase and the bit period (gains [`FRAME_GAINS`]). An edge that wanders a
//! sample off its prediction (drift, jitter) is still found and decoded right; the loop then
//! follows. The preamble fit gives the loop its starting phase and period, so the loop can be
//! slow (averaging quantization and jitter) without losing the start of the frame.
//!
//! At 4x the phase detector has a small dead zone (1/32 sample): a plain one settles on
//! the mean of the quantized edges, which sits next to the more frequent of two neighbouring
//! samples when the edges straddle a sample boundary, and leaves the rare one nearly as far
//! from the prediction as a boundary edge. The dead zone moves the loop towards the middle.
//!
//! At 4x a fast path decodes bytes from 32-sample windows: two bytes at a time when every
//! edge is in its predicted slot and the prediction inside the dead zone (the DPLL only moves
//! on), else one byte with a table transpose into the four sample phases that accepts edges
//! a sample early or late (one DPLL update per byte, offsets taken at the byte's middle
//! cell). It falls back to bit-by-bit tracking on near ties and missing edges.

use crate::capture::Capture;
use crate::oversample::Oversample;
use crate::tables::{BIT_COUNT, TRANSPOSE_X4};

/// Fractional bits of the DPLL's fixed-point sample positions.
const FRAC: u32 = 12;
/// One sample in fixed point.
const ONE: u32 = 1 << FRAC;
/// DPLL gains while decoding the frame, as right shifts `(phase, frequency)`: the phase moves
/// by 1/32 of each measured edge offset, the period by 1/8192 of it. Low, to average sample
/// quantization and jitter over many edges; the preamble fit supplies the starting period.
/// (Tuned with the sample wire, see README.)
pub const FRAME_GAINS: (u32, u32) = (5, 13);
/// Phase and frequency gains from lock through the SFD and the first `PULL_IN_BYTES` of the
/// frame: faster, to pull in the residual error of the preamble fit.
const HUNT_GAINS: (u32, u32) = (3, 8);
/// Frame bytes decoded with `HUNT_GAINS` before switching to `FRAME_GAINS` (the SFD hunt
/// alone can be as short as two bits).
const PULL_IN_BYTES: usize = 4;
/// The recovered bit period may stray this many 1/1024ths from nominal (2 %).
const PERIOD_RANGE_1024THS: u32 = 20;
/// Consecutive bit-time intervals between edges needed to declare lock.
pub const LOCK_INTERVALS: u32 = 8;
/// Edges the preamble fit takes at most (a preamble has 56): keeps its sums small.
const MAX_FIT_EDGES: u32 = 128;
/// Below this many edges the fit is too noisy to predict from (quantization alone moves a
/// two-point slope by half a sample per bit): only the distance to the last edge counts.
const EARLY_FIT_EDGES: u32 = 8;
/// Preamble bits decoded after lock without finding the SFD before giving up.
const SFD_HUNT_MAX_BITS: u32 = 160;

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

/// Phase and period of the recovered bit clock, in 1/4096 samples.
#[derive(Clone, Copy, Debug)]
struct Dpll {
    /// Predicted position of the next mid-bit edge (between samples `ceil(t) - 1` and
    /// `ceil(t)`).
    t: u32,
    /// Current bit period: `nominal + (integral >> beta_shift)`.
    period: u32,
    nominal: u32,
    /// Sum of all measured edge offsets (the loop's integrator), kept at full resolution so
    /// that rounding never accumulates; clamped to +-2 % of the period.
    integral: i32,
    integral_limit: i32,
    alpha_shift: u32,
    beta_shift: u32,
}

impl Dpll {
    fn new(t: u32, os: Oversample, gains: (u32, u32)) -> Dpll {
        let nominal = os.get() as u32 * ONE;
        let range = nominal / 1024 * PERIOD_RANGE_1024THS;
        Dpll {
            t,
            period: nominal,
            nominal,
            integral: 0,
            integral_limit: (range << gains.1) as i32,
            alpha_shift: gains.0,
            beta_shift: gains.1,
        }
    }

    /// Moves on by `bits` bit times, correcting by `error` (measured edge position minus
    /// prediction, summed over the bits, fixed point).
    #[inline(always)]
    fn advance(&mut self, bits: u32, error: i32) {
        // Flooring costs at most 1/4096 sample per step; the loop takes it out.
        let phase_step = (error + (1 << self.alpha_shift >> 1)) >> self.alpha_shift;
        self.t = self
            .t
            .wrapping_add(self.period.wrapping_mul(bits))
            .wrapping_add_signed(phase_step);
        // Clamped by hand: `clamp` was not inlined into the fast path.
        self.integral = self
            .integral
            .saturating_add(error)
            .min(self.integral_limit)
            .max(-self.integral_limit);
        self.period = self
            .nominal
            .wrapping_add_signed(self.integral >> self.beta_shift);
    }

    /// Switches to other gains, keeping the current period.
    fn set_gains(&mut self, gains: (u32, u32)) {
        let offset = self.period as i32 - self.nominal as i32;
        let range = self.integral_limit >> self.beta_shift;
        self.alpha_shift = gains.0;
        self.beta_shift = gains.1;
        self.integral_limit = range << gains.1;
        self.integral = (offset << gains.1).clamp(-self.integral_limit, self.integral_limit);
    }

    /// Starts from a measured period (clamped to the tracking range).
    fn set_period(&mut self, period: u32) {
        let offset = period as i32 - self.nominal as i32;
        self.integral =
            (offset << self.beta_shift).clamp(-self.integral_limit, self.integral_limit);
        self.period = self
            .nominal
            .wrapping_add_signed(self.integral >> self.beta_shift);
    }

    /// The sample that should be the first to show the new level: `ceil(t)`.
    #[inline(always)]
    fn first_new(&self) -> usize {
        (self.t.wrapping_add(ONE - 1) >> FRAC) as usize
    }
}

/// Result of reading one bit cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cell {
    /// A bit (0 or 1, line polarity) and the edge's offset from the prediction.
    Bit { value: u32, error: i32 },
    /// No transition near the prediction: end of frame (or a code violation).
    Violation,
    /// The cell runs past the end of the capture.
    CaptureEnd,
}

/// A Manchester decoder for one oversampling factor. Keeps no per-frame state between calls
/// except what [`Decoder::inverted`] reports about the last one.
#[derive(Clone, Debug)]
pub struct Decoder {
    os: Oversample,
    search: Search,
    inverted: bool,
    /// At 2x/3x the preferred direction (+1/-1 sample) to re-align after a clock slip.
    slip_direction: i32,
}

/// Where [`read_cell`] looks for a mid-bit edge.
#[derive(Clone, Copy, Debug)]
struct Search {
    /// How far (samples) from `ceil(t)` a transition is looked for.
    reach: usize,
    /// Edges at least this far (fixed point) from `t` need a short run after them.
    max_offset: u32,
    /// Longest run (samples) after such an edge: 1.5 bit times.
    max_run: usize,
    /// Samples per bit.
    samples_per_bit: usize,
}

impl Decoder {
    /// A decoder for captures taken at `os`.
    pub fn new(os: Oversample) -> Decoder {
        // Boundary edges sit half a bit from the mid-bit edge: the reach must stay below that.
        let n = os.samples_per_bit();
        let reach = match os.get() {
            2 | 3 => 0,
            4 | 5 => 1,
            _ => 2,
        };
        Decoder {
            os,
            search: Search {
                reach,
                max_offset: (n as u32 * ONE / 4).max(ONE),
                max_run: 3 * n / 2,
                samples_per_bit: n,
            },
            inverted: false,
            slip_direction: 1,
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
        self.slip_direction = 1;
        let Some((mut dpll, last_bit)) = self.acquire(capture) else {
            return classify_unlocked(capture, self.os);
        };
        match self.hunt_sfd(capture, &mut dpll, last_bit) {
            Ok(inverted) => self.inverted = inverted,
            Err(outcome) => return outcome,
        }
        self.decode_bytes(capture, &mut dpll, out)
    }

    /// Locks on the preamble: follows edges one bit time apart for as long as they last (at
    /// least `LOCK_INTERVALS`), fits phase and period to all of them by least squares, and
    /// returns a DPLL predicting the next mid-bit edge plus the level after the last edge
    /// (the value of the last preamble bit seen).
    fn acquire(&self, cap: &Capture<'_>) -> Option<(Dpll, u32)> {
        let n = self.os.samples_per_bit();
        let mut fit = LineFit::new();
        let mut prev = cap.next_edge(0)?;
        fit.push(prev);
        loop {
            let next = cap.next_edge(prev)?;
            if fit.count < MAX_FIT_EDGES && fit.accepts(next, n) && long_run_after(cap, next, n) {
                prev = next;
                fit.push(prev);
                continue;
            }
            // An edge off the line: either a mid-bit edge pushed away by jitter (then the edge
            // after it is on the line one bit later) or a boundary edge between two equal
            // bits (then the edge after it is the predicted one: in the preamble this is the
            // SFD's `11`, and the lock ends here).
            let after = cap.next_edge(next);
            if fit.count >= 2 && fit.count < MAX_FIT_EDGES {
                if let Some(after) = after {
                    fit.skip();
                    if fit.accepts(after, n) && long_run_after(cap, after, n) {
                        prev = after;
                        fit.push(prev);
                        continue;
                    }
                    fit.unskip();
                }
            }
            if fit.count > LOCK_INTERVALS {
                let (last, period) = fit.solve(self.os)?;
                let mut dpll = Dpll::new(last.checked_sub(ONE / 2)?, self.os, HUNT_GAINS);
                dpll.set_period(period);
                dpll.advance(1, 0);
                return Some((dpll, cap.sample(prev)));
            }
            prev = next;
            fit = LineFit::new();
            fit.push(prev);
        }
    }

    /// Decodes preamble bits until two equal bits in a row (the end of the SFD). Returns the
    /// polarity (true = inverted) or the outcome if the transmission ends first.
    fn hunt_sfd(
        &mut self,
        cap: &Capture<'_>,
        dpll: &mut Dpll,
        last_bit: u32,
    ) -> Result<bool, RxOutcome> {
        let mut previous = Some(last_bit);
        for _ in 0..SFD_HUNT_MAX_BITS {
            match self.next_bit(cap, dpll) {
                Cell::Bit { value, error } => {
                    dpll.advance(1, error);
                    if previous == Some(value) {
                        return Ok(value == 0);
                    }
                    previous = Some(value);
                }
                Cell::Violation | Cell::CaptureEnd => {
                    return Err(RxOutcome::Truncated { len: 0 });
                }
            }
        }
        Err(RxOutcome::Noise)
    }

    fn decode_bytes(&mut self, cap: &Capture<'_>, dpll: &mut Dpll, out: &mut [u8]) -> RxOutcome {
        let flip: u32 = if self.inverted { 0xFF } else { 0 };
        let fast_x4 = self.os.get() == 4;
        let mut len = 0;
        loop {
            if len == PULL_IN_BYTES {
                dpll.set_gains(FRAME_GAINS);
            }
            if fast_x4 && len >= PULL_IN_BYTES {
                // As many bytes as the fast path takes (the pull-in goes bit by bit: a whole
                // byte per update is too coarse for the fast gains).
                len += fast_bytes_x4(cap, dpll, out.get_mut(len..).unwrap_or_default(), flip);
            }
            let Some(slot) = out.get_mut(len) else {
                // Buffer full: a clean end right here is still a whole frame.
                return match self.next_bit(cap, dpll) {
                    Cell::Violation => RxOutcome::Frame { len },
                    _ => RxOutcome::Truncated { len },
                };
            };
            let mut byte = 0;
            for k in 0..8 {
                match self.next_bit(cap, dpll) {
                    Cell::Bit { value, error } => {
                        dpll.advance(1, error);
                        byte |= value << k;
                    }
                    Cell::Violation if k == 0 => return RxOutcome::Frame { len },
                    Cell::Violation | Cell::CaptureEnd => return RxOutcome::Truncated { len },
                }
            }
            *slot = (byte ^ flip) as u8;
            len += 1;
        }
    }

    /// Reads the next bit. At 2x and 3x, where a boundary edge can sit one sample from the
    /// mid-bit edge, the search has no reach; a missing edge is first tried as a one-sample
    /// clock slip (with three good cells after it) before it counts as a violation.
    fn next_bit(&mut self, cap: &Capture<'_>, dpll: &mut Dpll) -> Cell {
        let cell = read_cell(cap, self.search, dpll);
        if cell != Cell::Violation || self.search.reach != 0 {
            return cell;
        }
        // Try the direction of the last slip first (drift keeps its sign), then the other.
        let preferred = self.slip_direction;
        for direction in [preferred, -preferred] {
            let mut trial = *dpll;
            trial.t = trial.t.wrapping_add_signed(direction * ONE as i32);
            if slip_fits(cap, self.search, trial) {
                self.slip_direction = direction;
                *dpll = trial;
                return read_cell(cap, self.search, dpll);
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
fn read_cell(cap: &Capture<'_>, search: Search, dpll: &Dpll) -> Cell {
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
    // way. Settle it on the data ahead (see `mid_bit_phase_error`). At 5x and up, boundary
    // edges are out of reach.
    let n = search.samples_per_bit;
    if let (4, Some((d2, k2))) = (n, second) {
        if d2 - distance < ONE / 8 {
            let (sum1, runs1) = mid_bit_phase_error(cap, k, n);
            let (sum2, runs2) = mid_bit_phase_error(cap, k2, n);
            // Compare the mean distances to the grid ahead (sum2 / runs2 < sum1 / runs1);
            // without long runs ahead keep the nearest.
            let better = runs1 > 0 && runs2 > 0 && sum2 * runs1 < sum1 * runs2;
            if better {
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
        error: if search.samples_per_bit == 4 {
            dead_zone(error)
        } else {
            error
        },
    }
}

/// Half-width of the 4x phase detector's dead zone, fixed point: 1/32 sample. Tuned with the
/// sample wire (README): 3/32 and 1/16 did as well or better with jitter but lost clean
/// frames at some drifts near -50 ppm (the loop then rests anywhere inside the zone), and
/// 1/4 and more let the loop lag behind drift.
const DEAD_ZONE: i32 = (ONE / 32) as i32;

/// The part of an edge offset beyond [`DEAD_ZONE`]. A quantized edge lies on a sample
/// boundary, half a sample from the centre of its interval, so an edge whose true position
/// jitters across a sample boundary shows up at two centres one sample apart. A plain
/// (linear) phase detector settles on their mean, which sits next to the more frequent one
/// and leaves the rare one almost a sample from the prediction, as near as a boundary edge
/// on the other side. With the dead zone the frequent centre stops pulling once the
/// prediction is within `DEAD_ZONE` of it, so the rare one pulls the loop further towards
/// the middle.
#[inline(always)]
fn dead_zone(error: i32) -> i32 {
    error.saturating_sub(DEAD_ZONE).max(0) + error.saturating_add(DEAD_ZONE).min(0)
}

/// How well the transition at `k` fits the mid-bit edge grid that the data ahead shows: the
/// summed distance (samples, modulo a bit time) from `k` to the first edge of every run longer
/// than 3/4 of a bit within 24 bit times, and the number of such runs. Such a run only occurs
/// between the mid-bit edges of two different bits, so its first edge is a mid-bit edge.
fn mid_bit_phase_error(cap: &Capture<'_>, k: usize, n: usize) -> (usize, usize) {
    let limit = k + 24 * n;
    let (mut sum, mut runs) = (0, 0);
    let mut edge = k;
    while edge < limit {
        let Some(next) = cap.next_edge(edge) else {
            break;
        };
        if 4 * (next - edge) > 3 * n && next - edge <= 2 * n {
            let phase = (edge - k) % n;
            sum += phase.min(n - phase);
            runs += 1;
        }
        edge = next;
    }
    (sum, runs)
}

/// 4x fast path: decodes bytes into `out` (XOR `flip`) for as long as each comes out of a
/// 32-sample window (two bytes at once when every edge is on time, else [`byte_x4`]), with
/// the DPLL state held in locals and one slice bounds check per window (no `unsafe`).
/// Returns the bytes written and leaves the DPLL at the first byte it could not take, for
/// the bit-by-bit path.
fn fast_bytes_x4(cap: &Capture<'_>, dpll: &mut Dpll, out: &mut [u8], flip: u32) -> usize {
    let words = cap.words();
    // Last sample a 32-sample window may start at.
    let Some(last_start) = cap.len().checked_sub(32) else {
        return 0;
    };
    let (alpha, beta) = (dpll.alpha_shift, dpll.beta_shift);
    let (nominal, limit) = (dpll.nominal, dpll.integral_limit);
    let (mut t, mut period, mut integral) = (dpll.t, dpll.period, dpll.integral);
    // Eight bit periods, and how far the prediction moves off the sample grid per cell
    // (both change only with the period).
    let mut byte_period = period.wrapping_mul(8);
    let mut cell_slip = (4 * ONE).wrapping_sub(period) as i32;
    let mut written = 0;
    loop {
        // c = ceil(t); the window starts at c - 2 (wraps to a huge value below 2).
        let up = t.wrapping_add(ONE - 1);
        let base = ((up >> FRAC) as usize).wrapping_sub(2);
        if base > last_start {
            break;
        }
        // Offset of the predicted edge from the centre of slot `c` at the first cell
        // (-1/2..1/2 sample). Later cells keep the first one's slots (four samples apart)
        // while their prediction stays within 3/4 sample of the centre slot: drift moves it
        // by up to 0.02 sample per cell at 0.5 %.
        let first = (up & !(ONE - 1)).wrapping_sub(ONE / 2).wrapping_sub(t) as i32;
        let idx = base >> 5;
        let shift = (base & 31) as u32;
        // Two bytes at once, the common case on a clean line: every edge in its predicted
        // slot (each cell's samples `c - 2, c - 1 | c, c + 1` read `aa|bb` with a != b)
        // and the prediction at the middle cell inside the dead zone (`dead_zone(g) == 0`),
        // so the DPLL only moves on by sixteen bit periods. (The outer cells' offsets differ
        // from the middle one by up to 7.5 x 0.02 sample at 0.5 %; bit by bit they would
        // nudge the loop by that much.)
        let g = first + ((15 * cell_slip) >> 1);
        if base + 32 <= last_start && (g + DEAD_ZONE) as u32 <= 2 * DEAD_ZONE as u32 {
            if let (Some(&[w0, w1, w2]), Some(pair)) =
                (words.get(idx..idx + 3), out.get_mut(written..written + 2))
            {
                let a = (w0 >> shift) | ((w1 << 1) << (31 - shift));
                let b = (w1 >> shift) | ((w2 << 1) << (31 - shift));
                if ((a ^ (a >> 1)) | (b ^ (b >> 1))) & 0x5555_5555 == 0
                    && (a ^ (a >> 2)) & (b ^ (b >> 2)) & 0x1111_1111 == 0x1111_1111
                {
                    pair[0] = (gather_nibble_bit2(a) ^ flip) as u8;
                    pair[1] = (gather_nibble_bit2(b) ^ flip) as u8;
                    written += 2;
                    t = t.wrapping_add(byte_period).wrapping_add(byte_period);
                    continue;
                }
            }
        }
        let Some(slot) = out.get_mut(written) else {
            break;
        };
        let last = first + 7 * cell_slip;
        if (last + (ONE * 3 / 4) as i32) as u32 >= ONE * 3 / 2 {
            break;
        }
        // The two words holding the window (one bounds check; at the very end of the words
        // the bit-by-bit path takes over).
        let Some(&[lo, hi]) = words.get(idx..idx + 2) else {
            break;
        };
        let w = (lo >> shift) | ((hi << 1) << (31 - shift));
        let Some((value, error)) = byte_x4(w, (first + last) >> 1) else {
            break;
        };
        *slot = (value ^ flip) as u8;
        written += 1;
        // `Dpll::advance(8, error)` with the state in registers.
        let phase_step = (error + (1 << alpha >> 1)) >> alpha;
        t = t.wrapping_add(byte_period).wrapping_add_signed(phase_step);
        integral = integral.saturating_add(error).min(limit).max(-limit);
        period = nominal.wrapping_add_signed(integral >> beta);
        byte_period = period.wrapping_mul(8);
        cell_slip = (4 * ONE).wrapping_sub(period) as i32;
    }
    dpll.t = t;
    dpll.period = period;
    dpll.integral = integral;
    written
}

/// Bit 2 of each nibble of `w` (the sample after the predicted edge of each 4x cell), packed
/// into a byte: nibble k gives bit k.
#[inline(always)]
fn gather_nibble_bit2(w: u32) -> u32 {
    let x = (w >> 2) & 0x1111_1111;
    let x = (x | (x >> 3)) & 0x0303_0303;
    let x = (x | (x >> 6)) & 0x000F_000F;
    (x | (x >> 12)) & 0xFF
}

/// Decodes one byte at 4x from 32 samples `w` that start two samples before the first
/// cell's predicted edge (`g`: the prediction's offset from the centre of slot `c` at the
/// byte's middle, fixed point). Looks at the three samples where each cell's mid-bit edge may
/// show (first new level at `c - 1`, `c` or `c + 1`: the window `read_cell` searches) and
/// picks in each cell the transition nearest the prediction, as `read_cell` does. Returns the
/// byte (line polarity) and the summed dead-zoned edge offsets, or `None` when a cell has no
/// transition there or a near tie that `read_cell` settles by looking ahead.
#[inline(always)]
fn byte_x4(w: u32, g: i32) -> Option<(u32, i32)> {
    // Phase j of cell k is sample 4k + j of the window: phases 0..3 = c - 2 ..= c + 1.
    let r = TRANSPOSE_X4[(w & 0xFF) as usize]
        | TRANSPOSE_X4[((w >> 8) & 0xFF) as usize] << 2
        | TRANSPOSE_X4[((w >> 16) & 0xFF) as usize] << 4
        | TRANSPOSE_X4[(w >> 24) as usize] << 6;
    let p0 = r & 0xFF;
    let p1 = (r >> 8) & 0xFF;
    let p2 = (r >> 16) & 0xFF;
    let p3 = r >> 24;
    // Transitions into slot c - 1 (early), c (on time), c + 1 (late), one bit per cell.
    let early = p0 ^ p1;
    let on_time = p1 ^ p2;
    let late = p2 ^ p3;
    if early | on_time | late != 0xFF || early & on_time & late != 0 {
        return None;
    }
    // A cell with two transitions holds the mid-bit edge and a boundary edge: the one nearer
    // the prediction is the mid-bit edge, as in `read_cell`. Near ties `read_cell` looks at
    // the data ahead: leave those to it.
    // u = t - (c - 1), about (0, 1] (up to 1/4 beyond with drift). On time is nearer than
    // early unless u < 1/16, nearer than late unless u > 15/16; early and late tie around
    // u = 1/2. Cells with such a pair near its tie go bit by bit.
    let u = (ONE / 2) as i32 - g;
    let tie = (early & on_time != 0 && u < (ONE / 16) as i32)
        || (late & on_time != 0 && u > (ONE * 15 / 16) as i32)
        || (early & late != 0 && (u - (ONE / 2) as i32).abs() < (ONE / 16) as i32);
    if tie {
        return None;
    }
    let late_wins = if g < 0 { 0xFF } else { 0 };
    let late = late & !on_time & (late_wins | !early);
    let early = early & !on_time & !late;
    let value = (p2 & on_time) | (p3 & late) | (p1 & early);
    // A table instead of `count_ones`: RV32IMAC (and baseline x86-64) have no popcount.
    let n_early = BIT_COUNT[early as usize & 0xFF] as i32;
    let n_late = BIT_COUNT[late as usize & 0xFF] as i32;
    let n_on_time = 8 - n_early - n_late;
    // Offsets at the byte's middle phase: on time `g`, early `g - 1`, late `g + 1` samples.
    let error = (n_early + n_late) * g
        + (n_late - n_early) * (ONE as i32 - DEAD_ZONE)
        + n_on_time * dead_zone(g);
    Some((value, error))
}

/// True if the line stays put for at least 3/4 of a bit after `edge` (or to the end of the
/// capture): true after every mid-bit edge of the preamble, false after the SFD's last but
/// one mid-bit edge and after its boundary edge, which are half a bit from the next edge.
fn long_run_after(cap: &Capture<'_>, edge: usize, n: usize) -> bool {
    cap.next_edge(edge)
        .is_none_or(|next| 4 * (next - edge) >= 3 * n)
}

/// Least-squares line through edge positions `e_i` against their index `i`.
#[derive(Clone, Copy, Debug)]
struct LineFit {
    /// Points pushed.
    count: u32,
    /// Bit index the next point gets (ahead of `count` after skipped outliers).
    next_index: u32,

    last: usize,
    sum_i: i64,
    sum_ii: i64,
    sum_e: i64,
    sum_ie: i64,
}

impl LineFit {
    fn new() -> LineFit {
        LineFit {
            count: 0,
            next_index: 0,
            last: 0,
            sum_i: 0,
            sum_ii: 0,
            sum_e: 0,
            sum_ie: 0,
        }
    }

    /// True if `edge` continues the line: one bit time (+-1/4) after the last edge while the
    /// fit has fewer than [`EARLY_FIT_EDGES`] edges, then less than 9/32 bit from the fitted
    /// prediction (quantization and jitter). The SFD's boundary edge, half a bit early, fails
    /// this.
    fn accepts(&self, edge: usize, n: usize) -> bool {
        if self.count < EARLY_FIT_EDGES {
            let interval = edge.saturating_sub(self.last);
            return 4 * interval >= 3 * n && 4 * interval <= 5 * n;
        }
        let Some((intercept, slope)) = self.line() else {
            return false;
        };
        let predicted = intercept + slope * self.next_index as i64;
        let limit = (n as u64 * ONE as u64) * 9 / 32;
        ((edge as i64) << FRAC).abs_diff(predicted) < limit
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
        let i = self.next_index as i64;
        self.next_index += 1;
        let e = edge as i64;
        self.sum_i += i;
        self.sum_ii += i * i;
        self.sum_e += e;
        self.sum_ie += i * e;
        self.count += 1;
        self.last = edge;
    }

    /// Intercept and slope of the fitted line, fixed point.
    fn line(&self) -> Option<(i64, i64)> {
        let n = self.count as i64;
        let denominator = n * self.sum_ii - self.sum_i * self.sum_i;
        if denominator <= 0 {
            return None;
        }
        let slope = ((n * self.sum_ie - self.sum_i * self.sum_e) << FRAC) / denominator;
        let intercept = ((self.sum_e << FRAC) - slope * self.sum_i) / n;
        Some((intercept, slope))
    }

    /// Fitted position of the last edge and the slope (bit period), fixed point. The slope
    /// is clamped to +-2 % of nominal by the DPLL.
    fn solve(&self, os: Oversample) -> Option<(u32, u32)> {
        let (intercept, slope) = self.line()?;
        let last = intercept + slope * (self.next_index as i64 - 1);
        let nominal = os.get() as i64 * ONE as i64;
        let slope = slope.clamp(nominal - nominal / 32, nominal + nominal / 32);
        Some((u32::try_from(last).ok()?, slope as u32))
    }
}

/// Tells link pulses from noise in a capture the decoder could not lock on: every run of the
/// non-idle level (idle = the capture's last sample) must be 50..200 ns wide, and runs of idle
/// between pulses at least four bit times long.
fn classify_unlocked(cap: &Capture<'_>, os: Oversample) -> RxOutcome {
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
