//! What a sweep means: which limit each step hit, the knee, the peak and the collapse (the
//! i.MX6 FEC iperf study's figure).
//!
//! A bottleneck shows up in one of three ways, and the sweep names each ([`Limit`]): the
//! receiver counts lost datagrams; the sender cannot put the offered rate on the wire (its NIC,
//! its qdisc, its CPU — a shaper on the sender's own interface pushes back on the socket, so
//! nothing is lost, it is never sent); or the received rate falls short of the offered rate with
//! neither to explain it (a queue holding the tail of the test, TCP backing off). The knee is
//! the highest offered rate at which none of them shows.
//!
//! A busy host can spoil a second — a receiver descheduled for 100 ms loses what arrived
//! meanwhile, a sender that stalls sends short — but it cannot make a link carry more than it
//! can: the noise of a step is one-sided. So an offered rate may be measured more than once
//! (each measurement, an *attempt*, is a [`Step`] of its own): the rate tracks when any attempt
//! tracked, and its limit is *confirmed* only when [`KneeRule::confirm`] attempts in a row hit
//! one. The sweep measures a limited rate again while it is the one that bounds the knee
//! ([`needs_repeat`]).

use serde::{Deserialize, Serialize};

use super::step::{KneeRule, Limit, Step};

/// Received throughput this far (fraction) below the peak at a higher offered rate is a collapse.
pub const COLLAPSE_DROP: f64 = 0.10;

/// The knee: the highest offered rate at which an attempt hit no limit (see
/// [`KneeRule::limits`]). A noisy attempt that hit a limit, at that rate or below, does not
/// move it.
pub fn knee(steps: &[Step], rule: &KneeRule, tcp: bool) -> Option<f64> {
    steps
        .iter()
        .filter(|s| rule.limits(s, tcp).is_empty())
        .map(|s| s.offered_bps)
        .reduce(f64::max)
}

/// The attempts at offered rate `offered`, in the order measured.
pub fn attempts_at(steps: &[Step], offered: f64) -> impl Iterator<Item = &Step> {
    steps.iter().filter(move |s| s.offered_bps == offered)
}

/// Whether the limit at `offered` is confirmed: [`KneeRule::confirm`] attempts there, every
/// one of them limited.
pub fn confirmed(steps: &[Step], offered: f64, rule: &KneeRule, tcp: bool) -> bool {
    let mut n = 0;
    for s in attempts_at(steps, offered) {
        if rule.limits(s, tcp).is_empty() {
            return false;
        }
        n += 1;
    }
    n >= rule.confirm.max(1)
}

/// The step that shows what stopped the link: the first attempt at the lowest offered rate
/// above the knee (or the lowest of all when there is no knee). `None` when every step above
/// the knee tracked, i.e. the sweep never reached a limit.
pub fn first_limited(steps: &[Step], knee: Option<f64>) -> Option<&Step> {
    steps
        .iter()
        .filter(|s| knee.is_none_or(|k| s.offered_bps > k))
        .min_by(|a, b| a.offered_bps.total_cmp(&b.offered_bps))
}

/// The lowest offered rate above the knee whose limit is confirmed: the knee lies below it.
/// `None` when no limit above the knee was confirmed.
pub fn bound(steps: &[Step], rule: &KneeRule, tcp: bool) -> Option<f64> {
    let k = knee(steps, rule, tcp);
    steps
        .iter()
        .map(|s| s.offered_bps)
        .filter(|&r| k.is_none_or(|k| r > k) && confirmed(steps, r, rule, tcp))
        .reduce(f64::min)
}

/// The knee's range, `(low, high)`: from the lowest offered rate at or below the knee at which
/// an attempt hit a limit (down to there the sweep saw the link both keep up and fail; the knee
/// itself when every attempt up to it tracked) up to the most the link delivered once a limit
/// above the knee was confirmed — the confirmed limit's rate or the peak received rate,
/// whichever is higher (`None`: no limit confirmed, the knee is a lower bound). With no knee,
/// from 0.
///
/// On a link that stops at its capacity the peak is the knee, and the range is the bisection's
/// bracket. On a host that stalls now and then, loss shows at any rate while the link goes on
/// delivering far more than the knee: the range then spans what the loss-free knee depends
/// on — how often this host stalled in this run.
pub fn knee_range(steps: &[Step], rule: &KneeRule, tcp: bool) -> (f64, Option<f64>) {
    let high = bound(steps, rule, tcp).map(|b| peak(steps).map_or(b, |p| b.max(p.received_bps)));
    let Some(k) = knee(steps, rule, tcp) else {
        return (0.0, high);
    };
    let low = steps
        .iter()
        .filter(|s| s.offered_bps <= k && !rule.limits(s, tcp).is_empty())
        .map(|s| s.offered_bps)
        .fold(k, f64::min);
    (low, high)
}

/// The rate to measure again before the sweep goes on: the lowest offered rate above the knee
/// (the one that bounds it) when its attempts so far all hit a limit and are fewer than
/// [`KneeRule::confirm`]. A limited rate above a confirmed one is not repeated: it cannot
/// move the knee.
pub fn needs_repeat(steps: &[Step], rule: &KneeRule, tcp: bool) -> Option<f64> {
    let k = knee(steps, rule, tcp);
    let lowest = first_limited(steps, k)?.offered_bps;
    let n = attempts_at(steps, lowest).count() as u32;
    (n < rule.confirm && !confirmed(steps, lowest, rule, tcp)).then_some(lowest)
}

/// The limits hit at `offered`, over all its attempts, each named once in the order met.
pub fn limits_at(steps: &[Step], offered: f64) -> Vec<Limit> {
    let mut out: Vec<Limit> = Vec::new();
    for s in attempts_at(steps, offered) {
        for l in &s.limits {
            if !out.contains(l) {
                out.push(*l);
            }
        }
    }
    out
}

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

/// A collapse: among the rates offered above the peak, the lowest received rate (each rate's
/// best attempt: a spoilt repeat is not a collapse), if it is more than [`COLLAPSE_DROP`]
/// below the peak.
pub fn collapse(steps: &[Step]) -> Option<Collapse> {
    let p = peak(steps)?;
    let best_at = |offered: f64| {
        attempts_at(steps, offered)
            .max_by(|a, b| a.received_bps.total_cmp(&b.received_bps))
            .expect("a rate with an attempt")
    };
    let worst = steps
        .iter()
        .filter(|s| s.offered_bps > p.offered_bps)
        .map(|s| best_at(s.offered_bps))
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
    use super::super::step::describe_all;
    use super::*;

    /// A step in Mbit/s where the sender sent what was offered.
    fn step(offered_mbit: f64, received_mbit: f64, loss_pct: f64) -> Step {
        sent_step(offered_mbit, offered_mbit, received_mbit, loss_pct)
    }

    fn sent_step(offered: f64, sent: f64, received: f64, loss_pct: f64) -> Step {
        Step {
            offered_bps: offered * 1e6,
            sent_bps: sent * 1e6,
            received_bps: received * 1e6,
            loss_pct,
            ..Step::default()
        }
    }

    const UDP: bool = false;
    const TCP: bool = true;

    /// The i.MX6 FEC iperf study's receive column (bwtest.sh, 50..450 Mbit/s, then 1 Gbit/s;
    /// the 1 Gbit/s step's sender managed 453 Mbit/s).
    fn imx6_receive() -> Vec<Step> {
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
            sent_step(1000.0, 453.0, 254.0, 67.0),
        ]
    }

    #[test]
    fn imx6_knee_peak_collapse_and_limits() {
        let s = imx6_receive();
        let rule = KneeRule::default();
        assert_eq!(knee(&s, &rule, UDP), Some(300e6));
        let above = first_limited(&s, Some(300e6)).unwrap();
        assert_eq!(above.offered_bps, 350e6);
        assert_eq!(rule.limits(above, UDP), vec![Limit::ReceiverLoss]);
        // At 1 Gbit/s both ends were the limit: the sender managed 453, the receiver lost 67 %.
        assert_eq!(
            rule.limits(&s[9], UDP),
            vec![Limit::ReceiverLoss, Limit::Sender]
        );
        assert_eq!(
            peak(&s),
            Some(Peak {
                offered_bps: 450e6,
                received_bps: 415e6
            })
        );
        let c = collapse(&s).expect("the i.MX6 collapses at 1 Gbit/s");
        assert_eq!(c.offered_bps, 1000e6);
        assert!((c.drop_pct - (1.0 - 254.0 / 415.0) * 100.0).abs() < 1e-9);
    }

    /// The i.MX6 study's transmit side: at 400 Mbit/s offered the board sent 143 Mbit/s and the
    /// peer lost nothing. Loss alone would call that step clean.
    #[test]
    fn a_sender_that_cannot_keep_up_is_a_limit_without_loss() {
        let rule = KneeRule::default();
        let s = sent_step(400.0, 143.0, 143.0, 0.0);
        assert_eq!(rule.limits(&s, UDP), vec![Limit::Sender]);
    }

    /// A shaper on the sender's own interface (issue 13): every step from 150 Mbit/s sends and
    /// receives ~147 Mbit/s with no loss; the knee is 150, not the top offered rate.
    #[test]
    fn sender_side_shaper_knee_is_where_sent_stops_following() {
        let s = vec![
            step(50.0, 50.0, 0.0),
            step(100.0, 100.0, 0.0),
            sent_step(150.0, 146.5, 146.4, 0.0),
            sent_step(200.0, 146.0, 145.7, 0.168),
            sent_step(250.0, 146.2, 146.2, 0.0),
            sent_step(300.0, 147.0, 147.0, 0.0),
        ];
        let rule = KneeRule::default();
        assert_eq!(knee(&s, &rule, UDP), Some(150e6));
        assert_eq!(
            rule.limits(&s[3], UDP),
            vec![Limit::ReceiverLoss, Limit::Sender]
        );
        assert_eq!(rule.limits(&s[5], UDP), vec![Limit::Sender]);
        assert_eq!(first_limited(&s, Some(150e6)).unwrap().offered_bps, 200e6);
        // A tighter tolerance puts 146.4 of 150 outside it.
        let tight = KneeRule {
            tolerance_pct: 1.0,
            ..rule
        };
        assert_eq!(knee(&s, &tight, UDP), Some(100e6));
    }

    /// Everything sent, nothing counted lost, yet less received: a queue held the tail.
    #[test]
    fn unexplained_shortfall_is_not_tracking() {
        let rule = KneeRule::default();
        let s = sent_step(300.0, 300.0, 200.0, 0.0);
        assert_eq!(rule.limits(&s, UDP), vec![Limit::NotTracking]);
        // Counted loss names the limit, however much of the shortfall it covers (the sender's
        // and the receiver's counting windows differ by a few per cent on a busy host).
        let s = sent_step(300.0, 300.0, 200.0, 0.5);
        assert_eq!(rule.limits(&s, UDP), vec![Limit::ReceiverLoss]);
        let s = sent_step(300.0, 300.0, 200.0, 33.0);
        assert_eq!(rule.limits(&s, UDP), vec![Limit::ReceiverLoss]);
        // A sender shortfall names the sender.
        let s = sent_step(300.0, 250.0, 200.0, 0.0);
        assert_eq!(rule.limits(&s, UDP), vec![Limit::Sender]);
    }

    #[test]
    fn loss_without_shortfall_still_counts() {
        let rule = KneeRule::default();
        let s = step(100.0, 99.8, 0.2);
        assert_eq!(rule.limits(&s, UDP), vec![Limit::ReceiverLoss]);
        assert!(rule.limits(&step(100.0, 99.0, 0.05), UDP).is_empty());
    }

    #[test]
    fn plateau_is_not_a_collapse() {
        let s = vec![
            step(100.0, 100.0, 0.0),
            step(200.0, 195.0, 2.0),
            step(300.0, 193.0, 35.0),
            step(400.0, 190.0, 52.0),
        ];
        assert_eq!(knee(&s, &KneeRule::default(), UDP), Some(100e6));
        assert_eq!(collapse(&s), None);
    }

    #[test]
    fn tcp_knee_is_where_goodput_falls_short() {
        let s = vec![
            step(100.0, 100.0, 0.0),
            sent_step(200.0, 188.0, 186.0, 0.0),
            sent_step(300.0, 188.0, 186.0, 0.0),
        ];
        let rule = KneeRule::default();
        assert_eq!(knee(&s, &rule, TCP), Some(100e6));
        // TCP slows its sender whoever the bottleneck is: not the sender's fault.
        assert_eq!(rule.limits(&s[2], TCP), vec![Limit::NotTracking]);
    }

    #[test]
    fn no_knee_and_no_limit_reached() {
        let rule = KneeRule::default();
        let s = vec![step(100.0, 50.0, 50.0)];
        assert_eq!(knee(&s, &rule, UDP), None);
        assert_eq!(first_limited(&s, None).unwrap().offered_bps, 100e6);
        assert_eq!(knee(&[], &rule, UDP), None);
        assert_eq!(peak(&[]), None);
        assert_eq!(collapse(&s), None);
        // Every step tracked: the knee is the top step, and no limit was reached.
        let s = vec![step(100.0, 100.0, 0.0), step(200.0, 199.0, 0.0)];
        assert_eq!(knee(&s, &rule, UDP), Some(200e6));
        assert!(first_limited(&s, Some(200e6)).is_none());
    }

    /// The knee's range: a rate below the knee where the link was seen to fail widens it down
    /// to there; above, it reaches the confirmed limit or the most delivered, whichever is
    /// higher.
    #[test]
    fn knee_range_spans_what_the_attempts_disagree_about() {
        let rule = KneeRule::default();
        let again = |mut s: Step| {
            s.attempt = 2;
            s
        };
        let clean = vec![
            step(90.0, 90.0, 0.0),
            step(110.0, 100.0, 9.0),
            again(step(110.0, 100.0, 9.0)),
        ];
        assert_eq!(knee_range(&clean, &rule, UDP), (90e6, Some(110e6)));
        // A stalling host: 1 % lost at 110 and above, yet 300 Mbit/s delivered at 330.
        let stalls = vec![
            step(90.0, 90.0, 0.0),
            step(110.0, 109.0, 1.0),
            again(step(110.0, 109.0, 1.0)),
            step(330.0, 300.0, 9.0),
        ];
        assert_eq!(knee_range(&stalls, &rule, UDP), (90e6, Some(300e6)));
        // A spoilt second at 50 (tracked when repeated, or not) and a limit measured once.
        let noisy = vec![
            step(50.0, 49.0, 1.0),
            step(90.0, 90.0, 0.0),
            step(110.0, 100.0, 9.0),
        ];
        assert_eq!(knee_range(&noisy, &rule, UDP), (50e6, None));
        assert_eq!(
            knee_range(&[step(50.0, 20.0, 60.0)], &rule, UDP),
            (0.0, None)
        );
        let confirmed_only = vec![step(50.0, 20.0, 60.0), again(step(50.0, 20.0, 60.0))];
        assert_eq!(knee_range(&confirmed_only, &rule, UDP), (0.0, Some(50e6)));
    }

    #[test]
    fn limits_in_words_and_json() {
        assert_eq!(describe_all(&[]), "-");
        assert_eq!(
            describe_all(&[Limit::ReceiverLoss, Limit::Sender]),
            "receiver loss + sender could not keep up"
        );
        assert_eq!(
            serde_json::to_string(&[Limit::ReceiverLoss, Limit::Sender, Limit::NotTracking])
                .unwrap(),
            r#"["receiver_loss","sender","not_tracking"]"#
        );
    }
}
