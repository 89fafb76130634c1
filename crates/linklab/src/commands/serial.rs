//! `linklab serial`: linklab-serial's reliable framed link on a serial port, on a Linux spidev
//! device this host masters, or on the emulated Pico's SPI (linklab-serve's `serial`):
//! bridged to a TAP, the device side, or the link's self-test.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use anyhow::Context;
use linklab_results::{bail_usage, usage::usage, values};
use linklab_serve::serial::spidev::GpioPins;
use linklab_serve::serial::{
    self, Mode, Options, SelfTestOptions, Transport, MAX_PAYLOAD, MIN_SIZE,
};

use super::emu::args::SpiArgs;

/// Options of `linklab serial`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The serial port or terminal (e.g. /dev/ttyUSB0, /dev/ttyACM0, /dev/pts/3).
    #[arg(long, value_name = "PATH", required_unless_present_any = ["spidev", "spi_emu"])]
    dev: Option<String>,
    /// A Linux spidev device this host masters (e.g. /dev/spidev0.0 on a Raspberry Pi), the
    /// device's READY and REQUEST on --ready-line and --request-line.
    #[arg(long, value_name = "PATH")]
    spidev: Option<String>,
    /// With --spidev: the GPIO chip of READY and REQUEST.
    #[arg(long, value_name = "PATH", default_value = "/dev/gpiochip0")]
    gpio_chip: String,
    /// With --spidev: READY's line offset on --gpio-chip.
    #[arg(long, value_name = "N")]
    ready_line: Option<u32>,
    /// With --spidev: REQUEST's line offset on --gpio-chip.
    #[arg(long, value_name = "N")]
    request_line: Option<u32>,
    /// The emulated Pico's SPI image (spi-link, spi-link-240) as the device: booted in
    /// rp2040js, its SPI master modelled on the chip's clock (every figure in that clock).
    #[arg(long, value_name = "IMAGE", value_parser = spi_image)]
    spi_emu: Option<String>,
    /// With --spi-emu: this ELF of the image instead of building it.
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    elf: Option<PathBuf>,
    /// With --spi-emu: the harness writes the chip's clock and counters to FILE.
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    status: Option<PathBuf>,
    #[command(flatten)]
    spi: SpiArgs,
    /// Line rate in baud (8N1: a byte is 10 bits), a standard rate.
    #[arg(long, value_name = "N", default_value_t = 115_200, value_parser = serial::baud)]
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
        Ok(Mode::SelfTest(SelfTestOptions {
            sizes: self.sizes.clone(),
            rtt_frames: self.rtt_frames,
            stream_frames: self.stream_frames,
        }))
    }
}

/// Parses `--spi-emu`: one of the Pico's SPI images (a clap value parser).
fn spi_image(s: &str) -> Result<String, String> {
    use linklab_emu::pin_board::{PinBoard, PinCarry};
    let images: Vec<&str> = PinBoard::by_name("pico")
        .map(|b| {
            b.images
                .iter()
                .filter(|i| i.carry == PinCarry::Spi)
                .map(|i| i.name)
                .collect()
        })
        .unwrap_or_default();
    if images.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "not an SPI image of the Pico ({})",
            images.join(", ")
        ))
    }
}

impl Args {
    /// The line: exactly one of --dev, --spidev, --spi-emu, each with its own options.
    fn transport(&self) -> anyhow::Result<(Transport, Option<linklab_emu::pin_boot::SpiDevice>)> {
        let chosen = [
            self.dev.is_some(),
            self.spidev.is_some(),
            self.spi_emu.is_some(),
        ];
        if chosen.iter().filter(|&&c| c).count() != 1 {
            bail_usage!("give exactly one of --dev PATH, --spidev PATH or --spi-emu IMAGE");
        }
        let spi_set = self.spi.master() != linklab_emu::pin_spi::SpiMaster::default();
        if let Some(dev) = &self.dev {
            if spi_set || self.elf.is_some() || self.status.is_some() {
                bail_usage!("--spi-*, --elf, --status: not with --dev (a serial port)");
            }
            return Ok((
                Transport::Tty {
                    dev: dev.clone(),
                    baud: self.baud,
                },
                None,
            ));
        }
        if let Some(dev) = &self.spidev {
            let (Some(ready), Some(request)) = (self.ready_line, self.request_line) else {
                bail_usage!("--spidev: --ready-line N and --request-line N are required");
            };
            let master = self.spi.master();
            if master.gap_ns != linklab_emu::pin_spi::SpiMaster::default().gap_ns
                || self.spi.spi_tail_us.is_some()
                || self.spi.spi_tail_per_mille.is_some()
                || self.spi.spi_byte_gap.is_some()
                || self.elf.is_some()
                || self.status.is_some()
            {
                bail_usage!("--spi-gap-us, --spi-tail-*, --spi-byte-gap, --elf, --status: only with --spi-emu (spidev's gaps are the host's own)");
            }
            return Ok((
                Transport::Spidev {
                    dev: dev.clone(),
                    hz: master.hz,
                    pins: GpioPins {
                        chip: self.gpio_chip.clone(),
                        ready,
                        request,
                    },
                },
                None,
            ));
        }
        let image = self.spi_emu.clone().unwrap_or_default();
        let master = self.spi.master();
        master.check()?;
        let device = linklab_emu::pin_boot::boot_spi_device(
            &image,
            self.elf.clone(),
            &master,
            self.status.clone(),
            std::time::Duration::from_secs(60),
        )?;
        let stream = device.stream.try_clone().context("the harness's socket")?;
        Ok((
            Transport::Emulated {
                stream,
                hz: master.hz,
                what: format!("the emulated Pico ({image})"),
            },
            Some(device),
        ))
    }
}

/// Runs `linklab serial`; with `--selftest --json FILE`, writes the self-test's document.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mode = args.mode()?;
    if args.spidev.is_none() && (args.ready_line.is_some() || args.request_line.is_some()) {
        bail_usage!("--ready-line and --request-line: only with --spidev");
    }
    let (transport, device) = args.transport()?;
    let report = serial::run(Options { transport, mode });
    if let Some(device) = device {
        device.stop();
    }
    let report = report?;
    if let (Some(report), Some(path)) = (report, &args.json) {
        let text = serde_json::to_string_pretty(&report).context("the self-test's document")?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("--json: cannot write {}", path.display()))?;
    }
    Ok(())
}
