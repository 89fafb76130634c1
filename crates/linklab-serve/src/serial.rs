//! `linklab serial`: linklab-serial's reliable framed link on a serial port (a UART, a
//! USB-serial adapter, USB-CDC, or one side of a pseudo-terminal pair) or on an SPI bus this
//! host masters (a Linux spidev device, or the emulated Pico's: [`spi`]), in one of three modes:
//!
//! * `--tap NAME --ip ADDR/PREFIX`: bridge the link to a TAP whose kernel side gets the
//!   address, so stock ping, curl and iperf3 run over the serial line;
//! * `--serve --ip ADDR/PREFIX`: the device side on a host — smoltcp over the link running
//!   the same apps as `linklab serve` (linklab-perf's DeviceApps);
//! * `--selftest [--json FILE]`: the link's self-test against whatever runs a link at the
//!   other end (echoes need no app there): goodput against the raw byte rate, loss before
//!   recovery, retransmissions, CRC errors, round-trip and inter-arrival histograms per size.

mod bridge;
mod device;
mod port;
mod selftest;
pub mod spi;
pub mod spi_emu;
pub mod spidev;
mod tty;

pub use bridge::{Stop, StopPipe};
/// The payload sizes the self-test takes, smallest and largest.
pub use linklab_serial::{selftest::MIN_SIZE, MAX_PAYLOAD};
pub use port::{Line, SerialLink};
pub use selftest::Options as SelfTestOptions;
pub use tty::{baud, BAUDS};

use std::net::Ipv4Addr;
use std::os::unix::net::UnixStream;

use anyhow::Context;

use crate::serve::StopSignals;
use linklab_results::serial::SerialReport;
use linklab_serial::Config;
use port::Port;
use tty::{Tty, TtyLine};

/// What `linklab serial` runs on its line.
#[derive(Debug, Clone)]
pub enum Mode {
    /// The link bridged to TAP `name`, its kernel side at `ip/prefix`.
    Tap {
        /// The TAP (created, and removed at exit).
        name: String,
        /// The kernel side's address.
        ip: Ipv4Addr,
        /// Its prefix length.
        prefix: u8,
    },
    /// The device side: smoltcp and the apps of `linklab serve` at `ip/prefix`.
    Serve {
        /// The device's address.
        ip: Ipv4Addr,
        /// Its prefix length.
        prefix: u8,
        /// The device's MAC address.
        mac: [u8; 6],
    },
    /// The link's self-test against the other end.
    SelfTest(SelfTestOptions),
}

/// The line the link runs on.
#[derive(Debug)]
pub enum Transport {
    /// A serial port or terminal at a standard baud rate (8N1).
    Tty {
        /// Its path.
        dev: String,
        /// Its rate, a standard one ([`baud`]).
        baud: u32,
    },
    /// A Linux spidev device this host masters, the device's READY and REQUEST on GPIO lines.
    Spidev {
        /// Its path, e.g. /dev/spidev0.0.
        dev: String,
        /// The SPI clock.
        hz: u32,
        /// The device's pins.
        pins: spidev::GpioPins,
    },
    /// The emulated Pico's SPI, its master the harness's model: the harness's socket,
    /// connected (the CLI boots the board), the clock, and the board's name.
    Emulated {
        /// The harness's socket.
        stream: UnixStream,
        /// The SPI clock.
        hz: u32,
        /// What the board is, for the banner.
        what: String,
    },
}

/// The line and what to run on it.
#[derive(Debug)]
pub struct Options {
    /// The line.
    pub transport: Transport,
    /// What to run.
    pub mode: Mode,
}

/// The link's timers over SPI: those of a 10 MHz line's byte rate, without pacing (the host
/// picks the clock, and the link never waits on a guessed rate).
pub fn spi_config() -> Config {
    Config {
        line_bytes_per_s: 0,
        ..Config::for_line_rate(1_250_000)
    }
}

/// Opens the line of `transport`, with the link's timers for it.
pub fn open(transport: Transport) -> anyhow::Result<(Box<dyn Line>, Config)> {
    Ok(match transport {
        Transport::Tty { dev, baud } => {
            let tty = Tty::open(&dev, baud)?;
            (
                Box::new(TtyLine::new(tty, &dev, baud)),
                Config::for_line_rate(u64::from(baud) / 10),
            )
        }
        Transport::Spidev { dev, hz, pins } => {
            let bus = spidev::SpidevBus::open(&dev, hz, &pins)?;
            (Box::new(spi::SpiLine::new(bus)), spi_config())
        }
        Transport::Emulated { stream, hz, what } => {
            let bus = spi_emu::EmuBus::new(stream, hz, &what)?;
            (Box::new(spi::SpiLine::new(bus)), spi_config())
        }
    })
}

/// Runs `linklab serial` until a signal (the bridge, the device side) or to the end of the
/// self-test, whose document it returns.
pub fn run(options: Options) -> anyhow::Result<Option<SerialReport>> {
    let Options { transport, mode } = options;
    let (line, config) = open(transport)?;
    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    run_on(line, config, &mode, &signals)
}

/// Runs `mode` on `line` until `stop` (the bridge, the device side) or to the end of the
/// self-test.
pub fn run_on<S: Stop>(
    line: Box<dyn Line>,
    config: Config,
    mode: &Mode,
    stop: &S,
) -> anyhow::Result<Option<SerialReport>> {
    let mut port = Port::new(line, config);
    match mode {
        Mode::Tap { name, ip, prefix } => {
            bridge::run(&mut port, name, Some((*ip, *prefix)), stop).map(|()| None)
        }
        Mode::Serve { ip, prefix, mac } => {
            device::run(&mut port, *ip, *prefix, *mac, stop).map(|()| None)
        }
        Mode::SelfTest(options) => selftest::run(&mut port, options, stop).map(Some),
    }
}

/// Bridges the link on the emulated Pico's SPI (the harness's connected `stream`, clocked at
/// `hz`) to `tap` (named `name`, opened and left unaddressed by the caller), until `stop`;
/// the link's counters as one line.
pub fn bridge_spi_emu<S: Stop>(
    stream: UnixStream,
    hz: u32,
    what: &str,
    tap: linklab_tap::Tap,
    name: &str,
    stop: &S,
) -> anyhow::Result<String> {
    let bus = spi_emu::EmuBus::new(stream, hz, what)?;
    let mut port = Port::new(Box::new(spi::SpiLine::new(bus)), spi_config());
    bridge::run_on_tap(&mut port, tap, name, None, stop)?;
    Ok(counters_line(&port))
}

/// Bridges the link on pseudo-terminal `pty` (a serial image in QEMU) to TAP `tap`, left
/// unaddressed for the caller to configure, until a signal. The link runs at the rate the
/// firmware assumes, `linklab_firmware::serial::SERIAL_BAUD` (4 Mbaud), with the timers of
/// [`emulated_uart_config`].
pub fn bridge_pty(pty: &str, tap: &str, signals: &StopSignals) -> anyhow::Result<()> {
    const FIRMWARE_BAUD: u32 = 4_000_000;
    let tty = Tty::open(pty, FIRMWARE_BAUD)?;
    let line = Box::new(TtyLine::new(tty, pty, FIRMWARE_BAUD));
    let mut port = Port::new(line, emulated_uart_config(u64::from(FIRMWARE_BAUD) / 10));
    bridge::run(&mut port, tap, None, signals)
}

/// The link's timers towards an emulated board's UART of nominally `bytes_per_second`: a
/// retransmission timeout of 1 to 10 s, adapted to the measured round trips between.
///
/// An emulated UART takes bytes at the pace of the emulator's main loop, not at its baud
/// rate: QEMU's CMSDK UART model moves one byte per turn, tens of kB/s on a quiet host and a
/// few kB/s beside CPU hogs. The link's window (8 frames, ~12 KB) then waits seconds in the
/// pseudo-terminal, where a real line's timers ([`Config::for_line_rate`]: 7.7 ms to 2 s at
/// 400 kB/s) expire before the acknowledgements come, and every frame is sent again behind
/// the same queue.
/// A pseudo-terminal loses no byte (only the device's receive path can drop a frame), so a
/// retransmission may wait a second, and the ceiling outlasts any queue the window builds.
pub fn emulated_uart_config(bytes_per_second: u64) -> Config {
    Config {
        rto_initial_us: 1_000_000,
        rto_min_us: 1_000_000,
        rto_max_us: 10_000_000,
        ..Config::for_line_rate(bytes_per_second)
    }
}

/// The link's counters as `name value` pairs on one line, with the conservation verdict.
fn counters_line(port: &Port) -> String {
    let c = port.link.counters();
    let fields: Vec<String> = c
        .fields()
        .iter()
        .filter(|(_, v)| *v != 0)
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let law = match c.check_conservation() {
        Ok(()) => "conserved".to_string(),
        Err(e) => format!("NOT conserved: {e}"),
    };
    format!("link: {} | {law}", fields.join(" "))
}
