//! `linklab emu throughput`: stock iperf3 both ways and curl, free-running and at a fixed
//! instruction rate.

use linklab_emu::throughput::{self, ThroughputOptions};

use super::args::{FixedRate, MeasureArgs};
use super::output::report;

/// Options of `linklab emu throughput`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    measure: MeasureArgs,
    /// The second run's fixed rate.
    #[command(flatten)]
    rate: FixedRate,
}

/// Runs `linklab emu throughput`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let m = &args.measure;
    let document = throughput::run(&ThroughputOptions {
        image: m.target.choice(),
        line: m.line.options(),
        shift: args.rate.shift,
    })?;
    for note in document.behind_notes() {
        eprintln!("linklab emu throughput: {note}");
    }
    report(&document, m.json.as_deref())
}
