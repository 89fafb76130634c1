//! `linklab emu throughput pico` (and `w5500-evb-pico`): the `throughput` document of a
//! pin-level board, in the chip's clock. The board example runs in rp2040js in a lab of its
//! own ([`Lab::boot_pin`]); stock iperf3 moves [`BYTES`] each way (the device's iperf3
//! server's bytes and seconds, on its own clock: the emulated chip's), and stock curl
//! downloads /1MB.txt, timed by the harness's status file (the chip's nanoseconds before and
//! after; it is rewritten about every 50 ms of real time, a few ms of the chip's). The
//! emulator runs some 20 to 100 times slower than the chip, so every rate carries the note
//! that the host's clock fell behind; the rates are the chip's.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use linklab_results::emu::throughput::{self as doc, ThroughputReport, ThroughputRun};

use crate::lab::Lab;
use crate::pin_board::PinBoard;
use crate::transfer::{Clocks, Unit};

/// What `linklab emu throughput` measures on a pin-level board.
#[derive(Clone, Debug)]
pub struct PinThroughputOptions {
    /// The board.
    pub board: PinBoard,
    /// The image's name (None: the board's default).
    pub image: Option<String>,
    /// This ELF of the image instead of building it.
    pub elf: Option<PathBuf>,
}

/// Bytes each iperf3 run moves (`-n`): a megabyte, as the RP2040's line-rate figures.
pub const BYTES: &str = "1M";

/// Builds (or finds) the image, boots it in a lab and measures it: the `throughput`
/// document with one run, in the chip's clock.
pub fn run(options: &PinThroughputOptions) -> anyhow::Result<ThroughputReport> {
    let board = options.board;
    let image = board.image(options.image.as_deref())?;
    let lab = Lab::boot_pin(board, image.name, options.elf.clone())?;
    let (rx, tx) = lab.iperf3_both_ways(&["-n", BYTES], "throughput")?;
    let (http_bytes, http) = timed_download(&lab, "/1MB.txt")?;
    let clk_hz = chip_ns_and_clock(&lab)?.1;
    Ok(ThroughputReport {
        kind: doc::KIND.into(),
        schema_version: doc::SCHEMA_VERSION,
        board: board.name.into(),
        isa: "thumbv6m (Cortex-M0+)".into(),
        image: image.name.into(),
        runs: vec![ThroughputRun {
            icount: None,
            mips: None,
            clock: format!(
                "the chip's (rp2040js: the emulated RP2040, clk_sys {} MHz)",
                clk_hz / 1_000_000
            ),
            device_receives: rx.clocks.rate_document(rx.bytes, Unit::Mbps),
            device_sends: tx.clocks.rate_document(tx.bytes, Unit::Mbps),
            http_1mb: Some(http.rate_document(http_bytes, Unit::KBps)),
        }],
    })
}

/// Downloads `path` with stock curl, timed in the chip's clock by the harness's status file:
/// the body's bytes, and the chip's seconds and the host's.
fn timed_download(lab: &Lab, path: &str) -> anyhow::Result<(u64, Clocks)> {
    let (before, _) = chip_ns_and_clock(lab)?;
    let started = Instant::now();
    let bytes = lab.download(path)?;
    let real_s = started.elapsed().as_secs_f64();
    // Each read is at most one rewrite (50 ms of real time, a few ms of the chip's) behind:
    // the two errors mostly cancel.
    let (after, _) = chip_ns_and_clock(lab)?;
    Ok((
        bytes,
        Clocks {
            device_s: after.saturating_sub(before) as f64 / 1e9,
            real_s,
        },
    ))
}

/// The chip's nanoseconds and clk_sys as the harness last wrote them.
fn chip_ns_and_clock(lab: &Lab) -> anyhow::Result<(u64, u64)> {
    let path = lab.pin_status();
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read the harness's status {}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("the harness's status {} is not JSON", path.display()))?;
    let field = |k: &str| {
        v[k].as_u64()
            .with_context(|| format!("the harness's status has no {k}"))
    };
    Ok((field("emulated_ns")?, field("clk_sys_hz")?))
}
