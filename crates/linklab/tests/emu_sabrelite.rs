//! The i.MX6 FEC iperf study's board, emulated (`linklab emu --board sabrelite`: QEMU's
//! sabrelite, one core of its i.MX6 Quad, the ENET through linklab-imx-enet) at a fixed
//! instruction rate, as the study measured its board: a UDP offered-rate sweep each way
//! (`linklab sweep`, the study's `bwtest.sh`) finds the device's knee, where the CPU, not
//! the host, is the limit; then the device still answers, its counters conserve, and the
//! ENET's frames went straight into the RX queue (the runs it gave back for their
//! alignment, each followed by one copied frame, are a sliver of the frames). Its stock
//! ping, curl, iperf3 and probe checks are tests/emu.rs's, its hostile peers
//! tests/hostile_emu.rs's. Needs root and QEMU, as tests/emu.rs.

mod common;

use serde_json::Value;

use common::device::{Device, DEVICE};
use common::{assert_conserved, mac_counter};

/// QEMU's `-icount` shift: 2^3 ns per instruction, 125 MIPS.
const SHIFT: &str = "3";

/// `linklab sweep` against the device, UDP, device receiving (or sending, `reverse`), from
/// 10 to 300 Mbit/s in 10 Mbit/s steps of a second: its JSON report.
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
        "10M",
        "--to",
        "300M",
        "--step",
        "10M",
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
fn sabrelite_at_125_mips_sweeps_to_its_knee_each_way() {
    let mut emu = Device::emu_args("sabrelite", &["--icount", SHIFT]);
    for reverse in [false, true] {
        let v = sweep(&emu, reverse);
        let knee = v["knee_bps"]
            .as_f64()
            .unwrap_or_else(|| panic!("no knee (reverse {reverse}): {v}"));
        assert!(
            knee >= 10e6 && knee < 300e6,
            "knee {knee} (reverse {reverse})"
        );
        let steps = v["steps"].as_array().expect("steps");
        let above: Vec<&Value> = steps
            .iter()
            .filter(|s| s["offered_bps"].as_f64().unwrap_or(0.0) > knee)
            .collect();
        assert!(!above.is_empty(), "no step above the knee: {v}");
        assert!(
            above
                .iter()
                .all(|s| s["limits"].as_array().is_some_and(|l| !l.is_empty())),
            "every step above the knee names a limit: {v}"
        );
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
