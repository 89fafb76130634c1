//! embassy-net itself over linklab-mac on a TAP in a namespace this test creates, running
//! linklab-perf's embassy apps, proved with stock tools from the kernel side: ping (0 % loss,
//! small and full-size), curl (bench files with their CRC32), nc (TCP echo of 64 kB), stock
//! iperf3 both ways, then the MAC's conservation law and the apps' counters.
//!
//! Needs root (namespaces, TAP). Addresses from 198.18.0.0/15; nothing leaves the namespace.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use linklab_embassy_test::{start, DEVICE_CIDR};
use ping::Ping;
use serde_json::Value;

/// linklab's own ping check: its arguments (the deadline) and each reply looked for.
#[path = "../../linklab-testkit/src/ping.rs"]
#[allow(dead_code)] // the options this test does not use (a longer deadline)
mod ping;

const HOST_CIDR: &str = "198.18.0.1/24";
const TAP: &str = "lle0";

/// A network namespace for this test, deleted (with the TAP's kernel side) on drop.
struct Netns(String);

impl Netns {
    fn new() -> Netns {
        let name = format!("ll-embassy-{}", std::process::id());
        run(Command::new("ip").args(["netns", "add", &name]));
        let ns = Netns(name);
        ns.run(&["ip", "link", "set", "lo", "up"]);
        ns
    }

    fn command(&self, argv: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.0]).args(argv);
        cmd
    }

    fn run(&self, argv: &[&str]) -> Output {
        run(&mut self.command(argv))
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Runs a command to completion; panics with its output if it fails.
fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("could not start {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn embassy_net_answers_ping_curl_and_nc_over_linklab_mac() {
    let started = Instant::now();
    let ns = Netns::new();
    let device = start(&format!("/run/netns/{}", ns.0), TAP).expect("open the TAP and start");
    ns.run(&["ip", "addr", "add", HOST_CIDR, "dev", TAP]);
    ns.run(&["ip", "link", "set", TAP, "up"]);
    assert!(
        device.wait_ready(Duration::from_secs(10)),
        "embassy-net never saw the link up (LinkSignal) and its address configured"
    );
    let device_ip = DEVICE_CIDR.split('/').next().unwrap();

    // ICMP echo: 20 small pings, then 5 that fill a whole 1514-byte frame.
    Ping::new(device_ip, 20)
        .with(&["-i", "0.05"])
        .assert_answered(|argv| ns.run(argv).stdout);
    Ping::new(device_ip, 5)
        .with(&["-i", "0.05", "-s", "1472"])
        .assert_answered(|argv| ns.run(argv).stdout);

    // HTTP: curl fetches bench files; length and CRC32 must be the generator's.
    for file in &linklab_perf::payload::BENCH_FILES[..2] {
        let out = ns.run(&[
            "curl",
            "-sS",
            "--fail",
            "--max-time",
            "20",
            &format!("http://{device_ip}{}", file.path),
        ]);
        assert_eq!(out.stdout.len() as u64, file.len, "{}: length", file.path);
        assert_eq!(
            crc32fast::hash(&out.stdout),
            linklab_perf::http::expected_crc32(*file),
            "{}: CRC32",
            file.path
        );
    }

    // TCP echo: nc sends 64 kB and half-closes (-N); everything must come back in order.
    tcp_echo_in_order(&ns, device_ip);

    // Stock iperf3 both ways (the line is paced at 10 Mb/s): each side counted bytes.
    iperf3_both_ways(&ns, device_ip);

    // iperf3's client exits once it has sent IPERF_DONE; the device counts the test when that
    // message arrives, which on a busy machine can be after the client is gone. Wait for it
    // (bounded) before stopping the device, so the counts below are the device's final ones.
    let deadline = Instant::now() + Duration::from_secs(10);
    let tests_done = |apps: &[linklab_perf::embassy::AppCounter]| {
        apps.iter()
            .find(|(app, name, _)| *app == "iperf" && *name == "tests_done")
            .map_or(0, |c| c.2)
    };
    while tests_done(&device.apps()) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }

    // The MAC afterwards: both conservation laws, traffic in both directions, no overrun
    // (the TCP window embassy-net advertised came from the queue through max_burst_size),
    // every frame spaced by the inter-packet gap, nothing refused by the kernel.
    let report = device.stop();
    let c = report.counters;
    c.check_conservation()
        .unwrap_or_else(|e| panic!("conservation: {e:?} in {c:?}"));
    assert!(c.rx_packets >= 25 + 50 + 5, "{c:?}"); // pings + at least the echo's segments
    assert!(c.tx_packets >= 25 + 75 + 45, "{c:?}"); // pongs + bench files + echo
    assert_eq!(c.rx_missed_errors, 0, "queue overrun: {c:?}");
    assert_eq!(
        c.rx_crc_errors + c.rx_short_length_errors + c.rx_long_length_errors,
        0
    );
    assert_eq!(
        report.early_frames, 0,
        "a frame left inside the inter-packet gap"
    );
    // smoltcp sends a window's segments in one poll: the later ones wait for the gap, on
    // embassy-time's timer (the transfers above completing shows the wake-ups came).
    assert!(
        report.timer_wake_requests > 0,
        "no frame ever waited for the gap"
    );
    // Wake-ups follow events (frames, timers), not time: a driver that woke its task at once
    // while a frame waits would ask the timer hundreds of thousands of times here.
    assert!(
        report.timer_wake_requests < 20 * c.tx_packets,
        "the stack spins while frames wait: {} timer requests for {} frames",
        report.timer_wake_requests,
        c.tx_packets
    );
    assert_eq!((report.tap_refused, report.tap_errors), (0, 0));
    let app = |a: &str, n: &str| {
        report
            .apps
            .iter()
            .find(|(app, name, _)| *app == a && *name == n)
            .map(|c| c.2)
            .unwrap_or_else(|| panic!("no counter {a}.{n}"))
    };
    assert_eq!(app("iperf", "tests_done"), 2, "{:?}", report.apps);
    assert_eq!(app("http", "responses"), 2, "{:?}", report.apps);
    assert_eq!(app("echo", "tcp_bytes"), 65_536, "{:?}", report.apps);
    eprintln!(
        "embassy-net over linklab-mac: {} frames in, {} out, {} timer wake-ups for the gap, \
         {:.1} s; {c:?}",
        c.rx_packets,
        c.tx_packets,
        report.timer_wake_requests,
        started.elapsed().as_secs_f64()
    );
}

/// TCP echo: nc sends 64 kB and half-closes (-N); everything must come back in order.
fn tcp_echo_in_order(ns: &Netns, device_ip: &str) {
    let sent: Vec<u8> = (0..65_536u32).map(|i| (i * 7 + i / 256) as u8).collect();
    let mut nc = ns
        .command(&["timeout", "20", "nc", "-N", device_ip, "7"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nc");
    let mut stdin = nc.stdin.take().unwrap();
    let writer = {
        let sent = sent.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            stdin.write_all(&sent).expect("write to nc");
        })
    };
    let out = nc.wait_with_output().expect("nc output");
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "nc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout.len(), sent.len(), "echoed length");
    assert!(out.stdout == sent, "echoed bytes differ");
}

/// Stock iperf3 both ways (the line is paced at 10 Mb/s): each side counted bytes.
fn iperf3_both_ways(ns: &Netns, device_ip: &str) {
    for extra in [&[][..], &["-R"][..]] {
        let mut argv = vec![
            "iperf3",
            "-c",
            device_ip,
            "-t",
            "2",
            "-J",
            "--connect-timeout",
            "5000",
        ];
        argv.extend_from_slice(extra);
        let out = ns.command(&argv).output().expect("run iperf3");
        let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "iperf3 {extra:?}: no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert!(report.get("error").is_none(), "iperf3 {extra:?}: {report}");
        let end = &report["end"];
        let sent = end["sum_sent"]["bytes"].as_u64().unwrap_or(0);
        let received = end["sum_received"]["bytes"].as_u64().unwrap_or(0);
        assert!(
            sent > 200_000 && received > 200_000,
            "iperf3 {extra:?}: {end}"
        );
        eprintln!(
            "iperf3 {extra:?}: {:.2} Mbit/s received",
            end["sum_received"]["bits_per_second"]
                .as_f64()
                .unwrap_or(0.0)
                / 1e6
        );
    }
}
