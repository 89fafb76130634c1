//! `linklab emu phy10 BOARD`: linklab-phy10's decoder counted on the board's ISA.

use std::path::PathBuf;

use anyhow::bail;
use linklab_emu::board::Board;
use linklab_emu::{phy10, phy10_boards};

use super::output::write_json;

/// Options of `linklab emu phy10`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The emulated board: one with a phy10-bench image (riscv32-virt, microbit, mps2-an505).
    #[arg(value_name = "BOARD", value_parser = phy10_boards::by_name)]
    board: Board,
    /// This ELF file of the phy10-bench image instead of building it.
    #[arg(long, value_name = "FILE")]
    elf: Option<PathBuf>,
    /// Write the figures as JSON to FILE too.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Runs `linklab emu phy10`: the table; fails if a frame was not decoded bit-exact.
pub fn run(args: Args) -> anyhow::Result<()> {
    let run = phy10::measure(&args.board, args.elf.as_deref())?;
    print!("{}", phy10::table(&args.board, &run.cases, &run.parts));
    if let Some(path) = &args.json {
        write_json(&run.report, path)?;
    }
    let wrong = run.report.frames_not_decoded();
    if wrong > 0 {
        bail!("phy10: {wrong} frames were not decoded bit-exact");
    }
    Ok(())
}
