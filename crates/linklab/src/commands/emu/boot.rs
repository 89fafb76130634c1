//! `linklab emu BOARD --tap NAME --ip ADDR/PREFIX` (or `linklab emu boot ...`): boots the
//! image with its network on a TAP and serves until a signal.

use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use linklab_emu::board::Bootable;
use linklab_emu::boot::{self, BootOptions};
use linklab_emu::pin_boot::{self, PinBootOptions};
use linklab_results::{bail_usage, values};
use linklab_serve::serve::StopSignals;

use super::args::{LineArgs, SpiArgs};

/// What boots an image: the board, the image, the TAP and the device's address.
#[derive(clap::Args, Debug)]
pub struct BootArgs {
    /// The emulated board, e.g. mps2-an385 or pico (`linklab emu boards` lists them all).
    #[arg(value_name = "BOARD", value_parser = Bootable::by_name, required = true)]
    board: Option<Bootable>,
    /// The image: main (the default), embassy, serial, soft-phy, minimal, or an ELF file
    /// (pico: soft-phy, the default, soft-phy-one-core, spi-link, usb-serial, usb-ncm, ...).
    ///
    /// A name from the board's row of `linklab emu boards`; the image is built from
    /// linklab's firmware/ folder when needed. Any other value is an ELF file booted as the
    /// main image (a file named like an image is given with a path, e.g. `./minimal`).
    #[arg(long, value_name = "NAME|ELF")]
    image: Option<PathBuf>,
    /// With --image NAME: boot this ELF file of that image instead of building it.
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    elf: Option<PathBuf>,
    /// TAP interface for the device: created here, gone when it stops; must not exist yet
    /// (required but for the Pico's USB images, whose network is their USB port).
    #[arg(long, value_name = "NAME", value_parser = values::interface_name)]
    tap: Option<String>,
    /// The device's IPv4 address and prefix, e.g. 198.18.0.2/24 (required but for the
    /// Pico's USB images).
    #[arg(long, value_name = "ADDR/PREFIX", value_parser = values::ipv4_with_prefix)]
    ip: Option<(Ipv4Addr, u8)>,
    /// The Pico's USB images: a symbolic link to the USB port (the pseudo-terminal a program
    /// opens as /dev/ttyACM0) at PATH.
    #[arg(long, value_name = "PATH")]
    pty: Option<PathBuf>,
    /// The device's MAC address [default: 02:4c:4c:00:00:02].
    #[arg(long, value_name = "MAC", value_parser = values::mac_address)]
    mac: Option<[u8; 6]>,
    /// Run QEMU with `-icount shift=N` (one instruction per 2^N ns of virtual time), 0..=10.
    #[arg(long, value_name = "N", value_parser = values::ranged(0u32, 10))]
    icount: Option<u32>,
    /// Seconds to wait for the firmware's boot line, 1..=600.
    #[arg(long, value_name = "S", default_value_t = 30, value_parser = values::ranged(1u64, 600))]
    boot_timeout: u64,
    /// A pin-level board (pico, w5500-evb-pico): the harness writes the emulated chip's clock
    /// and its devices' counters to FILE (one JSON line, rewritten as it runs).
    #[arg(long, value_name = "FILE")]
    status: Option<PathBuf>,
    /// w5500-evb-pico: every frame on the W5500's port to FILE, stamped in the chip's clock
    /// (pico --image usb-ncm: every frame on the host's cdc_ncm interface).
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    /// w5500-evb-pico: the W5500 model's faults, e.g. header:25,send:40 (every 25th read of a
    /// frame's length header comes back corrupt, every 40th SEND is refused).
    #[arg(long, value_name = "PLAN", value_parser = pin_boot::w5500_faults, hide_short_help = true)]
    w5500_faults: Option<String>,
    #[command(flatten)]
    line: LineArgs,
    #[command(flatten)]
    spi: SpiArgs,
}

/// Boots the image and serves until a signal.
pub fn run(args: BootArgs) -> anyhow::Result<()> {
    // clap requires BOARD (it is an option only because a verb stands in its place).
    let Some(board) = args.board else {
        bail_usage!("BOARD is required");
    };
    let board = match board {
        Bootable::Qemu(board) => board,
        Bootable::PinLevel(board) => {
            return run_pin_level(
                PinBootOptions {
                    board,
                    image: args.image.map(|i| i.to_string_lossy().into_owned()),
                    elf: args.elf,
                    tap: args.tap,
                    ip: args.ip,
                    pty: args.pty,
                    line: args.line.options(),
                    status: args.status,
                    pcap: args.pcap,
                    w5500_faults: args.w5500_faults,
                    connect_timeout: Duration::from_secs(args.boot_timeout),
                    spi: args.spi.master(),
                },
                args.mac,
                args.icount,
            )
        }
    };
    if args.status.is_some()
        || args.pcap.is_some()
        || args.w5500_faults.is_some()
        || args.pty.is_some()
    {
        bail_usage!("--status, --pcap, --pty and --w5500-faults: only for the pin-level boards (pico, w5500-evb-pico)");
    }
    if args.spi.master() != linklab_emu::pin_spi::SpiMaster::default() {
        bail_usage!("--spi-*: only for the Pico's SPI images (linklab emu pico --image spi-link)");
    }
    let (Some(tap), Some((ip, prefix))) = (args.tap, args.ip) else {
        bail_usage!("--tap and --ip are required");
    };
    let prepared = boot::prepare(&BootOptions {
        board,
        image: args.image,
        elf: args.elf,
        tap,
        ip,
        prefix,
        mac: args.mac,
        icount: args.icount,
        boot_timeout: Duration::from_secs(args.boot_timeout),
        line: args.line.options(),
    })?;
    // After the build (which stays interruptible), before QEMU starts.
    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    let booted = prepared.start()?;
    println!("{}", booted.banner());
    let ended = booted.serve(&signals);
    if let Some(counters) = ended.line_counters {
        println!("{counters}");
    }
    if let Some(sig) = ended.outcome? {
        println!("linklab emu: stopped by signal {sig}");
    }
    Ok(())
}

/// A pin-level board (`linklab emu pico`, `linklab emu w5500-evb-pico`): builds the example,
/// runs it in rp2040js and serves until a signal.
fn run_pin_level(
    options: PinBootOptions,
    mac: Option<[u8; 6]>,
    icount: Option<u32>,
) -> anyhow::Result<()> {
    if mac.is_some() {
        bail_usage!(
            "--mac: {}'s example has its MAC address built in (it runs unchanged)",
            options.board.name
        );
    }
    if icount.is_some() {
        bail_usage!(
            "--icount: a QEMU option; {} runs in rp2040js, which counts the chip's own cycles",
            options.board.name
        );
    }
    let prepared = pin_boot::prepare(&options)?;
    // After the build (which stays interruptible), before the harness starts.
    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    let booted = prepared.start()?;
    println!("{}", booted.banner());
    let (counters, ended) = booted.serve(&signals)?;
    println!("{counters}");
    println!("linklab emu: {ended}");
    Ok(())
}
