//! The report of a `linklab probe` run: a summary first — each way's throughput, the knees,
//! the round-trip percentiles, what was absent or failed, and with a baseline the old figure
//! beside the new one, each with the range its samples (a knee: its bracket) spanned — then
//! the charts: throughput and round-trip medians (old beside new, every sample drawn as a dot),
//! and the sweep, rtt, HTTP and TCP sections of what was measured.

use maud::{html, Markup};

use super::layout::fact;
use super::svg::{num, Axis, Chart, Mark, Series};
use super::{probe_latency, probe_tables, rtt_section, sweep_section};
use linklab_results::probe::baseline::verdict;
use linklab_results::probe::{
    range_text, Better, Compared, Comparison, ProbeReport, ServiceState, StepState, Unmeasured,
};
use linklab_results::sweep::{describe_all, SweepReport};
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
pub fn render(r: &ProbeReport, source: &str, index: usize) -> Markup {
    let rows = rows(r);
    // Chart ids apart from those of other inputs on the same page.
    let base = 1000 + index * 10;
    html! {
        section class="card probe" {
            h2 { "Probe of " (r.host) " (" (r.address) ")" }
            p class="source" {
                (source) " · budget " (num(r.budget.value)) " s · took "
                (format_args!("{:.1}", r.wall.value)) " s · linklab " (r.linklab_version)
                " · schema " (r.schema_version)
            }
            (facts(r))
            (summary_table(r, &rows))
            (limits_and_round_trips(r))
            (services_and_steps(r))
            (median_charts(r, &rows, index))
            // HTTP and TCP, then latency under load, the conditions, the runs of --repeat.
            (probe_tables::http(r))
            (probe_tables::tcp(r))
            (probe_latency::render(r, index))
        }
        // What was measured, in the subcommands' own sections.
        @for (k, (_, sw)) in r.sweeps().into_iter().enumerate() {
            @if let Some(sw) = sw {
                (sweep_section::render(sw, None, source, base + 1 + k))
            }
        }
        @for (k, (_, rt)) in r.round_trips().into_iter().enumerate() {
            @if let Some(rt) = rt {
                (rtt_section::render(rt, source, base + 3 + k))
            }
        }
    }
}

/// The key facts (each way's TCP and knee, the services, the baseline's verdict) and what failed.
fn facts(r: &ProbeReport) -> Markup {
    let present = r
        .services
        .iter()
        .filter(|x| x.state == ServiceState::Present)
        .count();
    html! {
        div class="facts" {
            // Each way's TCP and knee.
            @for f in r.figures.iter().filter(|f| {
                let id = f.id.strip_prefix("iperf2.").unwrap_or(&f.id);
                id.starts_with("tcp.") && !id.contains(".p") || id.starts_with("udp.knee.")
            }) {
                @let what = match f.spread {
                    Some(_) => {
                        let (low, high) = f.range();
                        format!("{} ({})", f.label, show_range(Some(low), high, &f.unit, true))
                    }
                    None => f.label.clone(),
                };
                (fact("", &show(f.value, &f.unit), &what))
            }
            (fact(
                if r.failures.is_empty() { "good" } else { "bad" },
                &format!("{present} of {}", r.services.len()),
                "services answered",
            ))
            @if let Some(c) = &r.baseline {
                @let worse = c.figures.iter().filter(|f| verdict(f).is_worse()).count();
                (fact(
                    if worse == 0 { "good" } else { "bad" },
                    &format!("{worse} worse"),
                    &format!(
                        "than the baseline (apart by more than {} % and both ranges' widths)",
                        num(c.tolerance_pct)
                    ),
                ))
            }
        }
        @for f in &r.failures {
            p class="note failure" { b { "failed:" } " " (f) }
        }
    }
}

/// The summary table: every figure (old beside new with a baseline), what could not be
/// measured, how ranges are read. Each figure's verdict is the comparison's
/// ([`baseline::verdict`]); this only shows it.
fn summary_table(r: &ProbeReport, rows: &[Compared]) -> Markup {
    // What a step could not measure: a plain line each, never a zero.
    let unmeasured = r
        .not_measured
        .iter()
        .filter(|m| !rows.iter().any(|x| x.id == m.id));
    html! {
        h3 { "Summary" }
        div class="tablewrap" {
            table class="summary" {
                tr {
                    th class="l" { "figure" }
                    @if r.baseline.is_some() {
                        th { "baseline" } th { "its range" } th { "this run" } th { "its range" }
                        th { "change" } th class="l" { "verdict" }
                    } @else {
                        th { "this run" } th { "range" } th class="l" { "from" }
                    }
                }
                @for row in rows {
                    tr data-figure=(row.id) {
                        td class="l" { (row.label) }
                        @match &r.baseline {
                            Some(c) => (compared_cells(c, row)),
                            None => (measured_cells(r, row)),
                        }
                    }
                }
                @for m in unmeasured {
                    @let cls = if m.state == Unmeasured::Failed { "warn" } else { "sender" };
                    tr data-figure=(m.id) data-missing=(m.state.word()) {
                        td class="l" { (m.label) }
                        @if r.baseline.is_some() {
                            td { "–" } td { "–" }
                        }
                        td class=(cls) { (m.state.word()) }
                        // The reason spans the columns after the state: range and from, or
                        // with a baseline this run's range, change and verdict.
                        td class="l" colspan=(if r.baseline.is_some() { 3 } else { 2 }) { (m.reason) }
                    }
                }
            }
        }
        @match &r.baseline {
            Some(c) => p class="note" {
                "Baseline " (c.file) " (measured "
                (linklab_results::time::utc_time(c.baseline_started_unix_s))
                @if c.baseline_schema_version <= 1 {
                    ", schema version " (c.baseline_schema_version) ": one measurement per figure"
                }
                "). Worse: the two runs' ranges lie apart, the bad way, by a gap larger than the tolerance ("
                (num(c.tolerance_pct))
                " % of the baseline's figure) and larger than either range is wide — the runs differ by more than each varied within itself; round trips also by more than "
                (num(c.rtt_slack_ms)) " ms."
            },
            None => p class="note" {
                "Range: TCP (one test per round) and HTTP (batches of back-to-back downloads): the median of the samples between the lowest and highest; round trips: the median of every probe between the first and third quartiles; a UDP knee: from the lowest rate where the sweep saw the link fail up to the most it delivered above the limit a repeat confirmed (none: no limit confirmed)."
            },
        }
    }
}

/// A figure's cells beside the baseline: the baseline and its range, this run and its range
/// (or the state of a figure this run lost), the change and the verdict.
fn compared_cells(c: &Comparison, row: &Compared) -> Markup {
    let opt = |v: Option<f64>| v.map_or("–".into(), |v| show(v, &row.unit));
    // Version 1 baselines carry no ranges: their figures are one measurement each.
    let old_spread = c.baseline_schema_version > 1 && row.old.is_some();
    let verdict = verdict(row);
    let cls = if verdict.is_worse() { "warn" } else { "ok" };
    let this_run = match &row.missing {
        Some(m) => m.split(':').next().unwrap_or("–").to_string(),
        None => opt(row.new),
    };
    html! {
        td { (opt(row.old)) }
        td { (show_range(row.old_low, row.old_high, &row.unit, old_spread)) }
        td { (this_run) }
        td { (show_range(row.new_low, row.new_high, &row.unit, row.new.is_some())) }
        td class=(cls) { (row.change_pct.map_or("–".into(), |p| format!("{p:+.1} %"))) }
        td class={ "l " (cls) } { (verdict.words()) }
    }
}

/// A figure's cells without a baseline: its value, its range and what measured it.
fn measured_cells(r: &ProbeReport, row: &Compared) -> Markup {
    let from = r.figure(&row.id).map_or(String::new(), |f| {
        let via = f.via.as_ref().map_or(String::new(), |v| format!(" · {v}"));
        f.spread_words() + &via
    });
    html! {
        td { (row.new.map_or("–".into(), |v| show(v, &row.unit))) }
        td { (show_range(row.new_low, row.new_high, &row.unit, true)) }
        td class="l" { (from) }
    }
}

/// The knee and limit each way, the round-trip percentiles per size.
fn limits_and_round_trips(r: &ProbeReport) -> Markup {
    let sweeps: Vec<_> = r
        .sweeps()
        .into_iter()
        .filter_map(|(dir, sw)| sw.map(|sw| (dir, sw)))
        .collect();
    let round_trips: Vec<_> = r
        .round_trips()
        .into_iter()
        .filter_map(|(kind, rt)| rt.map(|rt| (kind, rt)))
        .flat_map(|(kind, rt)| rt.sizes.iter().map(move |x| (kind, x)))
        .collect();
    html! {
        div class="tables" {
            @if !sweeps.is_empty() {
                div {
                    h3 { "Knee and limit each way" }
                    table {
                        tr {
                            th class="l" { "sweep" } th { "knee" }
                            th class="l" { "limit above the knee" } th { "steps (repeats)" }
                        }
                        @for (dir, sw) in &sweeps {
                            (limit_row(dir, sw))
                        }
                    }
                }
            }
            @if !round_trips.is_empty() {
                div {
                    h3 { "Round trips (µs)" }
                    table {
                        tr {
                            th class="l" { "over" } th { "size (B)" } th { "p50" } th { "p90" }
                            th { "p99" } th { "loss %" }
                        }
                        @for (kind, x) in &round_trips {
                            tr {
                                td class="l" {
                                    (match *kind {
                                        "icmp" => "ICMP echo",
                                        "echo_udp" => "UDP echo",
                                        _ => "TCP echo",
                                    })
                                }
                                td { (x.size) }
                                td { (num(x.rtt.p50_us)) }
                                td { (num(x.rtt.p90_us)) }
                                td { (num(x.rtt.p99_us)) }
                                td class=(if x.lost > 0 { "warn" } else { "ok" }) {
                                    (format_args!("{:.2}", x.loss_pct))
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// One sweep's row: its knee, the limit above it and how sure that is, its steps.
fn limit_row(dir: &str, sw: &SweepReport) -> Markup {
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
    html! {
        tr {
            td class="l" {
                (if dir == "to_device" { "UDP to the device" } else { "UDP from the device" })
                @if sw.is_iperf2() { " (iperf 2)" }
            }
            td { (sw.knee_bps.map_or("none".into(), format_rate)) }
            td class="l" { (what) }
            td { (sw.steps.len()) " (" (repeats) ")" }
        }
    }
}

/// What discovery found and how each step ended.
fn services_and_steps(r: &ProbeReport) -> Markup {
    html! {
        div class="tables" {
            div {
                h3 { "Services" }
                table {
                    tr {
                        th class="l" { "service" } th { "port" } th class="l" { "found" }
                        th class="l" { "detail" }
                    }
                    @for x in &r.services {
                        @let (word, cls) = match x.state {
                            ServiceState::Present => ("present", "ok"),
                            ServiceState::Absent => ("absent (skipped)", "sender"),
                            ServiceState::Failed => ("failed", "warn"),
                        };
                        tr data-service=(x.name) data-state=(word.split(' ').next().unwrap_or(word)) {
                            td class="l" { (x.name) }
                            td { (x.port.map_or("–".into(), |p| p.to_string())) }
                            td class={ "l " (cls) } { (word) }
                            td class="l" { (x.detail) }
                        }
                    }
                }
            }
            div {
                h3 { "Steps" }
                table {
                    tr {
                        th class="l" { "step" } th class="l" { "state" } th { "time (s)" }
                        th class="l" { "detail" }
                    }
                    @for x in &r.steps {
                        @let cls = match x.state {
                            StepState::Done => "ok",
                            StepState::Skipped => "",
                            StepState::Failed => "warn",
                        };
                        tr {
                            td class="l" { (x.name) }
                            td class={ "l " (cls) } { (format!("{:?}", x.state).to_lowercase()) }
                            td { (format_args!("{:.1}", x.wall.value)) }
                            td class="l" { (x.detail) }
                        }
                    }
                }
            }
        }
    }
}

/// Old beside new: the throughput and round-trip medians, every sample a dot.
fn median_charts(r: &ProbeReport, rows: &[Compared], index: usize) -> Markup {
    let charts = [
        ("bit/s", "Throughput", "Mbit/s", "throughput"),
        ("us", "Round-trip medians", "µs", "rtt"),
    ]
    .into_iter()
    .filter_map(|kind| median_chart(r, rows, index, kind));
    html! {
        div class="charts" {
            @for c in charts { (c) }
        }
    }
}

/// One chart of the figures in `unit`, old beside new, every sample a dot (none when the
/// run has no such figure).
fn median_chart(
    r: &ProbeReport,
    rows: &[Compared],
    index: usize,
    (unit, title, axis, chart): (&str, &str, &str, &str),
) -> Option<Chart> {
    // Latency under load has its own charts (its round trips span decades).
    let picked: Vec<&Compared> = rows
        .iter()
        .filter(|x| x.unit == unit && !x.id.starts_with("latency."))
        .collect();
    if picked.is_empty() {
        return None;
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
            .filter(|(_, x)| verdict(x).is_worse())
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
    Some(c)
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
