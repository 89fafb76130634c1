//! `linklab emu line --tap NAME --socket PATH`: the soft-PHY line between a TAP and a device
//! emulator of another kind than QEMU: the pin-level RP2040 harness (emulators/rp2040js), which
//! connects to the unix socket and speaks the same framing as QEMU's `-netdev stream` (a
//! 4-byte big-endian length, then the bytes): to the device, one capture of line samples at
//! the receiver's oversampling per transmission; from it, the TX pin's samples at 2x of one
//! transmission. The line is [`super::line::Line`], the code behind `--image soft-phy`.
//! With `--frames`, whole Ethernet frames instead ([`super::line::frames`]), for a device
//! emulator that models its MAC and line itself (the W5500-EVB-Pico harness).

use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_tap::Tap;

use super::line::frames::FrameLine;
use super::line::{Line, LineOptions, Socket};
use crate::serve::StopSignals;
use crate::values;

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
    line: LineOptions,
}

/// Runs the line until a signal or until the emulator closes the socket; prints the line's
/// counters then.
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.frames {
        return run_frames(args);
    }
    let Some(line_args) = args.line.resolve(true)? else {
        bail!("the line's options did not resolve");
    };
    if std::path::Path::new("/sys/class/net")
        .join(&args.tap)
        .exists()
    {
        bail!(
            "--tap {}: an interface of that name already exists; linklab emu only uses a TAP it creates (pick another name)",
            args.tap
        );
    }
    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    let tap = Tap::open(&args.tap).with_context(|| format!("cannot create TAP {}", args.tap))?;
    let socket = Socket::bind_at(args.socket.clone())?;
    println!(
        "linklab emu line: TAP {} at {}x, waiting for the emulator on {}",
        args.tap,
        line_args.oversample,
        args.socket.display()
    );
    let stream = socket.accept(Duration::from_secs(args.connect_timeout))?;
    let line = Line::start(&line_args, tap, stream)?;
    println!(
        "linklab emu line: connected ({})",
        if line_args.no_pace {
            "unpaced"
        } else {
            "paced at 10 Mbit/s"
        }
    );
    let ended = loop {
        if let Some(sig) = signals.take() {
            break format!("stopped by signal {sig}");
        }
        if line.broken() {
            break "the emulator closed the socket".to_string();
        }
        crate::serve::wait_readable(&[signals.as_raw_fd()], Some(Duration::from_millis(200)))?;
    };
    let counters = line.stop();
    println!("{}", counters.summary());
    println!("linklab emu line: {ended}");
    Ok(())
}

/// `--frames`: the frame line until a signal or until the emulator closes the socket.
fn run_frames(args: Args) -> anyhow::Result<()> {
    let o = &args.line;
    let sample_options = [
        (o.oversample.is_some(), "--oversample"),
        (o.drift.is_some(), "--drift"),
        (o.jitter.is_some(), "--jitter"),
        (o.noise.is_some(), "--noise"),
        (o.no_pace, "--no-pace"),
        (o.bad_captures, "--bad-captures"),
    ];
    if let Some((_, flag)) = sample_options.iter().find(|(on, _)| *on) {
        crate::values::bail_usage!("{flag}: a sample line's option, not with --frames");
    }
    if std::path::Path::new("/sys/class/net")
        .join(&args.tap)
        .exists()
    {
        bail!(
            "--tap {}: an interface of that name already exists; linklab emu only uses a TAP it creates (pick another name)",
            args.tap
        );
    }
    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    let tap = Tap::open(&args.tap).with_context(|| format!("cannot create TAP {}", args.tap))?;
    let socket = Socket::bind_at(args.socket.clone())?;
    println!(
        "linklab emu line: TAP {}, whole frames, waiting for the emulator on {}",
        args.tap,
        args.socket.display()
    );
    let stream = socket.accept(Duration::from_secs(args.connect_timeout))?;
    let line = FrameLine::start(tap, stream)?;
    println!("linklab emu line: connected (frames, unpaced)");
    let ended = loop {
        if let Some(sig) = signals.take() {
            break format!("stopped by signal {sig}");
        }
        if line.broken() {
            break "the emulator closed the socket".to_string();
        }
        crate::serve::wait_readable(&[signals.as_raw_fd()], Some(Duration::from_millis(200)))?;
    };
    let counters = line.stop();
    println!("{}", counters.summary());
    println!("linklab emu line: {ended}");
    Ok(())
}
