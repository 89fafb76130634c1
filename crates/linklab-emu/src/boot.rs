//! `linklab emu BOARD --tap NAME --ip ADDR/PREFIX`: builds (or finds) the board's image, boots
//! it in QEMU with its network on a TAP, and hands it its address through a small
//! configuration blob that QEMU's loader puts in RAM (no rebuild per address). The user then
//! runs stock ping, curl and iperf3 against the device; Ctrl-C stops QEMU, which takes its TAP
//! with it. The blob is removed once the image has booted (QEMU read it when it started), so
//! a killed `linklab emu` leaves nothing in the temporary directory.
//!
//! The image's table entry says what its network is attached to: the NIC on a TAP QEMU
//! creates; the serial link on a pseudo-terminal, bridged here to the TAP; or the soft-PHY
//! line, which this process runs between the device and a TAP it creates ([`super::line`]).

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_perf::device_config::DeviceConfig;

use super::blob::ConfigBlob;
use super::board::{Attach, Board};
use super::image;
use super::line::{self, LineOptions};
use super::qemu::{self, Boot, Network, Qemu};
use linklab_results::{bail_usage, values};
use linklab_serve::serve::StopSignals;

/// What boots an image: the board, the image, the TAP and the device's address.
#[derive(clap::Args, Debug)]
pub struct BootArgs {
    /// The emulated board, e.g. mps2-an385 (`linklab emu boards` lists them all).
    #[arg(value_name = "BOARD", value_parser = Board::by_name, required = true)]
    board: Option<Board>,
    /// The image: main (the default), embassy, serial, soft-phy, minimal, or an ELF file.
    ///
    /// A name from the board's row of `linklab emu boards`; the image is built from
    /// linklab's firmware/ folder when needed. Any other value is an ELF file booted as the
    /// main image (a file named like an image is given with a path, e.g. `./minimal`).
    #[arg(long, value_name = "NAME|ELF")]
    image: Option<PathBuf>,
    /// With --image NAME: boot this ELF file of that image instead of building it.
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    elf: Option<PathBuf>,
    /// TAP interface for the device: created here, gone when it stops; must not exist yet.
    #[arg(long, value_name = "NAME", value_parser = values::interface_name, required = true)]
    tap: Option<String>,
    /// The device's IPv4 address and prefix, e.g. 198.18.0.2/24.
    #[arg(long, value_name = "ADDR/PREFIX", value_parser = values::ipv4_with_prefix, required = true)]
    ip: Option<(Ipv4Addr, u8)>,
    /// The device's MAC address [default: 02:4c:4c:00:00:02].
    #[arg(long, value_name = "MAC", value_parser = values::mac_address)]
    mac: Option<[u8; 6]>,
    /// Run QEMU with `-icount shift=N` (one instruction per 2^N ns of virtual time), 0..=10.
    #[arg(long, value_name = "N", value_parser = values::ranged(0u32, 10))]
    pub(super) icount: Option<u32>,
    /// Seconds to wait for the firmware's boot line, 1..=600.
    #[arg(long, value_name = "S", default_value_t = 30, value_parser = values::ranged(1u64, 600))]
    boot_timeout: u64,
    #[command(flatten)]
    line: LineOptions,
}

/// Boots the image and serves until a signal.
pub fn run(args: BootArgs) -> anyhow::Result<()> {
    // clap requires each (they are options only because a verb stands in their place).
    let (Some(board), Some(tap), Some((ip, prefix))) = (args.board, args.tap, args.ip) else {
        bail_usage!("BOARD, --tap and --ip are required");
    };
    qemu::require(&board)?;
    let chosen = image::choose(&board, args.image.as_deref(), args.elf.as_deref())?;
    let spec = chosen.spec;
    if !spec.serves() {
        bail_usage!(
            "--image {}: {} (no network to boot it on; see linklab emu -h for the verb that runs it)",
            spec.name,
            spec.about
        );
    }
    let line = args.line.resolve(spec.attach == Attach::SoftPhyLine)?;
    let config = DeviceConfig {
        ip: ip.octets(),
        prefix,
        mac: args.mac.unwrap_or(DeviceConfig::DEFAULT.mac),
    };
    if std::path::Path::new("/sys/class/net").join(&tap).exists() {
        bail!("--tap {tap}: an interface of that name already exists; linklab emu only uses a TAP it creates (pick another name)");
    }
    let image = chosen.find_or_build(&board)?;
    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    let timeout = Duration::from_secs(args.boot_timeout);
    if let Some(l) = line {
        let session = line::Session {
            board: &board,
            tap: &tap,
            device_config: config.to_bytes().to_vec(),
            image: &image,
            icount: args.icount,
            boot_timeout: timeout,
        };
        return line::run(&session, &l, &signals);
    }
    let blob = ConfigBlob::write(
        &format!("linklab-emu-{}", std::process::id()),
        &config.to_bytes(),
    )?;
    let serial = spec.attach == Attach::SerialPty;
    let mut qemu = Qemu::start(Boot {
        board: &board,
        image: &image,
        config_blob: Some(blob),
        network: if serial {
            Network::SerialPty
        } else {
            Network::Tap(&tap)
        },
        icount: args.icount.map(|n| format!("shift={n}")),
        netns: None,
        echo_console: true,
    })?;
    qemu.wait_for_boot(timeout)?;
    if serial {
        return bridge_serial(&mut qemu, &board, &tap, ip, prefix, &signals);
    }
    let which = if spec.name == "main" {
        String::new()
    } else {
        format!(" ({} image)", spec.name)
    };
    println!(
        "linklab emu: {}{which} on TAP {tap}, device {ip}/{prefix}; Ctrl-C stops it",
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
        linklab_serve::serve::wait_readable(
            &[std::os::fd::AsFd::as_fd(&signals)],
            Some(Duration::from_millis(200)),
        )?;
    }
}

/// The serial image is up: bridge its UART's pseudo-terminal to the TAP until a signal.
fn bridge_serial(
    qemu: &mut Qemu,
    board: &Board,
    tap: &str,
    ip: Ipv4Addr,
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
    let result = linklab_serve::serial::bridge_pty(&pty, tap, signals);
    qemu.stop();
    result
}
