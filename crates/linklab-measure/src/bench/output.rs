//! What `linklab bench` prints: the write-up's lines per ping and download, the summary
//! against the link's TCP goodput limit, and the `--json` document.

use linklab_sim::counts::{Clock, CountedProfile};
use linklab_sim::limit::tcp_goodput_limit;
use linklab_sim::sim::{PhyPath, SimConfig, SimReport, HOST_IP};
use linklab_sim::wire::Duplex;
use serde_json::json;

use super::{Args, MSS};

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

/// Prints a run as the write-up does: the configuration, the pings, the downloads, the summary.
pub(super) fn print_report(cfg: &SimConfig, args: &Args, r: &SimReport) {
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
    print_pings(r);
    print_downloads(cfg, args, r);
    print_summary(cfg, r, duplex);
}

/// Each ping as `ping` prints it, then its statistics.
fn print_pings(r: &SimReport) {
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
}

/// Per file, each download (or send) as the write-up prints it, then the PHY's and MAC's stats.
fn print_downloads(cfg: &SimConfig, args: &Args, r: &SimReport) {
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
}

/// The summary: each file's goodput against the link's limit, the device's receive path, the
/// virtual time, the watchdog and the counters' conservation.
fn print_summary(cfg: &SimConfig, r: &SimReport, duplex: &str) {
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

pub(super) fn to_json(cfg: &SimConfig, args: &Args, r: &SimReport) -> serde_json::Value {
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
