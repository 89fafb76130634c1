//! The text summary `linklab probe` prints at the end: every figure with its range and what
//! measured it (old beside new with a baseline), each figure a step could not make with the
//! reason, what was absent, what failed.

use std::fmt::Write as _;

use super::document::{self, ProbeReport, ServiceState};
use crate::values::format_rate;

/// A figure's value for people (a knee of 0: no rate tracked).
fn show(v: f64, unit: &str) -> String {
    match unit {
        "bit/s" if v == 0.0 => "none".into(),
        "bit/s" => format_rate(v),
        "us" => format!("{v:.1} µs"),
        _ => format!("{v} {unit}"),
    }
}

/// The text summary: every figure with its range (old beside new with a baseline), what was
/// absent, failures.
pub fn summary(r: &ProbeReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "\nsummary of {} ({}):", r.host, r.address);
    match &r.baseline {
        None => {
            let _ = writeln!(
                s,
                "  {:<44} {:>14}  {:<26} from",
                "figure", "this run", "range"
            );
            for f in &r.figures {
                let (low, high) = f.range();
                let via = f.via.as_ref().map_or(String::new(), |v| format!(" · {v}"));
                let _ = writeln!(
                    s,
                    "  {:<44} {:>14}  {:<26} {}{via}",
                    f.label,
                    show(f.value, &f.unit),
                    document::range_text(low, high, &f.unit),
                    f.spread_words()
                );
            }
            for m in &r.not_measured {
                let _ = writeln!(
                    s,
                    "  {:<44} {:>14}  {} (no figure)",
                    m.label,
                    m.state.word(),
                    m.reason
                );
            }
        }
        Some(c) => {
            let _ = writeln!(
                s,
                "  {:<44} {:>14} {:>14} {:>9}  {:<22} {:<22} (baseline {}, tolerance {} %; worse: ranges apart by more than it and their widths)",
                "figure", "baseline", "this run", "change", "baseline range", "this run's range", c.file, c.tolerance_pct
            );
            for f in &c.figures {
                let opt = |v: Option<f64>| v.map_or("-".into(), |v| show(v, &f.unit));
                let range = |v: Option<f64>, low: Option<f64>, high: Option<f64>| match (v, low) {
                    (Some(_), Some(l)) => document::range_text(l, high, &f.unit),
                    _ => "-".into(),
                };
                let new = match (&f.missing, f.new) {
                    (Some(m), None) => m.split(':').next().unwrap_or("-").to_string(),
                    _ => opt(f.new),
                };
                let _ = writeln!(
                    s,
                    "  {:<44} {:>14} {:>14} {:>9}  {:<22} {:<22} {}{}",
                    f.label,
                    opt(f.old),
                    new,
                    f.change_pct.map_or("-".into(), |p| format!("{p:+.1} %")),
                    range(f.old, f.old_low, f.old_high),
                    range(f.new, f.new_low, f.new_high),
                    if f.worse { "WORSE" } else { "" },
                    f.missing
                        .as_ref()
                        .map_or(String::new(), |m| format!(" ({m})"))
                );
            }
            for m in r
                .not_measured
                .iter()
                .filter(|m| !c.figures.iter().any(|f| f.id == m.id))
            {
                let _ = writeln!(
                    s,
                    "  {:<44} {:>14} {:>14}  {} (no figure)",
                    m.label,
                    "-",
                    m.state.word(),
                    m.reason
                );
            }
            if c.baseline_schema_version < 2 {
                let _ = writeln!(
                    s,
                    "  (the baseline is a schema version {} document: each of its figures is one measurement)",
                    c.baseline_schema_version
                );
            }
        }
    }
    // An iperf3 server absent where iperf 2 measured skipped nothing.
    let iperf2 = r
        .services
        .iter()
        .any(|x| x.name == "iperf2" && x.state == ServiceState::Present);
    let absent: Vec<String> = r
        .services
        .iter()
        .filter(|x| x.state == ServiceState::Absent)
        .filter(|x| !(iperf2 && x.name == "iperf3"))
        .map(|x| x.name.clone())
        .collect();
    if !absent.is_empty() {
        let _ = writeln!(s, "  absent (skipped): {}", absent.join(", "));
    }
    for f in &r.failures {
        let _ = writeln!(s, "  failed: {f}");
    }
    s
}
