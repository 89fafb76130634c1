//! `linklab emu line --tap NAME --socket PATH`: the soft-PHY line between a TAP and a device
//! emulator of another kind than QEMU: the pin-level RP2040 harness (emulators/rp2040js), which
//! connects to the unix socket and speaks the same framing as QEMU's `-netdev stream` (a
//! 4-byte big-endian length, then the bytes): to the device, one capture of line samples at
//! the receiver's oversampling per transmission; from it, the TX pin's samples at 2x of one
//! transmission. The line is [`super::line::Line`], the code behind `--image soft-phy`.
//! With `--frames`, whole Ethernet frames instead ([`super::line::frames`]), for a device
//! emulator that models its MAC and line itself (the W5500-EVB-Pico harness).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_tap::Tap;

use super::line::frames::FrameLine;
use super::line::{Line, LineOptions, Socket};
use linklab_results::values;
use linklab_serve::serve::StopSignals;

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
    // The sample line's settings; None for `--frames`, which takes none of them.
    let line_args = if args.frames {
        reject_sample_options(&args.line)?;
        None
    } else {
        let Some(line_args) = args.line.resolve(true)? else {
            bail!("the line's options did not resolve");
        };
        Some(line_args)
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
        "linklab emu line: TAP {} {}, waiting for the emulator on {}",
        args.tap,
        match &line_args {
            Some(a) => format!("at {}x", a.oversample),
            None => "with whole frames".to_string(),
        },
        args.socket.display()
    );
    let stream = socket.accept(Duration::from_secs(args.connect_timeout))?;
    let (line, mode) = match &line_args {
        Some(a) => (
            Running::Samples(Line::start(a, tap, stream)?),
            if a.no_pace {
                "unpaced"
            } else {
                "paced at 10 Mbit/s"
            },
        ),
        None => (
            Running::Frames(FrameLine::start(tap, stream)?),
            "frames, unpaced",
        ),
    };
    println!("linklab emu line: connected ({mode})");
    let ended = loop {
        if let Some(sig) = signals.take() {
            break format!("stopped by signal {sig}");
        }
        if line.broken() {
            break "the emulator closed the socket".to_string();
        }
        linklab_serve::serve::wait_readable(
            &[std::os::fd::AsFd::as_fd(&signals)],
            Some(Duration::from_millis(200)),
        )?;
    };
    println!("{}", line.stop());
    println!("linklab emu line: {ended}");
    Ok(())
}

/// `--frames` carries frames, not samples: a sample line's option with it is one usage line.
fn reject_sample_options(o: &LineOptions) -> anyhow::Result<()> {
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

/// The line running: samples, or whole frames (`--frames`).
enum Running {
    Samples(Line),
    Frames(FrameLine),
}

impl Running {
    /// True if the emulator closed the socket.
    fn broken(&self) -> bool {
        match self {
            Running::Samples(l) => l.broken(),
            Running::Frames(l) => l.broken(),
        }
    }

    /// Stops it; its counters' summary line.
    fn stop(self) -> String {
        match self {
            Running::Samples(l) => l.stop().summary(),
            Running::Frames(l) => l.stop().summary(),
        }
    }
}
