//! `linklab track`: a memory for every figure. `run` measures a suite (firmware images in
//! QEMU, counted on their own ISA; the simulator) and stores every figure with its samples
//! and the run's stamp; `compare` judges HEAD against BASE figure by figure (exit 3 when one
//! is worse); `walk` measures each commit of a range in a worktree of its own and names the
//! commit where each figure stepped; `report` draws every figure's history. See
//! docs/track.md.

mod compare;
mod device;
mod figure;
mod history;
mod import;
mod live;
mod measure;
mod own_run;
mod postgres;
mod readme;
mod sqlite;
mod stamp;
mod store;
mod suite;
mod tables;
mod walk;

use std::path::PathBuf;

use anyhow::Context;

use compare::Thresholds;
use figure::Run;
use linklab_results::bail_usage;

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
    Run(measure::Args),
    /// Compare two stored runs figure by figure; exit 3 when a figure is worse.
    #[command(after_help = COMPARE_HELP)]
    Compare(CompareArgs),
    /// Draw every figure's history (SVG charts) and the last two runs' comparison as HTML.
    #[command(after_help = "Example: linklab track report -o history.html")]
    Report(history::Args),
    /// Measure each commit of a range in its own worktree; name where each figure stepped.
    #[command(after_help = "Example: linklab track walk e937758..70bbdba --suite sizes.toml")]
    Walk(walk::Args),
    /// Store a run measured elsewhere (JSON: docs/track.md).
    #[command(after_help = "Example: linklab track import run.json")]
    Import(import::Args),
    /// Write a stored run as import's JSON (e.g. a baseline kept in a repository).
    #[command(after_help = "Example: linklab track export v1.2 -o track/baseline.json")]
    Export(import::ExportArgs),
    /// Write a stored run as a Markdown table between a file's markers (a README's figures).
    #[command(
        after_help = "Example: linklab track table baseline --file firmware/README.md --reference lwip --check"
    )]
    Table(readme::Args),
    /// List the stored runs.
    Runs(store::DbArg),
}

const COMPARE_HELP: &str = "\
The rule, per kind of figure:
  exact (flash, static RAM, read from the ELF): any change counts; the bad way is worse.
  count (instructions per byte, stack peak): worse only when the two runs' ranges lie apart,
        the bad way, by more than --count-threshold percent of BASE's median AND by more
        than either run's own spread (highest sample less lowest).
  rate  (throughput, the simulator's rates): linklab probe's baseline rule, the same gap
        test with --rate-tolerance percent.
Better is the same test the good way. An entry that failed in HEAD but not in BASE is worse.
Exit 3 when a figure is worse (each named on stderr), 0 otherwise.

Examples:
  linklab track compare v0.1.0 HEAD-label --markdown comment.md
  linklab track compare --last 2 --bmf bencher.json";

/// Options of `linklab track compare`.
#[derive(clap::Args, Debug)]
pub struct CompareArgs {
    /// BASE's label (its latest run), then HEAD's.
    #[arg(value_name = "LABEL", num_args = 0..=2)]
    labels: Vec<String>,
    /// Compare the last N runs stored: the first of them with the last (N >= 2).
    #[arg(long, value_name = "N", conflicts_with = "labels",
          value_parser = linklab_results::values::ranged(2usize, 1000))]
    last: Option<usize>,
    /// Write the comparison as Markdown (a pull-request comment) to FILE.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Write HEAD's figures as bencher's JSON (BMF) to FILE.
    #[arg(long, value_name = "FILE")]
    bmf: Option<PathBuf>,
    /// Percent of BASE's median a count figure's runs must lie apart by.
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_COUNT_PCT,
          value_parser = linklab_results::values::ranged(0.0, 1000.0))]
    count_threshold: f64,
    /// Percent of BASE's median a rate's runs must lie apart by (probe's --tolerance).
    #[arg(long, value_name = "PCT", default_value_t = 10.0,
          value_parser = linklab_results::values::ranged(0.0, 1000.0))]
    rate_tolerance: f64,
    #[command(flatten)]
    db: store::DbArg,
}

/// The count threshold's default, percent: above the spread of an unchanged image's
/// instructions per byte across boots (docs/track.md, Noise: under 0.7 % for main, compact and
/// lwIP; the minimal image's 3.4 % received, its sent 5.8 % needs repeats).
pub const DEFAULT_COUNT_PCT: f64 = 5.0;

/// Runs `linklab track`.
pub fn run(args: Args) -> anyhow::Result<()> {
    match args.verb {
        Verb::Run(a) => measure::run(a),
        Verb::Compare(a) => compare_cmd(a),
        Verb::Report(a) => history::run(a),
        Verb::Walk(a) => walk::run(a),
        Verb::Import(a) => import::run(a),
        Verb::Export(a) => import::export(a),
        Verb::Table(a) => readme::run(a),
        Verb::Runs(db) => {
            let store = store::open(&db.db)?;
            for h in store.runs()? {
                let when = linklab_results::time::utc_time(h.started_unix as u64);
                println!("{:>4}  {:<24}  {}  {}", h.id, h.label, when, h.commit);
            }
            Ok(())
        }
    }
}

/// The two runs `compare` takes: by label, or the first and last of `--last N`.
fn chosen(a: &CompareArgs, store: &dyn store::Store) -> anyhow::Result<(Run, Run)> {
    match (a.last, a.labels.as_slice()) {
        (Some(n), _) => {
            let mut runs = store::last(store, n)?;
            let head = runs.pop().context("no run")?;
            Ok((runs.swap_remove(0), head))
        }
        (None, [base, head]) => Ok((store::by_label(store, base)?, store::by_label(store, head)?)),
        _ => bail_usage!("track compare: give BASE and HEAD labels, or --last N"),
    }
}

fn compare_cmd(a: CompareArgs) -> anyhow::Result<()> {
    let store = store::open(&a.db.db)?;
    let (base, head) = chosen(&a, store.as_ref())?;
    let t = Thresholds {
        count_pct: a.count_threshold,
        rate_pct: a.rate_tolerance,
    };
    let rows = compare::compare(&base, &head, t);
    let (b, h) = (&base.stamp.label, &head.stamp.label);
    print!("{}", tables::terminal(b, h, &rows));
    if let Some(path) = &a.markdown {
        std::fs::write(path, tables::markdown(b, h, &rows))
            .with_context(|| format!("--markdown: cannot write {}", path.display()))?;
    }
    if let Some(path) = &a.bmf {
        let text = serde_json::to_string_pretty(&tables::bmf(&head))?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("--bmf: cannot write {}", path.display()))?;
    }
    let worse: Vec<String> = rows
        .iter()
        .filter(|r| r.verdict.fails())
        .map(compare::Row::id)
        .collect();
    if !worse.is_empty() {
        eprintln!("linklab: worse than {b}: {}", worse.join(", "));
        std::process::exit(linklab_measure::probe::EXIT_WORSE);
    }
    Ok(())
}
