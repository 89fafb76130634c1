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
mod ifaddr;
mod port;
pub mod report;
mod selftest;
mod tty;

use std::net::Ipv4Addr;
use std::path::PathBuf;

use anyhow::Context;

use crate::serve::{parse_ip, parse_mac, parse_tap, StopSignals};
use crate::UsageError;
use port::Port;
use tty::{Tty, BAUDS};

/// Options of `linklab serial` (validated by hand: one line per bad value).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The serial port or terminal (e.g. /dev/ttyUSB0, /dev/ttyACM0, /dev/pts/3).
    #[arg(long, value_name = "PATH")]
    dev: Option<String>,
    /// Line rate in baud (8N1: a byte is 10 bits) [default: 115200].
    #[arg(long, value_name = "N")]
    baud: Option<String>,
    /// Bridge the link to this TAP interface (created, and removed at exit).
    #[arg(long, value_name = "NAME")]
    tap: Option<String>,
    /// Run the device side here: smoltcp and the apps of `linklab serve`.
    #[arg(long)]
    serve: bool,
    /// Run the link's self-test against the other end.
    #[arg(long)]
    selftest: bool,
    /// With --tap: the kernel side's address; with --serve: the device's. ADDR/PREFIX.
    #[arg(long, value_name = "ADDR/PREFIX")]
    ip: Option<String>,
    /// With --serve: the device's MAC address [default: 02:4c:4c:00:00:01].
    #[arg(long, value_name = "MAC")]
    mac: Option<String>,
    /// With --selftest: payload sizes, comma separated, 16..=1514
    /// [default: 16,64,256,512,1024,1514].
    #[arg(long, value_name = "LIST")]
    sizes: Option<String>,
    /// With --selftest: frames sent one at a time per size (round trips) [default: 20].
    #[arg(long, value_name = "N")]
    rtt_frames: Option<String>,
    /// With --selftest: frames streamed per size (goodput, inter-arrival) [default: 40].
    #[arg(long, value_name = "N")]
    stream_frames: Option<String>,
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

fn usage(msg: String) -> anyhow::Error {
    UsageError(msg).into()
}

fn usage_of(r: anyhow::Result<(Ipv4Addr, u8)>) -> anyhow::Result<(Ipv4Addr, u8)> {
    r.map_err(|e| usage(format!("{e:#}")))
}

impl Args {
    fn baud(&self) -> anyhow::Result<u32> {
        let Some(b) = self.baud.as_deref() else {
            return Ok(115_200);
        };
        match b.parse::<u32>() {
            Ok(n) if tty::speed_of(n).is_some() => Ok(n),
            _ => {
                let list: Vec<String> = BAUDS.iter().map(|(b, _)| b.to_string()).collect();
                Err(usage(format!(
                    "--baud {b:?}: not a standard rate (accepted: {})",
                    list.join(", ")
                )))
            }
        }
    }

    fn mode(&self) -> anyhow::Result<Mode> {
        let chosen = [self.tap.is_some(), self.serve, self.selftest]
            .iter()
            .filter(|&&m| m)
            .count();
        if chosen != 1 {
            return Err(usage(
                "give exactly one of --tap NAME, --serve or --selftest".into(),
            ));
        }
        let ip = || {
            self.ip
                .as_deref()
                .ok_or_else(|| usage("--ip: required (ADDR/PREFIX, e.g. 198.18.0.1/24)".into()))
                .and_then(|s| usage_of(parse_ip(s)))
        };
        if let Some(name) = &self.tap {
            let name = parse_tap(name).map_err(|e| usage(format!("{e:#}")))?;
            let (ip, prefix) = ip()?;
            return Ok(Mode::Tap { name, ip, prefix });
        }
        if self.serve {
            let (ip, prefix) = ip()?;
            let mac = match self.mac.as_deref() {
                Some(m) => parse_mac(m).map_err(|e| usage(format!("{e:#}")))?,
                None => [0x02, 0x4c, 0x4c, 0x00, 0x00, 0x01],
            };
            return Ok(Mode::Serve { ip, prefix, mac });
        }
        if self.ip.is_some() {
            return Err(usage("--ip: only with --tap or --serve".into()));
        }
        Ok(Mode::SelfTest(selftest::Options::parse(
            self.sizes.as_deref(),
            self.rtt_frames.as_deref(),
            self.stream_frames.as_deref(),
            self.json.clone(),
        )?))
    }
}

/// Runs `linklab serial`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let dev = args
        .dev
        .as_deref()
        .ok_or_else(|| usage("--dev: required (the serial port, e.g. /dev/ttyUSB0)".into()))?;
    let baud = args.baud()?;
    let mode = args.mode()?;
    let tty = Tty::open(dev, baud)?;
    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    let mut port = Port::new(tty, u64::from(baud) / 10);
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
/// firmware assumes, `linklab_firmware::serial::SERIAL_BAUD` (4 Mbaud).
pub fn bridge_pty(pty: &str, tap: &str, signals: &StopSignals) -> anyhow::Result<()> {
    const FIRMWARE_BAUD: u32 = 4_000_000;
    let tty = Tty::open(pty, FIRMWARE_BAUD)?;
    let mut port = Port::new(tty, u64::from(FIRMWARE_BAUD) / 10);
    bridge::run(&mut port, tap, None, signals)
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
