//! `linklab sweep`'s text: the table's header and rows as the steps end, the limit line, and
//! the closing summary (knee, limit, peak, collapse).

use std::fmt::Write as _;

use super::analysis;
use super::document::SweepReport;
use super::step::{describe_all, Step};
use crate::units::format_rate;

/// The table's header line.
pub fn header_line(tcp: bool) -> String {
    if tcp {
        format!(
            "{:>14} {:>14} {:>14} {:>12}  {}",
            "offered", "sent", "goodput", "retransmits", "limit"
        )
    } else {
        format!(
            "{:>14} {:>14} {:>14} {:>8} {:>17} {:>10} {:>6}  {}",
            "offered", "sent", "received", "loss%", "lost/packets", "jitter ms", "ooo", "limit"
        )
    }
}

/// One step's row.
pub fn row_line(s: &Step, tcp: bool) -> String {
    let mark = match (s.refined, s.attempt > 1) {
        (true, true) => format!(" (refine, attempt {})", s.attempt),
        (false, true) => format!(" (attempt {})", s.attempt),
        (true, false) => " (refine)".into(),
        (false, false) => String::new(),
    };
    let limit = describe_all(&s.limits);
    if tcp {
        let retr = s.retransmits.map_or("-".to_string(), |r| r.to_string());
        format!(
            "{:>14} {:>14} {:>14} {:>12}  {limit}{mark}",
            format_rate(s.offered_bps),
            format_rate(s.sent_bps),
            format_rate(s.received_bps),
            retr
        )
    } else {
        format!(
            "{:>14} {:>14} {:>14} {:>8.3} {:>17} {:>10.3} {:>6}  {limit}{mark}",
            format_rate(s.offered_bps),
            format_rate(s.sent_bps),
            format_rate(s.received_bps),
            s.loss_pct,
            format!("{}/{}", s.lost, s.packets),
            s.jitter_ms,
            s.out_of_order.map_or("-".to_string(), |n| n.to_string())
        )
    }
}

/// The limit line: what stopped the link above the knee, with that step's figures.
pub fn limit_line(r: &SweepReport) -> String {
    let Some(at) = &r.limited_at else {
        let top = r.steps.iter().map(|s| s.offered_bps).fold(0.0, f64::max);
        return format!(
            "none reached: every step up to {} tracked, the knee is at or above it",
            format_rate(top)
        );
    };
    let figures = r
        .steps
        .iter()
        .find(|s| s.offered_bps == at.offered_bps)
        .map_or(String::new(), |s| {
            let mut f = format!(
                " (sent {}, received {}",
                format_rate(s.sent_bps),
                format_rate(s.received_bps)
            );
            if !r.tcp() {
                let _ = write!(f, ", loss {:.3} %", s.loss_pct);
            }
            f + ")"
        });
    let confirmed = match (at.attempts, at.confirmed) {
        (1, true) => String::new(),
        (n, true) => format!(", in each of {n} attempts"),
        (n, false) => format!(
            ", not confirmed ({n} of {} attempts: out of time)",
            r.rule().confirm
        ),
    };
    format!(
        "{} at {} offered{figures}{confirmed}",
        describe_all(&at.limits),
        format_rate(at.offered_bps)
    )
}

/// The closing lines: knee, limit, peak, collapse.
pub fn summary(r: &SweepReport) -> String {
    let mut s = String::new();
    let rule = r.rule().describe(r.tcp());
    let confirm = r.rule().describe_confirm();
    let _ = match r.knee_bps {
        Some(k) => writeln!(
            s,
            "knee: {} (highest offered rate with {rule}; {confirm})",
            format_rate(k)
        ),
        None => writeln!(s, "knee: none (no step with {rule}; {confirm})"),
    };
    let _ = writeln!(s, "limit: {}", limit_line(r));
    if let Some(p) = r.peak {
        let _ = writeln!(
            s,
            "peak: {} received at {} offered",
            format_rate(p.received_bps),
            format_rate(p.offered_bps)
        );
    }
    let _ = match r.collapse {
        Some(c) => writeln!(
            s,
            "collapse: received falls to {} at {} offered ({:.1} % below the peak)",
            format_rate(c.received_bps),
            format_rate(c.offered_bps),
            c.drop_pct
        ),
        None => writeln!(
            s,
            "collapse: none (received stays within {} % of the peak)",
            analysis::COLLAPSE_DROP * 100.0
        ),
    };
    s
}
