//! `linklab track walk A..B --suite SUITE`: each commit of a range measured in a worktree of
//! its own and stored; then, per figure, the commits where it stepped.

use std::path::PathBuf;

use linklab_track::compare::{Thresholds, DEFAULT_COUNT_PCT, DEFAULT_RATE_PCT};
use linklab_track::instruments::Instruments;
use linklab_track::walk::{self, WalkEvent, WalkOptions};
use linklab_track::{store, suite};

use super::db::DbArg;
use super::progress::tell;

/// Options of `linklab track walk`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The commits: A..B walks A, then every commit after it up to B (first parents).
    #[arg(value_name = "A..B")]
    range: String,
    /// The suite run at each commit (its `build` builds the commit's tree).
    #[arg(long, value_name = "SUITE")]
    suite: PathBuf,
    /// Samples per counted figure at each commit.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = linklab_results::values::ranged(1u32, 50))]
    repeat: u32,
    /// The cargo target folder every worktree's build shares (CARGO_TARGET_DIR); by default
    /// one of the walk's own, removed at its end.
    #[arg(long, value_name = "DIR")]
    target_dir: Option<PathBuf>,
    /// Percent of the earlier median a count figure must move by to be a step.
    #[arg(long, value_name = "PCT", default_value_t = DEFAULT_COUNT_PCT,
          value_parser = linklab_results::values::ranged(0.0, 1000.0))]
    count_threshold: f64,
    #[command(flatten)]
    db: DbArg,
}

/// Runs `linklab track walk`.
pub fn run(args: Args, instruments: &mut dyn Instruments) -> anyhow::Result<()> {
    let suite = suite::load(&args.suite)?;
    let options = WalkOptions {
        range: args.range,
        repeat: args.repeat,
        target_dir: args.target_dir,
    };
    let mut store = store::open(&args.db.db)?;
    let measured = walk::walk(&suite, &options, store.as_mut(), instruments, &mut print)?;
    let t = Thresholds {
        count_pct: args.count_threshold,
        rate_pct: DEFAULT_RATE_PCT,
    };
    print!("{}", walk::steps(&measured, t));
    Ok(())
}

/// Each commit's line as the walk goes (an entry that failed at a commit on stderr).
fn print(event: WalkEvent<'_>) {
    match event {
        WalkEvent::Measuring(p) => tell(p),
        WalkEvent::Measured { commit, run } => {
            if let Some(e) = run.entries.iter().find(|e| e.failed.is_some()) {
                let why = e.failed.as_deref().unwrap_or("");
                eprintln!("{commit}: {} failed: {why}", e.name);
            }
            println!("{commit}: measured ({})", walk::summary(run));
        }
        WalkEvent::BuildFailed { commit, error } => {
            println!("{commit}: build failed: {error:#}");
        }
    }
}
