//! What a sweep means: the knee, the peak and the collapse (seed 002's figure).

use serde::{Deserialize, Serialize};

use super::Step;

/// Loss below this (in percent) counts as loss-free for the knee.
pub const KNEE_LOSS_PCT: f64 = 0.1;

/// Received throughput this far (fraction) below the peak at a higher offered rate is a collapse.
pub const COLLAPSE_DROP: f64 = 0.10;

/// The highest received rate of the sweep and the offered rate that produced it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    /// Offered rate of the peak step, bit/s.
    pub offered_bps: f64,
    /// Received rate at the peak, bit/s.
    pub received_bps: f64,
}

/// Received throughput falling while the offered rate rises past the peak.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Collapse {
    /// Offered rate of the step with the lowest received rate above the peak, bit/s.
    pub offered_bps: f64,
    /// Its received rate, bit/s.
    pub received_bps: f64,
    /// How far below the peak it is, percent.
    pub drop_pct: f64,
}

/// TCP does not lose, it slows down: a TCP step is below the knee while its goodput stays
/// within this many percent of the offered rate.
pub const TCP_SHORTFALL_PCT: f64 = 1.0;

/// The knee: the highest offered rate whose loss stays below [`KNEE_LOSS_PCT`] (UDP), or whose
/// goodput stays within [`TCP_SHORTFALL_PCT`] of the offered rate (TCP).
pub fn knee(steps: &[Step], tcp: bool) -> Option<f64> {
    steps
        .iter()
        .filter(|s| below_knee(s, tcp))
        .map(|s| s.offered_bps)
        .reduce(f64::max)
}

/// True when a step shows no sign of the bottleneck (see [`knee`]).
pub fn below_knee(s: &Step, tcp: bool) -> bool {
    if tcp {
        s.offered_bps > 0.0 && (1.0 - s.received_bps / s.offered_bps) * 100.0 < TCP_SHORTFALL_PCT
    } else {
        s.loss_pct < KNEE_LOSS_PCT
    }
}

/// The step with the highest received rate (the lowest offered rate on ties).
pub fn peak(steps: &[Step]) -> Option<Peak> {
    let mut best: Option<Peak> = None;
    for s in steps {
        let better = match best {
            None => true,
            Some(b) => {
                s.received_bps > b.received_bps
                    || (s.received_bps == b.received_bps && s.offered_bps < b.offered_bps)
            }
        };
        if better {
            best = Some(Peak {
                offered_bps: s.offered_bps,
                received_bps: s.received_bps,
            });
        }
    }
    best
}

/// A collapse: among steps offered above the peak, the lowest received rate, if it is more than
/// [`COLLAPSE_DROP`] below the peak.
pub fn collapse(steps: &[Step]) -> Option<Collapse> {
    let p = peak(steps)?;
    let worst = steps
        .iter()
        .filter(|s| s.offered_bps > p.offered_bps)
        .min_by(|a, b| a.received_bps.total_cmp(&b.received_bps))?;
    let drop = 1.0 - worst.received_bps / p.received_bps;
    (p.received_bps > 0.0 && drop > COLLAPSE_DROP).then_some(Collapse {
        offered_bps: worst.offered_bps,
        received_bps: worst.received_bps,
        drop_pct: drop * 100.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(offered_mbit: f64, received_mbit: f64, loss_pct: f64) -> Step {
        Step {
            offered_bps: offered_mbit * 1e6,
            received_bps: received_mbit * 1e6,
            loss_pct,
            ..Step::default()
        }
    }

    /// Seed 002's receive column (bwtest.sh, 50..450 Mbit/s, then the 1 Gbit/s run).
    fn seed_002() -> Vec<Step> {
        vec![
            step(50.0, 50.0, 0.0),
            step(100.0, 100.0, 0.023),
            step(150.0, 151.0, 0.0),
            step(200.0, 203.0, 0.0),
            step(250.0, 250.0, 0.0),
            step(300.0, 302.0, 0.064),
            step(350.0, 355.0, 1.4),
            step(400.0, 379.0, 6.7),
            step(450.0, 415.0, 8.3),
            step(1000.0, 254.0, 67.0),
        ]
    }

    #[test]
    fn seed_002_knee_peak_collapse() {
        let s = seed_002();
        assert_eq!(knee(&s, false), Some(300e6));
        assert_eq!(
            peak(&s),
            Some(Peak {
                offered_bps: 450e6,
                received_bps: 415e6
            })
        );
        let c = collapse(&s).expect("seed 002 collapses at 1 Gbit/s");
        assert_eq!(c.offered_bps, 1000e6);
        assert!((c.drop_pct - (1.0 - 254.0 / 415.0) * 100.0).abs() < 1e-9);
    }

    #[test]
    fn plateau_is_not_a_collapse() {
        let s = vec![
            step(100.0, 100.0, 0.0),
            step(200.0, 195.0, 2.0),
            step(300.0, 193.0, 35.0),
            step(400.0, 190.0, 52.0),
        ];
        assert_eq!(knee(&s, false), Some(100e6));
        assert_eq!(collapse(&s), None);
    }

    #[test]
    fn tcp_knee_is_where_goodput_falls_short() {
        let s = vec![
            step(100.0, 100.0, 0.0),
            step(200.0, 194.0, 0.0),
            step(300.0, 194.0, 0.0),
        ];
        assert_eq!(knee(&s, true), Some(100e6));
        assert_eq!(knee(&s, false), Some(300e6));
    }

    #[test]
    fn all_lossy_has_no_knee() {
        let s = vec![step(100.0, 50.0, 50.0)];
        assert_eq!(knee(&s, false), None);
        assert_eq!(knee(&[], false), None);
        assert_eq!(peak(&[]), None);
        assert_eq!(collapse(&s), None);
    }
}
