//! A bench run as Niccle's MAC write-up prints it: the configuration, a line per ping and per
//! download with the PHY's and MAC's counters after each file, then the summary against the
//! link's TCP goodput limit.

use std::fmt::{self, Write as _};

use linklab_sim::counts::{Clock, CountedProfile};
use linklab_sim::sim::{SimConfig, SimReport, HOST_IP};
use linklab_sim::wire::Duplex;

use super::limit::{limit, MSS};
use super::options::BenchOptions;

/// The TCP window as the first line says it: what the device advertised, and the automatic one.
fn window_text(cfg: &SimConfig, r: &SimReport) -> String {
    match cfg.tcp_window {
        None => format!("{} (auto)", r.tcp_window),
        Some(w) => format!("{w} (auto would be {})", r.auto_window),
    }
}

/// A run as the write-up prints it: the configuration, the pings, the downloads, the summary.
pub fn write_up(cfg: &SimConfig, options: &BenchOptions, r: &SimReport) -> String {
    let mut out = String::new();
    write_all(&mut out, cfg, options, r).expect("writing to a String does not fail");
    out
}

/// Writes [`write_up`]'s text to `out`.
fn write_all(out: &mut String, cfg: &SimConfig, args: &BenchOptions, r: &SimReport) -> fmt::Result {
    let duplex = match cfg.link.duplex {
        Duplex::Half => "half",
        Duplex::Full => "full",
    };
    writeln!(
        out,
        "=== linklab bench: profile {}, {} {duplex} duplex, RX queue {} frames ({} bytes), TCP window {}, seed {}",
        cfg.profile,
        cfg.link.rate.name(),
        r.queue_frames,
        r.queue_capacity,
        window_text(cfg, r),
        cfg.seed
    )?;
    if let Some(c) = cfg.profile.counts() {
        writeln!(
        out,
            "=== instructions counted on {} ({}'s {} image, {}) at {} MHz, CPI {}, {} of the frame bytes copied off their word",
            c.isa,
            c.board,
            c.image,
            CountedProfile::data_path(&c.profile).unwrap_or("?"),
            args.mhz.unwrap_or(Clock::ESP32_C6.mhz),
            args.cpi.unwrap_or(Clock::ESP32_C6.cpi),
            args.misaligned_copy.unwrap_or(0.0)
        )?;
    }
    print_pings(out, r)?;
    print_downloads(out, cfg, args, r)?;
    print_summary(out, cfg, r, duplex)
}

/// Each ping as `ping` prints it, then its statistics.
fn print_pings(out: &mut String, r: &SimReport) -> fmt::Result {
    if !r.pings.is_empty() {
        for p in &r.pings {
            match p.rtt_ms {
                Some(ms) => writeln!(
                    out,
                    "{} bytes from {HOST_IP}: icmp_seq={}, time={ms:.1} ms",
                    linklab_sim::app::PING_DATA_LEN,
                    p.seq
                ),
                None => writeln!(out, "no reply from {HOST_IP}: icmp_seq={}", p.seq),
            }?;
        }
        let received = r.pings.iter().filter(|p| p.rtt_ms.is_some()).count();
        let sent = r.pings.len();
        writeln!(out, "--- {HOST_IP} ping statistics ---")?;
        writeln!(
            out,
            "{sent} packets transmitted, {received} received, {}% packet loss",
            (sent - received) * 100 / sent.max(1)
        )?;
        writeln!(out)?;
    }
    Ok(())
}

/// Per file, each download (or send) as the write-up prints it, then the PHY's and MAC's stats.
fn print_downloads(
    out: &mut String,
    cfg: &SimConfig,
    args: &BenchOptions,
    r: &SimReport,
) -> fmt::Result {
    for file in &cfg.files {
        let stats = r.file_stats.iter().find(|s| s.path == file.path);
        let downloads: Vec<_> = r.downloads.iter().filter(|d| d.path == file.path).collect();
        if stats.is_none() && downloads.is_empty() {
            continue;
        }
        if cfg.device_sends {
            writeln!(
                out,
                "=== Sending {} {} times to the host's sink",
                file.path, args.gets
            )?;
        } else {
            writeln!(
                out,
                "=== Issuing {} HTTP GET requests for {}",
                args.gets, file.path
            )?;
        }
        for d in downloads {
            match &d.error {
                None => {
                    let verdict = if d.crc32 == d.expected_crc32 {
                        "ok".to_string()
                    } else {
                        format!("MISMATCH, expected {}", d.expected_crc32)
                    };
                    writeln!(
                        out,
                        "{} {} bytes over {:.3} s ({:.1} kB/sec) with CRC32 {} ({verdict})",
                        if cfg.device_sends { "Sent" } else { "Received" },
                        d.bytes,
                        d.seconds,
                        d.bytes_per_s / 1000.0,
                        d.crc32
                    )?;
                }
                Some(e) => writeln!(
                    out,
                    "FAILED after {:.3} s and {} bytes: {e}",
                    d.seconds, d.bytes
                )?,
            }
        }
        let (p, m) = match stats {
            Some(s) => (&s.phy, &s.mac),
            None => (&r.phy, &r.mac),
        };
        writeln!(
            out,
            "--- Stats ---{}",
            if stats.is_none() {
                " (run stopped)"
            } else {
                ""
            }
        )?;
        writeln!(
            out,
            "PHY TX: Packets: {}, LTPs: {}",
            p.tx_packets, p.tx_ltps
        )?;
        writeln!(
            out,
            "PHY RX: Packets: {}, trunc: {}, LTPs: {}, queue full: {}",
            p.rx_packets, p.rx_truncated, p.rx_ltps, p.rx_queue_full
        )?;
        writeln!(
            out,
            "MAC RX: Packets: {}, invalid SFD: {}, invalid CRC: {}, invalid length: {}",
            m.rx_dequeued,
            m.rx_frame_errors,
            m.rx_crc_errors,
            m.rx_length_errors()
        )?;
        writeln!(out, "Valid: {}", m.rx_packets)?;
        writeln!(out)?;
    }
    Ok(())
}

/// The summary: each file's goodput against the link's limit, the device's receive path, the
/// virtual time, the watchdog and the counters' conservation.
fn print_summary(out: &mut String, cfg: &SimConfig, r: &SimReport, duplex: &str) -> fmt::Result {
    let lim = limit(cfg);
    writeln!(out, "=== Summary")?;
    writeln!(
        out,
        "Theoretical TCP goodput limit ({} {duplex} duplex, MSS {MSS}): {:.1} kB/s",
        cfg.link.rate.name(),
        lim / 1000.0
    )?;
    for file in &cfg.files {
        let ok: Vec<_> = r
            .downloads
            .iter()
            .filter(|d| d.path == file.path && d.error.is_none() && d.seconds > 0.0)
            .collect();
        if ok.is_empty() {
            writeln!(out, "{:<11} no successful download", file.path)?;
            continue;
        }
        let goodputs: Vec<f64> = ok.iter().map(|d| d.body_bytes as f64 / d.seconds).collect();
        let mean = goodputs.iter().sum::<f64>() / goodputs.len() as f64;
        let min = goodputs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = goodputs.iter().copied().fold(0.0, f64::max);
        writeln!(
            out,
            "{:<11} goodput mean {:.1} kB/s (min {:.1}, max {:.1}) = {:.1} % of the limit",
            file.path,
            mean / 1000.0,
            min / 1000.0,
            max / 1000.0,
            mean / lim * 100.0
        )?;
    }
    let m = &r.mac;
    let bad = m.rx_frame_errors + m.rx_crc_errors + m.rx_length_errors() + m.rx_missed_errors;
    let total = m.rx_transmissions.max(1);
    writeln!(
        out,
        "Device RX: {} transmissions, {} bad or missed ({:.1} %), {} truncated by a busy CPU, {} queue full",
        m.rx_transmissions,
        bad,
        bad as f64 * 100.0 / total as f64,
        r.phy.rx_truncated,
        r.phy.rx_queue_full
    )?;
    writeln!(
        out,
        "Virtual time {:.3} s, {} events; device CPU busy {:.1} % of it, {} main-loop passes",
        r.virtual_ns as f64 / 1e9,
        r.events,
        r.cpu_busy_ns as f64 * 100.0 / r.virtual_ns.max(1) as f64,
        r.main_passes
    )?;
    if let Some(why) = &r.stopped {
        writeln!(out, "WATCHDOG: {why}")?;
    }
    match r.check_conservation(cfg.cost.phy) {
        Ok(()) => writeln!(
            out,
            "Counters conserve: every transmission is accounted for"
        ),
        Err(e) => writeln!(out, "COUNTERS DO NOT CONSERVE: {e}"),
    }
}
