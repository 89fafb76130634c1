//! `linklab emu blast`: the raw ceiling, then bad checksums.

use std::path::PathBuf;

use linklab_emu::blast::{self, BlastOptions};
use linklab_perf::blast::MAX_DURATION_MS;
use linklab_results::values;

use super::args::ImageArgs;
use super::output::report;

/// Options of `linklab emu blast`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    target: ImageArgs,
    /// Milliseconds of the device's clock each blast lasts, 1..=2000.
    #[arg(long, value_name = "MS", default_value_t = 200,
          value_parser = values::ranged(1u16, MAX_DURATION_MS))]
    ms: u16,
    /// Write the figures as JSON to FILE too.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Runs `linklab emu blast`: the figures, then whether every frame was accounted for.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (document, verdict) = blast::run(&BlastOptions {
        image: args.target.choice("blast")?,
        ms: args.ms,
    })?;
    report(&document, args.json.as_deref())?;
    verdict
}
