//! The arguments every `linklab emu` verb shares: the board and image, the soft-PHY line's
//! options, the fixed instruction rate, where to write the figures.

use std::path::PathBuf;

use linklab_emu::board::Bootable;
use linklab_emu::image::ImageChoice;
use linklab_emu::line::{LineOptions, MAX_DRIFT_PPM};
use linklab_emu::pin_board::PinBoard;
use linklab_results::values;

/// The board and image a measuring verb runs.
#[derive(clap::Args, Debug)]
pub struct ImageArgs {
    /// The emulated board, e.g. mps2-an385 (`linklab emu boards` lists them all).
    #[arg(value_name = "BOARD", value_parser = Bootable::by_name)]
    pub board: Bootable,
    /// The image: main (the default), embassy, soft-phy, minimal, or an ELF file.
    ///
    /// A name from the board's row of `linklab emu boards`; the image is built from
    /// linklab's firmware/ folder when needed. Any other value is an ELF file taken as the
    /// main image (a file named like an image is given with a path, e.g. `./minimal`).
    #[arg(long, value_name = "NAME|ELF")]
    pub image: Option<PathBuf>,
    /// With --image NAME: this ELF file of that image instead of building it.
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    pub elf: Option<PathBuf>,
}

impl ImageArgs {
    /// The library's choice of a QEMU board's image for `verb`; a pin-level board is one
    /// usage line (only `throughput` measures those: [`ImageArgs::pin_board`]).
    pub fn choice(&self, verb: &str) -> anyhow::Result<ImageChoice> {
        match self.board {
            Bootable::Qemu(board) => Ok(ImageChoice {
                board,
                image: self.image.clone(),
                elf: self.elf.clone(),
            }),
            Bootable::PinLevel(b) => linklab_results::bail_usage!(
                "{}: runs at the pin level in rp2040js; `linklab emu {} ...` boots it and `linklab emu throughput {}` measures it, `linklab emu {verb}` takes the QEMU boards",
                b.name,
                b.name,
                b.name
            ),
        }
    }

    /// The pin-level board, if that is what was named.
    pub fn pin_board(&self) -> Option<PinBoard> {
        match self.board {
            Bootable::PinLevel(b) => Some(b),
            Bootable::Qemu(_) => None,
        }
    }
}

/// What every measuring verb takes: the board and image, the soft-PHY line's options (with
/// `--image soft-phy`), and where to write the figures.
#[derive(clap::Args, Debug)]
pub struct MeasureArgs {
    #[command(flatten)]
    pub target: ImageArgs,
    #[command(flatten)]
    pub line: LineArgs,
    /// Write the figures as JSON to FILE too.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// The fixed instruction rate a verb runs the image at.
#[derive(clap::Args, Debug)]
pub struct FixedRate {
    /// The fixed rate: `-icount shift=N`, 1000 / 2^N MIPS (3: 125 MIPS), 0..=10.
    #[arg(long = "icount", value_name = "N", default_value_t = 3,
          value_parser = values::ranged(0u32, 10))]
    pub shift: u32,
}

/// The soft-PHY line's options on the command line (with `--image soft-phy`); unset ones take
/// their defaults ([`LineOptions::resolve`]).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct LineArgs {
    /// The device's sampler: samples per bit, 4..=8 [default: 4].
    #[arg(long, value_name = "N", value_parser = values::ranged(4u8, 8),
          hide_short_help = true, help_heading = "The soft-PHY line (--image soft-phy)")]
    pub oversample: Option<u8>,
    /// Transmitter clock offset toward the device, ppm, -5000..=5000 [default: 0].
    ///
    /// The range the decoder is verified over: ±0.5 %.
    #[arg(long, value_name = "PPM", allow_negative_numbers = true,
          value_parser = values::ranged(-MAX_DRIFT_PPM, MAX_DRIFT_PPM),
          hide_short_help = true, help_heading = "The soft-PHY line (--image soft-phy)")]
    pub drift: Option<i32>,
    /// Peak edge jitter toward the device, in receiver samples [default: 0].
    ///
    /// At most 0.25 at 4x, 0.5 at 5x..7x, 1 at 8x: where the decoder loses at most one frame
    /// in 10 000.
    #[arg(
        long,
        value_name = "SAMPLES",
        hide_short_help = true,
        help_heading = "The soft-PHY line (--image soft-phy)"
    )]
    pub jitter: Option<f64>,
    /// Probability that each sample toward the device is flipped, 0..1 [default: 0].
    #[arg(long, value_name = "P", value_parser = values::fraction_below(1.0),
          hide_short_help = true, help_heading = "The soft-PHY line (--image soft-phy)")]
    pub noise: Option<f64>,
    /// Do not pace the line at 10 Mbit/s: frames go as fast as the device takes them (the
    /// CPU-bound ceiling).
    #[arg(
        long,
        hide_short_help = true,
        help_heading = "The soft-PHY line (--image soft-phy)"
    )]
    pub no_pace: bool,
    /// First put a fixed set of malformed captures on the line, to show the firmware counts
    /// each and goes on.
    ///
    /// Garbage, all ones, all zeros, a pulse train, a frame cut short, a frame with one bit
    /// flipped, one sample.
    #[arg(
        long,
        hide_short_help = true,
        help_heading = "The soft-PHY line (--image soft-phy)"
    )]
    pub bad_captures: bool,
}

impl LineArgs {
    /// The library's options.
    pub fn options(&self) -> LineOptions {
        LineOptions {
            oversample: self.oversample,
            drift: self.drift,
            jitter: self.jitter,
            noise: self.noise,
            no_pace: self.no_pace,
            bad_captures: self.bad_captures,
        }
    }
}

/// The SPI master model's settings (the Pico's SPI images: `linklab emu pico --image
/// spi-link`, `linklab serial --spi-emu`), standing in for a Raspberry Pi's spidev.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SpiArgs {
    /// The SPI clock in Hz, 1000000..=31250000 [default: 20000000].
    #[arg(
        long,
        value_name = "HZ",
        hide_short_help = true,
        help_heading = "The SPI master (the Pico's spi-link images)"
    )]
    pub spi_hz: Option<u32>,
    /// The host's gap between transfers, µs [default: 10, CBA's Pi].
    #[arg(
        long,
        value_name = "US",
        hide_short_help = true,
        help_heading = "The SPI master (the Pico's spi-link images)"
    )]
    pub spi_gap_us: Option<u32>,
    /// The longer gap it leaves now and then, µs [default: 50, CBA's Pi].
    #[arg(
        long,
        value_name = "US",
        hide_short_help = true,
        help_heading = "The SPI master (the Pico's spi-link images)"
    )]
    pub spi_tail_us: Option<u32>,
    /// How often the longer gap comes, per mille of transfers [default: 50].
    #[arg(
        long,
        value_name = "N",
        hide_short_help = true,
        help_heading = "The SPI master (the Pico's spi-link images)"
    )]
    pub spi_tail_per_mille: Option<u32>,
    /// Idle half periods of SCK after each byte [default: 0].
    #[arg(
        long,
        value_name = "N",
        hide_short_help = true,
        help_heading = "The SPI master (the Pico's spi-link images)"
    )]
    pub spi_byte_gap: Option<u32>,
}

impl SpiArgs {
    /// The master's settings, defaults where unset.
    pub fn master(&self) -> linklab_emu::pin_spi::SpiMaster {
        let d = linklab_emu::pin_spi::SpiMaster::default();
        let us = |v: Option<u32>, default: u32| v.map_or(default, |us| us.saturating_mul(1000));
        linklab_emu::pin_spi::SpiMaster {
            hz: self.spi_hz.unwrap_or(d.hz),
            gap_ns: us(self.spi_gap_us, d.gap_ns),
            tail_ns: us(self.spi_tail_us, d.tail_ns),
            tail_per_mille: self.spi_tail_per_mille.unwrap_or(d.tail_per_mille),
            byte_gap: self.spi_byte_gap.unwrap_or(d.byte_gap),
            seed: d.seed,
        }
    }
}
