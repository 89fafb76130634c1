//! `linklab emu`: linklab's firmware on an emulated MCU. Builds (or finds) the board's image,
//! boots it in QEMU with its NIC on a TAP that QEMU creates, and hands it its address through
//! a small configuration blob that QEMU's loader puts in RAM (no rebuild per address). The
//! user then runs stock ping, curl and iperf3 against the device; Ctrl-C stops QEMU, which
//! takes its TAP with it, and the blob is removed.
//!
//! `--cost` and `--throughput` measure instead, in a namespace of their own
//! ([`measure`]); `--phy10` counts linklab-phy10's decoder on the board's ISA ([`phy10`]).

mod board;
mod image;
mod lab;
mod measure;
mod phy10;
mod qemu;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_perf::device_config::DeviceConfig;

use crate::serve::{parse_ip, parse_mac, parse_tap, StopSignals};
use board::Board;
use qemu::{Boot, Qemu};

/// Options of `linklab emu`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The emulated board: mps2-an385 (Cortex-M3, LAN9118) or riscv32-virt (riscv32imac,
    /// virtio-net).
    #[arg(long, value_name = "BOARD")]
    board: String,
    /// TAP interface for the NIC: created by QEMU, gone when it stops; must not exist yet.
    #[arg(long, value_name = "NAME")]
    tap: Option<String>,
    /// The device's IPv4 address and prefix, e.g. 198.18.0.2/24.
    #[arg(long, value_name = "ADDR/PREFIX")]
    ip: Option<String>,
    /// The device's MAC address [default: 02:4c:4c:00:00:02].
    #[arg(long, value_name = "MAC")]
    mac: Option<String>,
    /// Use this firmware image instead of building it from linklab's firmware/ folder.
    #[arg(long, value_name = "ELF")]
    image: Option<PathBuf>,
    /// Run QEMU with `-icount shift=N` (one instruction per 2^N ns of virtual time).
    #[arg(long, value_name = "N")]
    icount: Option<String>,
    /// Seconds to wait for the firmware's boot line [default: 30].
    #[arg(long, value_name = "S")]
    boot_timeout: Option<String>,
    /// Measure instructions per payload byte each way (QEMU -icount shift=0, stock iperf3),
    /// flash, RAM and peak stack, in a network namespace of its own.
    #[arg(long, conflicts_with_all = ["tap", "ip", "throughput"])]
    cost: bool,
    /// Measure TCP throughput both ways with stock iperf3: QEMU free-running, then at a fixed
    /// instruction rate (`--icount`, default 3: 125 MIPS), in a namespace of its own.
    #[arg(long, conflicts_with_all = ["tap", "ip"])]
    throughput: bool,
    /// Count linklab-phy10's Manchester decoder on the board's ISA (riscv32-virt): instructions
    /// per bit of full-length frames under drift and jitter, QEMU -icount shift=0; fails if a
    /// frame is not decoded bit-exact.
    #[arg(long, conflicts_with_all = ["tap", "ip", "cost", "throughput", "icount"])]
    phy10: bool,
    /// Write the measurement as JSON to FILE (with --cost, --throughput or --phy10).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Parses `--icount N`: 0..=10.
fn parse_shift(s: &str) -> anyhow::Result<u32> {
    s.parse::<u32>()
        .ok()
        .filter(|n| *n <= 10)
        .with_context(|| format!("--icount: expected a shift of 0..=10, got {s:?}"))
}

/// Runs `linklab emu`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let board = Board::by_name(&args.board)?;
    let shift = args.icount.as_deref().map(parse_shift).transpose()?;
    let timeout = match args.boot_timeout.as_deref() {
        None => Duration::from_secs(30),
        Some(s) => s
            .parse::<u64>()
            .ok()
            .filter(|n| (1..=600).contains(n))
            .map(Duration::from_secs)
            .with_context(|| format!("--boot-timeout: expected 1..=600 seconds, got {s:?}"))?,
    };
    if args.json.is_some() && !(args.cost || args.throughput || args.phy10) {
        bail!("--json: only with --cost, --throughput or --phy10");
    }
    qemu::require(&board)?;
    if args.phy10 {
        let (cases, report) = phy10::measure(&board, args.image.as_deref())?;
        print!("{}", phy10::table(&board, &cases));
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
    if args.cost || args.throughput {
        let image = image::find_or_build(&board, args.image.as_deref())?;
        let result = if args.cost {
            measure::cost(&board, &image)?
        } else {
            measure::throughput(&board, &image, shift.unwrap_or(3))?
        };
        println!("{}", serde_json::to_string_pretty(&result)?);
        if let Some(path) = &args.json {
            std::fs::write(path, serde_json::to_vec_pretty(&result)?)
                .with_context(|| format!("--json: cannot write {}", path.display()))?;
        }
        return Ok(());
    }

    let tap = parse_tap(
        args.tap
            .as_deref()
            .context("--tap: required (the TAP interface name)")?,
    )?;
    let (ip, prefix) = parse_ip(
        args.ip
            .as_deref()
            .context("--ip: required (ADDR/PREFIX, e.g. 198.18.0.2/24)")?,
    )?;
    let mac = args
        .mac
        .as_deref()
        .map(parse_mac)
        .transpose()?
        .unwrap_or(DeviceConfig::DEFAULT.mac);
    if std::path::Path::new("/sys/class/net").join(&tap).exists() {
        bail!("--tap {tap}: an interface of that name already exists; linklab emu only uses a TAP it creates (pick another name)");
    }
    let image = image::find_or_build(&board, args.image.as_deref())?;
    let config = DeviceConfig {
        ip: ip.octets(),
        prefix,
        mac,
    };
    let blob = std::env::temp_dir().join(format!("linklab-emu-{}.cfg", std::process::id()));
    std::fs::write(&blob, config.to_bytes()).context("cannot write the config blob")?;
    let _remove_blob = RemoveOnDrop(blob.clone());

    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    let mut qemu = Qemu::start(&Boot {
        board: &board,
        image: &image,
        config_blob: Some(&blob),
        tap: Some(&tap),
        icount: shift.map(|n| format!("shift={n}")),
        netns: None,
        echo_console: true,
    })?;
    qemu.wait_for_boot(timeout)?;
    println!(
        "linklab emu: {} on TAP {tap}, device {ip}/{prefix}; Ctrl-C stops it",
        board.name
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

/// Removes a file when dropped.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
