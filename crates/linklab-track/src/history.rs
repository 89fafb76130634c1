//! The page of `linklab track report -o FILE.html`: every figure's history as an SVG chart
//! (the runs oldest first; each run's median, its samples' range, and a marker at each step,
//! named by the run's label), then the last two runs' comparison — on `linklab report`'s
//! page.

use std::fmt::Write as _;

use linklab_report::page::page;
use linklab_report::svg::{esc, Axis, Chart, Mark, Series, VLine};
use linklab_results::time::utc_time;

use crate::compare::{self, Thresholds, Verdict};
use crate::run::Run;
use crate::stamp::now;
use crate::tables;

/// The thresholds the report marks steps by: compare's defaults.
fn thresholds() -> Thresholds {
    Thresholds::default()
}

/// The whole page for `runs` (oldest first) read from `source`.
pub fn render(runs: &[Run], source: &str) -> String {
    let mut sections = vec![charts(runs)];
    if let [.., base, head] = runs {
        sections.push(last_compare(base, head));
    }
    let generated = utc_time(now() as u64);
    page(&sections, &[source.to_string()], &generated)
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

fn charts(runs: &[Run]) -> String {
    let labels: Vec<String> = runs.iter().map(|r| short(&r.stamp.label)).collect();
    let mut s = String::from(
        r#"<section class="card track"><h2>Figures per run</h2><p class="source">each run's median (line), its samples' lowest and highest (dots); a dashed marker where a figure stepped beyond its noise (red worse, green better)</p><div class="charts">"#,
    );
    for (i, (entry, name)) in figure_ids(runs).iter().enumerate() {
        s.push_str(&chart(runs, &labels, entry, name, i).render());
    }
    s.push_str("</div></section>");
    s
}

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

fn last_compare(base: &Run, head: &Run) -> String {
    let rows = compare::compare(base, head, thresholds());
    let mut s = format!(
        r#"<section class="card track-compare"><h2>Last comparison: {} → {}</h2><p class="source">the rule of linklab track compare --help, its default thresholds</p><div class="tablewrap"><table><tr><th class="l">entry</th><th class="l">figure</th><th>unit</th><th>base</th><th>head</th><th>change</th><th class="l">verdict</th></tr>"#,
        esc(&base.stamp.label),
        esc(&head.stamp.label)
    );
    for r in &rows {
        let class = match r.verdict {
            v if v.fails() => "warn",
            Verdict::Better => "ok",
            _ => "l",
        };
        let _ = write!(
            s,
            r#"<tr><td class="l">{}</td><td class="l">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class="{class}">{}</td></tr>"#,
            esc(&r.entry),
            esc(&r.figure),
            esc(&r.unit),
            esc(&tables::figure_text(r.base.as_ref())),
            esc(&tables::figure_text(r.head.as_ref())),
            r.change_pct.map_or("-".into(), |c| format!("{c:+.2} %")),
            esc(format!("{} {}", r.verdict.word(), r.note).trim_end()),
        );
    }
    s.push_str("</table></div></section>");
    s
}
