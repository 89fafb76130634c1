//! `linklab track import RUN.json`: a run measured elsewhere (a user's own CI, another
//! bench) stored like one of track's own, so compare, walk and report treat it alike; and
//! `linklab track export LABEL -o RUN.json`, a stored run written in that form (a baseline
//! kept in a repository).
//!
//! ```json
//! { "label": "v1.2", "commit": "", "entries": [ { "name": "board-a", "kind": "image",
//!   "figures": [ { "name": "rx_instr_per_byte", "unit": "instr/B", "better": "lower",
//!                  "rule": "count", "samples": [3.51, 3.52] } ] } ] }
//! ```

use std::path::PathBuf;

use anyhow::{bail, Context};
use serde::Deserialize;

use super::figure::{Better, EntryResult, Figure, Rule, Run};
use super::stamp::{now, Stamp};
use super::store;

/// Options of `linklab track import`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The run, as JSON (docs/track.md).
    #[arg(value_name = "RUN.json")]
    file: PathBuf,
    #[command(flatten)]
    db: store::DbArg,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    label: String,
    #[serde(default)]
    commit: String,
    entries: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    name: String,
    #[serde(default = "image")]
    kind: String,
    #[serde(default)]
    board: String,
    failed: Option<String>,
    #[serde(default)]
    figures: Vec<RawFigure>,
}

fn image() -> String {
    "image".into()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFigure {
    name: String,
    unit: String,
    better: String,
    rule: String,
    samples: Vec<f64>,
}

/// Runs `linklab track import`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let name = args.file.display();
    let text =
        std::fs::read_to_string(&args.file).with_context(|| format!("{name}: cannot read"))?;
    let raw: RawRun =
        serde_json::from_str(&text).with_context(|| format!("{name}: not a track run"))?;
    let run = to_run(raw, &args.file).with_context(|| format!("{name}"))?;
    let mut store = store::open(&args.db.db)?;
    let id = store.insert_run(&run)?;
    println!(
        "stored run {id} labelled {} in {}",
        run.stamp.label,
        args.db.shown()
    );
    Ok(())
}

/// Options of `linklab track export`.
#[derive(clap::Args, Debug)]
pub struct ExportArgs {
    /// The run's label (its latest run).
    #[arg(value_name = "LABEL")]
    label: String,
    /// The JSON file to write (import's form).
    #[arg(short = 'o', long = "output", value_name = "RUN.json")]
    output: PathBuf,
    #[command(flatten)]
    db: store::DbArg,
}

/// Runs `linklab track export`.
pub fn export(args: ExportArgs) -> anyhow::Result<()> {
    let store = store::open(&args.db.db)?;
    let run = store::by_label(store.as_ref(), &args.label)?;
    let text = serde_json::to_string_pretty(&to_json(&run))? + "\n";
    std::fs::write(&args.output, text)
        .with_context(|| format!("-o: cannot write {}", args.output.display()))?;
    println!(
        "wrote run {} of {} to {}",
        run.id.unwrap_or(0),
        args.label,
        args.output.display()
    );
    Ok(())
}

/// `run` in import's form.
pub fn to_json(run: &Run) -> serde_json::Value {
    let entries: Vec<serde_json::Value> = run
        .entries
        .iter()
        .map(|e| {
            let figures: Vec<serde_json::Value> = e
                .figures
                .iter()
                .map(|f| {
                    serde_json::json!({ "name": f.name, "unit": f.unit, "better": f.better.word(),
                        "rule": f.rule.word(), "samples": f.samples })
                })
                .collect();
            serde_json::json!({ "name": e.name, "kind": e.kind, "board": e.board,
                "failed": e.failed, "figures": figures })
        })
        .collect();
    serde_json::json!({ "label": run.stamp.label, "commit": run.stamp.commit, "entries": entries })
}

fn to_run(raw: RawRun, file: &std::path::Path) -> anyhow::Result<Run> {
    let mut entries = Vec::new();
    for e in raw.entries {
        let mut r = EntryResult::new(&e.name, &e.kind, &e.board);
        r.failed = e.failed;
        for f in e.figures {
            let better = Better::parse(&f.better)
                .with_context(|| format!("{} {}: better is lower or higher", e.name, f.name))?;
            let rule = Rule::parse(&f.rule)
                .with_context(|| format!("{} {}: rule is exact, count or rate", e.name, f.name))?;
            if f.samples.is_empty() || f.samples.iter().any(|v| !v.is_finite()) {
                bail!(
                    "{} {}: samples must be finite numbers, at least one",
                    e.name,
                    f.name
                );
            }
            r.figures
                .push(Figure::new(&f.name, &f.unit, better, rule, f.samples));
        }
        entries.push(r);
    }
    let t = now();
    Ok(Run {
        id: None,
        stamp: Stamp {
            label: raw.label,
            commit: raw.commit,
            started_unix: t,
            finished_unix: t,
            linklab_version: env!("CARGO_PKG_VERSION").into(),
            qemu_version: String::new(),
            tools: String::new(),
            host_load_start: 0.0,
            host_load_end: 0.0,
            suite: format!("import {}", file.display()),
            repeat: 0,
        },
        entries,
    })
}
