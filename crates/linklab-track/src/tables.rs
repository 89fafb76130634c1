//! A comparison written out: a table for the terminal, Markdown for a pull-request
//! comment, and bencher's Metric Format (BMF) of HEAD's figures.

use linklab_results::track::Figure;
use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::compare::{self, Row};
use crate::run::Run;

/// A figure as `median` or `median (lo–hi)` when its samples differ.
pub fn figure_text(f: Option<&Figure>) -> String {
    let Some(f) = f else { return "-".into() };
    let (lo, hi) = f.range();
    if f.samples.is_empty() {
        "-".into()
    } else if lo == hi {
        num(f.median())
    } else {
        format!("{} ({}–{})", num(f.median()), num(lo), num(hi))
    }
}

/// A number with up to four significant decimals, no trailing zeros.
pub fn num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        return format!("{v:.0}");
    }
    let s = format!("{v:.4}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn change(r: &Row) -> String {
    r.change_pct.map_or("-".into(), |c| format!("{c:+.2} %"))
}

/// The cells of one row: entry, figure, unit, base, head, change, verdict.
fn cells(r: &Row) -> [String; 7] {
    let verdict = if r.note.is_empty() {
        r.verdict.word().to_string()
    } else {
        format!("{}: {}", r.verdict.word(), r.note)
    };
    [
        r.entry.clone(),
        r.figure.clone(),
        r.unit.clone(),
        figure_text(r.base.as_ref()),
        figure_text(r.head.as_ref()),
        change(r),
        verdict,
    ]
}

const HEADS: [&str; 7] = [
    "entry", "figure", "unit", "base", "head", "change", "verdict",
];

/// The terminal table (columns padded).
pub fn terminal(base: &str, head: &str, rows: &[Row]) -> String {
    let all: Vec<[String; 7]> = std::iter::once(HEADS.map(String::from))
        .chain(rows.iter().map(cells))
        .collect();
    let mut widths = [0usize; 7];
    for r in &all {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = format!("base {base} -> head {head}\n");
    for r in &all {
        let line: Vec<String> = r
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// The Markdown for a pull-request comment: a summary line and the table.
pub fn markdown(base: &str, head: &str, rows: &[Row]) -> String {
    let worse = compare::worse(rows);
    let mut out = format!("### linklab track: `{base}` → `{head}`\n\n");
    if worse.is_empty() {
        out.push_str("No figure is worse.\n\n");
    } else {
        out.push_str(&format!("**Worse:** {}\n\n", worse.join(", ")));
    }
    out.push_str(&format!("| {} |\n", HEADS.join(" | ")));
    out.push_str("|---|---|---|---:|---:|---:|---|\n");
    for r in rows {
        let c = cells(r).map(|s| s.replace('|', "\\|"));
        out.push_str(&format!("| {} |\n", c.join(" | ")));
    }
    out
}

/// bencher's Metric Format (its JSON: `{entry: {figure: {value, lower_value, upper_value}}}`)
/// of a run: each entry that did not fail, each figure with samples as its median and range,
/// in the run's order.
#[derive(Clone, Debug, PartialEq)]
pub struct Bmf(pub Vec<(String, Vec<(String, BmfMeasure)>)>);

/// One figure in bencher's Metric Format.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct BmfMeasure {
    /// The median.
    pub value: f64,
    /// The lowest sample.
    pub lower_value: f64,
    /// The highest sample.
    pub upper_value: f64,
}

/// Serializes pairs as a JSON object, keeping their order.
struct Ordered<'a, T>(&'a [(String, T)]);

impl<T: Serialize> Serialize for Ordered<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl Serialize for Bmf {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (entry, measures) in &self.0 {
            map.serialize_entry(entry, &Ordered(measures))?;
        }
        map.end()
    }
}

/// HEAD's figures in bencher's Metric Format (a name given twice keeps its first place and
/// its last value, as a JSON object would).
pub fn bmf(run: &Run) -> Bmf {
    let mut benchmarks: Vec<(String, Vec<(String, BmfMeasure)>)> = Vec::new();
    for e in run.entries.iter().filter(|e| e.failed.is_none()) {
        let mut measures = Vec::new();
        for f in e.figures.iter().filter(|f| !f.samples.is_empty()) {
            let (lo, hi) = f.range();
            let m = BmfMeasure {
                value: f.median(),
                lower_value: lo,
                upper_value: hi,
            };
            set(&mut measures, &f.name, m);
        }
        set(&mut benchmarks, &e.name, measures);
    }
    Bmf(benchmarks)
}

/// Sets `key` to `value` in `pairs`: in its place when it is there, else at the end.
fn set<T>(pairs: &mut Vec<(String, T)>, key: &str, value: T) {
    match pairs.iter_mut().find(|(k, _)| k == key) {
        Some((_, v)) => *v = value,
        None => pairs.push((key.to_string(), value)),
    }
}
