//! `linklab emu chips`: the soft PHY counted on each chip's ISA, and the clock each chip
//! needs.

use std::path::PathBuf;

use linklab_emu::chips;
use linklab_results::values;

use super::output::write_json;

/// Options of `linklab emu chips`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Cycles per instruction the predictions assume, 0.5..=4.
    #[arg(long, value_name = "CPI", default_value_t = 1.0, value_parser = values::ranged(0.5f64, 4.0))]
    cpi: f64,
    /// Write the counts and predictions as JSON to FILE too.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Runs `linklab emu chips`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let run = chips::run(args.cpi)?;
    print!("{}", run.table());
    if let Some(path) = &args.json {
        write_json(&run.report()?, path)?;
    }
    Ok(())
}
