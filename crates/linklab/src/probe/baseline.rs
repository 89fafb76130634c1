//! `--baseline old.json`: an earlier probe's figures beside this run's, and which are worse.
//!
//! "Worse" per figure: a throughput (TCP each way and with two streams, the UDP knee each way,
//! each HTTP download's rate) is worse when it is lower than the baseline's by more than the
//! tolerance; a round-trip median (ICMP, UDP and TCP echo, per size) when it is higher by more
//! than the tolerance *and* by more than [`RTT_SLACK_MS`] (below that it is the host's
//! scheduling noise, not the device). A figure measured in only one of the two runs is shown
//! but never counts as worse.

use std::path::Path;

use anyhow::{bail, Context};
use serde_json::Value;

use super::document::{Better, Compared, Comparison, ProbeReport, SCHEMA_VERSION};

/// A round-trip median must also be this much higher to count as worse, milliseconds.
pub const RTT_SLACK_MS: f64 = 0.2;

/// Reads a baseline: a probe JSON document of this schema version. One clear sentence for a
/// file that is missing, not JSON, not a probe document or of another version.
pub fn load(path: &Path) -> anyhow::Result<ProbeReport> {
    let name = path.display();
    let text =
        std::fs::read_to_string(path).with_context(|| format!("--baseline {name}: cannot read"))?;
    let v: Value = serde_json::from_str(&text)
        .with_context(|| format!("--baseline {name}: not valid JSON"))?;
    if v.get("kind").and_then(Value::as_str) != Some("probe") {
        bail!("--baseline {name}: not a linklab probe result (no \"kind\": \"probe\")");
    }
    match v.get("schema_version").and_then(Value::as_u64) {
        Some(n) if n == u64::from(SCHEMA_VERSION) => {}
        Some(n) => bail!(
            "--baseline {name}: schema version {n}, this linklab reads version {SCHEMA_VERSION} (probe the baseline again)"
        ),
        None => bail!("--baseline {name}: no schema_version"),
    }
    serde_json::from_value(v).with_context(|| format!("--baseline {name}: malformed probe result"))
}

/// Compares every figure of `new` with `old`.
pub fn compare(old: &ProbeReport, new: &ProbeReport, file: &str, tolerance_pct: f64) -> Comparison {
    let mut figures: Vec<Compared> = Vec::new();
    for f in &new.figures {
        let before = old.figure(&f.id).map(|o| o.value);
        figures.push(judge(
            &f.id,
            &f.label,
            &f.unit,
            f.better,
            before,
            Some(f.value),
            tolerance_pct,
        ));
    }
    for o in old.figures.iter().filter(|o| new.figure(&o.id).is_none()) {
        figures.push(judge(
            &o.id,
            &o.label,
            &o.unit,
            o.better,
            Some(o.value),
            None,
            tolerance_pct,
        ));
    }
    Comparison {
        file: file.into(),
        baseline_started_unix_s: old.started_unix_s,
        tolerance_pct,
        rtt_slack_ms: RTT_SLACK_MS,
        figures,
    }
}

/// One figure old beside new, and whether it got worse.
fn judge(
    id: &str,
    label: &str,
    unit: &str,
    better: Better,
    old: Option<f64>,
    new: Option<f64>,
    tolerance_pct: f64,
) -> Compared {
    let change_pct = match (old, new) {
        (Some(o), Some(n)) if o != 0.0 => Some((n - o) / o * 100.0),
        _ => None,
    };
    let worse = match (old, new) {
        (Some(o), Some(n)) => match better {
            Better::Higher => n < o * (1.0 - tolerance_pct / 100.0),
            Better::Lower => {
                let slack = if unit == "us" {
                    RTT_SLACK_MS * 1e3
                } else {
                    0.0
                };
                n > o * (1.0 + tolerance_pct / 100.0) && n - o > slack
            }
        },
        _ => false,
    };
    Compared {
        id: id.into(),
        label: label.into(),
        unit: unit.into(),
        better,
        old,
        new,
        change_pct,
        worse,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(better: Better, unit: &str, old: f64, new: f64) -> bool {
        judge("x", "x", unit, better, Some(old), Some(new), 10.0).worse
    }

    #[test]
    fn worse_is_lower_throughput_or_higher_round_trips() {
        assert!(c(Better::Higher, "bit/s", 100e6, 89e6));
        assert!(!c(Better::Higher, "bit/s", 100e6, 91e6));
        assert!(!c(Better::Higher, "bit/s", 100e6, 300e6));
        // Round trips: 10 % and 0.2 ms.
        assert!(c(Better::Lower, "us", 1000.0, 1300.0));
        assert!(!c(Better::Lower, "us", 1000.0, 1090.0));
        assert!(!c(Better::Lower, "us", 50.0, 200.0), "within the slack");
        assert!(!c(Better::Lower, "us", 1000.0, 500.0));
        // Only in one run: shown, not worse.
        let only_old = judge("x", "x", "bit/s", Better::Higher, Some(1.0), None, 10.0);
        assert!(!only_old.worse && only_old.change_pct.is_none());
    }
}
