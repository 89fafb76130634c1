//! The i.MX6 FEC iperf study's board, emulated (`linklab emu sabrelite --image embassy`:
//! QEMU's sabrelite, one core of its i.MX6 Quad, the ENET through linklab-imx-enet, the
//! embassy image) at a fixed instruction rate, as the study measured its board: a UDP
//! offered-rate sweep each way (`linklab sweep`, the study's `bwtest.sh`) up to rates the
//! device cannot carry at 125 MIPS names the limit at the top and at every step past the
//! knee, and reports a peak; then the device still answers and its counters conserve. Before
//! the sweeps, a stock iperf3 TCP test to the device shows the ENET's frames going straight
//! into the RX queue: the runs the driver gave back because their buffers were not on 16
//! bytes (each followed by one copied frame) are under 5 % of the frames. (Under the sweeps'
//! overload they are most: a full queue makes the driver copy from its spill buffer, and a
//! run granted after a copy starts on a word, so 3 in 4 are given back; firmware README.) The
//! itself is a figure (firmware README), not asserted: under `-icount` QEMU hands over the
//! TAP's frames in bursts when the host is busy, and a burst past the RX queue and the
//! iperf3 UDP socket loses datagrams at any rate (seen at 4–8 Mbit/s on a machine at load
//! 6 on 2 cores). Its stock ping, curl, iperf3 and probe checks are tests/emu.rs's, its
//! hostile peers tests/hostile_emu.rs's. The embassy image, because the main-loop images over
//! linklab-mac send paced UDP at a few datagrams per timer tick (`iperf3 -u -R -b 5M`: 129
//! kbit/s here, as on mps2-an385 and riscv32-virt; firmware README). Needs root and QEMU, as
//! tests/emu.rs.

use linklab_results::sweep::{Step, SweepReport};

use linklab_testkit::device::{Device, DEVICE};
use linklab_testkit::{assert_conserved, mac_counter};

/// QEMU's `-icount` shift: 2^3 ns per instruction, 125 MIPS.
const SHIFT: &str = "3";

/// `linklab sweep` against the device, UDP, device receiving (or sending, `reverse`), from
/// 20 to 300 Mbit/s in 40 Mbit/s steps of a second: its JSON report.
fn sweep(emu: &Device, reverse: bool) -> SweepReport {
    let dir = linklab_testkit::tempdir(&format!("sweep-sabrelite-{reverse}"));
    let json = dir.join("sweep.json");
    let bin = linklab_testkit::linklab_bin();
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
    linklab_testkit::docs::read(&json)
}

#[test]
fn sabrelite_at_125_mips_sweeps_past_its_limit_each_way() {
    let mut emu = Device::emu_args("sabrelite", &["--image", "embassy", "--icount", SHIFT]);
    let before = emu.stats();
    let tcp = emu.iperf3(&["-t", "3"]);
    assert!(tcp.end_bytes("sum_received") > 1_000_000, "{:?}", tcp.end);
    let after = emu.stats();
    let delta = |name: &str| mac_counter(&after, name) - mac_counter(&before, name);
    assert!(delta("rx_packets") > 1000, "{after}");
    assert!(
        delta("rx_cancelled") * 20 < delta("rx_packets"),
        "runs given back for alignment: {} of {} frames",
        delta("rx_cancelled"),
        delta("rx_packets")
    );
    for reverse in [false, true] {
        let v = sweep(&emu, reverse);
        let steps = &v.steps;
        let offered = |s: &Step| s.offered_bps;
        let limited = |s: &Step| !s.limits.is_empty();
        let top = steps
            .iter()
            .filter(|s| offered(s) >= 290e6)
            .collect::<Vec<_>>();
        assert!(
            !top.is_empty() && top.iter().all(|s| limited(s)),
            "the top step names a limit (reverse {reverse}): {v:?}"
        );
        let peak = v
            .peak
            .as_ref()
            .map(|p| p.received_bps)
            .unwrap_or_else(|| panic!("no peak (reverse {reverse}): {v:?}"));
        assert!(peak > 1e6, "peak {peak} (reverse {reverse})");
        if let Some(knee) = v.knee_bps {
            assert!(
                steps.iter().filter(|s| offered(s) > knee).all(limited),
                "every step above the knee names a limit (reverse {reverse}): {v:?}"
            );
        }
    }
    let stats = emu.stats();
    assert_eq!(stats.text("board"), "sabrelite", "{stats}");
    assert_conserved(&stats);
    assert!(mac_counter(&stats, "rx_packets") > 10_000, "{stats}");
    let stdout = emu.stop(libc::SIGINT);
    assert!(stdout.contains("sabrelite up (embassy)"), "{stdout}");
    assert!(stdout.contains("stopped by signal"), "{stdout}");
}
