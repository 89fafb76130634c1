//! `linklab track table LABEL --file F`: a stored run as the Markdown table between a file's
//! markers (a README's figures); `--check` fails, changing nothing, when the file's table is
//! not the run's (the README is stale).

use std::path::PathBuf;

use anyhow::{bail, Context};
use linklab_track::{readme, store};

use super::db::DbArg;

/// Options of `linklab track table`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The run's label (its latest run).
    #[arg(value_name = "LABEL")]
    label: String,
    /// The file whose marked block gets the table (e.g. firmware/README.md).
    #[arg(long, value_name = "FILE")]
    file: PathBuf,
    /// The block's name: the table goes between `<!-- track:NAME begin -->` and
    /// `<!-- track:NAME end -->`.
    #[arg(long, value_name = "NAME", default_value = "baseline")]
    block: String,
    /// An entry the others are given as a ratio of (e.g. lwip).
    #[arg(long, value_name = "ENTRY")]
    reference: Option<String>,
    /// Write nothing; exit 1 when the file's table differs from the run's.
    #[arg(long)]
    check: bool,
    #[command(flatten)]
    db: DbArg,
}

/// Runs `linklab track table`.
pub fn run(a: Args) -> anyhow::Result<()> {
    let store = store::open(&a.db.db)?;
    let run = store::by_label(store.as_ref(), &a.label)?;
    let table = readme::table(&run, a.reference.as_deref())?;
    let text = std::fs::read_to_string(&a.file)
        .with_context(|| format!("cannot read {}", a.file.display()))?;
    let new = readme::replace_block(&text, &a.block, &table)
        .with_context(|| format!("{}: no table block {:?}", a.file.display(), a.block))?;
    match (a.check, new == text) {
        (_, true) => Ok(()),
        (true, false) => bail!(
            "{}: the track:{} table is not run {:?}'s; regenerate it: linklab track table {} --file {}{}",
            a.file.display(),
            a.block,
            a.label,
            a.label,
            a.file.display(),
            a.reference
                .as_ref()
                .map_or(String::new(), |r| format!(" --reference {r}"))
        ),
        (false, false) => std::fs::write(&a.file, new)
            .with_context(|| format!("cannot write {}", a.file.display())),
    }
}
