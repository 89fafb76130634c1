//! Throughput at a fixed 31.25 MIPS (`-icount shift=5,align=on,sleep=on`), each device's own
//! figure (its clock, its byte count): lwiperf's console report for lwIP (`iperf -t 10`, and
//! the tradeoff `-n 60M -r` for sending, as the peer measured it), iperf3's report from the
//! device's end for linklab (`-t 10`, `-t 10 -R`). Host-side figures fall behind when QEMU
//! cannot keep up with real time on a busy machine; the device's do not. The compact image
//! serves iperf 2 alone and reports nothing: its figure is the client's (`iperf -t 10`, `-t
//! 10 -R`), on the host's clock.

use std::time::Duration;

use anyhow::Context;
use serde_json::Value;

use super::image::{boot, iperf3, Image, Speaks, DEVICE};
use crate::lab::{Clock, Lab};

/// 2^5 ns per instruction: the Cortex-M3 at 31.25 MHz, one instruction a cycle.
const SHIFT: u32 = 5;

/// (receive, send) Mbit/s of `image` on the device's clock.
pub fn measure(image: &Image) -> anyhow::Result<(f64, f64)> {
    let clock = Clock::Icount(format!("shift={SHIFT},align=on,sleep=on"));
    let emu = boot(image, clock, false)?;
    // As `linklab emu throughput`: Linux's tail-loss probe misfires when align=on stops the
    // guest for real time to catch up (see the lab).
    emu.without_tail_loss_probes()?;
    match image.speaks {
        Speaks::Lwip => {
            let kbps = |emu: &Lab, kind: &str, seen: usize| -> anyhow::Result<f64> {
                let line = emu.wait_for_nth(kind, seen, Duration::from_secs(120))?;
                let k: f64 = line
                    .text
                    .split_whitespace()
                    .find_map(|kv| kv.strip_prefix("kbps=")?.parse().ok())
                    .context("lwiperf's report has no kbps")?;
                Ok(k / 1000.0)
            };
            let seen = emu.lines_containing("iperf-done: type=0").len();
            emu.run(&["timeout", "120", "iperf", "-c", DEVICE, "-t", "10"])?;
            let rx = kbps(&emu, "iperf-done: type=0", seen)?;
            std::thread::sleep(Duration::from_secs(2));
            let seen = emu.lines_containing("iperf-done: type=1").len();
            emu.run(&["timeout", "180", "iperf", "-c", DEVICE, "-n", "60M", "-r"])?;
            let tx = kbps(&emu, "iperf-done: type=1", seen)?;
            Ok((rx, tx))
        }
        Speaks::Linklab { iperf2: true, .. } => {
            let mbps = |extra: &[&str]| -> anyhow::Result<f64> {
                let mut argv = vec![
                    "timeout", "120", "iperf", "-c", DEVICE, "-y", "C", "-t", "10",
                ];
                argv.extend_from_slice(extra);
                let out = emu.run(&argv)?;
                let csv = String::from_utf8_lossy(&out.stdout);
                csv.lines()
                    .filter_map(|l| l.split(',').nth(8)?.trim().parse::<f64>().ok())
                    .next()
                    .map(|bps| bps / 1e6)
                    .with_context(|| format!("iperf {}: no report: {csv}", extra.join(" ")))
            };
            let rx = mbps(&[])?;
            std::thread::sleep(Duration::from_secs(2));
            let tx = mbps(&["-R"])?;
            Ok((rx, tx))
        }
        Speaks::Linklab { .. } => {
            let mbps = |r: &Value, side: &str| {
                r["end"][side]["bits_per_second"].as_f64().unwrap_or(0.0) / 1e6
            };
            let rx = mbps(&iperf3(&emu, "120", &["-t", "10"])?, "sum_received");
            std::thread::sleep(Duration::from_secs(2));
            let tx = mbps(&iperf3(&emu, "120", &["-t", "10", "-R"])?, "sum_sent");
            Ok((rx, tx))
        }
    }
}
