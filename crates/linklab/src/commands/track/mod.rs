//! `linklab track`: a memory for every figure. `run` measures a suite (firmware images in
//! QEMU, counted on their own ISA; live devices; the simulator) and stores every figure with
//! its samples and the run's stamp; `compare` judges HEAD against BASE figure by figure (exit
//! 3 when one is worse); `walk` measures each commit of a range in a worktree of its own and
//! names the commit where each figure stepped; `report` draws every figure's history. The work
//! is linklab-track's; see docs/track.md.

mod compare;
mod db;
mod import;
mod progress;
mod report;
mod run;
mod table;
mod walk;

use linklab_track::instruments::Instruments;

/// Options of `linklab track`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    verb: Verb,
}

#[derive(clap::Subcommand, Debug)]
enum Verb {
    /// Measure a suite and store every figure with its samples and the run's stamp.
    #[command(
        after_help = "Example: linklab track run track/linklab.toml --repeat 3 --db track.sqlite"
    )]
    Run(run::Args),
    /// Compare two stored runs figure by figure; exit 3 when a figure is worse.
    #[command(after_help = compare::HELP)]
    Compare(compare::Args),
    /// Draw every figure's history (SVG charts) and the last two runs' comparison as HTML.
    #[command(after_help = "Example: linklab track report -o history.html")]
    Report(report::Args),
    /// Measure each commit of a range in its own worktree; name where each figure stepped.
    #[command(after_help = "Example: linklab track walk e937758..70bbdba --suite sizes.toml")]
    Walk(walk::Args),
    /// Store a run measured elsewhere (JSON: docs/track.md).
    #[command(after_help = "Example: linklab track import run.json")]
    Import(import::ImportArgs),
    /// Write a stored run as import's JSON (e.g. a baseline kept in a repository).
    #[command(after_help = "Example: linklab track export v1.2 -o track/baseline.json")]
    Export(import::ExportArgs),
    /// Write a stored run as a Markdown table between a file's markers (a README's figures).
    #[command(
        after_help = "Example: linklab track table baseline --file firmware/README.md --reference lwip --check"
    )]
    Table(table::Args),
    /// List the stored runs.
    Runs(db::DbArg),
}

/// Runs `linklab track`; `instruments` measure a suite's `[[device]]` and `[[sim]]` entries.
pub fn run(args: Args, instruments: &mut dyn Instruments) -> anyhow::Result<()> {
    match args.verb {
        Verb::Run(a) => run::run(a, instruments),
        Verb::Compare(a) => compare::run(a),
        Verb::Report(a) => report::run(a),
        Verb::Walk(a) => walk::run(a, instruments),
        Verb::Import(a) => import::import(a),
        Verb::Export(a) => import::export(a),
        Verb::Table(a) => table::run(a),
        Verb::Runs(db) => runs(db),
    }
}

/// `linklab track runs`: id, label, start time and commit of every stored run.
fn runs(db: db::DbArg) -> anyhow::Result<()> {
    let store = linklab_track::store::open(&db.db)?;
    for h in store.runs()? {
        let when = linklab_results::time::utc_time(h.started_unix as u64);
        println!("{:>4}  {:<24}  {}  {}", h.id, h.label, when, h.commit);
    }
    Ok(())
}
