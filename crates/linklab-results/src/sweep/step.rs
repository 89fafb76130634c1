//! One attempt of a sweep at one offered rate, the limits it can hit, and the rule that
//! judges them.

use serde::{Deserialize, Serialize};

/// One step of a sweep: one iperf3 test at a fixed offered rate (one attempt at that rate).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Step {
    /// Target rate, bit/s.
    pub offered_bps: f64,
    /// Rate the sender achieved, bit/s.
    pub sent_bps: f64,
    /// Rate the receiver got (TCP: goodput), bit/s.
    pub received_bps: f64,
    /// Lost datagrams in percent of those sent (UDP; 0 for TCP).
    pub loss_pct: f64,
    /// Lost datagrams (UDP).
    pub lost: u64,
    /// Datagrams sent (UDP).
    pub packets: u64,
    /// Receiver jitter in milliseconds (UDP).
    pub jitter_ms: f64,
    /// Datagrams received out of order (UDP; known only when this side received, i.e. with -R,
    /// because iperf3 servers do not report it).
    pub out_of_order: Option<u64>,
    /// Sender retransmits (TCP, when the sender reports them).
    pub retransmits: Option<u64>,
    /// True for a bisection step added by `--refine` (and its repeats).
    pub refined: bool,
    /// The limits this step hit (empty: it tracked its offered rate).
    #[serde(default)]
    pub limits: Vec<Limit>,
    /// Which attempt at this offered rate it is: 1 for the first, 2 for its repeat, ... (1 in
    /// files written before repeats existed).
    #[serde(default = "one")]
    pub attempt: u32,
}

/// Loss at or above this (in percent) is the receiver-loss limit.
pub const KNEE_LOSS_PCT: f64 = 0.1;

/// The received rate tracks the offered rate while it stays within this many percent of it.
/// 5 % lets a step at a link's line rate count as tracking (the headers below the iperf3
/// payload cost 3–4 % with full-size datagrams) while any real shortfall does not.
pub const DEFAULT_TOLERANCE_PCT: f64 = 5.0;

/// Attempts that must all hit a limit before it counts: the first one and a repeat. A spoilt
/// second on a busy host is common, two in a row at the same rate much rarer (the crate README
/// has the figures); each further attempt costs a step's time at every limit.
pub const DEFAULT_CONFIRM: u32 = 2;

/// What stopped a step from tracking its offered rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// The receiver counted lost datagrams (UDP loss at or above the threshold).
    ReceiverLoss,
    /// The sender did not send the offered rate (UDP): its NIC, qdisc, socket or CPU is the
    /// limit, whatever the link could carry.
    Sender,
    /// The received rate fell short of the offered rate with neither counted loss nor a sender
    /// shortfall to explain it (TCP: always, since TCP slows its sender down whoever the
    /// bottleneck is).
    NotTracking,
}

impl Limit {
    /// The limit in words, as the text output and the report name it.
    pub fn describe(self) -> &'static str {
        match self {
            Limit::ReceiverLoss => "receiver loss",
            Limit::Sender => "sender could not keep up",
            Limit::NotTracking => "received rate stopped tracking",
        }
    }
}

/// The limits of a step in words, joined by ` + ` (`-` for none).
pub fn describe_all(limits: &[Limit]) -> String {
    if limits.is_empty() {
        return "-".into();
    }
    limits
        .iter()
        .map(|l| l.describe())
        .collect::<Vec<_>>()
        .join(" + ")
}

/// The thresholds a sweep was judged by; stored in its JSON so a reader knows the rule.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct KneeRule {
    /// Loss at or above this many percent is receiver loss (UDP).
    pub loss_pct: f64,
    /// Received (and sent) rates within this many percent of the offered rate track it.
    pub tolerance_pct: f64,
    /// Attempts at one offered rate that must all hit a limit before the limit counts (1 in
    /// files written before repeats existed: every step was measured once).
    #[serde(default = "one")]
    pub confirm: u32,
}

fn one() -> u32 {
    1
}

impl Default for KneeRule {
    fn default() -> KneeRule {
        KneeRule {
            loss_pct: KNEE_LOSS_PCT,
            tolerance_pct: DEFAULT_TOLERANCE_PCT,
            confirm: DEFAULT_CONFIRM,
        }
    }
}

impl KneeRule {
    /// The limits step `s` hit; empty when it tracked its offered rate.
    pub fn limits(&self, s: &Step, tcp: bool) -> Vec<Limit> {
        let keep = 1.0 - self.tolerance_pct / 100.0;
        let floor = s.offered_bps * keep;
        let short = s.received_bps < floor;
        let mut limits = Vec::new();
        if !tcp && s.loss_pct >= self.loss_pct {
            limits.push(Limit::ReceiverLoss);
        }
        if !tcp && short && s.sent_bps < floor {
            limits.push(Limit::Sender);
        }
        if short && limits.is_empty() {
            limits.push(Limit::NotTracking);
        }
        limits
    }

    /// The rule for people.
    pub fn describe(&self, tcp: bool) -> String {
        if tcp {
            format!("goodput within {} % of offered", self.tolerance_pct)
        } else {
            format!(
                "received within {} % of offered and loss < {} %",
                self.tolerance_pct, self.loss_pct
            )
        }
    }

    /// How a limit is confirmed, for people.
    pub fn describe_confirm(&self) -> String {
        match self.confirm {
            0 | 1 => "each rate measured once".into(),
            n => format!("a limit counts once {n} attempts at its rate hit one"),
        }
    }
}
