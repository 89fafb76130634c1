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

use std::net::Ipv4Addr;
use std::path::PathBuf;

use anyhow::Context;

use crate::serve::StopSignals;
use linklab_results::{bail_usage, usage::usage, values};
use linklab_serial::selftest::MIN_SIZE;
use linklab_serial::{Config, MAX_PAYLOAD};
use port::Port;
use tty::Tty;

/// Options of `linklab serial`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The serial port or terminal (e.g. /dev/ttyUSB0, /dev/ttyACM0, /dev/pts/3).
    #[arg(long, value_name = "PATH", required = true)]
    dev: Option<String>,
    /// Line rate in baud (8N1: a byte is 10 bits), a standard rate.
    #[arg(long, value_name = "N", default_value_t = 115_200, value_parser = tty::baud)]
    baud: u32,
    /// Bridge the link to this TAP interface (created, and removed at exit).
    #[arg(long, value_name = "NAME", value_parser = values::interface_name)]
    tap: Option<String>,
    /// Run the device side here: smoltcp and the apps of `linklab serve`.
    #[arg(long)]
    serve: bool,
    /// Run the link's self-test against the other end.
    #[arg(long)]
    selftest: bool,
    /// With --tap: the kernel side's address; with --serve: the device's. ADDR/PREFIX.
    #[arg(long, value_name = "ADDR/PREFIX", value_parser = values::ipv4_with_prefix)]
    ip: Option<(Ipv4Addr, u8)>,
    /// With --serve: the device's MAC address [default: 02:4c:4c:00:00:01].
    #[arg(long, value_name = "MAC", value_parser = values::mac_address)]
    mac: Option<[u8; 6]>,
    /// With --selftest: payload sizes, comma separated, 16..=1514.
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          default_value = "16,64,256,512,1024,1514",
          value_parser = values::ranged(MIN_SIZE, MAX_PAYLOAD))]
    sizes: Vec<usize>,
    /// With --selftest: frames sent one at a time per size (round trips), 1..=100000.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = values::ranged(1u32, 100_000))]
    rtt_frames: u32,
    /// With --selftest: frames streamed per size (goodput, inter-arrival), 1..=100000.
    #[arg(long, value_name = "N", default_value_t = 40, value_parser = values::ranged(1u32, 100_000))]
    stream_frames: u32,
    /// With --selftest: also write the results as JSON (input of `linklab report`).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// What to run.
enum Mode {
    Tap {
        name: String,
        ip: Ipv4Addr,
        prefix: u8,
    },
    Serve {
        ip: Ipv4Addr,
        prefix: u8,
        mac: [u8; 6],
    },
    SelfTest(selftest::Options),
}

impl Args {
    fn mode(&self) -> anyhow::Result<Mode> {
        let chosen = [self.tap.is_some(), self.serve, self.selftest]
            .iter()
            .filter(|&&m| m)
            .count();
        if chosen != 1 {
            bail_usage!("give exactly one of --tap NAME, --serve or --selftest");
        }
        let ip = || {
            self.ip
                .ok_or_else(|| usage("--ip: required (ADDR/PREFIX, e.g. 198.18.0.1/24)"))
        };
        if let Some(name) = &self.tap {
            let (ip, prefix) = ip()?;
            return Ok(Mode::Tap {
                name: name.clone(),
                ip,
                prefix,
            });
        }
        if self.serve {
            let (ip, prefix) = ip()?;
            let mac = self.mac.unwrap_or([0x02, 0x4c, 0x4c, 0x00, 0x00, 0x01]);
            return Ok(Mode::Serve { ip, prefix, mac });
        }
        if self.ip.is_some() {
            bail_usage!("--ip: only with --tap or --serve");
        }
        Ok(Mode::SelfTest(selftest::Options {
            sizes: self.sizes.clone(),
            rtt_frames: self.rtt_frames,
            stream_frames: self.stream_frames,
            json: self.json.clone(),
        }))
    }
}

/// Runs `linklab serial`.
pub fn run(args: Args) -> anyhow::Result<()> {
    // clap requires --dev.
    let dev = args.dev.as_deref().unwrap_or_default();
    let baud = args.baud;
    let mode = args.mode()?;
    let tty = Tty::open(dev, baud)?;
    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    let mut port = Port::new(tty, Config::for_line_rate(u64::from(baud) / 10));
    match mode {
        Mode::Tap { name, ip, prefix } => {
            bridge::run(&mut port, &name, Some((ip, prefix)), &signals)
        }
        Mode::Serve { ip, prefix, mac } => device::run(&mut port, ip, prefix, mac, &signals),
        Mode::SelfTest(options) => selftest::run(&mut port, dev, baud, &options, &signals),
    }
}

/// Bridges the link on pseudo-terminal `pty` (a serial image in QEMU) to TAP `tap`, left
/// unaddressed for the caller to configure, until a signal. The link runs at the rate the
/// firmware assumes, `linklab_firmware::serial::SERIAL_BAUD` (4 Mbaud), with the timers of
/// [`emulated_uart_config`].
pub fn bridge_pty(pty: &str, tap: &str, signals: &StopSignals) -> anyhow::Result<()> {
    const FIRMWARE_BAUD: u32 = 4_000_000;
    let tty = Tty::open(pty, FIRMWARE_BAUD)?;
    let mut port = Port::new(tty, emulated_uart_config(u64::from(FIRMWARE_BAUD) / 10));
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
