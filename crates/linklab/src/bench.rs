//! `linklab bench`: the experiment of Niccle's MAC write-up — 10 pings, then 5 HTTP GETs of
//! each bench file — on a simulated link (linklab-sim), printed in the write-up's format, with a summary against
//! the link's theoretical TCP goodput limit.

use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

use anyhow::{bail, Context};
use linklab_perf::payload::{BenchFile, BENCH_FILES};
use linklab_sim::cost::{PhyKind, Workload};
use linklab_sim::counts::{Clock, CountedProfile};
use linklab_sim::device::RX_FRAMES_RANGE;
use linklab_sim::limit::tcp_goodput_limit;
use linklab_sim::profile::Profile;
use linklab_sim::sample_wire::{SampleWireConfig, MAX_DRIFT_PPM};
use linklab_sim::sim::{self, PhyPath, SimConfig, SimReport, HOST_IP};
use linklab_sim::wire::{Duplex, Impairments, LinkConfig, Rate};
use serde_json::json;

use crate::values::{self, bail_usage, TcpWindow};

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
pub struct Args {
    /// Device profile: cost model of the MCU.
    #[arg(
        long,
        default_value_t = Profile::NiccleOptimized,
        value_parser = named_values::<Profile>(Profile::ALL.map(|p| (p.name(), p.summary())))
    )]
    pub profile: Profile,
    /// Full-size frames the device's RX queue holds (2..=1024) [default: 9, or a counted
    /// profile's image's].
    #[arg(long, value_parser = values::ranged(*RX_FRAMES_RANGE.start(), *RX_FRAMES_RANGE.end()))]
    pub rx_frames: Option<usize>,
    /// Device TCP receive window: `auto` (linklab-mac's window for the queue; a counted
    /// profile's image's socket buffer, with the MAC's burst cap its firmware keeps) or bytes
    /// (536..=65535).
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
    #[arg(long, default_value_t = 0.0, value_parser = values::ranged(0.0, 1e-3))]
    pub ber: f64,
    /// Probability that a transmission is cut short (0 <= P < 1).
    #[arg(long, default_value_t = 0.0, value_parser = values::fraction_below(1.0))]
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
    #[arg(long, default_value = "cubic", value_parser = ["cubic", "none"])]
    pub host_cc: String,
    /// The host's delayed-ACK timeout in ms (0..=500): smoltcp's 10 by default, Linux's is at
    /// least 40. Both ACK every second full segment at once.
    #[arg(long, default_value_t = 10, value_parser = values::ranged(0u64, 500))]
    pub host_ack_delay_ms: u64,
    /// Write the results as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write every frame on the wire (with FCS) to a pcap FILE.
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// Wire model: byte images, or Manchester samples through linklab-phy10.
    #[arg(long, value_enum, default_value_t = PhyArg::Bytes)]
    pub phy: PhyArg,
    /// `--phy samples`: receiver samples per bit time (2..=8). The default, 8, decodes ±1
    /// sample of edge jitter (±12.5 ns, inside 802.3's ±13.5 ns); at 4x a half bit is only 2
    /// samples and ±1 sample of jitter makes different bit patterns identical (see
    /// linklab-phy10's README).
    #[arg(long, default_value_t = 8, value_parser = values::ranged(2u8, 8))]
    pub oversample: u8,
    /// `--phy samples`: transmitter clock offset in ppm (-20000..=20000).
    #[arg(long, default_value_t = 0, allow_hyphen_values = true,
          value_parser = values::ranged(-MAX_DRIFT_PPM, MAX_DRIFT_PPM))]
    pub drift: i32,
    /// `--phy samples`: peak edge jitter in samples (0..=oversample).
    #[arg(long, default_value_t = 0)]
    pub jitter: u8,
    /// `--phy samples`: probability that a sample is flipped (0..=1).
    #[arg(long, default_value_t = 0.0, value_parser = values::ranged(0.0, 1.0))]
    pub noise: f64,
    /// Override the profile's one fitted parameter, the main loop's fixed cost per
    /// iteration, in µs (0..=100000); used to fit it (see linklab-sim's README).
    #[arg(long, value_name = "US", value_parser = values::ranged(0.0, 100_000.0))]
    pub main_fixed_us: Option<f64>,
    /// A counted profile (riscv32-measured, riscv32-embassy-measured, riscv32-soft-phy,
    /// mps2-measured, sabrelite-measured, niccle-measured): the CPU clock in MHz (1..=10000) [default: 160, the
    /// ESP32-C6's]. The emulator's `-icount shift=N` runs at 1000 / 2^N MIPS.
    #[arg(long, value_name = "MHZ", value_parser = values::ranged(1.0, 10_000.0))]
    pub mhz: Option<f64>,
    /// A counted profile: cycles per instruction (0.1..=100) [default: 1].
    #[arg(long, value_name = "CPI", value_parser = values::ranged(0.1, 100.0))]
    pub cpi: Option<f64>,
    /// A counted profile: the share (0..=1) of the transfer's frame bytes the device copies
    /// off their word, charged at the counted cost of a misaligned copy [default: 0]. The
    /// firmware counts it per transfer (`/stats` `cpu.work.misaligned_copy_bytes`): a
    /// receive stream whose payloads land off their word in the socket buffer (after an
    /// odd-sized segment) is ~1.
    #[arg(long, value_name = "SHARE", value_parser = values::ranged(0.0, 1.0))]
    pub misaligned_copy: Option<f64>,
    /// One-way delay between the device and the host in µs (0..=100000) [default: 0.01, 2 m
    /// of cable]: what sits between them besides the wire (an emulator's TAP and the host's
    /// kernel; `linklab emu --predict` measures it with ping).
    #[arg(long, value_name = "US", value_parser = values::ranged(0.0, 100_000.0))]
    pub latency_us: Option<f64>,
    /// Watchdog: stop after this many seconds of virtual time (1..=86400).
    #[arg(long, default_value_t = 7200.0, value_parser = values::ranged(1.0, 86_400.0))]
    pub max_virtual_s: f64,
    /// Watchdog: stop after this many seconds of wall time (1..=86400).
    #[arg(long, default_value_t = 600.0, value_parser = values::ranged(1.0, 86_400.0))]
    pub max_wall_s: f64,
    /// Watchdog: stop when the application made no progress for this many virtual seconds
    /// (1..=86400).
    #[arg(long, default_value_t = 300.0, value_parser = values::ranged(1.0, 86_400.0))]
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

/// The theoretical limit for this configuration (payload bytes per second).
fn limit(cfg: &SimConfig) -> f64 {
    tcp_goodput_limit(cfg.link.rate, cfg.link.duplex, MSS)
}

fn window_text(cfg: &SimConfig, r: &SimReport) -> String {
    match cfg.tcp_window {
        None => format!("{} (auto)", r.tcp_window),
        Some(w) => format!("{w} (auto would be {})", r.auto_window),
    }
}

fn print_report(cfg: &SimConfig, args: &Args, r: &SimReport) {
    let duplex = match cfg.link.duplex {
        Duplex::Half => "half",
        Duplex::Full => "full",
    };
    println!(
        "=== linklab bench: profile {}, {} {duplex} duplex, RX queue {} frames ({} bytes), TCP window {}, seed {}",
        cfg.profile,
        cfg.link.rate.name(),
        r.queue_frames,
        r.queue_capacity,
        window_text(cfg, r),
        cfg.seed
    );
    if let Some(c) = cfg.profile.counts() {
        println!(
            "=== instructions counted on {} ({}'s {} image, {}) at {} MHz, CPI {}, {} of the frame bytes copied off their word",
            c.isa,
            c.board,
            c.image,
            CountedProfile::data_path(&c.profile).unwrap_or("?"),
            args.mhz.unwrap_or(Clock::ESP32_C6.mhz),
            args.cpi.unwrap_or(Clock::ESP32_C6.cpi),
            args.misaligned_copy.unwrap_or(0.0)
        );
    }
    if !r.pings.is_empty() {
        for p in &r.pings {
            match p.rtt_ms {
                Some(ms) => println!(
                    "{} bytes from {HOST_IP}: icmp_seq={}, time={ms:.1} ms",
                    linklab_sim::app::PING_DATA_LEN,
                    p.seq
                ),
                None => println!("no reply from {HOST_IP}: icmp_seq={}", p.seq),
            }
        }
        let received = r.pings.iter().filter(|p| p.rtt_ms.is_some()).count();
        let sent = r.pings.len();
        println!("--- {HOST_IP} ping statistics ---");
        println!(
            "{sent} packets transmitted, {received} received, {}% packet loss",
            (sent - received) * 100 / sent.max(1)
        );
        println!();
    }
    for file in &cfg.files {
        let stats = r.file_stats.iter().find(|s| s.path == file.path);
        let downloads: Vec<_> = r.downloads.iter().filter(|d| d.path == file.path).collect();
        if stats.is_none() && downloads.is_empty() {
            continue;
        }
        if cfg.device_sends {
            println!(
                "=== Sending {} {} times to the host's sink",
                file.path, args.gets
            );
        } else {
            println!(
                "=== Issuing {} HTTP GET requests for {}",
                args.gets, file.path
            );
        }
        for d in downloads {
            match &d.error {
                None => {
                    let verdict = if d.crc32 == d.expected_crc32 {
                        "ok".to_string()
                    } else {
                        format!("MISMATCH, expected {}", d.expected_crc32)
                    };
                    println!(
                        "{} {} bytes over {:.3} s ({:.1} kB/sec) with CRC32 {} ({verdict})",
                        if cfg.device_sends { "Sent" } else { "Received" },
                        d.bytes,
                        d.seconds,
                        d.bytes_per_s / 1000.0,
                        d.crc32
                    );
                }
                Some(e) => println!("FAILED after {:.3} s and {} bytes: {e}", d.seconds, d.bytes),
            }
        }
        let (p, m) = match stats {
            Some(s) => (&s.phy, &s.mac),
            None => (&r.phy, &r.mac),
        };
        println!(
            "--- Stats ---{}",
            if stats.is_none() {
                " (run stopped)"
            } else {
                ""
            }
        );
        println!("PHY TX: Packets: {}, LTPs: {}", p.tx_packets, p.tx_ltps);
        println!(
            "PHY RX: Packets: {}, trunc: {}, LTPs: {}, queue full: {}",
            p.rx_packets, p.rx_truncated, p.rx_ltps, p.rx_queue_full
        );
        println!(
            "MAC RX: Packets: {}, invalid SFD: {}, invalid CRC: {}, invalid length: {}",
            m.rx_dequeued,
            m.rx_frame_errors,
            m.rx_crc_errors,
            m.rx_length_errors()
        );
        println!("Valid: {}", m.rx_packets);
        println!();
    }
    let lim = limit(cfg);
    println!("=== Summary");
    println!(
        "Theoretical TCP goodput limit ({} {duplex} duplex, MSS {MSS}): {:.1} kB/s",
        cfg.link.rate.name(),
        lim / 1000.0
    );
    for file in &cfg.files {
        let ok: Vec<_> = r
            .downloads
            .iter()
            .filter(|d| d.path == file.path && d.error.is_none() && d.seconds > 0.0)
            .collect();
        if ok.is_empty() {
            println!("{:<11} no successful download", file.path);
            continue;
        }
        let goodputs: Vec<f64> = ok.iter().map(|d| d.body_bytes as f64 / d.seconds).collect();
        let mean = goodputs.iter().sum::<f64>() / goodputs.len() as f64;
        let min = goodputs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = goodputs.iter().copied().fold(0.0, f64::max);
        println!(
            "{:<11} goodput mean {:.1} kB/s (min {:.1}, max {:.1}) = {:.1} % of the limit",
            file.path,
            mean / 1000.0,
            min / 1000.0,
            max / 1000.0,
            mean / lim * 100.0
        );
    }
    let m = &r.mac;
    let bad = m.rx_frame_errors + m.rx_crc_errors + m.rx_length_errors() + m.rx_missed_errors;
    let total = m.rx_transmissions.max(1);
    println!(
        "Device RX: {} transmissions, {} bad or missed ({:.1} %), {} truncated by a busy CPU, {} queue full",
        m.rx_transmissions,
        bad,
        bad as f64 * 100.0 / total as f64,
        r.phy.rx_truncated,
        r.phy.rx_queue_full
    );
    println!(
        "Virtual time {:.3} s, {} events; device CPU busy {:.1} % of it, {} main-loop passes",
        r.virtual_ns as f64 / 1e9,
        r.events,
        r.cpu_busy_ns as f64 * 100.0 / r.virtual_ns.max(1) as f64,
        r.main_passes
    );
    if let Some(why) = &r.stopped {
        println!("WATCHDOG: {why}");
    }
    match r.check_conservation(cfg.cost.phy) {
        Ok(()) => println!("Counters conserve: every transmission is accounted for"),
        Err(e) => println!("COUNTERS DO NOT CONSERVE: {e}"),
    }
}

fn to_json(cfg: &SimConfig, args: &Args, r: &SimReport) -> serde_json::Value {
    let counters: serde_json::Map<String, serde_json::Value> = r
        .mac
        .fields()
        .into_iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect();
    let file_stats: Vec<_> = r
        .file_stats
        .iter()
        .map(|s| {
            let c: serde_json::Map<String, serde_json::Value> = s
                .mac
                .fields()
                .into_iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            json!({ "path": s.path, "phy": s.phy, "counters": c })
        })
        .collect();
    let phy = match cfg.phy_path {
        PhyPath::Bytes => json!({ "model": "bytes" }),
        PhyPath::Samples(c) => {
            json!({ "model": "samples", "oversample": c.oversample, "drift_ppm": c.drift_ppm, "jitter_samples": c.jitter_samples, "noise": c.noise })
        }
    };
    json!({
        "profile": cfg.profile,
        "cost_model": cfg.cost,
        "link": { "rate": cfg.link.rate.name(), "rate_bps": cfg.link.rate.bits_per_s(), "duplex": cfg.link.duplex, "propagation_ns": cfg.link.propagation_ns, "phy": phy },
        "impairments": cfg.impairments,
        "seed": cfg.seed,
        "rx_frames": r.queue_frames,
        "rx_queue_bytes": r.queue_capacity,
        "tcp_window": r.tcp_window,
        "tcp_window_auto": r.auto_window,
        "tcp_window_option": args.tcp_window.to_string(),
        "limit_bytes_per_s": limit(cfg),
        "pings": r.pings,
        "downloads": r.downloads,
        "file_stats": file_stats,
        "counters": counters,
        "phy_counters": r.phy,
        "host_counters": r.host,
        "impairment_counters": { "to_device": r.to_device, "to_host": r.to_host },
        "virtual_seconds": r.virtual_ns as f64 / 1e9,
        "cpu_busy_seconds": r.cpu_busy_ns as f64 / 1e9,
        "main_passes": r.main_passes,
        "send_buffer": cfg.send_buffer,
        "burst_cap": cfg.burst_cap,
        "events": r.events,
        "stopped": r.stopped,
        "conservation": match r.check_conservation(cfg.cost.phy) {
            Ok(()) => "ok".to_string(),
            Err(e) => e.to_string(),
        },
        "pcap_frames": r.pcap.as_ref().map(|p| p.frames()),
    })
}
