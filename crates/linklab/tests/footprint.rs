//! The images' footprint and data-path cost, as `linklab emu cost mps2-an385 [--image
//! minimal|compact] --json` measures them (QEMU `-icount shift=0`, stock iperf3 4 MB
//! each way): flash (vectors + .text + .rodata + .data), RAM (static + the stack's painted
//! peak) and instructions per payload byte, device receiving and sending (the median of five
//! runs). Each test fails past its bound.
//!
//! The bounds are issue 49's goals where the image meets them — per byte 0.85× the lwIP
//! 2.2.1 peer's on the same board (≤ 3.0 received, ≤ 3.7 sent) for the full and the compact
//! image, lwIP's small configuration's (≤ 4.30 / 4.75) for the minimal one; RAM ≤ 64 436 B
//! (lwIP's perf image) for the compact image, 40 KiB for the minimal one — and otherwise
//! the figures measured when they were set, rounded up: the full image's flash and RAM
//! (issue 33's 96 KiB each), the minimal image's flash (issue 33's 40 KiB; issue 49's goal
//! is 36 016 B), the compact image's (47 020 B: 46 KiB; the goal is lwIP's 39 940 B).
//! `goals_of_issue_49` (ignored; run it with `--ignored`) asserts the two flash goals the
//! images miss, and `figures_of_the_day_issue_33_was_filed` issue 33's per-byte figures.
//!
//! Needs root, QEMU and iperf3 (as tests/emu.rs).

mod common;

use common::{linklab_bin, run_ok};
use serde_json::Value;
use std::process::Command;

const KIB: u64 = 1024;

/// Runs `linklab emu cost` on mps2-an385 (`image`: `--image` value, or the main-loop
/// image) `runs` times; returns each run's JSON document.
fn cost_runs(image: Option<&str>, runs: usize) -> Vec<Value> {
    let dir = common::tempdir(&format!("footprint-{}", image.unwrap_or("full")));
    (0..runs)
        .map(|i| {
            let json = dir.join(format!("cost-{i}.json"));
            let mut cmd = Command::new(linklab_bin());
            cmd.args(["emu", "cost", "mps2-an385", "--json"]).arg(&json);
            if let Some(name) = image {
                cmd.args(["--image", name]);
            }
            run_ok(&mut cmd);
            serde_json::from_slice(&std::fs::read(&json).expect("read --json")).unwrap()
        })
        .collect()
}

/// The median of `key` over the runs. Instructions per byte vary from run to run with the
/// segments' timing: an odd retransmission, ACKs merged or not, and on receive whether the
/// client's segments after iperf3's 37-byte cookie land on a word in the socket buffer
/// (+0.3 when not; the firmware README's slow mode).
fn median(runs: &[Value], key: &str) -> f64 {
    let mut v: Vec<f64> = runs
        .iter()
        .map(|r| r[key].as_f64().unwrap_or_else(|| panic!("no {key}: {r}")))
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// A size member (the same in every run: the image and its stack's peak).
fn bytes(runs: &[Value], key: &str) -> u64 {
    runs[0][key]
        .as_u64()
        .unwrap_or_else(|| panic!("no {key}: {}", runs[0]))
}

/// Every run moved the whole 4 MB each way (the figures are of a complete transfer).
fn assert_complete(runs: &[Value]) {
    for r in runs {
        assert_eq!(r["tx_bytes"].as_u64(), Some(4 << 20), "{r}");
        assert_eq!(r["rx_bytes_client_wrote"].as_u64(), Some(4 << 20), "{r}");
    }
}

/// The medians of an image's runs: (flash, RAM, instructions per byte received, sent).
fn figures(image: Option<&str>) -> (u64, u64, f64, f64) {
    let runs = cost_runs(image, 5);
    assert_complete(&runs);
    let (flash, ram) = (bytes(&runs, "flash_bytes"), bytes(&runs, "ram_bytes"));
    let (rx, tx) = (
        median(&runs, "rx_instr_per_byte"),
        median(&runs, "tx_instr_per_byte"),
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
    assert!(flash <= 40 * KIB, "flash {flash} B > 40 KiB");
    assert!(ram <= 40 * KIB, "RAM {ram} B > 40 KiB");
    assert!(rx <= 4.30, "receive {rx} instructions per byte > 4.30");
    assert!(tx <= 4.75, "send {tx} instructions per byte > 4.75");
}

#[test]
fn mps2_an385_compact_image_within_budget() {
    let (flash, ram, rx, tx) = figures(Some("compact"));
    assert!(flash <= 46 * KIB, "flash {flash} B > 46 KiB");
    assert!(ram <= 64_436, "RAM {ram} B > 64 436 B");
    assert!(rx <= 3.0, "receive {rx} instructions per byte > 3.0");
    assert!(tx <= 3.7, "send {tx} instructions per byte > 3.7");
}

#[test]
fn mps2_an385_full_image_within_budget() {
    let (flash, ram, rx, tx) = figures(None);
    assert!(flash <= 96 * KIB, "flash {flash} B > 96 KiB");
    assert!(ram <= 96 * KIB, "RAM {ram} B > 96 KiB");
    assert!(rx <= 3.0, "receive {rx} instructions per byte > 3.0");
    assert!(tx <= 3.7, "send {tx} instructions per byte > 3.7");
}

#[test]
#[ignore = "issue 49's flash goals, which the images miss: the minimal image 41 724 B (goal 36 016 B), the compact image 47 020 B (goal lwIP's 39 940 B) when set (firmware README, beside lwIP)"]
fn goals_of_issue_49() {
    let mut missing = Vec::new();
    for (image, goal) in [("minimal", 36_016), ("compact", 39_940)] {
        let (flash, _, _, _) = figures(Some(image));
        if flash > goal {
            missing.push(format!("{image} image: flash {flash} B > {goal} B"));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("; "));
}

#[test]
#[ignore = "issue 33's per-byte figures as absolutes (≤ 4.4 / 5.4): the host's ACKs move the send figure by more than the goal's margin (main's own image sent at 5.61–6.06 beside the full image's 5.64–5.70 on 2026-11-25)"]
fn figures_of_the_day_issue_33_was_filed() {
    let full = cost_runs(None, 5);
    let (rx, tx) = (
        median(&full, "rx_instr_per_byte"),
        median(&full, "tx_instr_per_byte"),
    );
    let mut missing = Vec::new();
    if rx > 4.4 {
        missing.push(format!(
            "full image receives at {rx} instructions per byte > 4.4"
        ));
    }
    if tx > 5.4 {
        missing.push(format!(
            "full image sends at {tx} instructions per byte > 5.4"
        ));
    }
    assert!(missing.is_empty(), "{}", missing.join("; "));
}
