//! `linklab track run SUITE`: every entry of a suite measured, then the run stored in one
//! transaction (a run stopped before the end stores nothing), each figure printed.

use std::path::PathBuf;

use linklab_track::instruments::Instruments;
use linklab_track::measure::{self, RunOptions};
use linklab_track::{store, suite};

use super::db::DbArg;
use super::progress::tell;

/// Options of `linklab track run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The suite file (TOML: docs/track.md).
    #[arg(value_name = "SUITE")]
    suite: PathBuf,
    /// The run's label (default: the suite's tree's commit, `-dirty` with changes). A label
    /// given twice makes a second run of it; compare takes the latest.
    #[arg(long, value_name = "L")]
    label: Option<String>,
    /// Samples per counted figure: boots of each image, and probe runs of each device
    /// (`linklab probe --repeat N`).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = linklab_results::values::ranged(1u32, 50))]
    repeat: u32,
    /// Check the suite and print what would be measured, measuring nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    db: DbArg,
}

/// Runs `linklab track run`.
pub fn run(args: Args, instruments: &mut dyn Instruments) -> anyhow::Result<()> {
    let suite = suite::load(&args.suite)?;
    if args.dry_run {
        print!("{}", measure::plan(&suite));
        return Ok(());
    }
    let mut store = store::open(&args.db.db)?;
    let options = RunOptions {
        label: args.label,
        repeat: args.repeat,
    };
    let run = measure::measure(&suite, &options, instruments, &mut tell);
    let id = store.insert_run(&run)?;
    for e in &run.entries {
        match &e.failed {
            Some(why) => println!("{}: failed: {why}", e.name),
            None => {
                for f in &e.figures {
                    println!(
                        "{}: {} {} {}",
                        e.name,
                        f.name,
                        measure::samples_text(&f.samples),
                        f.unit
                    );
                }
            }
        }
    }
    println!(
        "stored run {id} labelled {} in {}",
        run.stamp.label,
        args.db.shown()
    );
    Ok(())
}
