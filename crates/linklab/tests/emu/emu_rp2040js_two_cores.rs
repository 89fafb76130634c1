//! The RP2040 soft-PHY example as built (examples/boards/rp2040-soft-phy, default features:
//! the PHY on core 1, PIO decoding each bit on its mid-bit edge and Manchester-encoding
//! what the MAC sends, the stack on core 0, 120 MHz) at the pin level: rp2040js runs both
//! cores, PIO, DMA and timer under emulators/rp2040js/harness.mjs on one clock; `linklab emu
//! line --oversample 8` joins its pins to a TAP in a namespace the test creates
//! (198.18.0.0/15).
//!
//! First the hostile line, each case injected by the harness and counted by the device
//! (noise, a frame cut mid-byte, link pulses only, the line stuck high then low, core 1
//! stalled past its sample ring); then, the device recovered, stock ping, curl of a bench
//! file with its CRC, stock iperf 2 and iperf3 each way, with rates in the chip's clock, and
//! the device's counters: no frame lost into it but the ones the stall cost, both of its
//! laws holding. Kept short (about a second of the chip's time, 100 kB a transfer): the
//! emulator runs both cores, four state machines and the line some 40 to 120 times slower
//! than the chip.
//!
//! And `linklab emu pico` as a user runs it: the example built as it is, ping, curl with its
//! CRC, the line's laws; and (by hand, `-- --ignored`: minutes) `linklab emu throughput pico`.
//!
//! Needs root and node with `npm ci` in emulators/rp2040js (scripts/setup); builds the
//! example itself (seconds after the check's build of it).

use std::time::Duration;

use linklab_testkit::device::DEVICE;
use linklab_testkit::emulated_clock::Status;
use linklab_testkit::iperf2::iperf_in;
use linklab_testkit::iperf3;
use linklab_testkit::ping::Ping;
use linklab_testkit::rp2040js::{build_elf, curl_crc, PinLevel};
use linklab_testkit::stats::{Field, Stats};
use linklab_testkit::{assert_conserved, end_bytes, linklab_bin, mac_counter, Netns};

/// The hostile cases, ms of the chip's clock after the harness gets SIGUSR1 (hostile.mjs):
/// the stuck line and the stall last 20 ms each.
const HOSTILE: &str = "0:noise,10:cut,20:pulses,30:stuck-high,60:stuck-low,90:stall";
/// Cases in the plan.
const HOSTILE_CASES: usize = 6;
/// Bytes each transfer moves.
const TRANSFER: &str = "100K";
const TRANSFER_BYTES: u64 = 100 * 1024;

fn phy(stats: &Stats, name: &str) -> u64 {
    stats.counter("phy", name)
}

/// `/stats` once no frame is between the PHY's core and the MAC: the two sides publish their
/// counters at different moments, so the law across them holds only then
/// (examples/boards/soft-phy/src/counters.rs). Asked again, 100 ms apart, at most 20 times,
/// while a snapshot shows one in flight; the last is returned either way (and a law that
/// never holds fails [`assert_laws`]).
fn quiet_stats(pin: &PinLevel) -> Stats {
    let mut stats = pin.stats();
    for _ in 0..20 {
        if stats.flag("phy_conservation", "holds") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        stats = pin.stats();
    }
    stats
}

/// The device's laws (the MAC's, and the PHY's against the MAC).
fn assert_laws(stats: &Stats) {
    assert_conserved(stats);
    assert!(stats.flag("phy_conservation", "holds"), "{stats}");
}

/// Stock iperf3 (`-n TRANSFER`, `-R` for from the device): the bytes the receiving end
/// reported and the emulated seconds.
fn iperf3(pin: &PinLevel, reverse: bool) -> (u64, iperf3::Report, f64) {
    let mut argv = vec![
        "timeout", "600", "iperf3", "-c", DEVICE, "-n", TRANSFER, "-J",
    ];
    if reverse {
        argv.push("-R");
    }
    let (out, secs) = pin.status.timed(|| pin.ns.run(&argv));
    let report = iperf3::Report::parse(&out.stdout);
    (end_bytes(&report, "sum_received"), report, secs)
}

/// The hostile line: each case injected once, then each counted by the device against
/// `before`; the device answers and its laws hold after.
fn hostile_line_is_counted(pin: &PinLevel, before: &Stats) {
    // The hostile line: each case once, then the chip's time for the last to end.
    pin.start_injection();
    let started = std::time::Instant::now();
    let injected = || match pin.status.figures().0.get("injected") {
        Some(Field::List(cases)) => cases.len(),
        _ => 0,
    };
    while injected() < HOSTILE_CASES {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the hostile plan did not finish: {}",
            pin.status.read()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    pin.status.wait_until(
        pin.status.emulated_ns() + 30_000_000,
        Duration::from_secs(120),
    );

    // Recovered: the device answers each of 3 pings.
    let ping = Ping::new(DEVICE, 3)
        .deadline(60)
        .assert_answered(|argv| pin.ns.run(argv).stdout);
    println!(
        "rp2040js two cores: after the hostile line, ping 3 answered; {}",
        ping.lines().last().unwrap_or("")
    );
    let after_hostile = quiet_stats(pin);
    let d = |name: &str| phy(&after_hostile, name) - phy(before, name);
    println!(
        "rp2040js two cores: hostile line counted: noise {} empty {} truncated {} link_pulses {} overruns {}; mac missed {} short {} crc {}",
        d("noise"),
        d("empty"),
        d("truncated"),
        d("link_pulses"),
        d("overruns"),
        mac_counter(&after_hostile, "rx_missed_errors"),
        mac_counter(&after_hostile, "rx_short_length_errors"),
        mac_counter(&after_hostile, "rx_crc_errors"),
    );
    // Noise: activity that is no frame (or a garbled one the MAC refuses).
    let garbled = |s: &Stats| {
        phy(s, "noise")
            + phy(s, "empty")
            + mac_counter(s, "rx_crc_errors")
            + mac_counter(s, "rx_frame_errors")
    };
    assert!(
        garbled(&after_hostile) > garbled(before),
        "noise counted: {after_hostile}"
    );
    // The frame cut mid-byte: truncated at the PHY, too short at the MAC.
    assert!(d("truncated") >= 1, "{after_hostile}");
    assert!(
        mac_counter(&after_hostile, "rx_short_length_errors")
            > mac_counter(before, "rx_short_length_errors"),
        "{after_hostile}"
    );
    // Link pulses counted as pulses (the plan's 20, and the line's own NLPs meanwhile).
    assert!(d("link_pulses") >= 20, "{after_hostile}");
    // The stall: the ring overran, its loss counted as a missed frame.
    assert!(d("overruns") >= 1, "{after_hostile}");
    assert!(
        mac_counter(&after_hostile, "rx_missed_errors")
            >= mac_counter(before, "rx_missed_errors") + d("overruns"),
        "{after_hostile}"
    );
    assert_laws(&after_hostile);
}

#[test]
fn rp2040_two_cores_at_the_pin_level_survive_a_hostile_line_then_serve_at_line_rate() {
    let elf = build_elf("rp2040-soft-phy", "", "two-cores");
    let pin = PinLevel::start("rp2040js2", &elf, 8, Some(HOSTILE));
    let status = pin.status.figures();
    assert!(status.top_flag("core1_launched"), "{status}");

    // The device answers each of 3 pings.
    Ping::new(DEVICE, 3)
        .deadline(60)
        .assert_answered(|argv| pin.ns.run(argv).stdout);
    let before = pin.stats();
    println!(
        "rp2040js two cores: after boot, ping 3 answered; phy truncated {} (a frame on the line as the PHY started)",
        phy(&before, "truncated")
    );

    hostile_line_is_counted(&pin, &before);

    let (len, secs) = pin.curl_crc("/100kB.txt");
    println!(
        "rp2040js two cores: curl /100kB.txt {len} B, CRC32 right, in {secs:.3} emulated s: {:.0} kB/s from the device",
        len as f64 / secs / 1e3
    );

    // Stock iperf 2 each way, exactly the bytes asked for. Into the device the time runs
    // until it closed the stream (the client is done when its last byte is in the host's
    // socket, a window before the device has it).
    let (run, secs) = pin.status.timed(|| {
        let run = iperf_in(&pin.ns, 600, &["-n", TRANSFER, "-y", "C"]);
        pin.wait_iperf2_closed();
        run
    });
    assert_eq!(run.received(), TRANSFER_BYTES, "{}", run.text);
    println!(
        "rp2040js two cores: iperf 2 -n {TRANSFER} to the device in {secs:.3} emulated s: {:.0} kB/s",
        TRANSFER_BYTES as f64 / secs / 1e3
    );
    let (run, secs) = pin
        .status
        .timed(|| iperf_in(&pin.ns, 600, &["-n", TRANSFER, "-R", "-y", "C"]));
    assert!(run.sent_inline() >= TRANSFER_BYTES, "{}", run.text);
    println!(
        "rp2040js two cores: iperf 2 -R -n {TRANSFER} from the device in {secs:.3} emulated s: {:.0} kB/s",
        run.sent_inline() as f64 / secs / 1e3
    );
    pin.wait_iperf2_closed();

    // Stock iperf3 each way.
    let before_iperf3 = pin.stats();
    let (got, report, secs) = iperf3(&pin, false);
    assert!(got > 0, "{report:?}");
    println!(
        "rp2040js two cores: iperf3 -n {TRANSFER} to the device: {} B sent, {got} B counted by the device at the client's end, {secs:.3} emulated s, {} retransmissions",
        end_bytes(&report, "sum_sent"),
        report.end.sum("sum_sent").retransmits.map_or("no".into(), |r| r.to_string())
    );
    let (got, report, secs) = iperf3(&pin, true);
    assert!(got >= TRANSFER_BYTES, "{report:?}");
    println!(
        "rp2040js two cores: iperf3 -R -n {TRANSFER} from the device: {got} B in {secs:.3} emulated s ({:.0} kB/s)",
        got as f64 / secs / 1e3
    );

    // Nothing lost into the device at the rate the host sends: no miss, no overrun, no FCS
    // error while iperf3 ran (curl and iperf 2 before it are TCP too: a frame lost there
    // would show as a retransmission, not as a failed transfer).
    let after = quiet_stats(&pin);
    for name in ["missed", "overruns"] {
        assert_eq!(
            phy(&after, name),
            phy(&before_iperf3, name),
            "{name}: {after}"
        );
    }
    for name in ["rx_missed_errors", "rx_crc_errors"] {
        assert_eq!(
            mac_counter(&after, name),
            mac_counter(&before_iperf3, name),
            "{name}: {after}"
        );
    }
    assert_laws(&after);
    // Every frame the MAC handed the transmitter went out (none refused for a link pulse).
    assert_eq!(after.counter("phy", "tx_refused"), 0, "{after}");
    assert_eq!(after.text("board"), "rp2040-soft-phy", "{after}");
    assert!(after.top_flag("link_up"), "{after}");

    let status = pin.status.read();
    let counts = pin.stop();
    assert!(counts.ends_with("law=holds"), "{counts}");
    assert!(counts.contains(" fcs_errors=0 "), "{counts}");
    println!("rp2040js two cores: {counts}");
    println!("rp2040js two cores: harness {status}");
}

/// `linklab emu pico` as a user boots it: it builds the example as it is (found built after
/// the check's build) and runs it in the harness with the line joined to a TAP it creates;
/// the device answers stock ping and curl of a bench file with its CRC32, and stopped by
/// SIGINT the command prints the line's counters, their laws holding.
#[test]
fn linklab_emu_pico_boots_the_example() {
    let ns = Netns::new("pico");
    let dir = tempfile::tempdir().expect("a folder for the status file");
    let status = Status(dir.path().join("status.json"));
    let cli = ns.spawn(&[
        linklab_bin().to_str().unwrap(),
        "emu",
        "pico",
        "--image",
        "soft-phy",
        "--tap",
        "pico0",
        "--ip",
        "198.18.0.2/24",
        "--status",
        status.0.to_str().unwrap(),
    ]);
    // The build may wait for another test's (they share the examples' target folder).
    let tap_made = linklab_testkit::wait_until(Duration::from_secs(600), || {
        ns.command(&["ip", "link", "show", "pico0"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    assert!(tap_made, "linklab emu pico made no TAP");
    ns.run(&["ip", "addr", "add", "198.18.0.1/24", "dev", "pico0"]);
    ns.run(&["ip", "link", "set", "pico0", "up"]);
    status.wait_until(200_000_000, Duration::from_secs(300));
    assert!(status.figures().top_flag("core1_launched"));

    Ping::new(DEVICE, 3)
        .deadline(120)
        .assert_answered(|argv| ns.run(argv).stdout);
    let (len, secs) = curl_crc(&ns, &status, "/10kB.txt");
    println!(
        "linklab emu pico: ping 3 answered, curl /10kB.txt {len} B, CRC32 right, in {secs:.3} emulated s"
    );

    let out = cli.interrupt(Duration::from_secs(30));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("linklab emu: pico (soft-phy image"), "{text}");
    assert!(text.contains("linklab emu: stopped by signal 2"), "{text}");
    let counts = text
        .lines()
        .find(|l| l.starts_with("linklab emu: line "))
        .unwrap_or_else(|| panic!("no line summary: {text}"));
    assert!(counts.ends_with("law=holds"), "{counts}");
    assert!(counts.contains(" fcs_errors=0 "), "{counts}");
    println!("{counts}");
}

/// `linklab emu throughput pico`: the `throughput` document of the pin-level board, its
/// rates in the chip's clock (stock iperf3 each way, 1 MB, and curl of /1MB.txt). The
/// figures are printed (docs/soft-phy-chips.md keeps them with this command); the test
/// asserts each transfer whole and above three quarters of the 10BASE-T TCP goodput limit
/// (docs/soft-phy-chips.md: 1.187 MB/s in, 1.155 MB/s out), a guard against a broken PHY,
/// not the goal (90 %, met by the figures).
#[test]
#[ignore = "a benchmark: 3 MB through the emulated chip, 1.5 to 5 minutes; by hand with --ignored (the check runs the pin-level boot and transfers above)"]
fn linklab_emu_throughput_pico_in_the_chips_clock() {
    let dir = tempfile::tempdir().expect("a folder for the document");
    let json = dir.path().join("throughput.json");
    let out = std::process::Command::new(linklab_bin())
        .args(["emu", "throughput", "pico", "--json"])
        .arg(&json)
        .output()
        .expect("linklab emu throughput");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&json).expect("the document");
    let report: linklab_results::emu::throughput::ThroughputReport =
        linklab_testkit::docs::parse(&text);
    assert_eq!(
        (report.board.as_str(), report.image.as_str()),
        ("pico", "soft-phy")
    );
    let [run] = &report.runs[..] else {
        panic!("one run: {text}")
    };
    assert!(run.clock.contains("the chip's"), "{text}");
    let kbps = |mbps: Option<f64>| mbps.expect("a rate") * 1e3 / 8.0;
    let into = kbps(run.device_receives.mbps);
    let out_of = kbps(run.device_sends.mbps);
    let http = run.http_1mb.as_ref().expect("curl's rate");
    assert!(run.device_receives.bytes > 900_000, "{text}");
    assert_eq!(run.device_sends.bytes, 1 << 20, "{text}");
    assert_eq!(http.bytes, 1_000_000, "{text}");
    let http_kbps = http.kb_per_s.expect("a rate");
    println!(
        "linklab emu throughput pico: into the device {into:.0} kB/s, out {out_of:.0} kB/s, curl /1MB.txt {http_kbps:.0} kB/s ({})",
        run.clock
    );
    assert!(into > 0.75 * 1187.0, "{text}");
    assert!(out_of > 0.75 * 1155.0, "{text}");
    assert!(http_kbps > 0.75 * 1155.0, "{text}");
}
