//! The clock recovery loop: a second-order DPLL predicting each mid-bit edge, with gains that
//! shrink as it has seen more edges (gear shifting), so it pulls in fast after the preamble
//! and then averages quantization and jitter over hundreds of edges.

use crate::oversample::Oversample;

/// Fractional bits of the DPLL's fixed-point sample positions.
pub(super) const FRAC: u32 = 12;
/// One sample in fixed point.
pub(super) const ONE: u32 = 1 << FRAC;

/// The recovered bit period may stray this many 1/1024ths from nominal (2 %).
const PERIOD_RANGE_1024THS: u32 = 20;

/// The gain schedule: from `edges` tracked edges on (the preamble's included), the phase
/// moves by 1/2^alpha of each edge's offset and the period by 1/2^beta of it. An expanding
/// memory filter's gains (about 4/n and 6/n^2 after n edges) rounded to powers of two, up to a
/// memory of about a thousand edges. (Tuned with examples/phy_goals.rs, see README.)
pub(super) const GEARS: [Gear; 6] = [
    Gear::new(0, 3, 8),
    Gear::new(64, 4, 10),
    Gear::new(128, 5, 11),
    Gear::new(256, 6, 13),
    Gear::new(512, 7, 15),
    Gear::new(1024, 8, 17),
];

/// One step of [`GEARS`].
#[derive(Clone, Copy, Debug)]
pub(super) struct Gear {
    /// Edges tracked before this gear applies.
    pub edges: u32,
    /// Phase gain shift.
    pub alpha: u32,
    /// Frequency gain shift.
    pub beta: u32,
}

impl Gear {
    const fn new(edges: u32, alpha: u32, beta: u32) -> Gear {
        Gear { edges, alpha, beta }
    }
}

/// Phase and period of the recovered bit clock, in 1/4096 samples.
#[derive(Clone, Copy, Debug)]
pub(super) struct Dpll {
    /// Predicted position of the next mid-bit edge (between samples `ceil(t) - 1` and
    /// `ceil(t)`).
    pub t: u32,
    /// Current bit period: `nominal + (integral >> beta)`.
    pub period: u32,
    /// The nominal bit period (samples per bit).
    pub nominal: u32,
    /// Sum of all measured edge offsets (the loop's integrator), kept at full resolution so
    /// that rounding never accumulates; clamped to +-2 % of the period.
    pub integral: i32,
    pub integral_limit: i32,
    pub alpha: u32,
    pub beta: u32,
    /// Edges tracked so far (the gear schedule's clock).
    pub edges: u32,
    /// Edge count at which the next gear applies (`u32::MAX` in the last).
    pub next_gear_at: u32,
    gear: usize,
}

impl Dpll {
    /// A loop predicting `t` with period `period`, having tracked `edges` edges.
    pub fn new(t: u32, period: u32, edges: u32, os: Oversample) -> Dpll {
        let nominal = os.get() as u32 * ONE;
        let mut dpll = Dpll {
            t,
            period: nominal,
            nominal,
            integral: 0,
            integral_limit: 0,
            alpha: 0,
            beta: 0,
            edges: 0,
            next_gear_at: 0,
            gear: 0,
        };
        dpll.set_gear(0);
        dpll.edges = edges;
        dpll.shift_gears();
        dpll.set_period(period);
        dpll
    }

    /// Moves on by `bits` bit times, correcting by `error` (measured edge positions minus
    /// predictions, summed over the bits, fixed point).
    #[inline(always)]
    pub fn advance(&mut self, bits: u32, error: i32) {
        // Flooring costs at most 1/4096 sample per step; the loop takes it out.
        let phase_step = (error + (1 << self.alpha >> 1)) >> self.alpha;
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
        self.period = self.nominal.wrapping_add_signed(self.integral >> self.beta);
        self.edges = self.edges.saturating_add(bits);
        if self.edges >= self.next_gear_at {
            self.shift_gears();
        }
    }

    /// The loop's state for running within one gear (the word path keeps it in registers).
    #[inline(always)]
    pub fn steady(&self) -> Steady {
        Steady {
            t: self.t,
            period: self.period,
            integral: self.integral,
            nominal: self.nominal,
            alpha: self.alpha,
            round: 1 << self.alpha >> 1,
            beta: self.beta,
        }
    }

    /// Takes back the state after `bits` bit times in `steady`: clamps the period to its
    /// range and shifts gears if due.
    pub fn settle(&mut self, steady: &Steady, bits: u32) {
        self.t = steady.t;
        self.integral = steady
            .integral
            .clamp(-self.integral_limit, self.integral_limit);
        self.period = self.nominal.wrapping_add_signed(self.integral >> self.beta);
        self.edges = self.edges.saturating_add(bits);
        if self.edges >= self.next_gear_at {
            self.shift_gears();
        }
    }

    /// Moves to the gear the edge count calls for.
    #[cold]
    pub fn shift_gears(&mut self) {
        let mut gear = self.gear;
        while gear + 1 < GEARS.len() && self.edges >= GEARS[gear + 1].edges {
            gear += 1;
        }
        if gear != self.gear {
            self.set_gear(gear);
        }
    }

    /// Switches to gear `gear`, keeping the current period.
    fn set_gear(&mut self, gear: usize) {
        let offset = self.period as i32 - self.nominal as i32;
        let range = (self.nominal / 1024 * PERIOD_RANGE_1024THS) as i32;
        let g = GEARS[gear];
        self.gear = gear;
        self.alpha = g.alpha;
        self.beta = g.beta;
        self.integral_limit = range << g.beta;
        self.integral = (offset << g.beta).clamp(-self.integral_limit, self.integral_limit);
        self.next_gear_at = GEARS.get(gear + 1).map_or(u32::MAX, |g| g.edges);
    }

    /// Starts from a measured period (clamped to the tracking range).
    fn set_period(&mut self, period: u32) {
        let offset = period as i32 - self.nominal as i32;
        self.integral = (offset << self.beta).clamp(-self.integral_limit, self.integral_limit);
        self.period = self.nominal.wrapping_add_signed(self.integral >> self.beta);
    }

    /// The sample that should be the first to show the new level: `ceil(t)`.
    #[inline(always)]
    pub fn first_new(&self) -> usize {
        (self.t.wrapping_add(ONE - 1) >> FRAC) as usize
    }
}

/// [`Dpll`] within one gear, without the period clamp (see [`Dpll::steady`]).
#[derive(Clone, Copy, Debug)]
pub(super) struct Steady {
    pub t: u32,
    pub period: u32,
    integral: i32,
    nominal: u32,
    alpha: u32,
    round: i32,
    beta: u32,
}

impl Steady {
    /// [`Dpll::advance`] without the clamp and the gear schedule.
    #[inline(always)]
    pub fn advance(&mut self, bits: u32, error: i32) {
        self.t = self
            .t
            .wrapping_add(self.period.wrapping_mul(bits))
            .wrapping_add_signed((error + self.round) >> self.alpha);
        self.integral = self.integral.wrapping_add(error);
        self.period = self.nominal.wrapping_add_signed(self.integral >> self.beta);
    }
}
