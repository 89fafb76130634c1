//! `linklab emu pico --image soft-phy --tap NAME --ip 198.18.0.2/24` (and `w5500-evb-pico`):
//! builds the board example as it is, runs it at the pin level in rp2040js
//! (emulators/rp2040js/harness.mjs, under node) and joins what the harness models outside the
//! chip to a TAP through the line of `linklab emu line` ([`crate::pin_line`]), run in this
//! process. The user then runs stock ping, curl, iperf3 and iperf 2 against the device; a
//! signal stops the harness and the line, and the line's counters are printed.
//!
//! The examples' address is built in (no configuration blob: the example runs unchanged), so
//! `--ip` must be it. The chip's clock is not real time (the harness runs a few emulated MHz
//! per real second): the line is unpaced, and figures belong in the chip's clock, which the
//! harness writes to `--status` with its devices' counters.
//!
//! Three steps, as [`crate::boot`]: [`prepare`] checks the options and builds the example,
//! [`PreparedPin::start`] starts the harness and the line, [`BootedPin::serve`] serves until
//! a signal or until the harness ends.
//!
//! The Pico's `--image usb-ncm` is a USB network device: its TAP is the network interface the
//! host's cdc_ncm driver (modelled by the harness) makes for it, as `usb0` on a real host.
//! The Pico's other USB images (`--image usb-serial`, `usb-echo`) have no TAP: their network
//! is their USB port, which a host program opens as it would /dev/ttyACM0. The port is a
//! pseudo-terminal relayed to the harness's model of Linux's cdc-acm ([`crate::usb_port`]);
//! `--pty PATH` links it at PATH, and `linklab serial --dev PATH --tap T --ip ...` bridges it
//! to a TAP as it would a real Pico's port.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_perf::device_config::DeviceConfig;
use linklab_results::bail_usage;
use linklab_serve::serve::StopSignals;

use crate::line::LineOptions;
use crate::pin_board::{self, PinBoard, PinCarry, PinImage};
use crate::pin_line::{self, Carry, Connected, PinLineOptions};
use crate::pin_spi::SpiMaster;

/// What boots a pin-level board.
#[derive(Clone, Debug)]
pub struct PinBootOptions {
    /// The board.
    pub board: PinBoard,
    /// The image's name (None: the board's default).
    pub image: Option<String>,
    /// This ELF of the image instead of building it.
    pub elf: Option<PathBuf>,
    /// The TAP to create for the device; it must not exist yet (none for a USB image).
    pub tap: Option<String>,
    /// The device's address and prefix, which must be the example's built-in ones (optional
    /// for a USB image).
    pub ip: Option<(Ipv4Addr, u8)>,
    /// A USB image: a symbolic link to its port's pseudo-terminal here.
    pub pty: Option<PathBuf>,
    /// The line's options (a soft-PHY image: `--oversample` only; the line is unpaced).
    pub line: LineOptions,
    /// Where the harness writes the chip's clock and its devices' counters (one JSON line,
    /// rewritten about every 50 ms of real time).
    pub status: Option<PathBuf>,
    /// Where the harness writes every frame on the W5500's port (w5500-evb-pico only).
    pub pcap: Option<PathBuf>,
    /// The W5500 model's faults, `header:N,send:M` ([`w5500_faults`]; w5500-evb-pico only).
    pub w5500_faults: Option<String>,
    /// How long to wait for the harness to load the ELF and connect.
    pub connect_timeout: Duration,
    /// An SPI image (`spi-link`): the harness's SPI master (its clock and gaps).
    pub spi: SpiMaster,
}

/// A board ready to start: the options checked, the example built.
pub struct PreparedPin {
    options: PinBootOptions,
    image: &'static PinImage,
    elf: PathBuf,
    carry: Carry,
}

/// Checks `options` (one usage line for what does not fit), that node and rp2040js are
/// installed, and builds the image (unless `--elf`).
pub fn prepare(options: &PinBootOptions) -> anyhow::Result<PreparedPin> {
    let board = &options.board;
    let image = board.image(options.image.as_deref())?;
    let built_in = DeviceConfig::DEFAULT;
    let usb = image.carry == PinCarry::Usb;
    match (options.ip, usb) {
        (None, false) => bail_usage!("--ip: required (the example's built-in 198.18.0.2/24)"),
        (Some((ip, prefix)), _) if (ip.octets(), prefix) != (built_in.ip, built_in.prefix) => {
            let [a, b, c, d] = built_in.ip;
            bail_usage!(
                "--ip {ip}/{prefix}: {}'s example has its address built in (it runs unchanged): --ip {a}.{b}.{c}.{d}/{}",
                board.name,
                built_in.prefix
            );
        }
        _ => {}
    }
    let carry = carry_of(image, &options.line, options.pcap.is_some())?;
    if options.w5500_faults.is_some() && image.harness_board != "w5500-evb-pico" {
        bail_usage!("--w5500-faults: only for w5500-evb-pico (the W5500 model's faults)");
    }
    let carry = match carry {
        Carry::Spi { .. } => {
            options.spi.check()?;
            Carry::Spi { hz: options.spi.hz }
        }
        other => {
            if options.spi != SpiMaster::default() {
                bail_usage!("--spi-*: only for an SPI image (pico's spi-link, spi-link-240)");
            }
            other
        }
    };
    match (&options.tap, usb) {
        (Some(tap), true) => bail_usage!(
            "--tap {tap}: {} has no TAP of its own (its network is its USB port): --pty PATH, then `linklab serial --dev PATH --tap {tap} --ip ...`",
            image.name
        ),
        (None, false) => bail_usage!("--tap: required"),
        (Some(tap), false) if Path::new("/sys/class/net").join(tap).exists() => {
            bail!("--tap {tap}: an interface of that name already exists; linklab emu only uses a TAP it creates (pick another name)");
        }
        _ => {}
    }
    if options.pty.is_some() && !usb {
        bail_usage!("--pty: only for the Pico's USB images (usb-serial, usb-echo)");
    }
    let harness = pin_board::harness_dir();
    if !harness.join("node_modules/rp2040js").exists() {
        bail!(
            "{} has no rp2040js: run `npm ci` there (scripts/setup does)",
            harness.display()
        );
    }
    let node = Command::new("node").arg("--version").output();
    if !node.is_ok_and(|o| o.status.success()) {
        bail!("node is not installed (scripts/setup installs it): the pin-level harness runs under it");
    }
    let elf = match &options.elf {
        Some(elf) if elf.is_file() => elf.clone(),
        Some(elf) => bail_usage!("--elf {}: no such file", elf.display()),
        None => pin_board::build(image)?,
    };
    Ok(PreparedPin {
        options: options.clone(),
        image,
        elf,
        carry,
    })
}

/// `--w5500-faults PLAN`: `header:N` and/or `send:M` (comma-separated, N and M whole
/// numbers from 1): the W5500 model answers every Nth read of a frame's length header
/// corrupt (as a glitching bus does) and refuses every Mth SEND (emulators/rp2040js/w5500.mjs).
pub fn w5500_faults(plan: &str) -> Result<String, String> {
    let mut seen = Vec::new();
    for item in plan.split(',') {
        let ok = item.split_once(':').is_some_and(|(kind, n)| {
            matches!(kind, "header" | "send")
                && !seen.contains(&kind)
                && n.parse::<u32>().is_ok_and(|n| n >= 1)
                && {
                    seen.push(kind);
                    true
                }
        });
        if !ok {
            return Err(format!(
                "{plan:?}: header:N and/or send:M, comma-separated, N and M whole numbers from 1"
            ));
        }
    }
    Ok(plan.to_string())
}

/// What the line carries for `image`: its samples unpaced at the image's oversampling (or
/// `--oversample`), frames, or its USB port; any other line option is one usage line.
fn carry_of(image: &PinImage, line: &LineOptions, pcap: bool) -> anyhow::Result<Carry> {
    let other = [
        (line.drift.is_some(), "--drift"),
        (line.jitter.is_some(), "--jitter"),
        (line.noise.is_some(), "--noise"),
        (line.bad_captures, "--bad-captures"),
    ];
    if let Some((_, flag)) = other.iter().find(|(on, _)| *on) {
        bail_usage!("{flag}: not at the pin level (the harness's line is clean; see emulators/rp2040js/hostile.mjs for its faults)");
    }
    match image.carry {
        PinCarry::Spi => {
            if line.oversample.is_some() || pcap {
                bail_usage!(
                    "--oversample and --pcap: {} carries SPI transfers, not line samples or frames",
                    image.name
                );
            }
            Ok(Carry::Spi { hz: 0 })
        }
        PinCarry::Usb => {
            if line.oversample.is_some() || pcap {
                bail_usage!(
                    "--oversample and --pcap: {} has neither a line nor an Ethernet port",
                    image.name
                );
            }
            Ok(Carry::Usb(None))
        }
        PinCarry::Frames => {
            if line.oversample.is_some() {
                bail_usage!(
                    "--oversample: {} carries frames, not line samples",
                    image.name
                );
            }
            Ok(Carry::Frames)
        }
        PinCarry::Samples { oversample } => {
            if pcap {
                bail_usage!("--pcap: only for w5500-evb-pico (the W5500's port) and pico's usb-ncm (the host's interface)");
            }
            let options = LineOptions {
                oversample: Some(line.oversample.unwrap_or(oversample)),
                no_pace: true,
                ..LineOptions::default()
            };
            let Some(settings) = options.resolve(true)? else {
                bail!("the line's options did not resolve");
            };
            Ok(Carry::Samples(settings))
        }
    }
}

impl PreparedPin {
    /// Makes the TAP, starts the harness on the ELF and waits for it to connect.
    pub fn start(self) -> anyhow::Result<BootedPin> {
        let tap = self.make_tap()?;
        self.start_on(tap)
    }

    /// Makes the TAP (in the calling thread's network namespace) and the line's socket.
    pub fn make_tap(&self) -> anyhow::Result<MadeTap> {
        let dir = crate::scratch::private_dir("linklab-pin-")?;
        let carry = match &self.carry {
            Carry::Usb(_) => Carry::Usb(self.options.pty.clone()),
            other => other.clone(),
        };
        let listening = pin_line::listen(&PinLineOptions {
            tap: self.options.tap.clone().unwrap_or_default(),
            socket: dir.path().join("line.sock"),
            connect_timeout: self.options.connect_timeout,
            carry,
        })?;
        Ok(MadeTap { listening, dir })
    }

    /// Starts the harness on the ELF, joined to `tap`, and waits for it to connect. The
    /// harness dies with the calling thread (its parent-death signal): call it on a thread
    /// that lives as long as the board should.
    pub fn start_on(self, tap: MadeTap) -> anyhow::Result<BootedPin> {
        let MadeTap { listening, dir } = tap;
        let usb_port = listening.usb_port();
        let o = &self.options;
        let mut cmd = Command::new("node");
        cmd.arg(pin_board::harness_dir().join("harness.mjs"))
            .args(["--board", self.image.harness_board])
            .arg("--elf")
            .arg(&self.elf)
            .arg("--socket")
            .arg(dir.path().join("line.sock"))
            .stdin(Stdio::null());
        if let Carry::Samples(settings) = &self.carry {
            cmd.args(["--oversample", &settings.oversample.to_string()]);
        }
        if let Some(status) = &o.status {
            cmd.arg("--status").arg(status);
        }
        if let Some(pcap) = &o.pcap {
            cmd.arg("--pcap").arg(pcap);
        }
        if let Some(faults) = &o.w5500_faults {
            cmd.args(["--w5500-faults", faults]);
        }
        if let Carry::Spi { .. } = &self.carry {
            cmd.args(o.spi.harness_args());
        }
        crate::qemu::signals_unblocked(&mut cmd);
        crate::qemu::dies_with_us(&mut cmd);
        let harness = cmd.spawn().context("cannot start node")?;
        let mut harness = Harness(Some(harness));
        let connected = match listening.accept() {
            Ok(c) => c,
            Err(e) => {
                harness.stop();
                return Err(e);
            }
        };
        Ok(BootedPin {
            prepared: self,
            connected,
            harness,
            usb_port,
            _dir: dir,
        })
    }
}

/// A pin-level board's TAP and the line's socket, made ([`PreparedPin::make_tap`]).
pub struct MadeTap {
    listening: pin_line::Listening,
    dir: tempfile::TempDir,
}

/// The harness's node process, stopped when dropped.
struct Harness(Option<Child>);

impl Harness {
    /// Stops it (SIGTERM, then SIGKILL after a second) and reaps it.
    fn stop(&mut self) {
        if let Some(child) = self.0.take() {
            crate::stop::stop(child, crate::stop::Whom::Process, Duration::from_secs(1));
        }
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The harness running, the line joining it to the TAP.
pub struct BootedPin {
    prepared: PreparedPin,
    connected: Connected,
    harness: Harness,
    usb_port: Option<PathBuf>,
    _dir: tempfile::TempDir,
}

impl BootedPin {
    /// The line that says where the device is and how to stop it.
    pub fn banner(&self) -> String {
        let o = &self.prepared.options;
        if let Some(port) = &self.usb_port {
            return format!(
                "linklab emu: {} ({} image, {}) at the pin level in rp2040js, its USB port at {} (open it as /dev/ttyACM0: linklab serial --dev {} --baud 4000000 --tap T --ip 198.18.0.1/24); Ctrl-C stops it",
                o.board.name,
                self.prepared.image.name,
                self.prepared.elf.display(),
                port.display(),
                port.display()
            );
        }
        let (ip, prefix) = o.ip.unwrap_or((Ipv4Addr::UNSPECIFIED, 0));
        format!(
            "linklab emu: {} ({} image, {}) at the pin level in rp2040js on TAP {}, device {}/{}; {}; Ctrl-C stops it",
            o.board.name,
            self.prepared.image.name,
            self.prepared.elf.display(),
            o.tap.as_deref().unwrap_or_default(),
            ip,
            prefix,
            self.connected.banner().trim_start_matches("linklab emu line: ")
        )
    }

    /// The USB port's path (a USB image), for a program to open.
    pub fn usb_port(&self) -> Option<&Path> {
        self.usb_port.as_deref()
    }

    /// Serves until one of `signals` or until the harness ends; stops the harness and the
    /// line; returns the line's counters (one line) and how it ended.
    pub fn serve(self, signals: &StopSignals) -> anyhow::Result<(String, String)> {
        let BootedPin {
            connected,
            mut harness,
            _dir,
            ..
        } = self;
        let result = connected.serve(signals);
        harness.stop();
        result
    }

    /// Stops the harness, then the line; the line's counters (one line).
    pub fn stop(self) -> String {
        let BootedPin {
            connected,
            mut harness,
            _dir,
            ..
        } = self;
        harness.stop();
        connected.stop()
    }
}

/// An SPI image of the Pico booted for `linklab serial --spi-emu`: the harness connected, its
/// socket for linklab-serve's SPI line ([`linklab_serve::serial::Transport::Emulated`]).
pub struct SpiDevice {
    /// The harness's socket.
    pub stream: std::os::unix::net::UnixStream,
    harness: Harness,
    _dir: tempfile::TempDir,
}

impl SpiDevice {
    /// Stops the harness.
    pub fn stop(mut self) {
        self.harness.stop();
    }
}

/// Builds the Pico's SPI image `image` (unless `elf`), starts the harness with `master`'s
/// settings (its status to `status`), and waits up to `timeout` for it to connect.
pub fn boot_spi_device(
    image: &str,
    elf: Option<PathBuf>,
    master: &SpiMaster,
    status: Option<PathBuf>,
    timeout: Duration,
) -> anyhow::Result<SpiDevice> {
    master.check()?;
    let Some(board) = PinBoard::by_name("pico") else {
        bail!("no pico board in the pin-level table");
    };
    let img = board.image(Some(image))?;
    if img.carry != PinCarry::Spi {
        let spi: Vec<_> = board
            .images
            .iter()
            .filter(|i| i.carry == PinCarry::Spi)
            .map(|i| i.name)
            .collect();
        bail_usage!(
            "--spi-emu {image}: not an SPI image (those are {})",
            spi.join(", ")
        );
    }
    let harness_dir = pin_board::harness_dir();
    if !harness_dir.join("node_modules/rp2040js").exists() {
        bail!(
            "{} has no rp2040js: run `npm ci` there (scripts/setup does)",
            harness_dir.display()
        );
    }
    let elf = match elf {
        Some(elf) if elf.is_file() => elf,
        Some(elf) => bail_usage!("--elf {}: no such file", elf.display()),
        None => pin_board::build(img)?,
    };
    let dir = crate::scratch::private_dir("linklab-spi-")?;
    let socket = crate::line::Socket::bind_at(dir.path().join("spi.sock"))?;
    let mut cmd = Command::new("node");
    cmd.arg(harness_dir.join("harness.mjs"))
        .args(["--board", img.harness_board])
        .arg("--elf")
        .arg(&elf)
        .arg("--socket")
        .arg(dir.path().join("spi.sock"))
        .args(master.harness_args())
        .stdin(Stdio::null());
    if let Some(status) = &status {
        cmd.arg("--status").arg(status);
    }
    crate::qemu::signals_unblocked(&mut cmd);
    crate::qemu::dies_with_us(&mut cmd);
    let child = cmd.spawn().context("cannot start node")?;
    let mut harness = Harness(Some(child));
    let stream = match socket.accept(timeout) {
        Ok(s) => s,
        Err(e) => {
            harness.stop();
            return Err(e);
        }
    };
    Ok(SpiDevice {
        stream,
        harness,
        _dir: dir,
    })
}

#[cfg(test)]
mod tests {
    use super::w5500_faults;

    #[test]
    fn a_fault_plan_is_header_and_send_each_once_from_1() {
        for good in ["header:1", "send:40", "header:9,send:13", "send:2,header:7"] {
            assert_eq!(w5500_faults(good).as_deref(), Ok(good));
        }
        for bad in [
            "",
            "header",
            "header:0",
            "header:x",
            "bus:3",
            "header:3,header:4",
            "send:1,",
        ] {
            assert!(w5500_faults(bad).is_err(), "{bad:?} taken");
        }
    }
}
