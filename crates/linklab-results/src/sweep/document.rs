//! The JSON document of one `linklab sweep` (`"kind": "sweep"`): every attempt, the rule that
//! judged them, the knee, the limit above it, the peak and the collapse.

use serde::{Deserialize, Serialize};

use super::analysis::{self, Collapse, Peak};
use super::step::{KneeRule, Limit, Step};
use crate::units::format_rate;

/// The JSON of one `linklab sweep` (`"kind": "sweep"`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepReport {
    /// Always `"sweep"`: tells `linklab report` what this file is.
    pub kind: String,
    /// The iperf server as given.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// `"udp"` or `"tcp"`.
    pub protocol: String,
    /// `"iperf3"` or `"iperf2"` (`"iperf3"` in files written before iperf 2 sweeps).
    #[serde(default = "iperf3")]
    pub iperf: String,
    /// True when the server sent (iperf3 `-R`).
    pub reverse: bool,
    /// Seconds per step.
    pub duration_s: u32,
    /// Datagram / write length, when given.
    pub length: Option<u32>,
    /// Every attempt, sorted by offered rate, repeats of a rate after its first attempt
    /// (refinement steps included).
    pub steps: Vec<Step>,
    /// The thresholds the limits and the knee were judged by. Absent in files written before
    /// the sweep named limits (their knee was loss alone); `linklab report` recomputes those.
    #[serde(default)]
    pub knee_rule: Option<KneeRule>,
    /// Highest offered rate at which an attempt hit no limit, bit/s.
    pub knee_bps: Option<f64>,
    /// The first rate above the knee and what limited it; `None` when no step above the knee
    /// was measured (the link kept up with every offered rate).
    #[serde(default)]
    pub limited_at: Option<LimitedAt>,
    /// Highest received rate.
    pub peak: Option<Peak>,
    /// Received throughput falling past the peak, if it does.
    pub collapse: Option<Collapse>,
}

fn one() -> u32 {
    1
}

fn iperf3() -> String {
    "iperf3".into()
}

fn yes() -> bool {
    true
}

/// The rate that shows what stopped the link: the first one above the knee (the lowest rate
/// when none tracked).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LimitedAt {
    /// Its offered rate, bit/s.
    pub offered_bps: f64,
    /// What its attempts hit, each limit named once.
    pub limits: Vec<Limit>,
    /// Attempts at this rate (all of them limited).
    #[serde(default = "one")]
    pub attempts: u32,
    /// Whether the limit is confirmed: as many attempts as the rule's `confirm` (false when
    /// the time ran out before the repeat; true in files written before repeats existed).
    #[serde(default = "yes")]
    pub confirmed: bool,
}

impl SweepReport {
    /// The knee rule as stored (the defaults for files written before it was stored).
    pub fn rule(&self) -> KneeRule {
        self.knee_rule.unwrap_or_default()
    }

    /// True for a TCP sweep.
    pub fn tcp(&self) -> bool {
        self.protocol == "tcp"
    }

    /// True for a sweep of iperf 2 tests.
    pub fn is_iperf2(&self) -> bool {
        self.iperf == "iperf2"
    }

    /// Brings a file written before the sweep named limits up to date: classifies its steps and
    /// recomputes the knee with the default rule. Returns a note for people saying so, or `None`
    /// when the file is current.
    pub fn upgrade(&mut self) -> Option<String> {
        if self.knee_rule.is_some() {
            return None;
        }
        let old = self.knee_bps;
        // Every rate was measured once.
        let rule = KneeRule {
            confirm: 1,
            ..KneeRule::default()
        };
        let tcp = self.tcp();
        for s in &mut self.steps {
            s.limits = rule.limits(s, tcp);
        }
        self.knee_rule = Some(rule);
        self.knee_bps = analysis::knee(&self.steps, &rule, tcp);
        self.limited_at = limited_at(&self.steps, self.knee_bps, &rule, tcp);
        Some(format!(
            "written before linklab sweep named limits: its knee ({}, by {} alone) is recomputed \
             from its steps by the current rule",
            old.map_or("none".into(), format_rate),
            if tcp {
                "goodput within 1 % of offered"
            } else {
                "loss < 0.1 %"
            }
        ))
    }
}

/// The first rate above the knee, the limits its attempts hit, and whether it is confirmed.
pub fn limited_at(
    steps: &[Step],
    knee: Option<f64>,
    rule: &KneeRule,
    tcp: bool,
) -> Option<LimitedAt> {
    analysis::first_limited(steps, knee).map(|s| LimitedAt {
        offered_bps: s.offered_bps,
        limits: analysis::limits_at(steps, s.offered_bps),
        attempts: analysis::attempts_at(steps, s.offered_bps).count() as u32,
        confirmed: analysis::confirmed(steps, s.offered_bps, rule, tcp),
    })
}
