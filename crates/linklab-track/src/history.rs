//! `linklab track report -o FILE.html`: every figure's history as an SVG chart (the runs
//! oldest first; each run's median, its samples' range, and a marker at each step, named by
//! the run's label), then the last two runs' comparison — on `linklab report`'s page.

use std::path::PathBuf;

use anyhow::Context;
use maud::{html, Markup};

use super::compare::{self, Thresholds, Verdict};
use super::figure::Run;
use super::{store, tables};
use linklab_report::layout::frame;
use linklab_report::svg::{Axis, Chart, Mark, Series, VLine};
use linklab_results::time::utc_time;

/// Options of `linklab track report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE.html")]
    output: PathBuf,
    #[command(flatten)]
    db: store::DbArg,
}

/// Runs `linklab track report`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let store = store::open(&args.db.db)?;
    let runs: Vec<Run> = store
        .runs()?
        .iter()
        .map(|h| store.load(h.id))
        .collect::<anyhow::Result<_>>()?;
    if runs.is_empty() {
        anyhow::bail!("--db {}: no run stored yet", args.db.shown());
    }
    let html = render(&runs, &args.db.shown());
    std::fs::write(&args.output, html)
        .with_context(|| format!("-o: cannot write {}", args.output.display()))?;
    println!("wrote {} ({} runs)", args.output.display(), runs.len());
    Ok(())
}

/// The thresholds the report marks steps by: compare's defaults.
fn thresholds() -> Thresholds {
    Thresholds {
        count_pct: super::DEFAULT_COUNT_PCT,
        rate_pct: 10.0,
    }
}

/// The whole page for `runs` (oldest first) read from `source`.
pub fn render(runs: &[Run], source: &str) -> String {
    let body = html! {
        (charts(runs)) "\n"
        @if let [.., base, head] = runs {
            (last_compare(base, head)) "\n"
        }
    };
    let generated = utc_time(super::stamp::now() as u64);
    frame(body, &[source.to_string()], &generated)
}

/// Every (entry, figure) pair seen in any run, in the order first seen.
fn figure_ids(runs: &[Run]) -> Vec<(String, String)> {
    let mut ids: Vec<(String, String)> = Vec::new();
    for r in runs {
        for e in &r.entries {
            for f in &e.figures {
                let id = (e.name.clone(), f.name.clone());
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
    }
    ids
}

/// Every figure's chart, in the order first seen.
fn charts(runs: &[Run]) -> Markup {
    let labels: Vec<String> = runs.iter().map(|r| short(&r.stamp.label)).collect();
    html! {
        section class="card track" {
            h2 { "Figures per run" }
            p class="source" {
                "each run's median (line), its samples' lowest and highest (dots); a dashed marker where a figure stepped beyond its noise (red worse, green better)"
            }
            div class="charts" {
                @for (i, (entry, name)) in figure_ids(runs).iter().enumerate() {
                    (chart(runs, &labels, entry, name, i))
                }
            }
        }
    }
}

/// One figure's history: each run's median and range, a marker where it stepped.
fn chart(runs: &[Run], labels: &[String], entry: &str, name: &str, index: usize) -> Chart {
    let mut median = Vec::new();
    let mut range = Vec::new();
    let mut unit = String::new();
    let mut steps = Vec::new();
    let mut previous = None;
    for (i, r) in runs.iter().enumerate() {
        let Some(f) = r.entry(entry).and_then(|e| e.figure(name)) else {
            continue;
        };
        let x = (i + 1) as f64;
        unit.clone_from(&f.unit);
        median.push((x, f.median()));
        let (lo, hi) = f.range();
        range.extend([(x, lo), (x, hi)]);
        if let Some(p) = previous {
            let v = compare::judge(p, f, thresholds());
            if matches!(v, Verdict::Worse | Verdict::Better) {
                steps.push(VLine {
                    x,
                    label: labels[i].clone(),
                    color: if v == Verdict::Worse {
                        "#c2410c"
                    } else {
                        "#15803d"
                    },
                });
            }
        }
        previous = Some(f);
    }
    let values = range.iter().map(|p| p.1);
    let lo = values.clone().fold(f64::INFINITY, f64::min);
    let hi = values.fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.1).max(hi.abs() * 0.01).max(1e-9);
    let x = Axis::categories("run", labels);
    let y = Axis::new(&unit, lo - pad, hi + pad);
    let mut c = Chart::new(
        &format!("track-{index}"),
        &format!("{entry} · {name}"),
        560.0,
        300.0,
        x,
        y,
    );
    c.series.push(Series {
        name: "median".into(),
        color: "#2563eb",
        mark: Mark::LinePoints,
        right: false,
        points: median,
    });
    c.series.push(Series {
        name: "range".into(),
        color: "#93c5fd",
        mark: Mark::Points { r: 2.5 },
        right: false,
        points: range,
    });
    c.vlines = steps;
    c
}

/// A label short enough for an axis tick.
fn short(label: &str) -> String {
    if label.chars().count() <= 14 {
        label.into()
    } else {
        label.chars().take(13).collect::<String>() + "…"
    }
}

/// The last two runs compared, figure by figure, by compare's rule and default thresholds.
fn last_compare(base: &Run, head: &Run) -> Markup {
    let rows = compare::compare(base, head, thresholds());
    html! {
        section class="card track-compare" {
            h2 { "Last comparison: " (base.stamp.label) " → " (head.stamp.label) }
            p class="source" { "the rule of linklab track compare --help, its default thresholds" }
            div class="tablewrap" {
                table {
                    tr {
                        th class="l" { "entry" } th class="l" { "figure" } th { "unit" }
                        th { "base" } th { "head" } th { "change" } th class="l" { "verdict" }
                    }
                    @for r in &rows {
                        @let class = match r.verdict {
                            v if v.fails() => "warn",
                            Verdict::Better => "ok",
                            _ => "l",
                        };
                        tr {
                            td class="l" { (r.entry) }
                            td class="l" { (r.figure) }
                            td { (r.unit) }
                            td { (tables::figure_text(r.base.as_ref())) }
                            td { (tables::figure_text(r.head.as_ref())) }
                            td { (r.change_pct.map_or("-".into(), |c| format!("{c:+.2} %"))) }
                            td class=(class) { (format!("{} {}", r.verdict.word(), r.note).trim_end()) }
                        }
                    }
                }
            }
        }
    }
}
