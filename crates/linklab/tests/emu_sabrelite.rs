//! The i.MX6 FEC iperf study's board, emulated (`linklab emu --board sabrelite`: QEMU's
//! sabrelite, one core of its i.MX6 Quad, the ENET through linklab-imx-enet) at a fixed
//! instruction rate, as the study measured its board: a UDP offered-rate sweep each way
//! (`linklab sweep`, the study's `bwtest.sh`) up to rates the device cannot carry at 125 MIPS
//! names the limit at the top and at every step past the knee, and reports a peak the
//! device's CPU, not the host, sets; then the device still answers, its counters conserve,
//! and the ENET's frames went straight into the RX queue (the runs it gave back for their
//! alignment, each followed by one copied frame, are a sliver of the frames). The knee
//! itself is a figure (firmware README), not asserted: under `-icount` QEMU hands over the
//! TAP's frames in bursts when the host is busy, and a burst past the RX queue and the
//! iperf3 UDP socket loses datagrams at any rate (seen at 4–8 Mbit/s on a machine at load
//! 6 on 2 cores). Its stock ping, curl, iperf3 and probe checks are tests/emu.rs's, its
//! hostile peers tests/hostile_emu.rs's. Needs root and QEMU, as tests/emu.rs.

mod common;

use serde_json::Value;

use common::device::{Device, DEVICE};
use common::{assert_conserved, mac_counter};

/// QEMU's `-icount` shift: 2^3 ns per instruction, 125 MIPS.
const SHIFT: &str = "3";

/// `linklab sweep` against the device, UDP, device receiving (or sending, `reverse`), from
/// 20 to 300 Mbit/s in 40 Mbit/s steps of a second: its JSON report.
fn sweep(emu: &Device, reverse: bool) -> Value {
    let dir = common::tempdir(&format!("sweep-sabrelite-{reverse}"));
    let json = dir.join("sweep.json");
    let bin = common::linklab_bin();
    let mut argv = vec![
        bin.to_str().unwrap(),
        "sweep",
        "-c",
        DEVICE,
        "--from",
        "20M",
        "--to",
        "300M",
        "--step",
        "40M",
        "-t",
        "1",
        "--json",
        json.to_str().unwrap(),
    ];
    if reverse {
        argv.push("-R");
    }
    let out = emu.ns.run(&argv);
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap()
}

#[test]
fn sabrelite_at_125_mips_sweeps_past_its_limit_each_way() {
    let mut emu = Device::emu_args("sabrelite", &["--icount", SHIFT]);
    for reverse in [false, true] {
        let v = sweep(&emu, reverse);
        let steps = v["steps"].as_array().expect("steps");
        let offered = |s: &Value| s["offered_bps"].as_f64().unwrap_or(0.0);
        let limited = |s: &Value| s["limits"].as_array().is_some_and(|l| !l.is_empty());
        let top = steps
            .iter()
            .filter(|s| offered(s) >= 290e6)
            .collect::<Vec<_>>();
        assert!(
            !top.is_empty() && top.iter().all(|s| limited(s)),
            "the top step names a limit (reverse {reverse}): {v}"
        );
        let peak = v["peak"]["received_bps"]
            .as_f64()
            .unwrap_or_else(|| panic!("no peak (reverse {reverse}): {v}"));
        assert!(
            peak > 1e6 && peak < 250e6,
            "peak {peak} (reverse {reverse})"
        );
        if let Some(knee) = v["knee_bps"].as_f64() {
            assert!(
                steps.iter().filter(|s| offered(s) > knee).all(limited),
                "every step above the knee names a limit (reverse {reverse}): {v}"
            );
        }
    }
    let stats = emu.stats();
    assert_eq!(stats["board"], "sabrelite", "{stats}");
    assert_conserved(&stats);
    let frames = mac_counter(&stats, "rx_packets");
    let given_back = mac_counter(&stats, "rx_cancelled");
    assert!(frames > 10_000, "{stats}");
    assert!(
        given_back * 20 < frames,
        "runs given back for alignment: {given_back} of {frames} frames"
    );
    let stdout = emu.stop(libc::SIGINT);
    assert!(stdout.contains("stopped by signal"), "{stdout}");
}
