//! `linklab emu throughput`: stock iperf3 both ways and curl, free-running and at a fixed
//! instruction rate.

use linklab_emu::pin_throughput::{self, PinThroughputOptions};
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
    let document = match m.target.pin_board() {
        // A pin-level board: one run, in the chip's clock (no fixed rate: rp2040js counts
        // the chip's own cycles).
        Some(board) if m.line.options() != Default::default() => {
            linklab_results::bail_usage!(
                "{}: the line's options are not taken at the pin level (its line is the harness's)",
                board.name
            )
        }
        Some(board) => pin_throughput::run(&PinThroughputOptions {
            board,
            image: m
                .target
                .image
                .as_ref()
                .map(|i| i.to_string_lossy().into_owned()),
            elf: m.target.elf.clone(),
        })?,
        None => throughput::run(&ThroughputOptions {
            image: m.target.choice("throughput")?,
            line: m.line.options(),
            shift: args.rate.shift,
        })?,
    };
    for note in document.behind_notes() {
        eprintln!("linklab emu throughput: {note}");
    }
    report(&document, m.json.as_deref())
}
