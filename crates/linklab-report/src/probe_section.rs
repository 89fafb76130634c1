//! The report of a `linklab probe` run: a summary first — each way's throughput, the knees,
//! the round-trip percentiles, what was absent or failed, and with a baseline the old figure
//! beside the new one, each with the range its samples (a knee: its bracket) spanned — then
//! the charts: throughput and round-trip medians (old beside new, every sample drawn as a dot),
//! and the sweep, rtt, HTTP and TCP sections of what was measured.

use std::fmt::Write as _;

use super::svg::{esc, num, Axis, Chart, Mark, Series};
use super::sweep_section::fact;
use super::{probe_latency, probe_tables, rtt_section, sweep_section};
use linklab_results::probe::{
    range_text, Better, Compared, ProbeReport, ServiceState, StepState, Unmeasured,
};
use linklab_results::sweep::describe_all;
use linklab_results::units::format_rate;

/// A figure's value for people.
fn show(v: f64, unit: &str) -> String {
    match unit {
        // A knee of 0: no offered rate tracked.
        "bit/s" if v == 0.0 => "none".into(),
        "bit/s" => format_rate(v),
        "us" => format!("{} µs", num(v)),
        _ => format!("{} {unit}", num(v)),
    }
}

/// A range for people (`–` for a figure without one: a version 1 document).
fn show_range(low: Option<f64>, high: Option<f64>, unit: &str, spread: bool) -> String {
    match low.filter(|_| spread) {
        Some(low) => range_text(low, high, unit),
        None => "–".into(),
    }
}

/// Every figure, old beside new: the baseline comparison, or this run's figures alone.
fn rows(r: &ProbeReport) -> Vec<Compared> {
    match &r.baseline {
        Some(c) => c.figures.clone(),
        None => r
            .figures
            .iter()
            .map(|f| Compared {
                id: f.id.clone(),
                label: f.label.clone(),
                unit: f.unit.clone(),
                better: f.better,
                old: None,
                new: Some(f.value),
                old_low: None,
                old_high: None,
                new_low: f.spread.map(|_| f.range().0),
                new_high: f.spread.and_then(|_| f.range().1),
                change_pct: None,
                worse: false,
                missing: None,
            })
            .collect(),
    }
}

/// A short name for a chart's axis: `tcp.to_device.p2` → `TCP → ×2`, iperf 2's marked.
fn short(id: &str) -> String {
    if let Some(rest) = id.strip_prefix("iperf2.") {
        return format!("{} (iperf 2)", short(rest));
    }
    let arrow = |s: &str| s.replace("to_device", "→").replace("from_device", "←");
    if let Some(rest) = id.strip_prefix("tcp.") {
        return format!("TCP {}", arrow(rest).replace(".p", " ×"));
    }
    if let Some(rest) = id.strip_prefix("udp.knee.") {
        return format!("knee {}", arrow(rest));
    }
    if let Some(rest) = id.strip_prefix("http.") {
        return rest.to_string();
    }
    id.replace(".rtt_p50.", " ")
        .replace("echo_udp", "UDP")
        .replace("echo_tcp", "TCP")
        .replace("icmp", "ICMP")
}

/// Renders one probe document as its sections.
pub fn render(r: &ProbeReport, source: &str, index: usize) -> String {
    let mut s = String::new();
    let rows = rows(r);
    let _ = write!(
        s,
        r#"<section class="card probe"><h2>Probe of {} ({})</h2><p class="source">{} · budget {} s · took {:.1} s · linklab {} · schema {}</p>"#,
        esc(&r.host),
        esc(&r.address),
        esc(source),
        num(r.budget.value),
        r.wall.value,
        esc(&r.linklab_version),
        r.schema_version
    );

    facts(&mut s, r);
    summary_table(&mut s, r, &rows);
    limits_and_round_trips(&mut s, r);
    services_and_steps(&mut s, r);
    median_charts(&mut s, r, &rows, index);

    // HTTP and TCP, then latency under load, the conditions, the runs of --repeat.
    probe_tables::http(&mut s, r);
    probe_tables::tcp(&mut s, r);
    probe_latency::render(&mut s, r, index);
    s.push_str("</section>");

    // What was measured, in the subcommands' own sections.
    // Chart ids apart from those of other inputs on the same page.
    let base = 1000 + index * 10;
    for (k, (_, sw)) in r.sweeps().into_iter().enumerate() {
        if let Some(sw) = sw {
            s.push_str(&sweep_section::render(sw, None, source, base + 1 + k));
        }
    }
    for (k, (_, rt)) in r.round_trips().into_iter().enumerate() {
        if let Some(rt) = rt {
            s.push_str(&rtt_section::render(rt, source, base + 3 + k));
        }
    }
    s
}

/// The key facts (each way's TCP and knee, the services, the baseline's verdict) and what failed.
fn facts(s: &mut String, r: &ProbeReport) {
    // Key facts: each way's TCP and knee, the lowest ICMP median, the services.
    s.push_str(r#"<div class="facts">"#);
    for f in &r.figures {
        let id = f.id.strip_prefix("iperf2.").unwrap_or(&f.id);
        if id.starts_with("tcp.") && !id.contains(".p") || id.starts_with("udp.knee.") {
            let (low, high) = f.range();
            let what = match f.spread {
                Some(_) => format!(
                    "{} ({})",
                    f.label,
                    show_range(Some(low), high, &f.unit, true)
                ),
                None => f.label.clone(),
            };
            fact(s, "", &show(f.value, &f.unit), &what);
        }
    }
    let present = r
        .services
        .iter()
        .filter(|x| x.state == ServiceState::Present)
        .count();
    fact(
        s,
        if r.failures.is_empty() { "good" } else { "bad" },
        &format!("{present} of {}", r.services.len()),
        "services answered",
    );
    if let Some(c) = &r.baseline {
        let worse = c.figures.iter().filter(|f| f.worse).count();
        fact(
            s,
            if worse == 0 { "good" } else { "bad" },
            &format!("{worse} worse"),
            &format!(
                "than the baseline (apart by more than {} % and both ranges' widths)",
                num(c.tolerance_pct)
            ),
        );
    }
    s.push_str("</div>");

    for f in &r.failures {
        let _ = write!(
            s,
            r#"<p class="note failure"><b>failed:</b> {}</p>"#,
            esc(f)
        );
    }
}

/// The summary table: every figure (old beside new with a baseline), what could not be measured, how ranges are read.
fn summary_table(s: &mut String, r: &ProbeReport, rows: &[Compared]) {
    // The summary table.
    s.push_str(r#"<h3>Summary</h3><div class="tablewrap"><table class="summary"><tr><th class="l">figure</th>"#);
    if r.baseline.is_some() {
        s.push_str("<th>baseline</th><th>its range</th><th>this run</th><th>its range</th><th>change</th><th class=\"l\">verdict</th>");
    } else {
        s.push_str("<th>this run</th><th>range</th><th class=\"l\">from</th>");
    }
    s.push_str("</tr>");
    // Version 1 baselines carry no ranges: their figures are one measurement each.
    let old_spread = r
        .baseline
        .as_ref()
        .is_some_and(|c| c.baseline_schema_version > 1);
    for row in rows {
        let opt = |v: Option<f64>| v.map_or("–".into(), |v| show(v, &row.unit));
        let _ = write!(
            s,
            r#"<tr data-figure="{}"><td class="l">{}</td>"#,
            esc(&row.id),
            esc(&row.label)
        );
        if r.baseline.is_some() {
            let missing = row.missing.as_ref().map(|m| format!("worse: {m}"));
            let verdict = if let Some(m) = &missing {
                m.as_str()
            } else if row.worse {
                "worse"
            } else if row.old.is_none() {
                "new"
            } else if row.new.is_none() {
                "not measured"
            } else {
                "ok"
            };
            let cls = if row.worse { "warn" } else { "ok" };
            let _ = write!(
                s,
                r#"<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class="{cls}">{}</td><td class="l {cls}">{verdict}</td>"#,
                opt(row.old),
                show_range(
                    row.old_low,
                    row.old_high,
                    &row.unit,
                    old_spread && row.old.is_some()
                ),
                match &row.missing {
                    Some(m) => m.split(':').next().unwrap_or("–").to_string(),
                    None => opt(row.new),
                },
                show_range(row.new_low, row.new_high, &row.unit, row.new.is_some()),
                row.change_pct.map_or("–".into(), |p| format!("{p:+.1} %"))
            );
        } else {
            let from = r.figure(&row.id).map_or(String::new(), |f| {
                let via = f.via.as_ref().map_or(String::new(), |v| format!(" · {v}"));
                f.spread_words() + &via
            });
            let _ = write!(
                s,
                r#"<td>{}</td><td>{}</td><td class="l">{}</td>"#,
                opt(row.new),
                show_range(row.new_low, row.new_high, &row.unit, true),
                esc(&from)
            );
        }
        s.push_str("</tr>");
    }
    // What a step could not measure: a plain line each, never a zero.
    for m in r
        .not_measured
        .iter()
        .filter(|m| !rows.iter().any(|x| x.id == m.id))
    {
        let cls = if m.state == Unmeasured::Failed {
            "warn"
        } else {
            "sender"
        };
        // The reason spans the columns after the state: range and from, or with a baseline
        // this run's range, change and verdict.
        let span = if r.baseline.is_some() { 3 } else { 2 };
        let _ = write!(
            s,
            r#"<tr data-figure="{}" data-missing="{}"><td class="l">{}</td>{}<td class="{cls}">{}</td><td class="l" colspan="{span}">{}</td></tr>"#,
            esc(&m.id),
            m.state.word(),
            esc(&m.label),
            if r.baseline.is_some() {
                "<td>–</td><td>–</td>"
            } else {
                ""
            },
            m.state.word(),
            esc(&m.reason)
        );
    }
    s.push_str("</table></div>");
    if let Some(c) = &r.baseline {
        let _ = write!(
            s,
            r#"<p class="note">Baseline {} (measured {}{}). Worse: the two runs' ranges lie apart, the bad way, by a gap larger than the tolerance ({} % of the baseline's figure) and larger than either range is wide — the runs differ by more than each varied within itself; round trips also by more than {} ms.</p>"#,
            esc(&c.file),
            linklab_results::time::utc_time(c.baseline_started_unix_s),
            if c.baseline_schema_version > 1 {
                String::new()
            } else {
                format!(
                    ", schema version {}: one measurement per figure",
                    c.baseline_schema_version
                )
            },
            num(c.tolerance_pct),
            num(c.rtt_slack_ms)
        );
    } else {
        s.push_str(r#"<p class="note">Range: TCP (one test per round) and HTTP (batches of back-to-back downloads): the median of the samples between the lowest and highest; round trips: the median of every probe between the first and third quartiles; a UDP knee: from the lowest rate where the sweep saw the link fail up to the most it delivered above the limit a repeat confirmed (none: no limit confirmed).</p>"#);
    }
}

/// The knee and limit each way, the round-trip percentiles per size.
fn limits_and_round_trips(s: &mut String, r: &ProbeReport) {
    // Limits and round-trip percentiles.
    let mut limits = String::new();
    for (dir, sw) in r.sweeps() {
        if let Some(sw) = sw {
            let what = match &sw.limited_at {
                Some(at) => format!(
                    "{} at {} offered ({})",
                    describe_all(&at.limits),
                    format_rate(at.offered_bps),
                    match (at.attempts, at.confirmed) {
                        (1, true) => "one attempt".to_string(),
                        (n, true) => format!("confirmed: {n} attempts"),
                        (n, false) => format!("not confirmed: {n} attempt(s), out of time"),
                    }
                ),
                None => "none reached (the knee is a lower bound)".into(),
            };
            let repeats = sw.steps.iter().filter(|x| x.attempt > 1).count();
            let _ = write!(
                limits,
                r#"<tr><td class="l">UDP {}{}</td><td>{}</td><td class="l">{}</td><td>{} ({repeats})</td></tr>"#,
                if dir == "to_device" {
                    "to the device"
                } else {
                    "from the device"
                },
                if sw.is_iperf2() { " (iperf 2)" } else { "" },
                sw.knee_bps.map_or("none".into(), format_rate),
                esc(&what),
                sw.steps.len()
            );
        }
    }
    s.push_str(r#"<div class="tables">"#);
    if !limits.is_empty() {
        let _ = write!(
            s,
            r#"<div><h3>Knee and limit each way</h3><table><tr><th class="l">sweep</th><th>knee</th><th class="l">limit above the knee</th><th>steps (repeats)</th></tr>{limits}</table></div>"#
        );
    }
    let mut rtts = String::new();
    for (kind, rt) in r.round_trips() {
        let Some(rt) = rt else { continue };
        for x in &rt.sizes {
            let d = &x.rtt;
            let _ = write!(
                rtts,
                r#"<tr><td class="l">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class="{}">{:.2}</td></tr>"#,
                match kind {
                    "icmp" => "ICMP echo",
                    "echo_udp" => "UDP echo",
                    _ => "TCP echo",
                },
                x.size,
                num(d.p50_us),
                num(d.p90_us),
                num(d.p99_us),
                if x.lost > 0 { "warn" } else { "ok" },
                x.loss_pct
            );
        }
    }
    if !rtts.is_empty() {
        let _ = write!(
            s,
            r#"<div><h3>Round trips (µs)</h3><table><tr><th class="l">over</th><th>size (B)</th><th>p50</th><th>p90</th><th>p99</th><th>loss %</th></tr>{rtts}</table></div>"#
        );
    }
    s.push_str("</div>");
}

/// What discovery found and how each step ended.
fn services_and_steps(s: &mut String, r: &ProbeReport) {
    // Services and steps.
    s.push_str(r#"<div class="tables"><div><h3>Services</h3><table><tr><th class="l">service</th><th>port</th><th class="l">found</th><th class="l">detail</th></tr>"#);
    for x in &r.services {
        let (word, cls) = match x.state {
            ServiceState::Present => ("present", "ok"),
            ServiceState::Absent => ("absent (skipped)", "sender"),
            ServiceState::Failed => ("failed", "warn"),
        };
        let _ = write!(
            s,
            r#"<tr data-service="{}" data-state="{}"><td class="l">{}</td><td>{}</td><td class="l {cls}">{word}</td><td class="l">{}</td></tr>"#,
            esc(&x.name),
            word.split(' ').next().unwrap_or(word),
            esc(&x.name),
            x.port.map_or("–".into(), |p| p.to_string()),
            esc(&x.detail)
        );
    }
    s.push_str(r#"</table></div><div><h3>Steps</h3><table><tr><th class="l">step</th><th class="l">state</th><th>time (s)</th><th class="l">detail</th></tr>"#);
    for x in &r.steps {
        let cls = match x.state {
            StepState::Done => "ok",
            StepState::Skipped => "",
            StepState::Failed => "warn",
        };
        let _ = write!(
            s,
            r#"<tr><td class="l">{}</td><td class="l {cls}">{}</td><td>{:.1}</td><td class="l">{}</td></tr>"#,
            esc(&x.name),
            format!("{:?}", x.state).to_lowercase(),
            x.wall.value,
            esc(&x.detail)
        );
    }
    s.push_str("</table></div></div>");
}

/// Old beside new: the throughput and round-trip medians, every sample a dot.
fn median_charts(s: &mut String, r: &ProbeReport, rows: &[Compared], index: usize) {
    // Old beside new: throughput and round-trip medians.
    s.push_str(r#"<div class="charts">"#);
    for (unit, title, axis, chart) in [
        ("bit/s", "Throughput", "Mbit/s", "throughput"),
        ("us", "Round-trip medians", "µs", "rtt"),
    ] {
        // Latency under load has its own charts (its round trips span decades).
        let picked: Vec<&Compared> = rows
            .iter()
            .filter(|x| x.unit == unit && !x.id.starts_with("latency."))
            .collect();
        if picked.is_empty() {
            continue;
        }
        let scale = if unit == "bit/s" { 1e-6 } else { 1.0 };
        let names: Vec<String> = picked.iter().map(|x| short(&x.id)).collect();
        let values = picked
            .iter()
            .flat_map(|x| [x.old, x.new])
            .flatten()
            .map(|v| v * scale);
        let width = (120.0 + 90.0 * names.len() as f64).clamp(533.0, 1080.0);
        let mut c = Chart::new(
            &format!("probe-{index}-{chart}"),
            title,
            width,
            340.0,
            Axis::categories("", &names),
            Axis::from_zero(axis, values, 0.001),
        );
        c.subtitle = match (&r.baseline, picked.first().map(|x| x.better)) {
            (Some(_), Some(Better::Higher)) => "baseline beside this run; higher is better".into(),
            (Some(_), _) => "baseline beside this run; lower is better".into(),
            (None, Some(Better::Higher)) => "higher is better".into(),
            (None, _) => "lower is better".into(),
        };
        let bars = |pick: &dyn Fn(&Compared) -> Option<f64>, dx: f64| -> Vec<(f64, f64)> {
            picked
                .iter()
                .enumerate()
                .filter_map(|(i, x)| pick(x).map(|v| ((i + 1) as f64 + dx, v * scale)))
                .collect()
        };
        // Every sample of this run as a dot (a round trip: its quartiles; a knee: its range).
        let dx = if r.baseline.is_some() { 0.19 } else { 0.0 };
        let dots: Vec<(f64, f64)> = picked
            .iter()
            .enumerate()
            .filter_map(|(i, x)| r.figure(&x.id).map(|f| (i, f)))
            .flat_map(|(i, f)| {
                let values = if f.samples.is_empty() {
                    let (low, high) = f.range();
                    [Some(low), high].into_iter().flatten().collect()
                } else {
                    f.samples.clone()
                };
                values
                    .into_iter()
                    .map(move |v| ((i + 1) as f64 + dx, v * scale))
            })
            .collect();
        if r.baseline.is_some() {
            c.series.push(Series {
                name: "baseline".into(),
                color: "#9ca3af",
                mark: Mark::Bars { width: 0.36 },
                right: false,
                points: bars(&|x: &Compared| x.old, -0.19),
            });
            c.series.push(Series {
                name: "this run".into(),
                color: "#2563eb",
                mark: Mark::Bars { width: 0.36 },
                right: false,
                points: bars(&|x: &Compared| x.new, 0.19),
            });
            let worse: Vec<(f64, f64)> = picked
                .iter()
                .enumerate()
                .filter(|(_, x)| x.worse)
                .filter_map(|(i, x)| x.new.map(|v| ((i + 1) as f64 + 0.19, v * scale)))
                .collect();
            if !worse.is_empty() {
                c.series.push(Series {
                    name: "worse".into(),
                    color: "#dc2626",
                    mark: Mark::Points { r: 6.0 },
                    right: false,
                    points: worse,
                });
            }
        } else {
            c.series.push(Series {
                name: "this run".into(),
                color: "#2563eb",
                mark: Mark::Bars { width: 0.6 },
                right: false,
                points: bars(&|x: &Compared| x.new, 0.0),
            });
        }
        if !dots.is_empty() {
            c.series.push(Series {
                name: "samples (round trips: quartiles; knee: range)".into(),
                color: "#111827",
                mark: Mark::Points { r: 2.5 },
                right: false,
                points: dots,
            });
        }
        s.push_str(&c.render());
    }
    s.push_str("</div>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names() {
        assert_eq!(short("tcp.to_device"), "TCP →");
        assert_eq!(short("tcp.from_device.p2"), "TCP ← ×2");
        assert_eq!(short("udp.knee.to_device"), "knee →");
        assert_eq!(short("http./1MB.txt"), "/1MB.txt");
        assert_eq!(short("echo_udp.rtt_p50.64B"), "UDP 64B");
        assert_eq!(short("iperf2.tcp.from_device"), "TCP ← (iperf 2)");
    }
}
