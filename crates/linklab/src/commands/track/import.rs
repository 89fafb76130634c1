//! `linklab track import RUN.json` (a run measured elsewhere, stored like one of track's own)
//! and `linklab track export LABEL -o RUN.json` (a stored run written in that form).

use std::path::PathBuf;

use anyhow::Context;
use linklab_results::track::TrackRun;
use linklab_track::{import, store};

use super::db::DbArg;

/// Options of `linklab track import`.
#[derive(clap::Args, Debug)]
pub struct ImportArgs {
    /// The run, as JSON (docs/track.md).
    #[arg(value_name = "RUN.json")]
    file: PathBuf,
    #[command(flatten)]
    db: DbArg,
}

/// Runs `linklab track import`.
pub fn import(args: ImportArgs) -> anyhow::Result<()> {
    let name = args.file.display();
    let text =
        std::fs::read_to_string(&args.file).with_context(|| format!("{name}: cannot read"))?;
    let doc = TrackRun::parse(&text).with_context(|| format!("{name}"))?;
    let run = import::from_document(doc, &name.to_string());
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
    db: DbArg,
}

/// Runs `linklab track export`.
pub fn export(args: ExportArgs) -> anyhow::Result<()> {
    let store = store::open(&args.db.db)?;
    let run = store::by_label(store.as_ref(), &args.label)?;
    let text = serde_json::to_string_pretty(&import::to_document(&run))? + "\n";
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
