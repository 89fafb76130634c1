//! The text summary `linklab probe` prints at the end: every figure with its range and what
//! measured it (old beside new with a baseline), each figure a step could not make with the
//! reason, what was absent, what failed.

use std::fmt::Write as _;

use super::conditions::Conditions;
use super::document::{ProbeReport, ServiceState};
use super::figure::range_text;
use super::latency::{self as lat, ms};
use crate::units::format_rate;

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
                    range_text(low, high, &f.unit),
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
                    (Some(_), Some(l)) => range_text(l, high, &f.unit),
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
    latency(&mut s, r);
    repeat(&mut s, r);
    conditions(&mut s, r);
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

/// Latency under load: each transport's round trips per load, the throughput meanwhile, the
/// stalls, and in words whether it grew beyond the bound.
fn latency(s: &mut String, r: &ProbeReport) {
    let Some(l) = &r.latency else {
        return;
    };
    let _ = writeln!(
        s,
        "  latency under load (a probe every {} ms; ms):",
        l.interval_ms
    );
    let _ = writeln!(
        s,
        "    {:<10} {:<12} {:>8} {:>8} {:>8} {:>8} {:>9} {:>11}  throughput meanwhile",
        "", "load", "median", "p90", "p99", "max", "increase", "lost"
    );
    let opt = |v: Option<f64>| v.map_or("-".into(), ms);
    for t in &l.round_trips {
        for p in &t.per_load {
            let load = l.loads.iter().find(|x| x.name == p.load);
            let rate = |v: Option<f64>, way: &str| v.map(|b| format!("{} {way}", format_rate(b)));
            let meanwhile: Vec<String> = load
                .map(|x| {
                    [rate(x.to_device_bps, "to"), rate(x.from_device_bps, "from")]
                        .into_iter()
                        .flatten()
                        .collect()
                })
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "    {:<10} {:<12} {:>8} {:>8} {:>8} {:>8} {:>9} {:>11}  {}",
                lat::transport_words(&t.transport),
                p.load,
                opt(p.p50_ms),
                opt(p.p90_ms),
                opt(p.p99_ms),
                opt(p.max_ms),
                p.increase_ms.map_or("-".into(), |v| format!("{v:+.1}")),
                format!("{} of {}", p.lost, p.sent),
                meanwhile.join(", ")
            );
        }
        if let Some(e) = &t.error {
            let _ = writeln!(
                s,
                "    {}: stopped: {e}",
                lat::transport_words(&t.transport)
            );
        }
    }
    for x in l.loads.iter().filter(|x| x.error.is_some()) {
        let _ = writeln!(
            s,
            "    {}: no load ({})",
            x.name,
            x.error.as_deref().unwrap_or_default()
        );
    }
    let flow = l.stalls.iter().filter(|x| x.kind == "no_bytes").count();
    let slow = l.stalls.len() - flow;
    let _ = writeln!(
        s,
        "    stalls: {flow} with a flow moving no bytes, {slow} with round trips over 1 s"
    );
    if l.grows.is_empty() {
        let _ = writeln!(
            s,
            "    holds its latency under load: no median grew beyond {}× idle and +{} ms",
            l.bound.ratio, l.bound.plus_ms
        );
    }
    for g in &l.grows {
        let _ = writeln!(
            s,
            "    LATENCY GROWS UNDER LOAD: {g} (bound: {}× idle and +{} ms)",
            l.bound.ratio, l.bound.plus_ms
        );
    }
}

/// `--repeat`: each figure's lowest, median and highest over the runs.
fn repeat(s: &mut String, r: &ProbeReport) {
    let Some(rep) = &r.repeat else {
        return;
    };
    let _ = writeln!(
        s,
        "  across {} runs: {:<44} {:>14} {:>14} {:>14} {:>8}",
        rep.runs, "figure", "lowest", "median", "highest", "spread"
    );
    for f in &rep.figures {
        let missing = f.values.iter().filter(|v| v.is_none()).count();
        let _ = writeln!(
            s,
            "  {:<15}{:<44} {:>14} {:>14} {:>14} {:>8}{}",
            "",
            f.label,
            show(f.low, &f.unit),
            show(f.median, &f.unit),
            show(f.high, &f.unit),
            f.spread_pct.map_or("-".into(), |p| format!("{p:.1} %")),
            if missing > 0 {
                format!(" (absent in {missing} runs)")
            } else {
                String::new()
            }
        );
    }
}

/// The conditions in one line.
fn conditions(s: &mut String, r: &ProbeReport) {
    let Some(c) = &r.conditions else {
        return;
    };
    let _ = writeln!(s, "  conditions: {}", conditions_words(c));
}

/// The conditions in words (also the side-by-side report's run headings).
pub fn conditions_words(c: &Conditions) -> String {
    let mut parts = vec![format!("linklab {}", c.linklab_version)];
    if let Some(k) = &c.kernel {
        parts.push(format!("kernel {k}"));
    }
    if let Some(i) = &c.interface {
        let mut link = format!("via {i}");
        if let Some(m) = c.mtu {
            link += &format!(" (MTU {m}");
            link += &c
                .speed_mbit
                .map_or(")".into(), |v| format!(", {v} Mbit/s)"));
        }
        parts.push(link);
    }
    if let Some(i) = &c.iperf {
        parts.push(i.clone());
    }
    match (&c.device, &c.device_absent) {
        (Some(d), _) => {
            let mut said: Vec<String> = Vec::new();
            for (k, v) in [("board", &d.board), ("image", &d.image), ("hash", &d.hash)] {
                if let Some(v) = v {
                    said.push(format!("{k} {v}"));
                }
            }
            if let Some(w) = d.tcp_window {
                said.push(format!("window {w} B"));
            }
            if said.is_empty() {
                said.push("no board, image or hash".into());
            }
            parts.push(format!("device /stats: {}", said.join(", ")));
        }
        (None, Some(why)) => parts.push(format!("no device description ({why})")),
        _ => {}
    }
    if let Some(clock) = &c.device_clock {
        parts.push(clock.words());
    }
    parts.push(format!("options: {}", c.options.join(" ")));
    parts.join("; ")
}
