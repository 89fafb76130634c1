//! `linklab serial` over pseudo-terminal pairs joined by an impairment relay the test controls
//! (linklab-testkit's `pty_relay`): the self-test against `--serve` through a stalled, noisy 3 Mbaud line;
//! stock ping, curl and iperf3 across `--tap` in a namespace with `--serve` at the far end;
//! bad input.

use std::process::{Command, Stdio};
use std::time::Duration;

use linklab_results::serial::SerialReport;
use linklab_serial::impair::Impairment;
use linklab_testkit::iperf3;
use linklab_testkit::ping::Ping;
use linklab_testkit::stats::Stats;
use linklab_testkit::{linklab_bin, tempdir, ChildGuard, Netns};

/// A 3 Mbaud UART (8N1): 300 000 bytes/s.
const MBAUD3: u64 = 300_000;

fn linklab(args: &[&str]) -> ChildGuard {
    let child = Command::new(linklab_bin())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start linklab");
    ChildGuard(Some(child))
}

fn one_line_error(args: &[&str], code: i32, must_contain: &str) {
    let out = Command::new(linklab_bin())
        .arg("serial")
        .args(args)
        .output()
        .expect("run linklab");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    assert!(
        stderr.starts_with("linklab: error: ") && stderr.contains(must_contain),
        "{args:?}: {stderr}"
    );
}

#[test]
fn bad_input_gets_one_line() {
    let relay = linklab_testkit::pty_relay::start(MBAUD3, Impairment::default(), 1);
    let dev = relay.a.as_str();
    // Usage errors: exit 2.
    one_line_error(
        &["--dev", dev, "--baud", "12345", "--selftest"],
        2,
        "--baud",
    );
    one_line_error(&["--dev", dev, "--baud", "fast", "--selftest"], 2, "--baud");
    one_line_error(&["--selftest"], 2, "--dev");
    one_line_error(&["--dev", dev], 2, "--selftest");
    one_line_error(&["--dev", dev, "--serve", "--selftest"], 2, "exactly one");
    one_line_error(&["--dev", dev, "--serve"], 2, "--ip");
    one_line_error(
        &["--dev", dev, "--serve", "--ip", "198.18.0.2/40"],
        2,
        "--ip",
    );
    one_line_error(&["--dev", dev, "--selftest", "--sizes", "8"], 2, "--sizes");
    one_line_error(
        &["--dev", dev, "--tap", "a/b", "--ip", "198.18.0.1/24"],
        2,
        "--tap",
    );
    // Run-time errors: exit 1.
    one_line_error(
        &["--dev", "/dev/ttyNOPE9", "--selftest"],
        1,
        "/dev/ttyNOPE9",
    );
    one_line_error(
        &["--dev", "/dev/null", "--selftest"],
        1,
        "not a serial port",
    );
    let dir = tempdir("serial-bad");
    let file = dir.join("plain");
    std::fs::write(&file, b"x").unwrap();
    one_line_error(
        &["--dev", file.to_str().unwrap(), "--selftest"],
        1,
        "not a serial port",
    );
}

#[test]
fn selftest_against_serve_through_a_noisy_stalling_3_mbaud_line() {
    let impairment = Impairment {
        bit_error_rate: 1e-5,
        drop_rate: 1e-4,
        garbage_every: 50_000,
        garbage_len: 64,
    };
    let relay = linklab_testkit::pty_relay::start(MBAUD3, impairment, 7);
    let serve = linklab(&[
        "serial",
        "--dev",
        &relay.b,
        "--baud",
        "3000000",
        "--serve",
        "--ip",
        "198.18.9.2/24",
    ]);
    let dir = tempdir("serial-selftest");
    let json = dir.join("selftest.json");
    // Stall the far side's reader for 1.5 s in the middle of the run.
    let control = relay.control.clone();
    let staller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1500));
        control
            .stall_ab
            .store(true, std::sync::atomic::Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(1500));
        control
            .stall_ab
            .store(false, std::sync::atomic::Ordering::Relaxed);
    });
    let out = Command::new(linklab_bin())
        .args([
            "serial",
            "--dev",
            &relay.a,
            "--baud",
            "3000000",
            "--selftest",
            "--sizes",
            "16,128,512,1514",
            "--rtt-frames",
            "20",
            "--stream-frames",
            "60",
            "--json",
            json.to_str().unwrap(),
        ])
        .output()
        .expect("run selftest");
    staller.join().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("{stdout}");
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: SerialReport = linklab_testkit::docs::read(&json);
    assert_eq!(r.kind, "serial-selftest");
    assert_eq!(r.conservation, "ok", "{r:?}");
    let sizes = &r.sizes;
    assert_eq!(sizes.len(), 4);
    let mut retx = 0;
    for s in sizes {
        assert_eq!(s.sent, 80, "{s:?}");
        assert_eq!(s.received, 80, "{s:?}");
        assert_eq!((s.lost, s.corrupt), (0, 0));
        assert_eq!(s.rtt.count, 20, "{s:?}");
        assert!(s.interarrival.count >= 59, "{s:?}");
        assert!(s.goodput_bytes_per_s > 0.0);
        retx += s.retransmissions;
    }
    let errors: u64 = sizes.iter().map(|s| s.rx_errors).sum();
    assert!(retx + errors > 0, "the impairments did nothing: {r:?}");

    // The far end kept count too, and its counters conserve.
    let served = serve.interrupt(Duration::from_secs(5));
    let text = String::from_utf8_lossy(&served.stdout);
    assert!(text.contains("| conserved"), "{text}");
    assert!(text.contains("rx_echoed"), "{text}");

    // linklab report renders it.
    let html = dir.join("report.html");
    let out = Command::new(linklab_bin())
        .args([
            "report",
            json.to_str().unwrap(),
            "-o",
            html.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Serial link self-test"),
        "report section missing"
    );
    assert!(page.matches("<svg").count() >= 9, "charts missing");
}

fn iperf3_bytes(report: &iperf3::Report, which: &str) -> u64 {
    report.end.sum(which).bytes
}

#[test]
fn stock_ping_curl_and_iperf3_across_the_tap_bridge() {
    let relay = linklab_testkit::pty_relay::start(MBAUD3, Impairment::default(), 3);
    let ns = Netns::new("serial");
    let serve = linklab(&[
        "serial",
        "--dev",
        &relay.b,
        "--baud",
        "3000000",
        "--serve",
        "--ip",
        "198.18.9.2/24",
    ]);
    let bin = linklab_bin();
    let bridge = ns.spawn(&[
        bin.to_str().unwrap(),
        "serial",
        "--dev",
        &relay.a,
        "--baud",
        "3000000",
        "--tap",
        "llser0",
        "--ip",
        "198.18.9.1/24",
    ]);
    // The link comes up, ARP resolves: ping.
    let ok = linklab_testkit::wait_until(Duration::from_secs(10), || {
        ns.command(&["ping", "-c", "1", "-W", "1", "198.18.9.2"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    assert!(ok, "no ping reply over the serial link");
    Ping::new("198.18.9.2", 10)
        .with(&["-i", "0.05", "-s", "1400"])
        .assert_answered(|argv| ns.run(argv).stdout);

    // curl a bench file and the link's counters.
    let body = ns.run(&[
        "curl",
        "-sf",
        "--max-time",
        "20",
        "http://198.18.9.2/100kB.txt",
    ]);
    assert_eq!(body.stdout.len(), 100_000);
    let stats = ns.run(&["curl", "-sf", "--max-time", "10", "http://198.18.9.2/stats"]);
    let stats = Stats::parse(&stats.stdout);
    assert_eq!(stats.text("conservation"), "ok", "{stats}");

    // Stock iperf3 both ways: TCP over smoltcp over the link over the relay.
    for extra in [&[][..], &["-R"][..]] {
        let mut argv = vec!["iperf3", "-c", "198.18.9.2", "-t", "2", "-J"];
        argv.extend_from_slice(extra);
        let out = ns.run(&argv);
        let report = iperf3::Report::parse(&out.stdout);
        let bytes = iperf3_bytes(&report, "sum_received");
        eprintln!("iperf3 {extra:?}: {bytes} bytes in 2 s");
        // TCP flowed (about 580 kB in 2 s here; the bound leaves room for a loaded machine).
        assert!(bytes > 50_000, "{extra:?}: {bytes} bytes");
    }
    let bridged = bridge.interrupt(Duration::from_secs(5));
    let text = String::from_utf8_lossy(&bridged.stdout);
    assert!(text.contains("| conserved"), "{text}");
    let served = serve.interrupt(Duration::from_secs(5));
    let text = String::from_utf8_lossy(&served.stdout);
    assert!(text.contains("| conserved"), "{text}");
}

/// The device side stopped by SIGTERM while a client downloads across the link: it resets the
/// connection and lets the RST out over the link before it goes, so curl ends at once with a
/// reset (exit 56) instead of waiting on a peer that is gone.
#[test]
fn the_device_side_resets_a_download_when_stopped() {
    let relay = linklab_testkit::pty_relay::start(MBAUD3, Impairment::default(), 4);
    let ns = Netns::new("serialterm");
    let serve = linklab(&[
        "serial",
        "--dev",
        &relay.b,
        "--baud",
        "3000000",
        "--serve",
        "--ip",
        "198.18.9.2/24",
    ]);
    let bin = linklab_bin();
    let _bridge = ns.spawn(&[
        bin.to_str().unwrap(),
        "serial",
        "--dev",
        &relay.a,
        "--baud",
        "3000000",
        "--tap",
        "llser1",
        "--ip",
        "198.18.9.1/24",
    ]);
    let ok = linklab_testkit::wait_until(Duration::from_secs(10), || {
        ns.command(&["ping", "-c", "1", "-W", "1", "198.18.9.2"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    assert!(ok, "no ping reply over the serial link");
    // 3 MB at the link's 300 kB/s: still running at the signal.
    let mut curl = ns
        .command(&[
            "curl",
            "-sS",
            "-o",
            "/dev/null",
            "http://198.18.9.2/3MB.txt",
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let pid = serve.0.as_ref().expect("running").id();
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let status = linklab_testkit::exit_within(&mut curl, Duration::from_secs(3))
        .expect("curl still hangs 3 s after the device side got SIGTERM");
    let stderr = std::io::read_to_string(curl.stderr.take().unwrap()).unwrap();
    assert_eq!(status.code(), Some(56), "curl: {stderr}");
    let served = serve.interrupt(Duration::from_secs(5));
    let text = String::from_utf8_lossy(&served.stdout);
    assert!(text.contains("stopped by signal"), "{text}");
}

/// The real proof: the serial image on QEMU's mps2-an385 (Cortex-M3) — linklab-serial's link
/// on the board's UART1, smoltcp over it, the device apps — bridged to a TAP by
/// `linklab emu mps2-an385 --image serial`, with stock ping, curl and iperf3 in a namespace.
#[test]
fn firmware_on_the_mps2_uart_serves_ping_curl_and_iperf3() {
    let ns = Netns::new("sfw");
    let bin = linklab_bin();
    let emu = ns.spawn(&[
        bin.to_str().unwrap(),
        "emu",
        "mps2-an385",
        "--image",
        "serial",
        "--tap",
        "llsfw0",
        "--ip",
        "198.18.11.2/24",
    ]);
    let up = linklab_testkit::wait_until(Duration::from_secs(120), || {
        ns.command(&["ip", "link", "show", "llsfw0"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    if !up {
        let out = emu.interrupt(Duration::from_secs(10));
        panic!(
            "no TAP; emu said: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    ns.run(&["ip", "addr", "add", "198.18.11.1/24", "dev", "llsfw0"]);
    ns.run(&["ip", "link", "set", "llsfw0", "up"]);
    let answered = linklab_testkit::wait_until(Duration::from_secs(30), || {
        ns.command(&["ping", "-c", "1", "-W", "1", "198.18.11.2"])
            .output()
            .is_ok_and(|o| o.status.success())
    });
    assert!(answered, "the serial firmware never answered a ping");
    Ping::new("198.18.11.2", 5)
        .with(&["-i", "0.2"])
        .assert_answered(|argv| ns.run(argv).stdout);
    let body = ns.run(&[
        "curl",
        "-sf",
        "--max-time",
        "30",
        "http://198.18.11.2/10kB.txt",
    ]);
    assert_eq!(body.stdout.len(), 10_000);
    // Stock iperf3 both ways, 2 s each. The device's sending side runs at the link's paced
    // rate; its receiving side at what QEMU's CMSDK UART model delivers (a one-byte receive
    // buffer refilled once per turn of QEMU's main loop: tens of kB/s). Both rates are the
    // emulator's, not the firmware's (beside two CPU hogs `-R` moved 32-50 kB, ~580 kB on a
    // quiet machine), so the bounds only say that data moved: what the link carries is
    // `linklab serial`'s bench to say.
    let out = ns.run(&["iperf3", "-c", "198.18.11.2", "-R", "-t", "2", "-J"]);
    let report = iperf3::Report::parse(&out.stdout);
    let sent = iperf3_bytes(&report, "sum_received");
    eprintln!("iperf3 -R over the mps2 UART: {sent} bytes in 2 s");
    assert!(sent > 5_000, "{sent} bytes: {report:?}");
    let out = ns.run(&["iperf3", "-c", "198.18.11.2", "-t", "2", "-J"]);
    let report = iperf3::Report::parse(&out.stdout);
    let got = iperf3_bytes(&report, "sum_received");
    eprintln!("iperf3 over the mps2 UART: {got} bytes in 2 s");
    assert!(
        got > 5_000,
        "{got} bytes: error {:?}, end {:?}",
        report.error,
        report.end
    ); // ~39 kB here
    let stats = ns.run(&[
        "curl",
        "-sf",
        "--max-time",
        "30",
        "http://198.18.11.2/stats",
    ]);
    let stats = Stats::parse(&stats.stdout);
    assert_eq!(stats.text("device"), "serial", "{stats}");
    assert_eq!(stats.text("conservation"), "ok", "{stats}");
    let out = emu.interrupt(Duration::from_secs(10));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| conserved"), "{text}");
}
