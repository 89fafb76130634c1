//! `linklab emu --cost` and `--throughput`: what the firmware costs, counted on its own ISA,
//! and what stock iperf3 measures against it.
//!
//! Instructions: QEMU's `-icount shift=0` runs one guest instruction per nanosecond of virtual
//! time. On riscv32 the firmware reports `minstret` (exact); on the Cortex-M3 it reports the
//! nanoseconds it was awake (between wake-up and WFI) on its 25 MHz timer, which under
//! `shift=0` are instructions (40 per tick). Each figure is the difference of `/stats` before
//! and after a stock iperf3 transfer, less the cost of fetching `/stats` itself, divided by
//! the payload bytes iperf3 reports.

use std::path::Path;

use anyhow::Context;
use serde_json::{json, Value};

use super::board::Board;
use super::image::image_size;
use super::lab::Lab;

/// Bytes moved each way for the instruction count.
const COST_BYTES: &str = "4M";
/// Seconds of each throughput run.
const THROUGHPUT_SECONDS: &str = "5";

/// The instructions the device has executed, by the best counter it has.
fn instructions(stats: &Value) -> anyhow::Result<(u64, &'static str)> {
    let cpu = &stats["cpu"];
    if let Some(n) = cpu["instructions"].as_u64() {
        return Ok((n, "minstret"));
    }
    let busy = cpu["busy_ns"]
        .as_u64()
        .context("/stats has no cpu.busy_ns")?;
    Ok((busy, "awake time on the board timer under -icount shift=0"))
}

/// Per-layer instructions per byte between two `/stats`: the driver's interrupt handler,
/// `Interface::poll` (MAC, smoltcp and the driver's transmit), the apps, and the rest (the
/// main loop, timers, `/stats` itself).
fn layers(before: &Value, after: &Value, total: u64, bytes: u64) -> Value {
    let w = |v: &Value, k: &str| v["cpu"]["work"][k].as_u64().unwrap_or(0);
    let isr = (w(after, "isr") as u32).wrapping_sub(w(before, "isr") as u32) as u64;
    let stack = w(after, "stack").wrapping_sub(w(before, "stack"));
    let apps = w(after, "apps").wrapping_sub(w(before, "apps"));
    let other = total.saturating_sub(isr + stack + apps);
    let per = |i: u64| {
        if bytes == 0 {
            0.0
        } else {
            (i as f64 / bytes as f64 * 100.0).round() / 100.0
        }
    };
    json!({
        "driver_isr": per(isr),
        "mac_smoltcp_driver_tx": per(stack),
        "apps": per(apps),
        "other": per(other),
    })
}

fn payload_bytes(report: &Value, key: &str) -> anyhow::Result<u64> {
    report["end"][key]["bytes"]
        .as_u64()
        .with_context(|| format!("iperf3 report has no end.{key}.bytes"))
}

/// Instructions per payload byte both ways, flash, RAM and stack.
pub fn cost(board: &Board, image: &Path) -> anyhow::Result<Value> {
    let size = image_size(image)?;
    let lab = Lab::boot(board, image, Some("shift=0".into()))?;
    let s0 = lab.stats()?;
    let s1 = lab.stats()?;
    let (i0, method) = instructions(&s0)?;
    let (i1, _) = instructions(&s1)?;
    let fetch = i1.saturating_sub(i0);

    let rx_report = lab.iperf3(&["-n", COST_BYTES])?;
    let s2 = lab.stats()?;
    let rx_bytes = payload_bytes(&rx_report, "sum_received")?;
    let rx_instr = instructions(&s2)?
        .0
        .saturating_sub(i1)
        .saturating_sub(fetch);

    let tx_report = lab.iperf3(&["-n", COST_BYTES, "-R"])?;
    let s3 = lab.stats()?;
    let tx_bytes = payload_bytes(&tx_report, "sum_sent")?;
    let tx_instr = instructions(&s3)?
        .0
        .saturating_sub(instructions(&s2)?.0)
        .saturating_sub(fetch);

    let rx_layers = layers(&s1, &s2, rx_instr, rx_bytes);
    let tx_layers = layers(&s2, &s3, tx_instr, tx_bytes);
    let stack_peak = s3["memory"]["stack_peak_bytes"].as_u64().unwrap_or(0);
    let law = s3["conservation"]["holds"].as_bool().unwrap_or(false);
    let per_byte = |i: u64, b: u64| {
        if b == 0 {
            0.0
        } else {
            (i as f64 / b as f64 * 100.0).round() / 100.0
        }
    };
    Ok(json!({
        "board": board.name,
        "isa": board.isa,
        "method": method,
        "rx_instr_per_byte": per_byte(rx_instr, rx_bytes),
        "tx_instr_per_byte": per_byte(tx_instr, tx_bytes),
        "rx_layers": rx_layers,
        "tx_layers": tx_layers,
        "rx_bytes": rx_bytes,
        "tx_bytes": tx_bytes,
        "rx_instructions": rx_instr,
        "tx_instructions": tx_instr,
        "stats_fetch_instructions": fetch,
        "flash_bytes": size.flash_bytes,
        "static_ram_bytes": size.static_ram_bytes,
        "stack_peak_bytes": stack_peak,
        "ram_bytes": size.static_ram_bytes + stack_peak,
        "conservation_holds": law,
    }))
}

fn mbps(report: &Value, key: &str) -> f64 {
    let bps = report["end"][key]["bits_per_second"]
        .as_f64()
        .unwrap_or(0.0);
    (bps / 1e4).round() / 100.0
}

/// Stock iperf3 TCP both ways, QEMU free-running and at a fixed instruction rate.
pub fn throughput(board: &Board, image: &Path, shift: u32) -> anyhow::Result<Value> {
    let mut runs = Vec::new();
    for icount in [None, Some(format!("shift={shift},align=on,sleep=on"))] {
        let lab = Lab::boot(board, image, icount.clone())?;
        let rx = lab.iperf3(&["-t", THROUGHPUT_SECONDS])?;
        let tx = lab.iperf3(&["-t", THROUGHPUT_SECONDS, "-R"])?;
        runs.push(json!({
            "icount": icount,
            "mips": icount.as_ref().map(|_| 1000.0 / f64::from(1u32 << shift)),
            "rx_mbps": mbps(&rx, "sum_received"),
            "tx_mbps": mbps(&tx, "sum_received"),
        }));
    }
    Ok(json!({ "board": board.name, "isa": board.isa, "runs": runs }))
}
