//! The soft-PHY image on riscv32-virt (`linklab emu riscv32-virt --image soft-phy`): the
//! firmware decodes 10BASE-T line samples with linklab-phy10, `linklab emu` is the line
//! between it and the TAP; stock ping, curl and iperf3 against it in a namespace the test
//! creates (198.18.0.0/15). Needs root, QEMU and the image (scripts/check builds it).

use linklab_testkit::device::{Device, DEVICE as DEVICE_IP};
use linklab_testkit::ping::Ping;
use linklab_testkit::{assert_conserved, end_bytes, mac_counter};

/// The soft-PHY device: `linklab emu riscv32-virt --image soft-phy` boots the image whose receive interrupt
/// decodes line samples with linklab-phy10 straight into the MAC's grants, and puts every
/// frame from the TAP on a simulated 10BASE-T line (paced at 10 Mbit/s); the image's
/// transmit samples are decoded back by the line. Once on a clean 4x line with the malformed
/// captures of `--bad-captures` first, once on a harsher one (5x, TX 0.5 % fast, ±0.5 sample
/// of jitter): stock ping, curl with CRC32s, stock iperf3 both ways, and the laws of the PHY
/// and the MAC recomputed from `/stats` and of the line from its last line. Then a noisy
/// line, whose damaged frames are counted and never delivered.
#[test]
fn riscv32_soft_phy_line_serves_ping_http_iperf3() {
    for line in [
        &["--image", "soft-phy", "--bad-captures"][..],
        &[
            "--image",
            "soft-phy",
            "--oversample",
            "5",
            "--drift",
            "5000",
            "--jitter",
            "0.5",
        ][..],
    ] {
        soft_phy_line(line);
    }
    noisy_line_counts_damaged_frames();
}

/// Sample noise on the line (0.2 % of the samples toward the device flipped): damaged frames
/// are counted (FCS errors, short frames, decode failures) and never delivered; the laws
/// still hold.
fn noisy_line_counts_damaged_frames() {
    let mut emu = Device::emu_args("riscv32-virt", &["--image", "soft-phy", "--noise", "0.002"]);
    let ping = String::from_utf8(emu.run(&[
        "ping", "-c", "50", "-i", "0.02", "-s", "1400", "-W", "1", DEVICE_IP,
    ]))
    .unwrap();
    let stats = emu.stats();
    assert_conserved(&stats);
    assert!(stats.flag("phy_conservation", "holds"), "{stats}");
    let crc = mac_counter(&stats, "rx_crc_errors");
    assert!(crc > 0, "no FCS error at 0.2 % sample noise: {stats}");
    // Every echo request that arrived damaged was dropped by the MAC, not answered: the
    // device answered at most the good ones.
    let received: u64 = ping
        .split(" received")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{ping}"));
    assert!(received < 50, "no ping lost to noise: {ping} {stats}");
    assert!(
        received <= mac_counter(&stats, "rx_packets"),
        "{ping} {stats}"
    );
    emu.stop(libc::SIGINT);
}

fn soft_phy_line(line: &[&str]) {
    let mut emu = Device::emu_args("riscv32-virt", line);
    serves_ping_http_and_iperf3(&emu, line);

    let stats = emu.stats();
    assert_conserved(&stats);
    let phy = |k: &str| stats.counter("phy", k);
    assert!(stats.flag("phy_conservation", "holds"), "{stats}");
    // The law across PHY and MAC, recomputed: every capture in one bucket; the MAC saw what
    // the PHY committed, cancelled and missed, and sent what the PHY encoded or dropped.
    let buckets = [
        "frames",
        "truncated",
        "empty",
        "link_pulses",
        "noise",
        "missed",
    ];
    assert_eq!(
        phy("captures"),
        buckets.iter().map(|k| phy(k)).sum::<u64>(),
        "{stats}"
    );
    assert_eq!(
        mac_counter(&stats, "rx_committed"),
        phy("frames") + phy("truncated"),
        "{stats}"
    );
    assert_eq!(
        mac_counter(&stats, "rx_cancelled"),
        phy("empty") + phy("link_pulses") + phy("noise"),
        "{stats}"
    );
    assert_eq!(
        mac_counter(&stats, "rx_missed_errors"),
        phy("missed"),
        "{stats}"
    );
    assert_eq!(
        mac_counter(&stats, "tx_packets"),
        phy("tx_frames") + phy("tx_dropped"),
        "{stats}"
    );
    assert!(phy("link_pulses") > 0, "no link pulse arrived: {stats}");
    if line.contains(&"--bad-captures") {
        // Garbage, all ones, all zeros, one sample, a clock pattern: decode failures; a
        // frame cut short: a short frame; a frame with one bit flipped: an FCS error, not
        // delivered; and the device went on serving (above).
        assert!(phy("noise") >= 5, "{stats}");
        assert!(phy("truncated") >= 1, "{stats}");
        assert!(
            mac_counter(&stats, "rx_short_length_errors") >= 1,
            "{stats}"
        );
        assert_eq!(mac_counter(&stats, "rx_crc_errors"), 1, "{stats}");
    } else {
        assert_eq!(mac_counter(&stats, "rx_crc_errors"), 0, "{stats}");
        assert_eq!(phy("noise"), 0, "{stats}");
    }

    let stdout = emu.stop(libc::SIGINT);
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("linklab emu: line "))
        .unwrap_or_else(|| panic!("no line summary: {stdout}"));
    let line_counter = |k: &str| -> u64 {
        summary
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {k}= in {summary}"))
    };
    assert!(summary.ends_with("law=holds"), "{summary}");
    // The device counted no capture the line did not send, and sent no frame the line did
    // not get (the line's last counts come after /stats, so these are bounds).
    assert!(
        line_counter("captures_sent") >= phy("captures"),
        "{summary} {stats}"
    );
    assert!(
        line_counter("buffers_received") >= phy("tx_frames"),
        "{summary} {stats}"
    );
    assert_eq!(line_counter("fcs_errors"), 0, "{summary}");
    let links = String::from_utf8(emu.run(&["ip", "-o", "link", "show"])).unwrap();
    assert!(!links.contains(&format!(" {}:", emu.tap)), "{links}");
}

/// Over the line: 20 pings all answered, the bench files whole, iperf3 both ways.
fn serves_ping_http_and_iperf3(emu: &Device, line: &[&str]) {
    println!("over the line {line:?}");
    Ping::new(DEVICE_IP, 20)
        .with(&["-i", "0.05"])
        .assert_answered(|argv| emu.run(argv));
    for file in linklab_perf::payload::BENCH_FILES
        .iter()
        .filter(|f| f.path == "/100kB.txt" || f.path == "/1MB.txt")
    {
        let body = emu.run(&[
            "curl",
            "-sS",
            "--fail",
            "--max-time",
            "60",
            &format!("http://{DEVICE_IP}{}", file.path),
        ]);
        assert_eq!(
            body.len() as u64,
            file.len,
            "{line:?} {}: length",
            file.path
        );
        assert_eq!(
            crc32fast::hash(&body),
            linklab_perf::http::expected_crc32(*file),
            "{line:?} {}: CRC32",
            file.path
        );
    }
    let rx = emu.iperf3(&["-t", "3"]);
    assert!(
        end_bytes(&rx, "sum_received") > 500_000,
        "{line:?}: {:?}",
        rx.end
    );
    let tx = emu.iperf3(&["-t", "3", "-R"]);
    assert!(
        end_bytes(&tx, "sum_received") > 500_000,
        "{line:?}: {:?}",
        tx.end
    );
}
