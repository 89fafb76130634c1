//! `linklab emu`: linklab's firmware on an emulated MCU. Builds (or finds) the board's image,
//! boots it in QEMU with its NIC on a TAP that QEMU creates, and hands it its address through
//! a small configuration blob that QEMU's loader puts in RAM (no rebuild per address). The
//! user then runs stock ping, curl and iperf3 against the device; Ctrl-C stops QEMU, which
//! takes its TAP with it. The blob is removed once the image has booted (QEMU read it when it
//! started), so a killed `linklab emu` leaves nothing in the temporary directory.
//!
//! `--cost`, `--cost-parts` and `--throughput` measure instead, in a namespace of their own
//! ([`measure`], [`parts`]: the simulator's counted profiles); `--predict` runs the simulator
//! against the emulated firmware ([`predict`]); `--blast` runs the firmware's packet blaster against a receiver here
//! ([`blast`]); `--phy10` counts linklab-phy10's decoder on the board's ISA ([`phy10`]).
//! `--phy10-line` boots the soft-PHY image instead, with a simulated 10BASE-T line between it
//! and a TAP this process creates ([`line`]); `--cost` and `--throughput` take it too.

mod bad_checksums;
mod blast;
mod blob;
mod board;
mod defmt;
mod image;
mod lab;
mod line;
mod measure;
mod parts;
mod phy10;
mod predict;
mod qemu;

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_perf::device_config::DeviceConfig;

use crate::serve::StopSignals;
use crate::values::{self, bail_usage};
use blob::ConfigBlob;
use board::Board;
use image::Image;
use qemu::{Boot, Network, Qemu};

/// Options of `linklab emu`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The emulated board: mps2-an385 (Cortex-M3, LAN9118), riscv32-virt (riscv32imac,
    /// virtio-net), zynq7000 (Cortex-A9, Cadence GEM through zynq7000-hal's driver) or
    /// sabrelite (i.MX6's Cortex-A9, the ENET through linklab-imx-enet).
    #[arg(long, value_name = "BOARD", value_parser = Board::by_name)]
    board: Board,
    /// TAP interface for the NIC: created by QEMU, gone when it stops; must not exist yet.
    #[arg(long, value_name = "NAME", value_parser = values::interface_name,
          required_unless_present_any = ["cost", "throughput", "phy10", "cost_parts", "blast", "predict"])]
    tap: Option<String>,
    /// The device's IPv4 address and prefix, e.g. 198.18.0.2/24.
    #[arg(long, value_name = "ADDR/PREFIX", value_parser = values::ipv4_with_prefix,
          required_unless_present_any = ["cost", "throughput", "phy10", "cost_parts", "blast", "predict"])]
    ip: Option<(Ipv4Addr, u8)>,
    /// The device's MAC address [default: 02:4c:4c:00:00:02].
    #[arg(long, value_name = "MAC", value_parser = values::mac_address)]
    mac: Option<[u8; 6]>,
    /// Boot another of the board's images by name — `minimal`: the iperf3 TCP server alone
    /// (`-R`, one stream, the results exchange) and ICMP; `compact` (mps2-an385): lwIP's
    /// feature set, the iperf3 TCP server both ways, HTTP with the bench files and ICMP —
    /// or this firmware image (an ELF file; a file named like an image is given with a
    /// path, e.g. `./minimal`) instead of building the main-loop image from linklab's
    /// firmware/ folder.
    #[arg(long, value_name = "NAME|ELF")]
    image: Option<PathBuf>,
    /// Run QEMU with `-icount shift=N` (one instruction per 2^N ns of virtual time), 0..=10.
    #[arg(long, value_name = "N", value_parser = values::ranged(0u32, 10))]
    icount: Option<u32>,
    /// Seconds to wait for the firmware's boot line, 1..=600.
    #[arg(long, value_name = "S", default_value_t = 30, value_parser = values::ranged(1u64, 600))]
    boot_timeout: u64,
    /// Measure instructions per payload byte each way (QEMU -icount shift=0, stock iperf3),
    /// flash, RAM and peak stack, in a network namespace of its own.
    #[arg(long, conflicts_with_all = ["tap", "ip", "throughput"])]
    cost: bool,
    /// Count instructions per part of the device's work (RX interrupt per frame and per byte,
    /// main loop per pass, per received and transmitted frame and byte, per byte copied off
    /// its word; QEMU -icount shift=0, stock iperf3 and curl): the data file of the image's
    /// linklab bench profile (riscv32-virt: riscv32-measured, with --embassy
    /// riscv32-embassy-measured, with --phy10-line riscv32-soft-phy; mps2-an385:
    /// mps2-measured; sabrelite: sabrelite-measured).
    #[arg(long, conflicts_with_all = ["tap", "ip", "throughput", "cost", "icount"])]
    cost_parts: bool,
    /// Run the image at a fixed instruction rate (`--icount`, default 3: 125 MIPS) against
    /// stock iperf3 both ways and curl, and linklab bench with the image's counted profile at
    /// the same MHz on the same transfers; the emulated rates in the device's own clock. The
    /// host's TCP runs without its tail-loss probe, which QEMU's 3 ms alignment stops set off.
    #[arg(long, conflicts_with_all = ["tap", "ip", "throughput", "cost", "cost_parts"])]
    predict: bool,
    /// Boots of the image for --predict, 1..=20.
    #[arg(long, value_name = "N", default_value_t = 3, requires = "predict",
          value_parser = values::ranged(1u32, 20))]
    runs: u32,
    /// Measure TCP throughput both ways with stock iperf3, and a curl download of /1MB.txt:
    /// QEMU free-running, then at a fixed instruction rate (`--icount`, default 3: 125 MIPS;
    /// the host's tail-loss probe off, as with --predict), in a namespace of its own.
    #[arg(long, conflicts_with_all = ["tap", "ip"])]
    throughput: bool,
    /// Boot the serial image instead (mps2-an385): no NIC; the network runs over
    /// linklab-serial's link on the board's UART1, which QEMU puts on a pseudo-terminal, and
    /// this process bridges the link to the TAP (as `linklab serial --tap` does).
    #[arg(long, conflicts_with_all = ["cost", "throughput", "cost_parts"])]
    serial: bool,
    /// Boot the embassy image instead: embassy-executor, embassy-net over linklab-mac's
    /// driver and linklab-perf's embassy apps, its defmt log decoded on the console (also
    /// with --cost and --throughput).
    #[arg(long, conflicts_with_all = ["serial", "phy10", "blast", "phy10_line"])]
    embassy: bool,
    /// Count linklab-phy10's Manchester decoder on the board's ISA (riscv32-virt): instructions
    /// per bit of full-length frames under drift and jitter, QEMU -icount shift=0; fails if a
    /// frame is not decoded bit-exact.
    #[arg(long, conflicts_with_all = ["tap", "ip", "cost", "throughput", "icount", "serial", "cost_parts"])]
    phy10: bool,
    /// The soft-PHY line (`--phy10-line` and its options).
    #[command(flatten)]
    line: line::LineArgs,
    /// Run the firmware's packet blaster (QEMU -icount shift=0): UDP datagrams of 1472 and
    /// 18 payload bytes, built by the firmware and handed straight to its NIC driver, then the
    /// same through smoltcp's UDP socket, to a receiver here that counts them and checks their
    /// pattern; frames per second and instructions per frame each way. Then frames with wrong
    /// IPv4, TCP and UDP checksums from a raw socket. Fails unless every frame is accounted
    /// for, bad requests were refused and counted, and every wrong checksum dropped and
    /// counted.
    #[arg(long, conflicts_with_all = ["tap", "ip", "cost", "throughput", "icount", "serial", "cost_parts", "phy10"])]
    blast: bool,
    /// Milliseconds of the device's clock each blast lasts (with --blast), 1..=2000.
    #[arg(long, value_name = "MS", default_value_t = 200, requires = "blast",
          value_parser = values::ranged(1u16, linklab_perf::blast::MAX_DURATION_MS))]
    blast_ms: u16,
    /// Write the measurement as JSON to FILE (with --cost, --cost-parts, --throughput,
    /// --predict, --phy10 or --blast).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Runs `linklab emu`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let board = args.board;
    let shift = args.icount;
    let timeout = Duration::from_secs(args.boot_timeout);
    if args.json.is_some()
        && !(args.cost
            || args.throughput
            || args.cost_parts
            || args.predict
            || args.phy10
            || args.blast)
    {
        bail_usage!(
            "--json: only with --cost, --cost-parts, --throughput, --predict, --phy10 or --blast"
        );
    }
    qemu::require(&board)?;
    // `--image minimal` names an image of the board; any other value is an ELF file.
    let named = image::named(&board, args.image.as_deref())?;
    let file = if named.is_some() {
        None
    } else {
        args.image.as_deref()
    };
    if named.is_some() {
        let other = [
            (args.serial, "--serial"),
            (args.embassy, "--embassy"),
            (args.blast, "--blast"),
            (args.phy10, "--phy10"),
            (args.cost_parts, "--cost-parts"),
            (args.predict, "--predict"),
            (args.line.phy10_line, "--phy10-line"),
        ];
        if let Some((_, flag)) = other.iter().find(|(on, _)| *on) {
            let name = args
                .image
                .as_deref()
                .map_or("".into(), |p| p.display().to_string());
            bail_usage!("--image {name}: not with {flag} (the {name} image is the main loop with fewer apps)");
        }
    }
    if args.blast {
        let image = image::find_or_build(&board, Image::Main, file)?;
        let (result, verdict) = blast::measure(&board, &image, args.blast_ms)?;
        println!("{}", serde_json::to_string_pretty(&result)?);
        if let Some(path) = &args.json {
            let mut text = serde_json::to_vec_pretty(&result)?;
            text.push(b'\n');
            std::fs::write(path, text)
                .with_context(|| format!("--json: cannot write {}", path.display()))?;
        }
        return verdict;
    }
    let line_args = args.line.phy10_line.then_some(&args.line);
    if let Some(l) = line_args {
        l.validate()?;
    }
    if args.phy10 {
        let (cases, parts, report) = phy10::measure(&board, file)?;
        print!("{}", phy10::table(&board, &cases, &parts));
        if let Some(path) = &args.json {
            std::fs::write(path, serde_json::to_vec_pretty(&report)?)
                .with_context(|| format!("--json: cannot write {}", path.display()))?;
        }
        let wrong: u64 = cases.iter().map(|c| c.frames - c.ok).sum();
        if wrong > 0 {
            bail!("--phy10: {wrong} frames were not decoded bit-exact");
        }
        return Ok(());
    }
    if args.cost || args.throughput || args.cost_parts || args.predict {
        let kind = if line_args.is_some() {
            Image::SoftPhy
        } else if args.embassy {
            Image::Embassy
        } else {
            named.unwrap_or(Image::Main)
        };
        // Only the images with a simulator profile are counted or predicted: say so before
        // building anything.
        if args.cost_parts || args.predict {
            if let Err(e) = parts::profile_of(&board, kind) {
                bail_usage!("{e}");
            }
        }
        let image = image::find_or_build(&board, kind, file)?;
        let console_work = kind.console_work();
        let result = if args.cost {
            measure::cost(&board, &image, line_args, console_work)?
        } else if args.cost_parts {
            parts::cost_parts(&board, kind, &image, line_args)?
        } else if args.predict {
            predict::predict(
                &board,
                kind,
                &image,
                shift.unwrap_or(3),
                args.runs,
                line_args,
            )?
        } else {
            measure::throughput(
                &board,
                &image,
                shift.unwrap_or(3),
                line_args,
                kind == Image::Minimal,
            )?
        };
        println!("{}", serde_json::to_string_pretty(&result)?);
        if let Some(path) = &args.json {
            let mut text = serde_json::to_vec_pretty(&result)?;
            text.push(b'\n');
            std::fs::write(path, text)
                .with_context(|| format!("--json: cannot write {}", path.display()))?;
        }
        return Ok(());
    }

    // clap requires both unless --cost, --cost-parts, --predict or --throughput, which
    // returned above.
    let (Some(tap), Some((ip, prefix))) = (args.tap, args.ip) else {
        bail_usage!("--tap and --ip are required");
    };
    let mac = args.mac.unwrap_or(DeviceConfig::DEFAULT.mac);
    if std::path::Path::new("/sys/class/net").join(&tap).exists() {
        bail!("--tap {tap}: an interface of that name already exists; linklab emu only uses a TAP it creates (pick another name)");
    }
    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    if let Some(l) = line_args {
        let config = DeviceConfig {
            ip: ip.octets(),
            prefix,
            mac,
        };
        let session = line::Session {
            board: &board,
            tap: &tap,
            device_config: config.to_bytes().to_vec(),
            image: file,
            icount: shift,
            boot_timeout: timeout,
        };
        return line::run(&session, l, &signals);
    }
    let kind = if args.serial {
        Image::Serial
    } else if args.embassy {
        Image::Embassy
    } else {
        named.unwrap_or(Image::Main)
    };
    let image = image::find_or_build(&board, kind, file)?;
    let config = DeviceConfig {
        ip: ip.octets(),
        prefix,
        mac,
    };
    let blob = ConfigBlob::write(
        &format!("linklab-emu-{}", std::process::id()),
        &config.to_bytes(),
    )?;
    let mut qemu = Qemu::start(Boot {
        board: &board,
        image: &image,
        config_blob: Some(blob),
        network: if args.serial {
            Network::SerialPty
        } else {
            Network::Tap(&tap)
        },
        icount: shift.map(|n| format!("shift={n}")),
        netns: None,
        echo_console: true,
    })?;
    qemu.wait_for_boot(timeout)?;
    if args.serial {
        return bridge_serial(&mut qemu, &board, &tap, ip, prefix, &signals);
    }
    println!(
        "linklab emu: {}{} on TAP {tap}, device {ip}/{prefix}; Ctrl-C stops it",
        board.name,
        match kind {
            Image::Embassy => " (embassy image)",
            Image::Minimal => " (minimal image)",
            Image::Compact => " (compact image)",
            _ => "",
        }
    );
    loop {
        if let Some(sig) = signals.take() {
            qemu.stop();
            println!("linklab emu: stopped by signal {sig}");
            return Ok(());
        }
        if let Some(status) = qemu.exited() {
            bail!(
                "QEMU exited ({status}); the console's last lines: {}",
                qemu.last_lines()
            );
        }
        crate::serve::wait_readable(
            &[std::os::fd::AsRawFd::as_raw_fd(&signals)],
            Some(Duration::from_millis(200)),
        )?;
    }
}

/// The serial image is up: bridge its UART's pseudo-terminal to the TAP until a signal.
fn bridge_serial(
    qemu: &mut Qemu,
    board: &Board,
    tap: &str,
    ip: std::net::Ipv4Addr,
    prefix: u8,
    signals: &StopSignals,
) -> anyhow::Result<()> {
    let pty = qemu
        .serial_pty()
        .context("QEMU did not say which pseudo-terminal it gave the UART")?;
    println!(
        "linklab emu: {} (serial image) on {pty}, device {ip}/{prefix}, bridged to TAP {tap}; Ctrl-C stops it",
        board.name
    );
    let result = crate::serial::bridge_pty(&pty, tap, signals);
    qemu.stop();
    result
}
