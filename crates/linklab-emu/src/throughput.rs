//! `linklab emu throughput`: what stock iperf3 (both ways) and curl measure against the
//! firmware, QEMU free-running and then at a fixed instruction rate.
//!
//! Free-running, the device's clock is the host's. At a fixed rate (`-icount shift=N`), the
//! device's clock is QEMU's virtual time: every rate is given in it (the device's iperf3
//! server's seconds; a download's uptime from `/stats`), as `linklab emu predict` gives
//! them, and the host's rate is shown beside it only when the emulator fell behind real
//! time, with a line saying by how much ([`super::transfer::Clocks::behind`]).

use std::path::Path;

use linklab_results::emu::throughput::{self as doc, ThroughputReport, ThroughputRun};

use super::board::{Board, Work};
use super::image::{serves_iperf3, Chosen, ImageChoice};
use super::lab::Lab;
use super::line::{LineOptions, LineSettings};
use super::transfer::{Transfer, Unit, Watch};

/// What `linklab emu throughput` measures.
#[derive(Clone, Debug)]
pub struct ThroughputOptions {
    /// The board and image.
    pub image: ImageChoice,
    /// The soft-PHY line's options (a soft-PHY image).
    pub line: LineOptions,
    /// The second run's fixed rate: `-icount shift=N`, 1000 / 2^N MIPS.
    pub shift: u32,
}

/// Builds (or finds) the image and measures it: the `throughput` document. Where the
/// emulator fell behind real time, [`ThroughputReport::behind_notes`] says so.
pub fn run(options: &ThroughputOptions) -> anyhow::Result<ThroughputReport> {
    let p = options
        .image
        .prepare("throughput", &options.line, serves_iperf3)?;
    throughput(
        &p.board,
        &p.chosen,
        &p.image,
        options.shift,
        p.line.as_ref(),
    )
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
    line: Option<&LineSettings>,
) -> anyhow::Result<ThroughputReport> {
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
        let (rx, tx) = lab.iperf3_both_ways(&["-t", SECONDS], "throughput")?;
        // An image without the HTTP server (the minimal one) has no download to time.
        let http = if has_http {
            let t = Transfer::Download { path: "/1MB.txt" };
            Some(lab.transfer(t, Watch::Ends)?)
        } else {
            None
        };
        runs.push(ThroughputRun {
            mips: icount.as_ref().map(|_| 1000.0 / f64::from(1u32 << shift)),
            clock: if icount.is_some() {
                "the device's (QEMU's virtual time at the fixed rate)"
            } else {
                "the host's (QEMU free-running)"
            }
            .into(),
            icount,
            device_receives: rx.clocks.rate_document(rx.bytes, Unit::Mbps),
            device_sends: tx.clocks.rate_document(tx.bytes, Unit::Mbps),
            http_1mb: http
                .as_ref()
                .map(|h| h.clocks.rate_document(h.bytes, Unit::KBps)),
        });
    }
    Ok(ThroughputReport {
        kind: doc::KIND.into(),
        schema_version: doc::SCHEMA_VERSION,
        board: board.name.into(),
        isa: board.isa.into(),
        image: chosen.spec.name.into(),
        runs,
    })
}
