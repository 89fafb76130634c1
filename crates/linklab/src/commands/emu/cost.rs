//! `linklab emu cost`: what the image costs, counted on its own ISA.

use linklab_emu::cost::{self, CostOptions};

use super::args::MeasureArgs;
use super::output::report;

/// Options of `linklab emu cost`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    measure: MeasureArgs,
    /// Move the bytes with stock iperf 2 instead (`iperf -c -n 4M`, and `-R`, against the
    /// device's port 5001): what its iperf 2 server costs per byte.
    #[arg(long)]
    iperf2: bool,
}

/// Runs `linklab emu cost`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let m = &args.measure;
    let document = cost::run(&CostOptions {
        image: m.target.choice("cost")?,
        line: m.line.options(),
        iperf2: args.iperf2,
    })?;
    report(&document, m.json.as_deref())
}
