//! Helpers of the `linklab track` tests: runs written as import's document (linklab-results'
//! `TrackRun`), the CLI run on a store.

use std::path::Path;
use std::process::{Command, Output};

use linklab_results::track::{Better, Figure, Rule, TrackEntry, TrackRun};

use super::linklab_bin;

/// `linklab track ARGS --db DB` (the verb first in `args`).
pub fn track(db: &Path, args: &[&str]) -> Output {
    Command::new(linklab_bin())
        .arg("track")
        .args(args)
        .arg("--db")
        .arg(db)
        .output()
        .expect("run linklab track")
}

/// A figure of an import document (`better` and `rule` in the document's words).
pub fn figure(name: &str, unit: &str, better: &str, rule: &str, samples: &[f64]) -> Figure {
    let better = Better::parse(better).expect("lower or higher");
    let rule = Rule::parse(rule).expect("exact, count or rate");
    Figure::new(name, unit, better, rule, samples.to_vec())
}

/// An entry of `kind` with `figures`, on no board.
pub fn entry(name: &str, kind: &str, figures: Vec<Figure>) -> TrackEntry {
    TrackEntry {
        name: name.into(),
        kind: kind.into(),
        board: String::new(),
        failed: None,
        figures,
    }
}

/// An entry that failed with `why`.
pub fn failed(name: &str, kind: &str, why: &str) -> TrackEntry {
    TrackEntry {
        failed: Some(why.into()),
        ..entry(name, kind, Vec::new())
    }
}

/// An image entry's usual figures: flash, received and sent cost.
pub fn image(name: &str, flash: f64, rx: &[f64], tx: &[f64]) -> TrackEntry {
    TrackEntry {
        board: "mps2-an385".into(),
        ..entry(
            name,
            "image",
            vec![
                figure("flash_bytes", "B", "lower", "exact", &[flash]),
                figure("rx_instr_per_byte", "instr/B", "lower", "count", rx),
                figure("tx_instr_per_byte", "instr/B", "lower", "count", tx),
            ],
        )
    }
}

/// Writes a run labelled `label` with `entries` as import's document to `file`.
pub fn write_run(file: &Path, label: &str, entries: Vec<TrackEntry>) {
    let doc = TrackRun::new(label, "", entries);
    std::fs::write(file, serde_json::to_vec(&doc).unwrap()).unwrap();
}

/// Writes a run labelled `label` with `entries` to `dir/label.json` and imports it into
/// `db` (panics when the import fails).
pub fn import(db: &Path, dir: &Path, label: &str, entries: Vec<TrackEntry>) {
    let file = dir.join(format!("{label}.json"));
    write_run(&file, label, entries);
    let out = track(db, &["import", file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "import {label}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The stored runs' labels, oldest first (`linklab track runs`).
pub fn labels(db: &Path) -> Vec<String> {
    let out = track(db, &["runs"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).map(String::from))
        .collect()
}

/// Standard error as text.
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Standard output as text.
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}
