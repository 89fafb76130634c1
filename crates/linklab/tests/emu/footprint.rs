//! The images' footprint and data-path cost, as `linklab emu cost mps2-an385 [--image
//! minimal|compact] --json` measures them (QEMU `-icount shift=0`, stock iperf3 4 MB
//! each way; stock iperf 2 for the compact image, which serves it alone): flash (vectors + .text + .rodata + .data), RAM (static + the stack's painted
//! peak) and instructions per payload byte, device receiving and sending (the median of five
//! runs). Each test fails past its bound.
//!
//! The bounds are the goals (set against the lwIP peer) where the image meets them — per byte 0.85× the lwIP
//! 2.2.1 peer's on the same board (≤ 3.0 received, ≤ 3.7 sent) for the full and the compact
//! image, lwIP's small configuration's (≤ 4.30 / 4.75) for the minimal one; RAM
//! ≤ 64 436 B (lwIP's perf image, whose windows it has) for the compact image, RAM 40 KiB for
//! the minimal one; iperf 2 on the full
//! image within iperf3's bounds; riscv32-virt's minimal image's RAM ≤ 40 KiB too — and
//! otherwise the figures measured when they were set,
//! rounded up to a KiB, each a goal missed and said so (the firmware README):
//! - the full image's flash: the first goal's 96 KiB and iperf 2's measured cost on top
//!   ([`IPERF2_FLASH`]);
//! - the full image's RAM: 107 312 B (106 KiB), past the first goal's 96 KiB and iperf 2's
//!   [`IPERF2_RAM`] by 5 360 B: five segments in flight per data chunk (sending at
//!   3.4–3.7 instructions per byte rather than 4.3 from two) on top of iperf 2's four data
//!   sockets and two-segment control windows;
//! - the minimal image's flash: 42 060 B (42 KiB), past the first goal's 40 KiB (the lwIP-derived goal
//!   is 36 016 B): the receive and send fast paths (checksum while copying,
//!   32-byte copies) are in every image;
//! - the compact image's flash: 36 020 B (36 KiB), past lwIP's small configuration's 36 016 B
//!   (which has the same apps: lwiperf, httpd, ICMP) by 4 B. It met it at 35 984 B; the SYN
//!   counters and the SYN rule, which this image leaves out (no feature `evict`), added no
//!   code to it but changed the apps' state, and the main loop's code, inlined whole, came
//!   out 34 B larger (wider branch and load encodings, no new call);
//! - the full image's send: 3.70–3.81 instructions per byte (bound 3.9) since iperf 2 joined
//!   it, past the lwIP-derived 3.7, which main's image met before (3.60–3.63 beside it in one
//!   run, `linklab emu cost mps2-an385` three times each; the full image built without
//!   feature `iperf2` 3.62–3.70: iperf 2's listener and UDP socket in smoltcp's walk of its
//!   sockets, and the shared data memory's bookkeeping).
//!
//! No ignored test asserts a goal here: the flash goal for lwIP's apps (lwIP small's
//! 36 016 B), missed by the compact image by 4 B, is bounded at the figure measured since;
//! the full image's
//! 3.7 for sending, met before iperf 2 joined the image, is bounded at the figure measured
//! since (3.9); the first goal's per-byte figures (≤ 4.4 / 5.4) are looser than the bounds above.
//!
//! Needs root, QEMU and iperf3 (as tests/emu.rs).

use linklab_results::emu::cost::CostReport;
use linklab_testkit::{linklab_bin, run_ok};
use std::process::Command;

const KIB: u64 = 1024;

/// What iperf 2 (linklab-firmware's feature `iperf2`, which the full images serve since issue
/// 48) adds to the full image's flash on mps2-an385: 112 388 B with it, 89 320 B without
/// (`scripts/knob-sizes`, "full without iperf2"; `linklab emu cost mps2-an385` of each,
/// the same). Its sans-IO core is 6.1 KB of it, its hosting (the pool, the smoltcp
/// adapter) 7.8 KB, soft-float arithmetic for the UDP report's jitter ~3 KB.
const IPERF2_FLASH: u64 = 23_068;

/// What iperf 2 adds to the full image's RAM (static and the stack's painted peak): 98 552 B
/// with it, 94 904 B without (`linklab emu cost mps2-an385` of each): its sockets'
/// slots and its state; its buffers are the iperf3 data memory's (one test at a time).
const IPERF2_RAM: u64 = 3_648;

/// Runs `linklab emu cost` on mps2-an385 (`image`: `--image` value, or the main-loop
/// image) `runs` times; returns each run's JSON document.
fn cost_runs(image: Option<&str>, runs: usize) -> Vec<CostReport> {
    cost_runs_with("mps2-an385", image, &[], runs)
}

/// [`cost_runs`] on `board` with `more` options of `linklab emu cost` (`--iperf2`).
fn cost_runs_with(board: &str, image: Option<&str>, more: &[&str], runs: usize) -> Vec<CostReport> {
    let name = format!(
        "footprint-{board}-{}{}",
        image.unwrap_or("full"),
        more.concat()
    );
    let dir = linklab_testkit::tempdir(&name);
    (0..runs)
        .map(|i| {
            let json = dir.join(format!("cost-{i}.json"));
            let mut cmd = Command::new(linklab_bin());
            cmd.args(["emu", "cost", board, "--json"]).arg(&json);
            cmd.args(more);
            if let Some(name) = image {
                cmd.args(["--image", name]);
            }
            run_ok(&mut cmd);
            linklab_testkit::docs::read(&json)
        })
        .collect()
}

/// The median of `figure` over the runs. Instructions per byte vary from run to run with the
/// segments' timing: an odd retransmission, ACKs merged or not, and on receive whether the
/// client's segments after iperf3's 37-byte cookie land on a word in the socket buffer
/// (+0.3 when not; the firmware README's slow mode).
fn median(runs: &[CostReport], figure: impl Fn(&CostReport) -> f64) -> f64 {
    let mut v: Vec<f64> = runs.iter().map(figure).collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Every run moved the whole 4 MB each way (the figures are of a complete transfer).
fn assert_complete(runs: &[CostReport]) {
    for r in runs {
        assert_eq!(r.tx_bytes, 4 << 20, "{r:?}");
        assert_eq!(r.rx_bytes_client_wrote, 4 << 20, "{r:?}");
    }
}

/// The medians of an image's runs: (flash, RAM, instructions per byte received, sent).
fn figures(image: Option<&str>) -> (u64, u64, f64, f64) {
    let runs = cost_runs(image, 5);
    assert_complete(&runs);
    // The sizes are the same in every run: the image and its stack's peak.
    let (flash, ram) = (runs[0].flash_bytes, runs[0].ram_bytes);
    let (rx, tx) = (
        median(&runs, |r| r.rx_instr_per_byte),
        median(&runs, |r| r.tx_instr_per_byte),
    );
    eprintln!(
        "{}: flash {flash} B, RAM {ram} B, {rx} / {tx} instructions per byte",
        image.unwrap_or("full")
    );
    (flash, ram, rx, tx)
}

#[test]
fn mps2_an385_minimal_image_within_budget() {
    let (flash, ram, rx, tx) = figures(Some("minimal"));
    assert!(flash <= 42 * KIB, "flash {flash} B > 42 KiB");
    assert!(ram <= 40 * KIB, "RAM {ram} B > 40 KiB");
    assert!(rx <= 4.30, "receive {rx} instructions per byte > 4.30");
    assert!(tx <= 4.75, "send {tx} instructions per byte > 4.75");
}

/// The goal of 40 KiB of RAM for the minimal image on every board: riscv32-virt's virtio-net
/// driver keeps two transmit buffers there (`lean-tx`), 40 888 B when set. One run: the RAM
/// is the image's and the stack's peak, the same in every run.
#[test]
fn riscv32_virt_minimal_image_fits_40_kib_of_ram() {
    let runs = cost_runs_with("riscv32-virt", Some("minimal"), &[], 1);
    assert_complete(&runs);
    let ram = runs[0].ram_bytes;
    assert!(ram <= 40 * KIB, "RAM {ram} B > 40 KiB");
}

#[test]
fn mps2_an385_compact_image_within_budget() {
    let (flash, ram, rx, tx) = figures(Some("compact"));
    // lwIP small's 36 016 B, missed by 4 B since (module docs).
    assert!(flash <= 36 * KIB, "flash {flash} B > 36 KiB");
    assert!(ram <= 64_436, "RAM {ram} B > 64 436 B");
    assert!(rx <= 3.0, "receive {rx} instructions per byte > 3.0");
    assert!(tx <= 3.7, "send {tx} instructions per byte > 3.7");
}

#[test]
fn mps2_an385_full_image_within_budget() {
    let (flash, ram, rx, tx) = figures(None);
    assert!(
        flash <= 96 * KIB + IPERF2_FLASH,
        "flash {flash} B > 96 KiB + iperf 2's {IPERF2_FLASH} B"
    );
    assert!(
        ram <= 106 * KIB,
        "RAM {ram} B > 106 KiB (the first goal's 96, iperf 2's {IPERF2_RAM} B, five segments in flight)"
    );
    assert!(rx <= 3.0, "receive {rx} instructions per byte > 3.0");
    // The lwIP-derived 3.7 met before iperf 2 joined the image (main at the lwip merge: 3.60-3.63),
    // missed since (module docs).
    assert!(tx <= 3.9, "send {tx} instructions per byte > 3.9");
}

/// iperf 2's cost per byte on the full image (no worse than iperf3's on the same
/// image): stock `iperf -c -n 4M`, and `-R`, through `linklab emu cost --iperf2`, within
/// the bounds iperf3's figures have above.
#[test]
fn mps2_an385_full_image_iperf2_within_the_iperf3_bounds() {
    let runs = cost_runs_with("mps2-an385", None, &["--iperf2"], 5);
    for r in &runs {
        assert_eq!(r.tool, "iperf2", "{r:?}");
        assert_eq!(r.rx_bytes, 4 << 20, "{r:?}");
        assert_eq!(r.tx_bytes, 4 << 20, "{r:?}");
    }
    let (rx, tx) = (
        median(&runs, |r| r.rx_instr_per_byte),
        median(&runs, |r| r.tx_instr_per_byte),
    );
    eprintln!("full, iperf 2: {rx} / {tx} instructions per byte");
    assert!(rx <= 3.0, "receive {rx} instructions per byte > 3.0");
    assert!(tx <= 3.7, "send {tx} instructions per byte > 3.7");
}
