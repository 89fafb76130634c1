//! `linklab emu throughput`: what stock iperf3 (both ways) and curl measure against the
//! firmware, QEMU free-running and then at a fixed instruction rate.
//!
//! Free-running, the device's clock is the host's. At a fixed rate (`-icount shift=N`), the
//! device's clock is QEMU's virtual time: every rate is given in it (the device's iperf3
//! server's seconds; a download's uptime from `/stats`), as `linklab emu predict` gives
//! them, and the host's rate is shown beside it only when the emulator fell behind real
//! time, with a line saying by how much ([`super::transfer::Clocks::behind`]).

use std::path::Path;

use serde_json::{json, Value};

use super::board::{Board, Work};
use super::image::{serves_iperf3, Chosen, FixedRate, Measure};
use super::lab::Lab;
use super::line::LineArgs;
use super::transfer::{Transfer, Unit, Watch};

/// Options of `linklab emu throughput`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    measure: Measure,
    /// The second run's fixed rate.
    #[command(flatten)]
    rate: FixedRate,
}

/// Runs `linklab emu throughput`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let p = args.measure.prepare("throughput", serves_iperf3)?;
    let result = throughput(
        &p.board,
        &p.chosen,
        &p.image,
        args.rate.shift,
        p.line.as_ref(),
    )?;
    args.measure.report(&result)
}

/// Seconds of each iperf3 run.
const SECONDS: &str = "5";

/// Stock iperf3 TCP both ways and (an image with the HTTP server) a curl download of
/// /1MB.txt, QEMU free-running and at `shift`.
pub fn throughput(
    board: &Board,
    chosen: &Chosen,
    image: &Path,
    shift: u32,
    line: Option<&LineArgs>,
) -> anyhow::Result<Value> {
    let has_http = chosen.spec.work == Work::Stats;
    let mut runs = Vec::new();
    for icount in [None, Some(format!("shift={shift},align=on,sleep=on"))] {
        let lab = match line {
            Some(l) => Lab::boot_line(board, image, icount.as_ref().map(|_| shift), l)?,
            None => Lab::boot(board, image, icount.clone())?,
        };
        if icount.is_some() {
            lab.without_tail_loss_probes()?;
        }
        let iperf3 = |device_sends| {
            let t = Transfer::Iperf3 {
                device_sends,
                options: &["-t", SECONDS],
            };
            lab.transfer_retrying(t, Watch::Nothing, "throughput")
        };
        let rx = iperf3(false)?;
        let tx = iperf3(true)?;
        // An image without the HTTP server (the minimal one) has no download to time.
        let http = if has_http {
            let t = Transfer::Download { path: "/1MB.txt" };
            Some(lab.transfer(t, Watch::Ends)?)
        } else {
            None
        };
        let mut run = json!({
            "icount": icount,
            "mips": icount.as_ref().map(|_| 1000.0 / f64::from(1u32 << shift)),
            "clock": if icount.is_some() {
                "the device's (QEMU's virtual time at the fixed rate)"
            } else {
                "the host's (QEMU free-running)"
            },
            "device_receives": rx.clocks.rate_json(rx.bytes, Unit::Mbps),
            "device_sends": tx.clocks.rate_json(tx.bytes, Unit::Mbps),
        });
        if let Some(h) = &http {
            run["http_1mb"] = h.clocks.rate_json(h.bytes, Unit::KBps);
        }
        for (what, m) in [
            ("receiving", Some(&rx)),
            ("sending", Some(&tx)),
            ("curl", http.as_ref()),
        ] {
            if let Some(note) = m.and_then(|m| m.clocks.behind()) {
                eprintln!(
                    "linklab emu throughput: {} at {}: {what}: {note}",
                    board.name,
                    icount.as_deref().unwrap_or("free-running")
                );
            }
        }
        runs.push(run);
    }
    Ok(json!({
        "board": board.name,
        "isa": board.isa,
        "image": chosen.spec.name,
        "runs": runs,
    }))
}
