//! The order of a sweep's steps, without any I/O: given the attempts measured so far, which
//! offered rate comes next — a repeat of a limit that bounds the knee, the next coarse rate,
//! a rate further down when nothing tracked yet, or a bisection toward the knee — or the end.
//! `sweep::measure` runs what it says; the tests here drive it with synthetic links.

use linklab_results::sweep::analysis;
use linklab_results::sweep::KneeRule;
use linklab_results::sweep::Step;

/// Lowest rate a search goes down to, bit/s.
const MIN_BPS: f64 = 1e3;

/// Going down, the next rate is this fraction of what the lowest rate's best attempt received:
/// just under what the link carried there.
const DOWN_OF_RECEIVED: f64 = 0.9;

/// Going down, never below this fraction of the lowest rate (a receiver that got almost
/// nothing says little about what it can carry).
const DOWN_FLOOR: f64 = 0.25;

/// Why a rate is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One of the plan's coarse rates.
    Coarse,
    /// Again: the rate bounds the knee and its limit is not confirmed yet.
    Repeat,
    /// Below every rate so far: none tracked yet.
    Down,
    /// Between the knee and the confirmed limit above it.
    Refine,
}

/// The next measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Next {
    /// Offered rate, bit/s.
    pub offered: f64,
    /// Why.
    pub kind: Kind,
}

/// How a sweep searches: the plan's fields that decide the order of its steps.
#[derive(Debug, Clone)]
pub struct Strategy {
    /// The thresholds, and how many attempts confirm a limit.
    pub rule: KneeRule,
    /// TCP (a step's only limit is then "not tracking").
    pub tcp: bool,
    /// The coarse offered rates, ascending.
    pub rates: Vec<f64>,
    /// Bisections between the knee and the confirmed limit above it, at most.
    pub refine: u32,
    /// Climb: offer the coarse rates above the knee, lowest first, only until a limit above
    /// the knee is confirmed (the knee is then bracketed). `false`: every coarse rate.
    pub climb: bool,
    /// When no rate tracked: go down, each time to 90 % of what the lowest rate received,
    /// between a quarter and this fraction of it (`None`: do not go down). Limits met on the
    /// way down are not repeated until a rate tracks: the one just above it is then.
    pub search_down: Option<f64>,
}

/// A sweep in progress: its strategy and the attempts so far. Everything it decides follows
/// from the attempts (`analysis`), besides how many bisections it made.
#[derive(Debug, Clone)]
pub struct Search {
    strategy: Strategy,
    steps: Vec<Step>,
    refined: u32,
}

impl Search {
    /// A search that has measured nothing yet.
    pub fn new(strategy: Strategy) -> Search {
        Search {
            strategy,
            steps: Vec::new(),
            refined: 0,
        }
    }

    /// The attempts so far, in the order measured.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// The attempts, in the order measured.
    pub fn into_steps(self) -> Vec<Step> {
        self.steps
    }

    /// What to measure next, or `None` when the sweep is done. In this order: a repeat of the
    /// limit that bounds the knee; the coarse rates (all of them, or climbing until a limit
    /// above the knee is confirmed); down while no rate tracked; the bisection toward the
    /// knee.
    pub fn next_rate(&mut self) -> Option<Next> {
        let (rule, tcp) = (&self.strategy.rule, self.strategy.tcp);
        let knee = analysis::knee(&self.steps, rule, tcp);
        let going_down = knee.is_none() && self.strategy.search_down.is_some();
        let next = |offered, kind| Some(Next { offered, kind });
        if !going_down {
            if let Some(r) = analysis::needs_repeat(&self.steps, rule, tcp) {
                return next(r, Kind::Repeat);
            }
        }
        if let Some(r) = self.coarse(knee, going_down) {
            return next(r, Kind::Coarse);
        }
        if going_down {
            return self.down().and_then(|r| next(r, Kind::Down));
        }
        if self.refined < self.strategy.refine {
            let k = knee?;
            let above = analysis::first_limited(&self.steps, Some(k))?.offered_bps;
            let mid = ((k + above) / 2.0 / 1e3).round() * 1e3;
            if mid <= k || mid >= above {
                return None;
            }
            self.refined += 1;
            return next(mid, Kind::Refine);
        }
        None
    }

    /// Takes the attempt measured for `next`: numbers it among the attempts at its rate and
    /// judges its limits. Returns it as stored.
    pub fn record(&mut self, next: Next, mut step: Step) -> &Step {
        let earlier: Vec<&Step> = analysis::attempts_at(&self.steps, next.offered).collect();
        step.offered_bps = next.offered;
        step.attempt = earlier.len() as u32 + 1;
        step.refined = match next.kind {
            Kind::Refine => true,
            Kind::Repeat => earlier.first().is_some_and(|s| s.refined),
            Kind::Coarse | Kind::Down => false,
        };
        step.limits = self.strategy.rule.limits(&step, self.strategy.tcp);
        self.steps.push(step);
        self.steps.last().expect("just pushed")
    }

    /// The next coarse rate, if one is due: every rate in order; or, climbing, the lowest one
    /// above the knee while no limit above it is confirmed (the first one to start with).
    fn coarse(&self, knee: Option<f64>, going_down: bool) -> Option<f64> {
        let measured = |r: f64| self.steps.iter().any(|s| s.offered_bps == r);
        let mut unmeasured = self
            .strategy
            .rates
            .iter()
            .copied()
            .filter(|&r| !measured(r));
        if !self.strategy.climb {
            return unmeasured.next();
        }
        let (rule, tcp) = (&self.strategy.rule, self.strategy.tcp);
        if self.steps.is_empty() {
            return unmeasured.next();
        }
        if going_down || analysis::bound(&self.steps, rule, tcp).is_some() {
            return None;
        }
        let above = knee.unwrap_or(f64::NEG_INFINITY);
        unmeasured.find(|&r| r > above)
    }

    /// The next rate down while no rate tracked: 90 % of what the lowest rate's best attempt
    /// received, within [a quarter, `search_down`] of that rate.
    fn down(&self) -> Option<f64> {
        let fraction = self.strategy.search_down.filter(|f| *f > 0.0 && *f < 1.0)?;
        let lowest = self
            .steps
            .iter()
            .map(|s| s.offered_bps)
            .fold(f64::INFINITY, f64::min);
        let received = analysis::attempts_at(&self.steps, lowest)
            .map(|s| s.received_bps)
            .fold(0.0, f64::max);
        let next = (received * DOWN_OF_RECEIVED)
            .min(lowest * fraction)
            .max(lowest * DOWN_FLOOR.min(fraction));
        let next = (next / 1e3).round() * 1e3;
        (next.is_finite() && next >= MIN_BPS && next < lowest).then_some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linklab_results::sweep::analysis::{bound, confirmed, knee};
    use linklab_results::sweep::Limit;

    const M: f64 = 1e6;

    /// A link with a hard capacity: below it every datagram arrives, above it the excess is
    /// lost at the receiver.
    fn capacity(cap: f64) -> impl FnMut(f64, usize) -> Step {
        move |offered, _| {
            let received = offered.min(cap);
            Step {
                offered_bps: offered * M,
                sent_bps: offered * M,
                received_bps: received * M,
                loss_pct: (offered - received) / offered * 100.0,
                ..Step::default()
            }
        }
    }

    /// Runs a search to the end against a synthetic link: `link(offered, n)` is what attempt
    /// `n` (0-based, over the whole sweep) at `offered` Mbit/s delivers. The attempts.
    fn run(strategy: Strategy, mut link: impl FnMut(f64, usize) -> Step) -> Vec<Step> {
        let mut s = Search::new(strategy);
        let mut n = 0;
        while let Some(next) = s.next_rate() {
            assert!(n < 100, "the search does not end");
            let step = link(next.offered / M, n);
            s.record(next, step);
            n += 1;
        }
        s.into_steps()
    }

    /// The probe's strategy around a TCP rate of `anchor` Mbit/s.
    fn probe_like(anchor: f64) -> Strategy {
        Strategy {
            rule: KneeRule::default(),
            tcp: false,
            rates: [0.9, 1.1, 1.5, 2.0]
                .iter()
                .map(|m| (anchor * m * M).round())
                .collect(),
            refine: 3,
            climb: true,
            search_down: Some(0.5),
        }
    }

    fn offered(steps: &[Step]) -> Vec<f64> {
        steps.iter().map(|s| s.offered_bps / M).collect()
    }

    /// A link of 240 Mbit/s whose first second (at 216 offered) a busy host spoilt.
    fn spoilt_first(offered: f64, n: usize) -> Step {
        let mut s = capacity(240.0)(offered, n);
        if n == 0 {
            s.loss_pct = 2.0; // a receiver descheduled for 20 ms
            s.received_bps *= 0.98;
        }
        s
    }

    /// The fault: one lossy second early in the sweep counted as the limit. Here the
    /// first step is spoilt: the search goes down until a rate tracks, then measures the
    /// spoilt rate again before its limit counts; it tracks, and the climb goes on to the
    /// real limit.
    #[test]
    fn one_transient_lossy_step_does_not_become_the_knee() {
        let steps = run(probe_like(240.0), spoilt_first);
        let rule = KneeRule::default();
        let o = offered(&steps);
        assert_eq!(o[..3], [216.0, 108.0, 216.0], "{o:?}");
        assert_eq!(steps[0].limits, vec![Limit::ReceiverLoss]);
        assert_eq!(
            (steps[2].attempt, steps[2].limits.len()),
            (2, 0),
            "tracks again"
        );
        let k = knee(&steps, &rule, false).unwrap() / M;
        assert!((225.0..=240.0).contains(&k), "knee {k}: {o:?}");
        let b = bound(&steps, &rule, false).unwrap() / M;
        assert!(b > 240.0 && b - k <= 20.0, "bound {b}: {o:?}");
        assert!(confirmed(&steps, b * M, &rule, false));
    }

    /// With one attempt per rate (the old rule) the spoilt second is the limit: the knee ends
    /// below the spoilt rate, 10 % under what the link carries.
    #[test]
    fn the_old_rule_took_one_lossy_second_for_the_limit() {
        let mut old = probe_like(240.0);
        old.rule.confirm = 1;
        let steps = run(old, spoilt_first);
        let rule = KneeRule {
            confirm: 1,
            ..KneeRule::default()
        };
        assert_eq!(bound(&steps, &rule, false), Some(216.0 * M));
        assert!(knee(&steps, &rule, false).unwrap() < 216.0 * M);
    }

    /// A real limit: every attempt above the capacity loses, so the limit is confirmed (two
    /// attempts), the climb stops there, and the bisection places the knee just below it.
    #[test]
    fn a_real_limit_still_is_the_limit() {
        let steps = run(probe_like(100.0), capacity(90.0));
        let rule = KneeRule::default();
        let o = offered(&steps);
        assert_eq!(o[..4], [90.0, 110.0, 110.0, 100.0], "{o:?}");
        assert_eq!(steps[2].attempt, 2);
        assert!(confirmed(&steps, 110.0 * M, &rule, false));
        let k = knee(&steps, &rule, false).unwrap() / M;
        assert!((85.0..=90.0).contains(&k), "knee {k}: {o:?}");
        // The limit that bounds the knee was confirmed, and nothing above the first confirmed
        // limit was offered.
        let b = bound(&steps, &rule, false).unwrap() / M;
        assert!(b > 90.0 && b <= 94.0, "bound {b}: {o:?}");
        assert!(!steps.iter().any(|s| s.offered_bps > 110.0 * M), "{o:?}");
    }

    /// Nothing tracks at the first rate: the search goes down (to just under what the link
    /// received, at most half and at least a quarter of the rate), without repeating the limits
    /// on the way; once a rate tracks, the limit just above it is confirmed, then bisected.
    #[test]
    fn goes_down_to_what_the_link_received() {
        // The serve case: TCP 1000 Mbit/s, UDP through the host only 110.
        let steps = run(probe_like(1000.0), capacity(110.0));
        let o = offered(&steps);
        // 900 received 110: down to 225 (a quarter of 900 is the floor), then 99 (90 % of 110).
        assert_eq!(o[..4], [900.0, 225.0, 99.0, 225.0], "{o:?}");
        assert_eq!(steps[3].attempt, 2);
        let rule = KneeRule::default();
        assert!(confirmed(&steps, 225.0 * M, &rule, false));
        let k = knee(&steps, &rule, false).unwrap() / M;
        assert!((95.0..=110.0).contains(&k), "knee {k}: {o:?}");
    }

    /// Each attempt at a rate may hit a different limit: two limited attempts confirm it,
    /// and the rate names both limits.
    #[test]
    fn any_limit_in_each_attempt_confirms() {
        let mixed = |offered: f64, n: usize| {
            let mut s = capacity(90.0)(offered, n);
            if offered > 90.0 && n % 2 == 1 {
                s.sent_bps = 90.0 * M;
                s.loss_pct = 0.0;
            }
            s
        };
        let steps = run(probe_like(100.0), mixed);
        let rule = KneeRule::default();
        assert!(confirmed(&steps, 110.0 * M, &rule, false));
        let at = analysis::limits_at(&steps, 110.0 * M);
        assert!(
            at.contains(&Limit::ReceiverLoss) && at.contains(&Limit::Sender),
            "{at:?}"
        );
    }

    /// The CLI's full grid: a limited rate is repeated only while it bounds the knee; rates
    /// above a confirmed limit are measured once (they cannot move the knee down).
    #[test]
    fn full_grid_repeats_only_the_rate_that_bounds_the_knee() {
        let grid = Strategy {
            rule: KneeRule::default(),
            tcp: false,
            rates: vec![60.0 * M, 70.0 * M, 80.0 * M, 90.0 * M, 100.0 * M],
            refine: 0,
            climb: false,
            search_down: None,
        };
        let steps = run(grid, capacity(75.0));
        assert_eq!(offered(&steps), [60.0, 70.0, 80.0, 80.0, 90.0, 100.0]);
        assert_eq!(knee(&steps, &KneeRule::default(), false), Some(70.0 * M));
        assert_eq!(bound(&steps, &KneeRule::default(), false), Some(80.0 * M));
    }

    /// A repeat that tracks moves the knee up, and the next limited rate above becomes the one
    /// to confirm.
    #[test]
    fn a_repeat_that_tracks_hands_the_bound_to_the_next_rate() {
        let grid = Strategy {
            rule: KneeRule::default(),
            tcp: false,
            rates: vec![60.0 * M, 70.0 * M, 80.0 * M, 90.0 * M],
            refine: 0,
            climb: false,
            search_down: None,
        };
        let spoilt = |offered: f64, n: usize| {
            let mut s = capacity(85.0)(offered, n);
            if n == 1 {
                s.loss_pct = 1.0; // 70 Mbit/s, once
            }
            s
        };
        let steps = run(grid, spoilt);
        assert_eq!(offered(&steps), [60.0, 70.0, 70.0, 80.0, 90.0, 90.0]);
        assert_eq!(knee(&steps, &KneeRule::default(), false), Some(80.0 * M));
        assert_eq!(bound(&steps, &KneeRule::default(), false), Some(90.0 * M));
    }
}
