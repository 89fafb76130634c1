//! `linklab track compare BASE HEAD`: two stored runs figure by figure, as a table (and as
//! Markdown and bencher's JSON where asked); exit 3 naming each figure that is worse.

use std::path::PathBuf;

use anyhow::Context;
use linklab_results::bail_usage;
use linklab_track::compare::{self, Thresholds, DEFAULT_COUNT_PCT, DEFAULT_RATE_PCT};
use linklab_track::run::Run;
use linklab_track::store::{self, Store};
use linklab_track::tables;

use super::db::DbArg;

/// The rule, for `--help`.
pub const HELP: &str = "\
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
pub struct Args {
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
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_RATE_PCT,
          value_parser = linklab_results::values::ranged(0.0, 1000.0))]
    rate_tolerance: f64,
    #[command(flatten)]
    db: DbArg,
}

/// Runs `linklab track compare`.
pub fn run(a: Args) -> anyhow::Result<()> {
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
    let worse = compare::worse(&rows);
    if !worse.is_empty() {
        eprintln!("linklab: worse than {b}: {}", worse.join(", "));
        std::process::exit(linklab_measure::probe::EXIT_WORSE);
    }
    Ok(())
}

/// The two runs compared: by label, or the first and last of `--last N`.
fn chosen(a: &Args, store: &dyn Store) -> anyhow::Result<(Run, Run)> {
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
