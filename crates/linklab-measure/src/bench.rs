//! `linklab bench`: the experiment of Niccle's MAC write-up — 10 pings, then 5 HTTP GETs of
//! each bench file — on a simulated link (linklab-sim), printed in the write-up's format, with a summary against
//! the link's theoretical TCP goodput limit ([`output`]).

mod output;

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use anyhow::{bail, Context};
use linklab_perf::payload::{BenchFile, BENCH_FILES};
use linklab_sim::cost::{PhyKind, Workload};
use linklab_sim::counts::Clock;
use linklab_sim::device::RX_FRAMES_RANGE;
use linklab_sim::profile::Profile;
use linklab_sim::sample_wire::{SampleWireConfig, MAX_DRIFT_PPM};
use linklab_sim::sim::{self, PhyPath, SimConfig};
use linklab_sim::wire::{Duplex, Impairments, LinkConfig, Rate};

use linklab_results::values::TcpWindow;
use linklab_results::{bail_usage, values};
use output::{print_report, to_json};

/// How frames cross the simulated wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PhyArg {
    /// Byte images of the transmissions (fast).
    Bytes,
    /// Manchester samples through linklab-phy10 (drift, jitter, noise).
    Samples,
}

/// The device app that sends with `--device-sends`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum SendingApp {
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
    pub profile: Profile,
    /// Full-size frames the device's RX queue holds (2..=1024) [default: 9].
    ///
    /// A counted profile's default is its image's queue.
    #[arg(long, value_parser = values::ranged(*RX_FRAMES_RANGE.start(), *RX_FRAMES_RANGE.end()))]
    pub rx_frames: Option<usize>,
    /// Device TCP receive window: `auto` or bytes (536..=65535).
    ///
    /// `auto`: linklab-mac's window for the queue; a counted profile's image's socket buffer,
    /// with the MAC's burst cap its firmware keeps.
    #[arg(long, default_value = "auto", value_parser = values::tcp_window(536, 65_535))]
    pub tcp_window: TcpWindow,
    /// Line rate: 10M, 100M or 1G.
    #[arg(long, default_value_t = Rate::M10, value_parser = |s: &str| s.parse::<Rate>())]
    pub rate: Rate,
    /// Duplex mode.
    #[arg(
        long,
        default_value_t = Duplex::Half,
        value_parser = named_values::<Duplex>(Duplex::ALL.map(|d| (d.name(), d.summary())))
    )]
    pub duplex: Duplex,
    /// Probability that a transmission is lost (0 <= P < 1).
    #[arg(long, default_value_t = 0.0, value_parser = values::fraction_below(1.0))]
    pub loss: f64,
    /// Bit error rate (0 <= P <= 0.001).
    #[arg(long, default_value_t = 0.0, value_parser = values::ranged(0.0, 1e-3),
          hide_short_help = true)]
    pub ber: f64,
    /// Probability that a transmission is cut short (0 <= P < 1).
    #[arg(long, default_value_t = 0.0, value_parser = values::fraction_below(1.0),
          hide_short_help = true)]
    pub truncate: f64,
    /// RNG seed: the same seed gives the same run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Files to download, comma-separated: 10kB,100kB,1MB,3MB (or their paths).
    #[arg(long, default_value = "10kB,100kB,1MB,3MB", value_delimiter = ',', value_parser = bench_file)]
    pub sizes: Vec<BenchFile>,
    /// Pings before the downloads (0..=1000).
    #[arg(long, default_value_t = 10, value_parser = values::ranged(0u16, 1000))]
    pub pings: u16,
    /// GETs per file (1..=100).
    #[arg(long, default_value_t = 5, value_parser = values::ranged(1u32, 100))]
    pub gets: u32,
    /// The device sends each file to the host instead, as this app of the firmware does.
    ///
    /// The device sends each file to the host's TCP sink instead of downloading it, from a
    /// two-segment send buffer (a counted profile's: its image's for that app), as this app
    /// of linklab's firmware does (iperf3 -R or curl against it); with a counted profile the
    /// app's own per-byte cost is charged. The host's sink checks the CRC32 of what arrived.
    #[arg(long, value_enum, value_name = "APP")]
    pub device_sends: Option<SendingApp>,
    /// The host's congestion control: cubic (smoltcp's CUBIC, a 2048-byte initial window) or
    /// none (the first flight fills the device's window, as Linux's 10-segment initial window
    /// does; no reduction after a loss). The host's 1 s minimum RTO (Linux: 200 ms) and its
    /// lack of SACK-based recovery are smoltcp's and cannot be set.
    #[arg(long, default_value = "cubic", value_parser = ["cubic", "none"],
          hide_short_help = true, help_heading = "The simulated host")]
    pub host_cc: String,
    /// The host's delayed-ACK timeout in ms (0..=500): smoltcp's 10 by default, Linux's is at
    /// least 40. Both ACK every second full segment at once.
    #[arg(long, default_value_t = 10, value_parser = values::ranged(0u64, 500),
          hide_short_help = true, help_heading = "The simulated host")]
    pub host_ack_delay_ms: u64,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write every frame on the wire (with FCS) to a pcap FILE.
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    pub pcap: Option<PathBuf>,
    /// Wire model: byte images, or Manchester samples through linklab-phy10.
    #[arg(long, value_enum, default_value_t = PhyArg::Bytes, hide_short_help = true,
          help_heading = "The sample wire")]
    pub phy: PhyArg,
    /// `--phy samples`: receiver samples per bit time (2..=8). The default, 8, decodes ±1
    /// sample of edge jitter (±12.5 ns, inside 802.3's ±13.5 ns); at 4x a half bit is only 2
    /// samples and ±1 sample of jitter makes different bit patterns identical (see
    /// linklab-phy10's README).
    #[arg(long, default_value_t = 8, value_parser = values::ranged(2u8, 8),
          hide_short_help = true, help_heading = "The sample wire")]
    pub oversample: u8,
    /// `--phy samples`: transmitter clock offset in ppm (-20000..=20000).
    #[arg(long, default_value_t = 0, allow_hyphen_values = true,
          value_parser = values::ranged(-MAX_DRIFT_PPM, MAX_DRIFT_PPM),
          hide_short_help = true, help_heading = "The sample wire")]
    pub drift: i32,
    /// `--phy samples`: peak edge jitter in samples (0..=oversample).
    #[arg(
        long,
        default_value_t = 0,
        hide_short_help = true,
        help_heading = "The sample wire"
    )]
    pub jitter: u8,
    /// `--phy samples`: probability that a sample is flipped (0..=1).
    #[arg(long, default_value_t = 0.0, value_parser = values::ranged(0.0, 1.0),
          hide_short_help = true, help_heading = "The sample wire")]
    pub noise: f64,
    /// Override the profile's one fitted parameter, the main loop's fixed cost per
    /// iteration, in µs (0..=100000); used to fit it (see linklab-sim's README).
    #[arg(long, value_name = "US", value_parser = values::ranged(0.0, 100_000.0),
          hide_short_help = true, help_heading = "The cost model")]
    pub main_fixed_us: Option<f64>,
    /// A counted profile's CPU clock in MHz (1..=10000) [default: 160, the ESP32-C6's].
    ///
    /// The counted profiles: riscv32-measured, riscv32-embassy-measured, riscv32-soft-phy,
    /// mps2-measured, sabrelite-measured, niccle-measured. The emulator's `-icount shift=N` runs at 1000 / 2^N
    /// MIPS.
    #[arg(long, value_name = "MHZ", value_parser = values::ranged(1.0, 10_000.0))]
    pub mhz: Option<f64>,
    /// A counted profile: cycles per instruction (0.1..=100) [default: 1].
    #[arg(long, value_name = "CPI", value_parser = values::ranged(0.1, 100.0),
          hide_short_help = true, help_heading = "The cost model")]
    pub cpi: Option<f64>,
    /// A counted profile: the share (0..=1) of the transfer's frame bytes the device copies
    /// off their word, charged at the counted cost of a misaligned copy [default: 0]. The
    /// firmware counts it per transfer (`/stats` `cpu.work.misaligned_copy_bytes`): a
    /// receive stream whose payloads land off their word in the socket buffer (after an
    /// odd-sized segment) is ~1.
    #[arg(long, value_name = "SHARE", value_parser = values::ranged(0.0, 1.0),
          hide_short_help = true, help_heading = "The cost model")]
    pub misaligned_copy: Option<f64>,
    /// One-way delay between the device and the host in µs (0..=100000) [default: 0.01, 2 m
    /// of cable]: what sits between them besides the wire (an emulator's TAP and the host's
    /// kernel; `linklab emu predict` measures it with ping).
    #[arg(long, value_name = "US", value_parser = values::ranged(0.0, 100_000.0),
          hide_short_help = true, help_heading = "The simulated host")]
    pub latency_us: Option<f64>,
    /// Watchdog: stop after this many seconds of virtual time (1..=86400).
    #[arg(long, default_value_t = 7200.0, value_parser = values::ranged(1.0, 86_400.0),
          hide_short_help = true, help_heading = "Watchdogs")]
    pub max_virtual_s: f64,
    /// Watchdog: stop after this many seconds of wall time (1..=86400).
    #[arg(long, default_value_t = 600.0, value_parser = values::ranged(1.0, 86_400.0),
          hide_short_help = true, help_heading = "Watchdogs")]
    pub max_wall_s: f64,
    /// Watchdog: stop when the application made no progress for this many virtual seconds
    /// (1..=86400).
    #[arg(long, default_value_t = 300.0, value_parser = values::ranged(1.0, 86_400.0),
          hide_short_help = true, help_heading = "Watchdogs")]
    pub max_stall_s: f64,
}

/// One-way propagation delay: about 2 m of cable.
const PROPAGATION_NS: u64 = 10;
/// The MSS of a 1500-byte Ethernet MTU.
const MSS: u64 = 1460;

/// One `--sizes` item: a bench file by size (`1MB`) or path (`1MB.txt`, `/1MB.txt`).
fn bench_file(item: &str) -> Result<BenchFile, String> {
    let name = |f: &BenchFile| f.path.trim_start_matches('/').trim_end_matches(".txt");
    let item = item.trim();
    BENCH_FILES
        .iter()
        .copied()
        .find(|f| f.path == item || f.path.trim_start_matches('/') == item || name(f) == item)
        .ok_or_else(|| {
            let names: Vec<&str> = BENCH_FILES.iter().map(name).collect();
            format!("expected one of {}", names.join(", "))
        })
}

/// Turns the options into a simulator configuration, rejecting bad values.
pub fn config(args: &Args) -> anyhow::Result<SimConfig> {
    let rate = args.rate;
    let tcp_window = match args.tcp_window {
        TcpWindow::Auto => None,
        TcpWindow::Bytes(w) => Some(w),
    };
    let phy_path = phy_path_of(args)?;
    let counts = args.profile.counts();
    if counts.is_none()
        && (args.mhz.is_some() || args.cpi.is_some() || args.misaligned_copy.is_some())
    {
        bail_usage!(
            "--mhz, --cpi and --misaligned-copy: only with a counted profile (riscv32-measured, riscv32-embassy-measured, riscv32-soft-phy, mps2-measured, sabrelite-measured, niccle-measured; the others are times, not instruction counts)"
        );
    }
    let clock = Clock {
        mhz: args.mhz.unwrap_or(Clock::ESP32_C6.mhz),
        cpi: args.cpi.unwrap_or(Clock::ESP32_C6.cpi),
    };
    let share = args.misaligned_copy.unwrap_or(0.0);
    let sending = args.device_sends.is_some();
    let work = Workload {
        rx_misaligned: if sending { 0.0 } else { share },
        tx_misaligned: if sending { share } else { 0.0 },
        http_sender: args.device_sends == Some(SendingApp::Http),
        oversample: match (&phy_path, args.profile) {
            (PhyPath::Samples(c), Profile::Riscv32SoftPhy) => Some(c.oversample),
            _ => None,
        },
    };
    let mut cost = match args.profile.cost_for(clock, &work) {
        Ok(c) => c,
        Err(e) => bail_usage!("{e}"),
    };
    // A counted profile's device is its image's: its queue, its window (with the MAC's burst
    // cap, which the firmware keeps), the send buffer of the app that sends.
    let device = counts.as_ref().map(|c| c.device);
    let rx_frames = args
        .rx_frames
        .or(device.map(|d| d.rx_queue_frames))
        .unwrap_or(9);
    let (tcp_window, burst_cap) = match (tcp_window, device) {
        (None, Some(d)) => (Some(d.tcp_window), true),
        (w, _) => (w, false),
    };
    let send_buffer = match (device, args.device_sends) {
        (Some(d), Some(SendingApp::Http)) => d.http_send_buffer,
        (Some(d), _) => d.iperf3_send_buffer,
        (None, _) => linklab_sim::app::DEVICE_SEND_BUFFER,
    };
    // A bit-banged PHY must enter its interrupt before the preamble (56 bit times) has
    // passed; at 100M/1G Niccle's 750 ns latency is longer than that, so nothing is ever
    // received: refuse instead of running into the watchdog.
    let preamble_ns = 56 * rate.bit_ps() / 1000;
    if cost.phy == PhyKind::BitBanged && cost.irq_latency_ns >= preamble_ns {
        bail_usage!(
            "--rate {}: profile {} has a bit-banged PHY whose {} ns interrupt latency exceeds the {} ns preamble at this rate (accepted: --rate 10M, or --profile ideal)",
            args.rate,
            args.profile,
            cost.irq_latency_ns,
            preamble_ns
        );
    }
    if let Some(us) = args.main_fixed_us {
        cost.main_fixed_ns = (us * 1000.0).round() as u64;
    }
    Ok(SimConfig {
        profile: args.profile,
        cost,
        rx_frames,
        tcp_window,
        burst_cap,
        send_buffer,
        // A counted profile's image: its NIC (or its soft PHY's DMA) paces the line, the
        // MAC keeps no line timing.
        mac_line_timing: counts.is_none(),
        link: LinkConfig {
            rate,
            duplex: args.duplex,
            propagation_ns: args
                .latency_us
                .map_or(PROPAGATION_NS, |us| (us * 1000.0).round() as u64),
        },
        impairments: Impairments {
            loss: args.loss,
            ber: args.ber,
            truncate: args.truncate,
        },
        seed: args.seed,
        pings: args.pings,
        files: args.sizes.clone(),
        gets: args.gets,
        device_sends: args.device_sends.is_some(),
        host_tcp: linklab_sim::host::HostTcp {
            cubic: args.host_cc == "cubic",
            ack_delay_ms: args.host_ack_delay_ms,
        },
        pcap: args.pcap.is_some(),
        phy_path,
        max_virtual_ns: (args.max_virtual_s * 1e9) as u64,
        max_wall_s: args.max_wall_s,
        max_stall_ns: (args.max_stall_s * 1e9) as u64,
    })
}

/// The PHY path `--phy` asks for: bytes, or samples on a 10BASE-T line checked for sense.
fn phy_path_of(args: &Args) -> anyhow::Result<PhyPath> {
    let rate = args.rate;
    let phy_path = match args.phy {
        PhyArg::Bytes => PhyPath::Bytes,
        PhyArg::Samples => {
            if rate != Rate::M10 {
                bail_usage!("--phy samples models 10BASE-T only: use it with --rate 10M");
            }
            if args.jitter > args.oversample {
                bail_usage!(
                    "--jitter must be in 0..={} (the oversampling factor), got {}",
                    args.oversample,
                    args.jitter
                );
            }
            let cfg = SampleWireConfig {
                oversample: args.oversample,
                drift_ppm: args.drift,
                jitter_samples: args.jitter,
                noise: args.noise,
            };
            linklab_sim::sample_wire::SampleWire::new(cfg)
                .map_err(|e| anyhow::anyhow!("--phy samples: {e}"))?;
            PhyPath::Samples(cfg)
        }
    };
    Ok(phy_path)
}

/// Runs `linklab bench`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let cfg = config(&args)?;
    let report = sim::run(cfg.clone())?;
    print_report(&cfg, &args, &report);
    if let Some(path) = &args.json {
        let f = File::create(path)
            .with_context(|| format!("--json: cannot create {}", path.display()))?;
        serde_json::to_writer_pretty(BufWriter::new(f), &to_json(&cfg, &args, &report))
            .with_context(|| format!("--json: cannot write {}", path.display()))?;
    }
    if let (Some(path), Some(pcap)) = (&args.pcap, &report.pcap) {
        let f = File::create(path)
            .with_context(|| format!("--pcap: cannot create {}", path.display()))?;
        pcap.write_to(BufWriter::new(f))
            .with_context(|| format!("--pcap: cannot write {}", path.display()))?;
    }
    if let Some(why) = &report.stopped {
        bail!("{why}");
    }
    if let Err(e) = report.check_conservation(cfg.cost.phy) {
        bail!("counters do not conserve: {e}");
    }
    let bad = report
        .downloads
        .iter()
        .filter(|d| d.error.is_some() || d.crc32 != d.expected_crc32)
        .count();
    if bad > 0 {
        bail!(
            "{bad} of {} downloads failed or had a wrong CRC32",
            report.downloads.len()
        );
    }
    Ok(())
}
