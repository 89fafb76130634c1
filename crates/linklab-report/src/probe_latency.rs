//! The latency-under-load part of a probe's page: the figures per load in a table, one chart
//! with throughput and round trips on one time axis (each load's window marked, every lost
//! probe drawn at the top, every stall marked), and a CDF of round trips per load for each
//! transport; then the conditions and, with `--repeat`, each figure across the runs.

use maud::{html, Markup};

use super::svg::{num, Axis, Chart, Mark, Series, VLine};
use linklab_results::probe::latency::{self as lat, ms, LatencyUnderLoad, RttSeries};
use linklab_results::probe::ProbeReport;
use linklab_results::units::format_rate;

/// Colours of the transports (round trips) and of the loads (CDF lines).
const TRANSPORT_COLORS: [&str; 3] = ["#2563eb", "#7c3aed", "#0891b2"];
/// Colours of the loads: idle, to, from, both.
pub const LOAD_COLORS: [&str; 4] = ["#16a34a", "#ea580c", "#2563eb", "#dc2626"];

/// The colour of a load by its name.
pub fn load_color(name: &str) -> &'static str {
    match name {
        "idle" => LOAD_COLORS[0],
        "to_device" => LOAD_COLORS[1],
        "from_device" => LOAD_COLORS[2],
        _ => LOAD_COLORS[3],
    }
}

/// The section, when the run measured latency under load; then the conditions and the runs
/// of `--repeat`.
pub fn render(r: &ProbeReport, index: usize) -> Markup {
    html! {
        @if let Some(l) = &r.latency {
            h3 { "Latency under load" }
            (table(l))
            (verdict(l))
            div class="charts" {
                (time_chart(l, &format!("probe-{index}-latency-time")))
                @for (k, t) in l.round_trips.iter().enumerate() {
                    @if t.samples.iter().any(|x| x.1.is_some()) {
                        (cdf_chart(&[("", l, t)], &format!("probe-{index}-latency-cdf-{k}")))
                    }
                }
            }
        }
        @if let Some(c) = &r.conditions {
            p class="note conditions" {
                b { "conditions:" } " " (linklab_results::probe::conditions_words(c))
                " · label " (c.label)
            }
        }
        (repeat(r))
    }
}

/// Each transport's round trips per load, the throughput meanwhile.
fn table(l: &LatencyUnderLoad) -> Markup {
    let opt = |v: Option<f64>| v.map_or("–".into(), |v| format!("{} ms", ms(v)));
    let rate = |v: Option<f64>| v.map_or("–".into(), format_rate);
    html! {
        div class="tablewrap" {
            table class="latency" {
                tr {
                    th class="l" { "round trip" } th class="l" { "load" } th { "median" }
                    th { "p90" } th { "p99" } th { "max" } th { "increase" } th { "lost" }
                    th { "to the device" } th { "from it" }
                }
                @for t in &l.round_trips {
                    @for p in &t.per_load {
                        @let load = l.loads.iter().find(|x| x.name == p.load);
                        tr data-latency={ (t.transport) "." (p.load) } {
                            td class="l" { (lat::transport_words(&t.transport)) }
                            td class="l" { (p.load) }
                            td { (opt(p.p50_ms)) }
                            td { (opt(p.p90_ms)) }
                            td { (opt(p.p99_ms)) }
                            td { (opt(p.max_ms)) }
                            td { (p.increase_ms.map_or("–".into(), |v| format!("{v:+.1} ms"))) }
                            td { (p.lost) " of " (p.sent) }
                            td { (rate(load.and_then(|x| x.to_device_bps))) }
                            td { (rate(load.and_then(|x| x.from_device_bps))) }
                        }
                    }
                }
            }
        }
    }
}

/// The verdict in words: grows beyond the bound, or holds; the stalls; loads that did not run.
fn verdict(l: &LatencyUnderLoad) -> Markup {
    let no_bytes = l.stalls.iter().filter(|x| x.kind == "no_bytes").count();
    html! {
        @if l.grows.is_empty() {
            p class="note" {
                "Holds its latency under load: no median grew beyond " (num(l.bound.ratio))
                "× idle and +" (num(l.bound.plus_ms)) " ms."
            }
        }
        @for g in &l.grows {
            p class="note failure" {
                b { "latency grows under load:" } " " (g) " (bound: " (num(l.bound.ratio))
                "× idle and +" (num(l.bound.plus_ms)) " ms)"
            }
        }
        p class="note" {
            (l.stalls.len()) " stalls (" (no_bytes) " with a flow moving no bytes, "
            (l.stalls.len() - no_bytes) " with round trips over 1 s)"
            @for x in &l.stalls {
                "; " (x.what) " " (x.kind.replace('_', " "))
                (format_args!(" at {:.1}–{:.1} s (", x.start_s, x.end_s))
                (x.retransmits.map_or("–".into(), |n| n.to_string())) " retransmissions)"
            }
        }
        @for x in l.loads.iter().filter(|x| x.error.is_some()) {
            p class="note failure" {
                b { (x.name) ":" } " no load (" (x.error.as_deref().unwrap_or_default()) ")"
            }
        }
    }
}

/// Throughput (right axis) and round trips (left axis, logarithmic) on one time axis.
fn time_chart(l: &LatencyUnderLoad, id: &str) -> Chart {
    let end = l
        .round_trips
        .iter()
        .flat_map(|t| t.samples.last().map(|x| x.0))
        .chain(l.loads.iter().map(|x| x.end_s))
        .fold(1.0, f64::max);
    let rtts = || {
        l.round_trips
            .iter()
            .flat_map(|t| t.samples.iter().filter_map(|x| x.1))
    };
    let lo = rtts().fold(f64::INFINITY, f64::min);
    let hi = rtts().fold(0.0, f64::max);
    let y = Axis::log("round trip (ms)", lo.min(hi), hi.max(lo * 10.0));
    let top = y.hi;
    let rates = l.loads.iter().flat_map(|x| &x.intervals).flat_map(|i| {
        [i.to_device_bps, i.from_device_bps]
            .into_iter()
            .flatten()
            .map(|v| v * 1e-6)
    });
    let mut c = Chart::new(
        id,
        "Throughput and round trips over time",
        1080.0,
        380.0,
        Axis::new("time since the step began (s)", 0.0, end),
        y,
    );
    c.y2 = Some(Axis::from_zero("throughput (Mbit/s)", rates, 0.001));
    c.subtitle = "each load's window marked; lost probes at the top; stalls marked".into();
    for (k, t) in l.round_trips.iter().enumerate() {
        c.series.push(Series {
            name: lat::transport_words(&t.transport).into(),
            color: TRANSPORT_COLORS[k % 3],
            mark: Mark::Points { r: 1.3 },
            right: false,
            points: t
                .samples
                .iter()
                .filter_map(|x| x.1.map(|r| (x.0, r)))
                .collect(),
        });
    }
    let lost: Vec<(f64, f64)> = l
        .round_trips
        .iter()
        .flat_map(|t| {
            t.samples
                .iter()
                .filter(|x| x.1.is_none())
                .map(|x| (x.0, top))
        })
        .collect();
    if !lost.is_empty() {
        c.series.push(Series {
            name: "lost".into(),
            color: "#dc2626",
            mark: Mark::Points { r: 2.0 },
            right: false,
            points: lost,
        });
    }
    // One line per load and way (a line never joins one load to the next), named once.
    for (way, color) in [("to the device", "#ea580c"), ("from the device", "#16a34a")] {
        let mut named = false;
        for load in &l.loads {
            let points: Vec<(f64, f64)> = load
                .intervals
                .iter()
                .filter_map(|i| {
                    let v = if way == "to the device" {
                        i.to_device_bps
                    } else {
                        i.from_device_bps
                    };
                    v.map(|v| ((i.start_s + i.end_s) / 2.0, v * 1e-6))
                })
                .collect();
            if points.is_empty() {
                continue;
            }
            c.series.push(Series {
                name: if named {
                    String::new()
                } else {
                    format!("Mbit/s {way}")
                },
                color,
                mark: Mark::LinePoints,
                right: true,
                points,
            });
            named = true;
        }
    }
    for x in l
        .loads
        .iter()
        .filter(|x| x.error.is_none() && x.name != "idle")
    {
        c.vlines.push(VLine {
            x: x.start_s,
            label: x.name.clone(),
            color: "#6b7280",
        });
    }
    for x in &l.stalls {
        c.vlines.push(VLine {
            x: x.start_s,
            label: "stall".into(),
            color: "#dc2626",
        });
    }
    c
}

/// A CDF of round trips per load for each of `runs` (name, series): one line per run and load.
pub fn cdf_chart(runs: &[(&str, &LatencyUnderLoad, &RttSeries)], id: &str) -> Chart {
    let all = || {
        runs.iter()
            .flat_map(|(_, _, t)| t.samples.iter().filter_map(|x| x.1))
    };
    let lo = all().fold(f64::INFINITY, f64::min);
    let hi = all().fold(0.0, f64::max);
    let title = match runs {
        [(_, _, t)] => format!(
            "{} round trips per load (CDF)",
            lat::transport_words(&t.transport)
        ),
        _ => format!(
            "{} round trips per load, run beside run (CDF)",
            runs.first()
                .map_or("", |(_, _, t)| lat::transport_words(&t.transport))
        ),
    };
    let mut c = Chart::new(
        id,
        &title,
        533.0,
        340.0,
        Axis::log("round trip (ms)", lo.min(hi), hi.max(lo * 10.0)),
        Axis::new("fraction of replies", 0.0, 1.0),
    );
    c.subtitle = "lost probes are not in it: see the table".into();
    for (k, (run, l, t)) in runs.iter().enumerate() {
        for p in &t.per_load {
            let Some(mut v) = window_of(l, t, &p.load) else {
                continue;
            };
            v.sort_by(f64::total_cmp);
            let n = v.len() as f64;
            let step = (v.len() / 200).max(1);
            let mut points: Vec<(f64, f64)> = v
                .iter()
                .enumerate()
                .step_by(step)
                .map(|(i, &x)| (x, (i + 1) as f64 / n))
                .collect();
            points.extend(v.last().map(|&x| (x, 1.0)));
            c.series.push(Series {
                name: if run.is_empty() {
                    p.load.clone()
                } else {
                    format!("{run}: {}", p.load)
                },
                color: load_color(&p.load),
                mark: Mark::Line { dashed: k > 0 },
                right: false,
                points,
            });
        }
    }
    c
}

/// The round trips of `t` sent within the window of `load`.
fn window_of(l: &LatencyUnderLoad, t: &RttSeries, load: &str) -> Option<Vec<f64>> {
    let w = l
        .loads
        .iter()
        .find(|x| x.name == load && x.error.is_none())?;
    let v: Vec<f64> = t
        .samples
        .iter()
        .filter(|x| x.0 >= w.start_s && x.0 < w.end_s)
        .filter_map(|x| x.1)
        .collect();
    (!v.is_empty()).then_some(v)
}

/// `--repeat`: each figure over the runs.
fn repeat(r: &ProbeReport) -> Markup {
    let Some(rep) = &r.repeat else {
        return html! {};
    };
    html! {
        h3 { "Across " (rep.runs) " runs" }
        div class="tablewrap" {
            table class="repeat" {
                tr {
                    th class="l" { "figure" } th { "lowest" } th { "median" } th { "highest" }
                    th { "spread" } th class="l" { "each run" }
                }
                @for f in &rep.figures {
                    @let show = |v: f64| match f.unit.as_str() {
                        "bit/s" => format_rate(v),
                        "us" => format!("{} µs", num(v)),
                        u => format!("{} {u}", num(v)),
                    };
                    @let each: Vec<String> =
                        f.values.iter().map(|v| v.map_or("absent".into(), show)).collect();
                    tr data-repeat=(f.id) {
                        td class="l" { (f.label) }
                        td { (show(f.low)) }
                        td { (show(f.median)) }
                        td { (show(f.high)) }
                        td { (f.spread_pct.map_or("–".into(), |p| format!("{p:.1} %"))) }
                        td class="l" { (each.join(" · ")) }
                    }
                }
            }
        }
    }
}
