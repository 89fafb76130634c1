//! `linklab emu line --tap NAME --socket PATH`: the soft-PHY line between a TAP and a device
//! emulator of another kind than QEMU: the pin-level RP2040 harness (emulators/rp2040js), which
//! connects to the unix socket and speaks the same framing as QEMU's `-netdev stream` (a
//! 4-byte big-endian length, then the bytes): to the device, one capture of line samples at
//! the receiver's oversampling per transmission; from it, the TX pin's samples at 2x of one
//! transmission. The line is [`crate::line::Line`], the code behind `--image soft-phy`.
//! With [`Carry::Frames`] (`--frames`), whole Ethernet frames instead
//! ([`crate::line::frames`]), for a device emulator that models its MAC and line itself (the
//! W5500-EVB-Pico harness). With [`Carry::Usb`], no line and no TAP: the Pico's USB port, a
//! pseudo-terminal relayed to the harness's model of the host's cdc-acm ([`crate::usb_port`]).
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
use crate::usb_port::{Relay, UsbPort};

/// What `linklab emu line` takes.
#[derive(Clone, Debug)]
pub struct PinLineOptions {
    /// The TAP to create for the device; it must not exist yet (none with [`Carry::Usb`]).
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
    /// The device's USB port as a pseudo-terminal (a symbolic link to it at this path, if
    /// any), for a harness that models the USB host.
    Usb(Option<PathBuf>),
}

/// Where the emulator's side ends on the host: a TAP, or the USB port's pseudo-terminal.
enum HostEnd {
    Tap(Tap),
    Port(UsbPort),
}

/// The line's TAP made and its socket listening.
pub struct Listening {
    options: PinLineOptions,
    end: HostEnd,
    socket: Socket,
}

/// Makes the TAP (or the USB port's pseudo-terminal) and listens on the socket.
pub fn listen(options: &PinLineOptions) -> anyhow::Result<Listening> {
    if let Carry::Usb(link) = &options.carry {
        let port = UsbPort::make(link.as_deref())?;
        let socket = Socket::bind_at(options.socket.clone())?;
        return Ok(Listening {
            options: options.clone(),
            end: HostEnd::Port(port),
            socket,
        });
    }
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
        end: HostEnd::Tap(tap),
        socket,
    })
}

impl Listening {
    /// The line that says where the line waits for the emulator.
    pub fn banner(&self) -> String {
        let o = &self.options;
        let end = match &self.end {
            HostEnd::Tap(_) => format!("TAP {}", o.tap),
            HostEnd::Port(port) => format!("USB port {}", port.path().display()),
        };
        format!(
            "linklab emu line: {end} {}, waiting for the emulator on {}",
            match &o.carry {
                Carry::Samples(line) => format!("at {}x", line.oversample),
                Carry::Frames => "with whole frames".to_string(),
                Carry::Usb(_) => "relayed to the host's cdc-acm".to_string(),
            },
            o.socket.display()
        )
    }

    /// The USB port's path, for a board whose host end is one.
    pub fn usb_port(&self) -> Option<PathBuf> {
        match &self.end {
            HostEnd::Port(port) => Some(port.path().to_path_buf()),
            HostEnd::Tap(_) => None,
        }
    }

    /// Waits for the emulator to connect, then runs the line.
    pub fn accept(self) -> anyhow::Result<Connected> {
        let stream = self.socket.accept(self.options.connect_timeout)?;
        let line = match (&self.options.carry, self.end) {
            (Carry::Samples(settings), HostEnd::Tap(tap)) => {
                Running::Samples(Line::start(settings, tap, stream)?)
            }
            (Carry::Frames, HostEnd::Tap(tap)) => Running::Frames(FrameLine::start(tap, stream)?),
            (Carry::Usb(_), HostEnd::Port(port)) => Running::Usb(port.relay(stream)?),
            _ => bail!("the line's carry and its host end do not match"),
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
                Carry::Usb(_) => "the USB port relayed",
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

/// The line running: samples, or whole frames, or the USB port's relay.
enum Running {
    Samples(Line),
    Frames(FrameLine),
    Usb(Relay),
}

impl Running {
    /// True if the emulator closed the socket.
    fn broken(&self) -> bool {
        match self {
            Running::Samples(l) => l.broken(),
            Running::Frames(l) => l.broken(),
            Running::Usb(r) => r.broken(),
        }
    }

    /// Stops it; its counters' summary line.
    fn stop(self) -> String {
        match self {
            Running::Samples(l) => l.stop().summary(),
            Running::Frames(l) => l.stop().summary(),
            Running::Usb(r) => r.stop(),
        }
    }
}
