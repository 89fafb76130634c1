//! `linklab emu predict`: the simulator against the emulated firmware.

use linklab_emu::predict::{self, PredictOptions};
use linklab_results::values;

use super::args::{FixedRate, MeasureArgs};
use super::output::report;

/// Options of `linklab emu predict`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    measure: MeasureArgs,
    #[command(flatten)]
    rate: FixedRate,
    /// Boots of the image, 1..=20.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = values::ranged(1u32, 20))]
    runs: u32,
}

/// Runs `linklab emu predict`: a line per run as it ends, then the document.
pub fn run(args: Args) -> anyhow::Result<()> {
    let m = &args.measure;
    let runs = args.runs;
    let document = predict::run(
        &PredictOptions {
            image: m.target.choice("predict")?,
            line: m.line.options(),
            shift: args.rate.shift,
            runs,
        },
        &mut |n, run| eprintln!("{}", run.progress_line(n, runs)),
    )?;
    report(&document, m.json.as_deref())
}
