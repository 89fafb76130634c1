//! `linklab emu line --tap NAME --socket PATH`: the soft-PHY line between a TAP and a device
//! emulator of another kind than QEMU: the pin-level RP2040 harness (emulators/rp2040js), which
//! connects to the unix socket and speaks the same framing as QEMU's `-netdev stream` (a
//! 4-byte big-endian length, then the bytes): to the device, one capture of line samples at
//! the receiver's oversampling per transmission; from it, the TX pin's samples at 2x of one
//! transmission. The line is [`crate::line::Line`], the code behind `--image soft-phy`.
//! With [`Carry::Frames`] (`--frames`), whole Ethernet frames instead
//! ([`crate::line::frames`]), for a device emulator that models its MAC and line itself (the
//! W5500-EVB-Pico harness).
//!
//! Three steps, each with a line to say: [`listen`] (the TAP made, the socket listening),
//! [`Listening::accept`] (the emulator connected, the line running), [`Connected::serve`]
//! (until a signal or the emulator leaves).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_serve::serve::StopSignals;
use linklab_tap::Tap;

use crate::line::frames::FrameLine;
use crate::line::{Line, LineSettings, Socket};
use crate::pin_spi::SpiBridge;

/// What `linklab emu line` takes.
#[derive(Clone, Debug)]
pub struct PinLineOptions {
    /// The TAP to create for the device; it must not exist yet.
    pub tap: String,
    /// The unix socket to listen on for the device emulator (replaced if it exists).
    pub socket: PathBuf,
    /// How long to wait for the emulator to connect.
    pub connect_timeout: Duration,
    /// What the line carries: line samples, or whole frames.
    pub carry: Carry,
}

/// What `linklab emu line` carries between the TAP and the emulator.
#[derive(Clone, Debug)]
pub enum Carry {
    /// Line samples, through the soft-PHY line with these settings.
    Samples(LineSettings),
    /// Whole Ethernet frames, unpaced (`--frames`: for a device emulator that models its
    /// own MAC and line).
    Frames,
    /// SPI transfers at `hz` from the harness's master model: the TAP bridged to
    /// linklab-serial's link over them ([`crate::pin_spi`]).
    Spi {
        /// The SPI clock.
        hz: u32,
    },
}

/// The line's TAP made and its socket listening.
pub struct Listening {
    options: PinLineOptions,
    tap: Tap,
    socket: Socket,
}

/// Makes the TAP and listens on the socket.
pub fn listen(options: &PinLineOptions) -> anyhow::Result<Listening> {
    let name = &options.tap;
    if std::path::Path::new("/sys/class/net").join(name).exists() {
        bail!(
            "--tap {name}: an interface of that name already exists; linklab emu only uses a TAP it creates (pick another name)"
        );
    }
    let tap = Tap::open(name).with_context(|| format!("cannot create TAP {name}"))?;
    let socket = Socket::bind_at(options.socket.clone())?;
    Ok(Listening {
        options: options.clone(),
        tap,
        socket,
    })
}

impl Listening {
    /// The line that says where the line waits for the emulator.
    pub fn banner(&self) -> String {
        let o = &self.options;
        format!(
            "linklab emu line: TAP {} {}, waiting for the emulator on {}",
            o.tap,
            match &o.carry {
                Carry::Samples(line) => format!("at {}x", line.oversample),
                Carry::Frames => "with whole frames".to_string(),
                Carry::Spi { hz } => format!("over SPI at {} MHz", f64::from(*hz) / 1e6),
            },
            o.socket.display()
        )
    }

    /// Waits for the emulator to connect, then runs the line.
    pub fn accept(self) -> anyhow::Result<Connected> {
        let stream = self.socket.accept(self.options.connect_timeout)?;
        let line = match &self.options.carry {
            Carry::Samples(settings) => Running::Samples(Line::start(settings, self.tap, stream)?),
            Carry::Frames => Running::Frames(FrameLine::start(self.tap, stream)?),
            Carry::Spi { hz } => {
                Running::Spi(SpiBridge::start(self.tap, &self.options.tap, stream, *hz)?)
            }
        };
        Ok(Connected {
            line,
            options: self.options,
            _socket: self.socket,
        })
    }
}

/// The emulator connected, the line running.
pub struct Connected {
    line: Running,
    options: PinLineOptions,
    _socket: Socket,
}

impl Connected {
    /// The line that says the emulator connected, and how the line runs.
    pub fn banner(&self) -> String {
        format!(
            "linklab emu line: connected ({})",
            match &self.options.carry {
                Carry::Samples(line) if line.no_pace => "unpaced",
                Carry::Samples(_) => "paced at 10 Mbit/s",
                Carry::Frames => "frames, unpaced",
                Carry::Spi { .. } => "linklab-serial's link over the SPI master's transfers",
            }
        )
    }

    /// Runs the line until one of `signals` or until the emulator closes the socket; returns
    /// the line's counters (one line) and how it ended.
    pub fn serve(self, signals: &StopSignals) -> anyhow::Result<(String, String)> {
        let ended = loop {
            if let Some(sig) = signals.take() {
                break format!("stopped by signal {sig}");
            }
            if self.line.broken() {
                break "the emulator closed the socket".to_string();
            }
            linklab_serve::serve::wait_readable(
                &[std::os::fd::AsFd::as_fd(signals)],
                Some(Duration::from_millis(200)),
            )?;
        };
        Ok((self.line.stop(), ended))
    }

    /// Stops the line; its counters' summary line.
    pub fn stop(self) -> String {
        self.line.stop()
    }
}

/// The line running: samples, or whole frames.
enum Running {
    Samples(Line),
    Frames(FrameLine),
    Spi(SpiBridge),
}

impl Running {
    /// True if the emulator closed the socket.
    fn broken(&self) -> bool {
        match self {
            Running::Samples(l) => l.broken(),
            Running::Frames(l) => l.broken(),
            Running::Spi(b) => b.broken(),
        }
    }

    /// Stops it; its counters' summary line.
    fn stop(self) -> String {
        match self {
            Running::Samples(l) => l.stop().summary(),
            Running::Frames(l) => l.stop().summary(),
            Running::Spi(b) => b.stop(),
        }
    }
}
