//! `linklab track report -o FILE.html`: every stored run's figures drawn as their history.

use std::path::PathBuf;

use anyhow::Context;
use linklab_track::{history, store};

use super::db::DbArg;

/// Options of `linklab track report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The HTML file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE.html")]
    output: PathBuf,
    #[command(flatten)]
    db: DbArg,
}

/// Runs `linklab track report`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let store = store::open(&args.db.db)?;
    let runs = store::all(store.as_ref())?;
    if runs.is_empty() {
        anyhow::bail!("--db {}: no run stored yet", args.db.shown());
    }
    let html = history::render(&runs, &args.db.shown());
    std::fs::write(&args.output, html)
        .with_context(|| format!("-o: cannot write {}", args.output.display()))?;
    println!("wrote {} ({} runs)", args.output.display(), runs.len());
    Ok(())
}
