//! The RP2040 soft-PHY example (examples/boards/rp2040-soft-phy, feature `one-core`) at the
//! pin level: rp2040js runs its core 0, PIO, DMA and timer under emulators/rp2040js/harness.mjs,
//! which keeps one clock for the core, the PIO state machines at their dividers and the
//! line; `linklab emu line` joins the line to a TAP in a namespace the test creates
//! (198.18.0.0/15). Stock ping, curl of the bench files with their CRC32s and stock iperf 2
//! both ways; the rates in the emulated chip's clock (the harness's status file).
//!
//! Needs root and node with `npm ci` in emulators/rp2040js (scripts/setup); builds the example
//! with `--features one-core` itself (seconds after the check's build of the example).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::device::DEVICE;
use common::emulated_clock::Status;
use common::iperf2::iperf_in;
use common::ping::Ping;
use common::{linklab_bin, run_ok, ChildGuard, Netns};

/// The repository's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Builds the example with `one-core` (the check's build of it, without, shares the ELF's
/// path; after it only the binary is rebuilt) and returns the ELF.
fn build_one_core_elf() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let dir = root().join("examples/boards/rp2040-soft-phy");
    run_ok(
        Command::new(cargo)
            .args(["build", "--release", "--features", "one-core"])
            .current_dir(&dir),
    );
    root().join("examples/boards/target/thumbv6m-none-eabi/release/rp2040-soft-phy")
}

/// The device's `/stats` (its apps' counters).
fn device_stats(ns: &Netns) -> serde_json::Value {
    let url = format!("http://{DEVICE}/stats");
    let out = ns.run(&["curl", "-sS", "--fail", "--max-time", "120", &url]);
    serde_json::from_slice(&out.stdout).expect("/stats JSON")
}

/// curl of /100kB.txt and /1MB.txt: whole, CRC32 right; the rate in the chip's clock.
fn bench_files_with_crc32(ns: &Netns, status: &Status) {
    for file in linklab_perf::payload::BENCH_FILES
        .iter()
        .filter(|f| f.path == "/100kB.txt" || f.path == "/1MB.txt")
    {
        let url = format!("http://{DEVICE}{}", file.path);
        let (out, secs) =
            status.timed(|| ns.run(&["curl", "-sS", "--fail", "--max-time", "300", &url]));
        let body = out.stdout;
        assert_eq!(body.len() as u64, file.len, "{}: length", file.path);
        assert_eq!(
            crc32fast::hash(&body),
            linklab_perf::http::expected_crc32(*file),
            "{}: CRC32",
            file.path
        );
        println!(
            "rp2040js: curl {} {} B, CRC32 right, in {secs:.3} emulated s: {:.0} kB/s from the device",
            file.path,
            body.len(),
            body.len() as f64 / secs / 1e3
        );
    }
}

/// Waits (in the chip's clock, 0.1 s at a time) until /stats has no iperf 2 stream open.
fn wait_iperf2_closed(ns: &Netns, status: &Status) {
    let started = Instant::now();
    while device_stats(ns)["iperf2"]["open_streams"].as_u64() != Some(0) {
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "an iperf 2 stream stayed open: {}",
            device_stats(ns)
        );
        status.wait_until(status.emulated_ns() + 100_000_000, Duration::from_secs(60));
    }
}

/// Stock iperf 2 from the device (`-R`) then into it; the rates in the chip's clock.
fn iperf2_both_ways(ns: &Netns, status: &Status) {
    // -R: the device sends on the client's connection for 2 s of the host's time.
    let (run, secs) = status.timed(|| iperf_in(ns, 300, &["-t", "2", "-R", "-y", "C"]));
    assert!(run.sent_inline() > 10_000, "{}", run.text);
    println!(
        "rp2040js: iperf 2 -R from the device {} B in {secs:.3} emulated s: {:.0} kB/s",
        run.sent_inline(),
        run.sent_inline() as f64 / secs / 1e3
    );

    // The device's iperf 2 server listens again once the last test's connection is closed
    // (its FIN and ACKs crossed the line both ways): waited for in /stats.
    wait_iperf2_closed(ns, status);
    // iperf 2 into the device: exactly the bytes asked for.
    let (run, secs) = status.timed(|| iperf_in(ns, 300, &["-n", "100K", "-y", "C"]));
    assert_eq!(run.received(), 100 * 1024, "{}", run.text);
    println!(
        "rp2040js: iperf 2 to the device {} B in {secs:.3} emulated s: {:.0} kB/s",
        run.received(),
        run.received() as f64 / secs / 1e3
    );
}

/// Ping, CRC-checked HTTP and iperf 2 both ways through the pin-level RP2040.
#[test]
fn rp2040_soft_phy_in_rp2040js_serves_ping_http_iperf2() {
    let elf = build_one_core_elf();
    let harness = root().join("emulators/rp2040js/harness.mjs");
    assert!(
        root()
            .join("emulators/rp2040js/node_modules/rp2040js")
            .exists(),
        "rp2040js is not installed (scripts/setup: npm ci in emulators/rp2040js)"
    );
    let ns = Netns::new("rp2040js");
    let dir = std::env::temp_dir().join(format!("linklab-rp2040js-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("line.sock");
    let status = Status(dir.join("status.json"));
    let line = ns.spawn(&[
        linklab_bin().to_str().unwrap(),
        "emu",
        "line",
        "--tap",
        "rp0",
        "--socket",
        sock.to_str().unwrap(),
        "--no-pace",
    ]);
    let started = Instant::now();
    while !sock.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no line socket"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    ns.run(&["ip", "addr", "add", "198.18.0.1/24", "dev", "rp0"]);
    ns.run(&["ip", "link", "set", "rp0", "up"]);
    let node = Command::new("node")
        .arg(&harness)
        .args(["--elf", elf.to_str().unwrap()])
        .args(["--socket", sock.to_str().unwrap()])
        .args(["--status", status.0.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node");
    let node = ChildGuard(Some(node));
    // Boot: embassy-rp's clocks, the PIO programs and the stack take well under 0.2 s of
    // the chip's time; the link is up once the line's pulses have been decoded.
    status.wait_until(200_000_000, Duration::from_secs(120));

    let ping = Ping::new(DEVICE, 5)
        .deadline(60)
        .assert_answered(|argv| ns.run(argv).stdout);
    println!(
        "rp2040js: ping 5/5 answered; host clock: {}",
        ping.lines().last().unwrap_or("")
    );

    bench_files_with_crc32(&ns, &status);
    iperf2_both_ways(&ns, &status);

    // /stats: the device's apps' counters (read inside the HTTP server; it once panicked on
    // embassy-net's borrowed stack); once the test's stream is closed, the iperf 2 bytes it
    // counted are the ones sent to it (the client's close does not wait for them).
    wait_iperf2_closed(&ns, &status);
    let stats = device_stats(&ns);
    assert_eq!(stats["board"], "rp2040-soft-phy", "{stats}");
    assert_eq!(stats["link_up"], true, "{stats}");
    assert!(stats["http"]["responses"].as_u64() >= Some(2), "{stats}");
    assert!(
        stats["iperf2"]["bytes_received"].as_u64() >= Some(100_000),
        "{stats}"
    );

    let out = line.interrupt(Duration::from_secs(20));
    let summary = String::from_utf8_lossy(&out.stdout).to_string();
    let counts = summary
        .lines()
        .find(|l| l.starts_with("linklab emu: line "))
        .unwrap_or_else(|| panic!("no line summary: {summary}"));
    assert!(counts.ends_with("law=holds"), "{counts}");
    assert!(counts.contains(" fcs_errors=0 "), "{counts}");
    println!("rp2040js: {counts}");
    println!("rp2040js: harness {:?}", status.read());
    drop(node);
    let _ = std::fs::remove_dir_all(&dir);
}
