//! `linklab sweep`: an offered-rate sweep against any iperf3 server (seed 002's `bwtest.sh`).
//!
//! Each step is one iperf3 test run by our own client (`linklab_perf::iperf::host`) at a fixed
//! offered rate. The sweep reports per step the offered and received rate, loss, jitter and
//! out-of-order datagrams (TCP: goodput and retransmits), then the knee (highest offered rate with
//! loss below 0.1 %), the peak received rate, and a collapse when received throughput falls while
//! the offered rate rises. After the coarse steps, `--refine` bisects between the knee and the
//! next (lossy) step to place the knee more precisely.

pub mod analysis;
mod progress;
mod step;

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::values::{self, bail_usage, format_rate};
use analysis::{Collapse, Peak};

/// Lowest offered rate accepted, bit/s.
const MIN_BPS: f64 = 1e3;
/// Highest offered rate accepted, bit/s.
const MAX_BPS: f64 = 100e9;

/// How often a step is retried when the server is busy mid-sweep (1 s apart).
const BUSY_RETRIES: u32 = 3;

/// Options of `linklab sweep`.
#[derive(clap::Args)]
pub struct Args {
    /// iperf3 server to test against (stock `iperf3 -s` or `linklab iperf -s`).
    #[arg(short = 'c', long, value_name = "HOST")]
    client: String,
    /// Server port.
    #[arg(short = 'p', long, default_value_t = 5201)]
    port: u16,
    /// First offered rate (bit/s, k/M/G suffix).
    #[arg(long, value_name = "RATE", default_value = "50M", value_parser = values::bit_rate(MIN_BPS, MAX_BPS))]
    from: f64,
    /// Last offered rate (bit/s, k/M/G suffix).
    #[arg(long, value_name = "RATE", default_value = "1G", value_parser = values::bit_rate(MIN_BPS, MAX_BPS))]
    to: f64,
    /// Rate increment between steps (bit/s, k/M/G suffix).
    #[arg(long, value_name = "RATE", default_value = "50M", value_parser = values::bit_rate(MIN_BPS, MAX_BPS))]
    step: f64,
    /// Seconds per step.
    #[arg(short = 't', long, value_name = "SECONDS", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..=3600))]
    time: u32,
    /// UDP datagram payload / TCP write size in bytes (default: the client's, as iperf3).
    #[arg(short = 'l', long, value_name = "LEN", value_parser = clap::value_parser!(u32).range(16..=65507))]
    length: Option<u32>,
    /// Reverse: the server sends, we receive.
    #[arg(short = 'R', long)]
    reverse: bool,
    /// Sweep TCP (paced at the offered rate) instead of UDP.
    #[arg(long)]
    tcp: bool,
    /// Extra bisection steps between the knee and the next step (0 = none).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=10))]
    refine: u32,
    /// Pause between steps in milliseconds (lets queues drain and the server get ready).
    #[arg(long, value_name = "MS", default_value_t = 300, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pause: u64,
    /// Also write the results as JSON to FILE (input of `linklab report`).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// The JSON of one `linklab sweep` (`"kind": "sweep"`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepReport {
    /// Always `"sweep"`: tells `linklab report` what this file is.
    pub kind: String,
    /// The iperf3 server as given.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// `"udp"` or `"tcp"`.
    pub protocol: String,
    /// True when the server sent (iperf3 `-R`).
    pub reverse: bool,
    /// Seconds per step.
    pub duration_s: u32,
    /// Datagram / write length, when given.
    pub length: Option<u32>,
    /// All steps, sorted by offered rate (refinement steps included).
    pub steps: Vec<Step>,
    /// Highest offered rate with loss below 0.1 %, bit/s.
    pub knee_bps: Option<f64>,
    /// Highest received rate.
    pub peak: Option<Peak>,
    /// Received throughput falling past the peak, if it does.
    pub collapse: Option<Collapse>,
}

/// One step of a sweep: one iperf3 test at a fixed offered rate.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Step {
    /// Target rate, bit/s.
    pub offered_bps: f64,
    /// Rate the sender achieved, bit/s.
    pub sent_bps: f64,
    /// Rate the receiver got (TCP: goodput), bit/s.
    pub received_bps: f64,
    /// Lost datagrams in percent of those sent (UDP; 0 for TCP).
    pub loss_pct: f64,
    /// Lost datagrams (UDP).
    pub lost: u64,
    /// Datagrams sent (UDP).
    pub packets: u64,
    /// Receiver jitter in milliseconds (UDP).
    pub jitter_ms: f64,
    /// Datagrams received out of order (UDP; known only when this side received, i.e. with -R,
    /// because iperf3 servers do not report it).
    pub out_of_order: Option<u64>,
    /// Sender retransmits (TCP, when the sender reports them).
    pub retransmits: Option<u64>,
    /// True for a bisection step added by `--refine`.
    pub refined: bool,
}

/// Runs `linklab sweep`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (from, to, step) = (args.from, args.to, args.step);
    if from > to {
        bail_usage!(
            "--from ({}) is above --to ({})",
            format_rate(from),
            format_rate(to)
        );
    }
    let rates = step_rates(from, to, step)?;

    let protocol = if args.tcp { "tcp" } else { "udp" };
    let direction = if args.reverse {
        "server -> client (-R)"
    } else {
        "client -> server"
    };
    println!(
        "linklab sweep: {}:{} {protocol}, {direction}, {} s per step, {} step{} from {} to {}",
        args.client,
        args.port,
        args.time,
        rates.len(),
        if rates.len() == 1 { "" } else { "s" },
        format_rate(from),
        format_rate(to)
    );
    println!("{}", header_line(args.tcp));

    let cfg = step::StepConfig {
        host: args.client.clone(),
        port: args.port,
        tcp: args.tcp,
        reverse: args.reverse,
        seconds: args.time,
        length: args.length,
    };
    let total = rates.len() + args.refine as usize;
    let mut bar = progress::Progress::new(std::io::stderr().is_terminal(), total);
    let mut steps: Vec<Step> = Vec::new();
    let mut measure = |offered: f64, refined: bool, steps: &mut Vec<Step>| -> anyhow::Result<()> {
        if !steps.is_empty() {
            std::thread::sleep(Duration::from_millis(args.pause));
        }
        bar.show(steps.len(), offered);
        // A server that was ours a moment ago may still be tearing down the last test: retry
        // a busy server mid-sweep a few times. Busy at the first step means someone else.
        let mut tries = 0;
        let result = loop {
            let r = step::run_step(&cfg, offered);
            match &r {
                Err(e) if e.is::<step::Busy>() && !steps.is_empty() && tries < BUSY_RETRIES => {
                    tries += 1;
                    std::thread::sleep(Duration::from_secs(1));
                }
                _ => break r,
            }
        };
        let mut s = result.with_context(|| format!("step at {}", format_rate(offered)))?;
        s.refined = refined;
        bar.clear();
        println!("{}", row_line(&s, args.tcp));
        steps.push(s);
        Ok(())
    };
    for &r in &rates {
        measure(r, false, &mut steps)?;
    }
    // Bisect between the knee and the next step above it, where loss began.
    for _ in 0..args.refine {
        steps.sort_by(|a, b| a.offered_bps.total_cmp(&b.offered_bps));
        let Some(k) = analysis::knee(&steps, args.tcp) else {
            break;
        };
        let Some(above) = steps
            .iter()
            .find(|s| s.offered_bps > k)
            .map(|s| s.offered_bps)
        else {
            break;
        };
        let mid = ((k + above) / 2.0 / 1e3).round() * 1e3;
        if mid <= k || mid >= above {
            break;
        }
        measure(mid, true, &mut steps)?;
    }
    bar.clear();
    steps.sort_by(|a, b| a.offered_bps.total_cmp(&b.offered_bps));

    let report = SweepReport {
        kind: "sweep".into(),
        host: args.client.clone(),
        port: args.port,
        protocol: protocol.into(),
        reverse: args.reverse,
        duration_s: args.time,
        length: args.length,
        knee_bps: analysis::knee(&steps, args.tcp),
        peak: analysis::peak(&steps),
        collapse: analysis::collapse(&steps),
        steps,
    };
    print!("{}", summary(&report));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).expect("report serializes");
        std::fs::write(path, text + "\n")
            .with_context(|| format!("--json: cannot write {}", path.display()))?;
    }
    Ok(())
}

/// The offered rates of the coarse sweep: `from`, `from + step`, ... up to `to` (inclusive).
fn step_rates(from: f64, to: f64, step: f64) -> anyhow::Result<Vec<f64>> {
    let n = ((to - from) / step + 1e-9).floor() as u64 + 1;
    if n > 1000 {
        bail_usage!(
            "--step: {} from {} to {} makes {n} steps (accepted: at most 1000)",
            format_rate(step),
            format_rate(from),
            format_rate(to)
        );
    }
    Ok((0..n).map(|i| from + step * i as f64).collect())
}

fn header_line(tcp: bool) -> String {
    if tcp {
        format!(
            "{:>14} {:>14} {:>14} {:>12}",
            "offered", "sent", "goodput", "retransmits"
        )
    } else {
        format!(
            "{:>14} {:>14} {:>14} {:>8} {:>17} {:>10} {:>6}",
            "offered", "sent", "received", "loss%", "lost/packets", "jitter ms", "ooo"
        )
    }
}

fn row_line(s: &Step, tcp: bool) -> String {
    let mark = if s.refined { " (refine)" } else { "" };
    if tcp {
        let retr = s.retransmits.map_or("-".to_string(), |r| r.to_string());
        format!(
            "{:>14} {:>14} {:>14} {:>12}{mark}",
            format_rate(s.offered_bps),
            format_rate(s.sent_bps),
            format_rate(s.received_bps),
            retr
        )
    } else {
        format!(
            "{:>14} {:>14} {:>14} {:>8.3} {:>17} {:>10.3} {:>6}{mark}",
            format_rate(s.offered_bps),
            format_rate(s.sent_bps),
            format_rate(s.received_bps),
            s.loss_pct,
            format!("{}/{}", s.lost, s.packets),
            s.jitter_ms,
            s.out_of_order.map_or("-".to_string(), |n| n.to_string())
        )
    }
}

/// What the knee means for the protocol, for people.
pub fn knee_rule(tcp: bool) -> String {
    if tcp {
        format!(
            "goodput within {} % of offered",
            analysis::TCP_SHORTFALL_PCT
        )
    } else {
        format!("loss < {} %", analysis::KNEE_LOSS_PCT)
    }
}

/// The closing lines: knee, peak, collapse.
fn summary(r: &SweepReport) -> String {
    let mut s = String::new();
    let rule = knee_rule(r.protocol == "tcp");
    let _ = match r.knee_bps {
        Some(k) => writeln!(
            s,
            "knee: {} (highest offered rate with {rule})",
            format_rate(k)
        ),
        None => writeln!(s, "knee: none (no step with {rule})"),
    };
    if let Some(p) = r.peak {
        let _ = writeln!(
            s,
            "peak: {} received at {} offered",
            format_rate(p.received_bps),
            format_rate(p.offered_bps)
        );
    }
    let _ = match r.collapse {
        Some(c) => writeln!(
            s,
            "collapse: received falls to {} at {} offered ({:.1} % below the peak)",
            format_rate(c.received_bps),
            format_rate(c.offered_bps),
            c.drop_pct
        ),
        None => writeln!(
            s,
            "collapse: none (received stays within {} % of the peak)",
            analysis::COLLAPSE_DROP * 100.0
        ),
    };
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarse_rates_include_both_ends() {
        let r = step_rates(50e6, 400e6, 50e6).unwrap();
        assert_eq!(r.len(), 8);
        assert_eq!(r[0], 50e6);
        assert!((r[7] - 400e6).abs() < 1.0);
        assert_eq!(step_rates(1e6, 1e6, 1e6).unwrap(), vec![1e6]);
        assert!(step_rates(1e3, 100e9, 1e3).is_err());
    }
}
