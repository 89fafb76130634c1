//! `linklab report A.json B.json ...` with two or more probe documents: the runs side by side
//! — each named by its label and conditions, one table with a column per run and the change
//! from the first to the last, the figures a run lacks named with the reason it gave (or that
//! its linklab did not measure them), and the charts overlaid: throughput run beside run, and
//! the round trips per load as CDFs, one line style per run.

use maud::{html, Markup};

use super::probe_latency::cdf_chart;
use super::svg::{num, Axis, Chart, Mark, Series};
use linklab_results::probe::{range_text, ProbeReport};
use linklab_results::units::format_rate;

/// Colours of the runs, in order.
const RUN_COLORS: [&str; 6] = [
    "#2563eb", "#ea580c", "#16a34a", "#7c3aed", "#dc2626", "#0891b2",
];

/// A run's name: its label, else its host and file.
fn name(r: &ProbeReport, file: &str) -> String {
    r.conditions
        .as_ref()
        .map_or_else(|| format!("{} ({file})", r.host), |c| c.label.clone())
}

/// One row: a figure's id, label, unit and its value and range in each run.
struct Row {
    id: String,
    label: String,
    unit: String,
    cells: Vec<Option<(f64, f64, Option<f64>)>>,
}

/// Every figure of any run, plus each latency load's p99 (from the latency section).
fn rows(runs: &[(&ProbeReport, &str)]) -> Vec<Row> {
    let mut out: Vec<Row> = Vec::new();
    let mut add = |id: &str, label: &str, unit: &str, k: usize, cell: (f64, f64, Option<f64>)| {
        let i = match out.iter().position(|r| r.id == id) {
            Some(i) => i,
            None => {
                out.push(Row {
                    id: id.into(),
                    label: label.into(),
                    unit: unit.into(),
                    cells: vec![None; runs.len()],
                });
                out.len() - 1
            }
        };
        out[i].cells[k] = Some(cell);
    };
    for (k, (r, _)) in runs.iter().enumerate() {
        for f in &r.figures {
            let (low, high) = f.range();
            add(&f.id, &f.label, &f.unit, k, (f.value, low, high));
        }
        for t in r.latency.iter().flat_map(|l| &l.round_trips) {
            for p in &t.per_load {
                if let Some(v) = p.p99_ms {
                    let id = format!("latency.{}.{}.rtt_p99", t.transport, p.load);
                    let label = format!(
                        "{} round trip p99 {}",
                        linklab_results::probe::latency::transport_words(&t.transport),
                        linklab_results::probe::latency::load_words(&p.load)
                    );
                    add(&id, &label, "us", k, (v * 1e3, v * 1e3, Some(v * 1e3)));
                }
            }
        }
    }
    out
}

/// Why run `r` has no figure `id`: the reason its step gave, or what it did not measure.
fn lacks(r: &ProbeReport, id: &str) -> String {
    if let Some(m) = r.not_measured(id) {
        return format!("{}: {}", m.state.word(), m.reason);
    }
    let step = id.split('.').next().unwrap_or(id);
    match r.steps.iter().find(|s| s.name.replace('-', "_") == step) {
        Some(s) => format!("not measured (step {}: {})", s.name, s.detail),
        None if step == "latency" => format!(
            "not measured (linklab {} has no latency step)",
            r.linklab_version
        ),
        None => "not measured".into(),
    }
}

/// A value for people.
fn show(v: f64, unit: &str) -> String {
    match unit {
        "bit/s" => format_rate(v),
        "us" if v >= 1e3 => format!("{} ms", num((v / 1e3 * 100.0).round() / 100.0)),
        "us" => format!("{} µs", num(v)),
        u => format!("{} {u}", num(v)),
    }
}

/// The side-by-side section of `runs` (document, file).
pub fn render(runs: &[(&ProbeReport, &str)]) -> Markup {
    let rows = rows(runs);
    let names: Vec<String> = runs.iter().map(|(r, f)| name(r, f)).collect();
    // What each run lacks, one line each below the table.
    let lacking: Vec<String> = rows
        .iter()
        .flat_map(|row| {
            row.cells
                .iter()
                .enumerate()
                .filter(|(_, cell)| cell.is_none())
                .map(|(k, _)| {
                    format!(
                        "{} lacks {}: {}",
                        names[k],
                        row.id,
                        lacks(runs[k].0, &row.id)
                    )
                })
        })
        .collect();
    html! {
        section class="card compare" {
            h2 { (runs.len()) " probe runs side by side" }
            ol class="runs" {
                @for ((r, file), name) in runs.iter().zip(&names) {
                    li data-run=(file) {
                        b { (name) } " — " (r.host) " (" (r.address) "), " (file) " · " (said(r))
                    }
                }
            }
            div class="tablewrap" {
                table class="compare" {
                    tr {
                        th class="l" { "figure" }
                        @for name in &names {
                            th { (name) }
                        }
                        th { "change, first to last" }
                    }
                    @for row in &rows {
                        (compare_row(runs, row))
                    }
                }
            }
            @for l in &lacking {
                p class="note lacks" { (l) }
            }
            div class="charts" {
                (throughput_chart(runs, &rows))
                @for transport in ["icmp", "echo_udp", "echo_tcp"] {
                    @let series: Vec<_> = runs
                        .iter()
                        .zip(&names)
                        .filter_map(|((r, _), n)| {
                            let l = r.latency.as_ref()?;
                            let t = l.round_trips.iter().find(|t| t.transport == transport)?;
                            Some((n.as_str(), l, t))
                        })
                        .collect();
                    @if !series.is_empty() {
                        (cdf_chart(&series, &format!("compare-cdf-{transport}")))
                    }
                }
            }
        }
    }
}

/// What a run's conditions say, or that it recorded none.
fn said(r: &ProbeReport) -> String {
    r.conditions.as_ref().map_or_else(
        || {
            format!(
                "linklab {}; no conditions recorded (an older document)",
                r.linklab_version
            )
        },
        linklab_results::probe::conditions_words,
    )
}

/// One figure's row: each run's value and range (or why it lacks it), the change from the
/// first run to the last.
fn compare_row(runs: &[(&ProbeReport, &str)], row: &Row) -> Markup {
    let change = match (
        row.cells.first().copied().flatten(),
        row.cells.last().copied().flatten(),
    ) {
        (Some((a, _, _)), Some((b, _, _))) if a != 0.0 => {
            format!("{:+.1} %", (b - a) / a * 100.0)
        }
        _ => "–".into(),
    };
    html! {
        tr data-compare=(row.id) {
            td class="l" { (row.label) }
            @for (k, cell) in row.cells.iter().enumerate() {
                @match cell {
                    Some((v, low, high)) => td {
                        (show(*v, &row.unit)) br; small { (range_text(*low, *high, &row.unit)) }
                    },
                    None => td class="warn" title=(lacks(runs[k].0, &row.id)) { "absent" },
                }
            }
            td { (change) }
        }
    }
}

/// The throughput figures of every run, bars side by side.
fn throughput_chart(runs: &[(&ProbeReport, &str)], rows: &[Row]) -> Chart {
    let picked: Vec<&Row> = rows.iter().filter(|r| r.unit == "bit/s").collect();
    let names: Vec<String> = picked.iter().map(|r| r.id.clone()).collect();
    let values = picked
        .iter()
        .flat_map(|r| r.cells.iter().flatten().map(|c| c.0 * 1e-6));
    let width = (120.0 + 110.0 * names.len() as f64).clamp(533.0, 1080.0);
    let mut c = Chart::new(
        "compare-throughput",
        "Throughput, run beside run",
        width,
        360.0,
        Axis::categories("", &names),
        Axis::from_zero("Mbit/s", values, 0.001),
    );
    c.subtitle = "higher is better".into();
    let n = runs.len() as f64;
    let bar = 0.8 / n;
    for (k, (r, file)) in runs.iter().enumerate() {
        let dx = -0.4 + bar * (k as f64 + 0.5);
        c.series.push(Series {
            name: name(r, file),
            color: RUN_COLORS[k % RUN_COLORS.len()],
            mark: Mark::Bars { width: bar * 0.9 },
            right: false,
            points: picked
                .iter()
                .enumerate()
                .filter_map(|(i, row)| row.cells[k].map(|c| ((i + 1) as f64 + dx, c.0 * 1e-6)))
                .collect(),
        });
    }
    c
}
