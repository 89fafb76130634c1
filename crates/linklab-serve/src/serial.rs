//! `linklab serial`: linklab-serial's reliable framed link on a serial port (a UART, a
//! USB-serial adapter, USB-CDC, or one side of a pseudo-terminal pair), in one of three modes:
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
mod tty;

/// The payload sizes the self-test takes, smallest and largest.
pub use linklab_serial::{selftest::MIN_SIZE, MAX_PAYLOAD};
pub use selftest::Options as SelfTestOptions;
pub use tty::{baud, BAUDS};

use std::net::Ipv4Addr;

use anyhow::Context;

use crate::serve::StopSignals;
use linklab_results::serial::SerialReport;
use linklab_serial::Config;
use port::Port;
use tty::Tty;

/// What `linklab serial` runs on its port.
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

/// The port, its line rate and what to run on it.
#[derive(Debug, Clone)]
pub struct Options {
    /// The serial port or terminal.
    pub dev: String,
    /// Its line rate in baud (8N1), a standard rate ([`baud`]).
    pub baud: u32,
    /// What to run.
    pub mode: Mode,
}

/// Runs `linklab serial` until a signal (the bridge, the device side) or to the end of the
/// self-test, whose document it returns.
pub fn run(options: &Options) -> anyhow::Result<Option<SerialReport>> {
    let (dev, baud) = (options.dev.as_str(), options.baud);
    let tty = Tty::open(dev, baud)?;
    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    let mut port = Port::new(tty, dev, baud, Config::for_line_rate(u64::from(baud) / 10));
    match &options.mode {
        Mode::Tap { name, ip, prefix } => {
            bridge::run(&mut port, name, Some((*ip, *prefix)), &signals).map(|()| None)
        }
        Mode::Serve { ip, prefix, mac } => {
            device::run(&mut port, *ip, *prefix, *mac, &signals).map(|()| None)
        }
        Mode::SelfTest(options) => selftest::run(&mut port, dev, baud, options, &signals).map(Some),
    }
}

/// Bridges the link on pseudo-terminal `pty` (a serial image in QEMU) to TAP `tap`, left
/// unaddressed for the caller to configure, until a signal. The link runs at the rate the
/// firmware assumes, `linklab_firmware::serial::SERIAL_BAUD` (4 Mbaud), with the timers of
/// [`emulated_uart_config`].
pub fn bridge_pty(pty: &str, tap: &str, signals: &StopSignals) -> anyhow::Result<()> {
    const FIRMWARE_BAUD: u32 = 4_000_000;
    let tty = Tty::open(pty, FIRMWARE_BAUD)?;
    let mut port = Port::new(
        tty,
        pty,
        FIRMWARE_BAUD,
        emulated_uart_config(u64::from(FIRMWARE_BAUD) / 10),
    );
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
