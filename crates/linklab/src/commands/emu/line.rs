//! `linklab emu line --tap NAME --socket PATH`: the soft-PHY line alone, for a device emulator
//! that connects to its unix socket; with `--frames`, whole Ethernet frames instead.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use linklab_emu::pin_line::{self, Carry, PinLineOptions};
use linklab_results::values;
use linklab_serve::serve::StopSignals;

use super::args::LineArgs;

/// Options of `linklab emu line`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// TAP interface for the device: created here, gone when it stops; must not exist yet.
    #[arg(long, value_name = "NAME", value_parser = values::interface_name)]
    tap: String,
    /// The unix socket to listen on for the device emulator (replaced if it exists).
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
    /// Seconds to wait for the emulator to connect, 1..=600.
    #[arg(long, value_name = "S", default_value_t = 60, value_parser = values::ranged(1u64, 600))]
    connect_timeout: u64,
    /// Carry whole Ethernet frames, unpaced, instead of line samples (for a device emulator
    /// that models its own MAC and line: emulators/rp2040js --board w5500-evb-pico).
    #[arg(long)]
    frames: bool,
    #[command(flatten)]
    line: LineArgs,
}

/// Runs the line until a signal or until the emulator closes the socket; prints the line's
/// counters then.
pub fn run(args: Args) -> anyhow::Result<()> {
    let carry = if args.frames {
        reject_sample_options(&args.line)?;
        Carry::Frames
    } else {
        let Some(line) = args.line.options().resolve(true)? else {
            anyhow::bail!("the line's options did not resolve");
        };
        Carry::Samples(line)
    };
    let options = PinLineOptions {
        tap: args.tap,
        socket: args.socket,
        connect_timeout: Duration::from_secs(args.connect_timeout),
        carry,
    };
    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    let listening = pin_line::listen(&options)?;
    println!("{}", listening.banner());
    let connected = listening.accept()?;
    println!("{}", connected.banner());
    let (counters, ended) = connected.serve(&signals)?;
    println!("{counters}");
    println!("linklab emu line: {ended}");
    Ok(())
}

/// `--frames` carries frames, not samples: a sample line's option with it is one usage line.
fn reject_sample_options(o: &LineArgs) -> anyhow::Result<()> {
    let given = [
        (o.oversample.is_some(), "--oversample"),
        (o.drift.is_some(), "--drift"),
        (o.jitter.is_some(), "--jitter"),
        (o.noise.is_some(), "--noise"),
        (o.no_pace, "--no-pace"),
        (o.bad_captures, "--bad-captures"),
    ];
    if let Some((_, flag)) = given.iter().find(|(on, _)| *on) {
        linklab_results::bail_usage!("{flag}: a sample line's option, not with --frames");
    }
    Ok(())
}
