//! `linklab bench`: its options, then one call of `linklab_measure::bench`; the run as
//! Niccle's MAC write-up prints it, `--json` and `--pcap`, and an error when the run went
//! wrong (a watchdog, the counters, a download).

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use anyhow::Context;

use linklab_measure::bench::{self, BenchFile, BenchOptions, Duplex, HostTcp, Phy, Profile};
use linklab_measure::bench::{Rate, SendingApp};
use linklab_measure::bench::{MAX_DRIFT_PPM, RX_FRAMES_RANGE};
use linklab_results::values::{self, TcpWindow};

/// How frames cross the simulated wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PhyArg {
    /// Byte images of the transmissions (fast).
    Bytes,
    /// Manchester samples through linklab-phy10 (drift, jitter, noise).
    Samples,
}

/// The device app that sends with `--device-sends`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum SendingArg {
    /// The firmware's iperf3 server under `iperf3 -R`.
    Iperf3,
    /// The firmware's HTTP server under curl (generates the bench file's text per byte).
    Http,
}

/// A clap value parser for one of linklab-sim's named values: `values` (name, summary) are
/// the possible values `--help` lists, and the type's `FromStr` parses the one given.
fn named_values<T>(
    values: impl IntoIterator<Item = (&'static str, &'static str)>,
) -> impl clap::builder::TypedValueParser<Value = T>
where
    T: std::str::FromStr + Clone + Send + Sync + 'static,
    T::Err: std::error::Error + Send + Sync + 'static,
{
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        values
            .into_iter()
            .map(|(name, help)| PossibleValue::new(name).help(help)),
    )
    .try_map(|s| s.parse::<T>())
}

/// Options of `linklab bench`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "--help shows the rest: the link's errors, the simulated host, the sample wire (--phy samples), the cost model (--mhz, --cpi, ...) and the watchdogs.\n\nExamples:\n  linklab bench --profile niccle-initial\n  linklab bench --profile riscv32-measured --mhz 125 --rate 1G --duplex full --device-sends iperf3 --sizes 3MB",
    after_long_help = "Examples:\n  linklab bench --profile niccle-initial\n  linklab bench --profile riscv32-measured --mhz 125 --rate 1G --duplex full --device-sends iperf3 --sizes 3MB"
)]
pub struct Args {
    /// Device profile: cost model of the MCU.
    #[arg(
        long,
        default_value_t = Profile::NiccleOptimized,
        value_parser = named_values::<Profile>(Profile::ALL.map(|p| (p.name(), p.summary())))
    )]
    profile: Profile,
    /// Full-size frames the device's RX queue holds (2..=1024) [default: 9].
    ///
    /// A counted profile's default is its image's queue.
    #[arg(long, value_parser = values::ranged(*RX_FRAMES_RANGE.start(), *RX_FRAMES_RANGE.end()))]
    rx_frames: Option<usize>,
    /// Device TCP receive window: `auto` or bytes (536..=65535).
    ///
    /// `auto`: linklab-mac's window for the queue; a counted profile's image's socket buffer,
    /// with the MAC's burst cap its firmware keeps.
    #[arg(long, default_value = "auto", value_parser = values::tcp_window(536, 65_535))]
    tcp_window: TcpWindow,
    /// Line rate: 10M, 100M or 1G.
    #[arg(long, default_value_t = Rate::M10, value_parser = |s: &str| s.parse::<Rate>())]
    rate: Rate,
    /// Duplex mode.
    #[arg(
        long,
        default_value_t = Duplex::Half,
        value_parser = named_values::<Duplex>(Duplex::ALL.map(|d| (d.name(), d.summary())))
    )]
    duplex: Duplex,
    /// Probability that a transmission is lost (0 <= P < 1).
    #[arg(long, default_value_t = 0.0, value_parser = values::fraction_below(1.0))]
    loss: f64,
    /// Bit error rate (0 <= P <= 0.001).
    #[arg(long, default_value_t = 0.0, value_parser = values::ranged(0.0, 1e-3),
          hide_short_help = true)]
    ber: f64,
    /// Probability that a transmission is cut short (0 <= P < 1).
    #[arg(long, default_value_t = 0.0, value_parser = values::fraction_below(1.0),
          hide_short_help = true)]
    truncate: f64,
    /// RNG seed: the same seed gives the same run.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Files to download, comma-separated: 10kB,100kB,1MB,3MB (or their paths).
    #[arg(long, default_value = "10kB,100kB,1MB,3MB", value_delimiter = ',', value_parser = bench::bench_file)]
    sizes: Vec<BenchFile>,
    /// Pings before the downloads (0..=1000).
    #[arg(long, default_value_t = 10, value_parser = values::ranged(0u16, 1000))]
    pings: u16,
    /// GETs per file (1..=100).
    #[arg(long, default_value_t = 5, value_parser = values::ranged(1u32, 100))]
    gets: u32,
    /// The device sends each file to the host instead, as this app of the firmware does.
    ///
    /// The device sends each file to the host's TCP sink instead of downloading it, from a
    /// two-segment send buffer (a counted profile's: its image's for that app), as this app
    /// of linklab's firmware does (iperf3 -R or curl against it); with a counted profile the
    /// app's own per-byte cost is charged. The host's sink checks the CRC32 of what arrived.
    #[arg(long, value_enum, value_name = "APP")]
    device_sends: Option<SendingArg>,
    /// The host's congestion control: cubic (smoltcp's CUBIC, a 2048-byte initial window) or
    /// none (the first flight fills the device's window, as Linux's 10-segment initial window
    /// does; no reduction after a loss). The host's 1 s minimum RTO (Linux: 200 ms) and its
    /// lack of SACK-based recovery are smoltcp's and cannot be set.
    #[arg(long, default_value = "cubic", value_parser = ["cubic", "none"],
          hide_short_help = true, help_heading = "The simulated host")]
    host_cc: String,
    /// The host's delayed-ACK timeout in ms (0..=500): smoltcp's 10 by default, Linux's is at
    /// least 40. Both ACK every second full segment at once.
    #[arg(long, default_value_t = 10, value_parser = values::ranged(0u64, 500),
          hide_short_help = true, help_heading = "The simulated host")]
    host_ack_delay_ms: u64,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write every frame on the wire (with FCS) to a pcap FILE.
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    pcap: Option<PathBuf>,
    /// Wire model: byte images, or Manchester samples through linklab-phy10.
    #[arg(long, value_enum, default_value_t = PhyArg::Bytes, hide_short_help = true,
          help_heading = "The sample wire")]
    phy: PhyArg,
    /// `--phy samples`: receiver samples per bit time (2..=8). The default, 8, decodes ±1
    /// sample of edge jitter (±12.5 ns, inside 802.3's ±13.5 ns); at 4x a half bit is only 2
    /// samples and ±1 sample of jitter makes different bit patterns identical (see
    /// linklab-phy10's README).
    #[arg(long, default_value_t = 8, value_parser = values::ranged(2u8, 8),
          hide_short_help = true, help_heading = "The sample wire")]
    oversample: u8,
    /// `--phy samples`: transmitter clock offset in ppm (-20000..=20000).
    #[arg(long, default_value_t = 0, allow_hyphen_values = true,
          value_parser = values::ranged(-MAX_DRIFT_PPM, MAX_DRIFT_PPM),
          hide_short_help = true, help_heading = "The sample wire")]
    drift: i32,
    /// `--phy samples`: peak edge jitter in samples (0..=oversample).
    #[arg(
        long,
        default_value_t = 0,
        hide_short_help = true,
        help_heading = "The sample wire"
    )]
    jitter: u8,
    /// `--phy samples`: probability that a sample is flipped (0..=1).
    #[arg(long, default_value_t = 0.0, value_parser = values::ranged(0.0, 1.0),
          hide_short_help = true, help_heading = "The sample wire")]
    noise: f64,
    /// Override the profile's one fitted parameter, the main loop's fixed cost per
    /// iteration, in µs (0..=100000); used to fit it (see linklab-sim's README).
    #[arg(long, value_name = "US", value_parser = values::ranged(0.0, 100_000.0),
          hide_short_help = true, help_heading = "The cost model")]
    main_fixed_us: Option<f64>,
    /// A counted profile's CPU clock in MHz (1..=10000) [default: 160, the ESP32-C6's].
    ///
    /// The counted profiles: riscv32-measured, riscv32-embassy-measured, riscv32-soft-phy,
    /// mps2-measured, sabrelite-measured, niccle-measured. The emulator's `-icount shift=N` runs at 1000 / 2^N
    /// MIPS.
    #[arg(long, value_name = "MHZ", value_parser = values::ranged(1.0, 10_000.0))]
    mhz: Option<f64>,
    /// A counted profile: cycles per instruction (0.1..=100) [default: 1].
    #[arg(long, value_name = "CPI", value_parser = values::ranged(0.1, 100.0),
          hide_short_help = true, help_heading = "The cost model")]
    cpi: Option<f64>,
    /// A counted profile: the share (0..=1) of the transfer's frame bytes the device copies
    /// off their word, charged at the counted cost of a misaligned copy [default: 0]. The
    /// firmware counts it per transfer (`/stats` `cpu.work.misaligned_copy_bytes`): a
    /// receive stream whose payloads land off their word in the socket buffer (after an
    /// odd-sized segment) is ~1.
    #[arg(long, value_name = "SHARE", value_parser = values::ranged(0.0, 1.0),
          hide_short_help = true, help_heading = "The cost model")]
    misaligned_copy: Option<f64>,
    /// One-way delay between the device and the host in µs (0..=100000) [default: 0.01, 2 m
    /// of cable]: what sits between them besides the wire (an emulator's TAP and the host's
    /// kernel; `linklab emu predict` measures it with ping).
    #[arg(long, value_name = "US", value_parser = values::ranged(0.0, 100_000.0),
          hide_short_help = true, help_heading = "The simulated host")]
    latency_us: Option<f64>,
    /// Watchdog: stop after this many seconds of virtual time (1..=86400).
    #[arg(long, default_value_t = 7200.0, value_parser = values::ranged(1.0, 86_400.0),
          hide_short_help = true, help_heading = "Watchdogs")]
    max_virtual_s: f64,
    /// Watchdog: stop after this many seconds of wall time (1..=86400).
    #[arg(long, default_value_t = 600.0, value_parser = values::ranged(1.0, 86_400.0),
          hide_short_help = true, help_heading = "Watchdogs")]
    max_wall_s: f64,
    /// Watchdog: stop when the application made no progress for this many virtual seconds
    /// (1..=86400).
    #[arg(long, default_value_t = 300.0, value_parser = values::ranged(1.0, 86_400.0),
          hide_short_help = true, help_heading = "Watchdogs")]
    max_stall_s: f64,
}

impl Args {
    /// The library's options.
    fn options(&self) -> BenchOptions {
        BenchOptions {
            profile: self.profile,
            rx_frames: self.rx_frames,
            tcp_window: self.tcp_window,
            rate: self.rate,
            duplex: self.duplex,
            loss: self.loss,
            ber: self.ber,
            truncate: self.truncate,
            seed: self.seed,
            sizes: self.sizes.clone(),
            pings: self.pings,
            gets: self.gets,
            device_sends: self.device_sends.map(|app| match app {
                SendingArg::Iperf3 => SendingApp::Iperf3,
                SendingArg::Http => SendingApp::Http,
            }),
            host_tcp: HostTcp {
                cubic: self.host_cc == "cubic",
                ack_delay_ms: self.host_ack_delay_ms,
            },
            pcap: self.pcap.is_some(),
            phy: match self.phy {
                PhyArg::Bytes => Phy::Bytes,
                PhyArg::Samples => Phy::Samples,
            },
            oversample: self.oversample,
            drift: self.drift,
            jitter: self.jitter,
            noise: self.noise,
            main_fixed_us: self.main_fixed_us,
            mhz: self.mhz,
            cpi: self.cpi,
            misaligned_copy: self.misaligned_copy,
            latency_us: self.latency_us,
            max_virtual_s: self.max_virtual_s,
            max_wall_s: self.max_wall_s,
            max_stall_s: self.max_stall_s,
        }
    }
}

/// Runs `linklab bench`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let run = bench::simulate(&args.options())?;
    print!("{}", run.write_up());
    if let Some(path) = &args.json {
        let f = File::create(path)
            .with_context(|| format!("--json: cannot create {}", path.display()))?;
        serde_json::to_writer_pretty(BufWriter::new(f), &run.document())
            .with_context(|| format!("--json: cannot write {}", path.display()))?;
    }
    if let (Some(path), Some(pcap)) = (&args.pcap, &run.report.pcap) {
        let f = File::create(path)
            .with_context(|| format!("--pcap: cannot create {}", path.display()))?;
        pcap.write_to(BufWriter::new(f))
            .with_context(|| format!("--pcap: cannot write {}", path.display()))?;
    }
    run.verdict()
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    /// `linklab bench`'s options alone.
    #[derive(Parser)]
    struct Bench {
        #[command(flatten)]
        args: Args,
    }

    #[test]
    fn no_option_given_is_the_library_default() {
        let bench = Bench::try_parse_from(["bench"]).unwrap();
        assert_eq!(bench.args.options(), BenchOptions::default());
    }
}
