//! The Pico's own USB port as its network (examples/boards/rp2040-usb), built as it is, in
//! rp2040js with the full-speed bus, Linux's USB core and cdc-acm modelled on the chip's clock
//! (emulators/rp2040js/pico-usb.mjs; node's own tests in usb.test.mjs), booted as a user does:
//! `linklab emu pico --image usb-serial --pty PATH`, then `linklab serial --dev PATH --tap T
//! --ip ...` opening the port exactly as a real /dev/ttyACM0.
//!
//! - usb-serial: the link's self-test (nothing lost or corrupt, the laws hold), then over the
//!   bridge stock ping, curl of /100kB.txt with its CRC32, stock iperf3 both ways (small); the
//!   port closed mid-transfer and opened again, and a USB reset mid-iperf3 (the port hung up,
//!   as cdc-acm does): the link resumes, the device's counters obey their laws.
//! - usb-echo, built with the example's own double-buffered driver (usb-serial runs
//!   embassy-rp's): a writer with no reader (cdc-acm throttled: no IN token, the writer blocked,
//!   then every byte back in order), the port closed and reopened mid-transfer (DTR dropped
//!   and raised; every byte the device echoed reached the program or a counter), a USB reset
//!   (the port hung up; opened again, it echoes).
//!
//! Needs root, node with `npm ci` in emulators/rp2040js (scripts/setup), iperf3 and curl;
//! builds the example itself. Figures (rates in the chip's clock) are benchmarks by hand:
//! docs/usb.md.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use linklab_testkit::device::DEVICE;
use linklab_testkit::ping::Ping;
use linklab_testkit::usb::{UsbBoard, BAUD, ONE_BOARD};
use linklab_testkit::{linklab_bin, run_ok, ChildGuard, Netns};

/// `linklab serial --dev PORT --tap usb0 --ip 198.18.0.1/24` in `ns`, until the device
/// answers a ping.
fn bridge(ns: &Netns, port: &Path) -> ChildGuard {
    let guard = ns.spawn(&[
        linklab_bin().to_str().unwrap(),
        "serial",
        "--dev",
        port.to_str().unwrap(),
        "--baud",
        BAUD,
        "--tap",
        "usb0",
        "--ip",
        "198.18.0.1/24",
    ]);
    let started = Instant::now();
    while !ns
        .command(&["ip", "-o", "addr", "show", "dev", "usb0"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("198.18.0.1/24"))
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the bridge made no TAP usb0"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Ping::new(DEVICE, 2)
        .deadline(120)
        .assert_answered(|argv| ns.run(argv).stdout);
    guard
}

/// Stock iperf3 into the device and from it, `bytes` each: the bytes the device's server
/// counted.
fn iperf3_both_ways(ns: &Netns, bytes: &str) {
    for reverse in [false, true] {
        let mut argv = vec![
            "iperf3",
            "-c",
            DEVICE,
            "-J",
            "-n",
            bytes,
            "--connect-timeout",
            "60000",
        ];
        if reverse {
            argv.push("-R");
        }
        let out = ns.run(&argv);
        let doc = linklab_testkit::iperf3::Report::parse(&out.stdout);
        // Into the device its server stops counting at the client's TEST_END (the rest is
        // still in the host's socket): what the client sent is whole; from it, the host
        // counts every byte.
        let key = if reverse { "sum_received" } else { "sum_sent" };
        let bytes = doc.end_bytes(key);
        assert!(
            bytes >= 100 * 1024,
            "iperf3{}: {bytes} bytes",
            if reverse { " -R" } else { "" }
        );
    }
}

/// The device's `/link`: its link established, its counters' laws holding.
fn link_counters(ns: &Netns, clean: bool) -> Value {
    let out = ns.run(&[
        "curl",
        "-sS",
        "--fail",
        "--max-time",
        "120",
        &format!("http://{DEVICE}/link"),
    ]);
    let link: Value = serde_json::from_slice(&out.stdout).expect("/link JSON");
    assert_eq!(link["established"], true, "{link}");
    assert_eq!(link["conserved"], true, "{link}");
    if clean {
        // Before the faults: no frame was cut (a cut frame may decode and fail its CRC).
        assert_eq!(link["rx_crc_errors"], 0, "{link}");
    }
    link
}

/// A USB reset mid-iperf3: cdc-acm hangs the port up (as Linux's does after a reset), the
/// bridge opens it again at once and its link resumes where it was: iperf3 completes.
fn usb_reset_mid_iperf3(board: &UsbBoard, ns: &Netns) {
    let opens = board.relay_count("opens");
    let mut iperf = ns
        .command(&[
            "iperf3",
            "-c",
            DEVICE,
            "-n",
            "300K",
            "--connect-timeout",
            "60000",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iperf3");
    board.wait_chip(100_000_000);
    board.usb_reset();
    board.wait_state("resetting", Duration::from_secs(60));
    board.wait_state("configured", Duration::from_secs(300));
    let done = linklab_testkit::exit_within(&mut iperf, Duration::from_secs(600));
    let out = iperf.wait_with_output().expect("iperf3");
    assert!(
        done.is_some_and(|s| s.success()),
        "iperf3 across the USB reset: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(board.count(&["usb_core", "resets"]), 1);
    assert_eq!(board.count(&["usb_acm", "hangups"]), 1);
    assert!(
        board.relay_count("opens") > opens,
        "the bridge did not open the port again"
    );
}

#[test]
fn usb_serial_carries_the_network_through_closes_and_usb_resets() {
    let _one = ONE_BOARD.lock().unwrap_or_else(|e| e.into_inner());
    let board = UsbBoard::boot("usb-serial", "");

    // The link's self-test from the host's end, on the port as a real one.
    let json = board.dir.join("selftest.json");
    run_ok(
        Command::new(linklab_bin())
            .args(["serial", "--dev"])
            .arg(&board.port)
            .args([
                "--baud",
                BAUD,
                "--selftest",
                "--sizes",
                "64,1514",
                "--rtt-frames",
                "3",
            ])
            .args(["--stream-frames", "20", "--json"])
            .arg(&json),
    );
    let report: linklab_results::serial::SerialReport =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap())
            .expect("the self-test's document");
    assert_eq!(report.conservation, "ok");
    for s in &report.sizes {
        assert_eq!(
            (s.lost, s.corrupt),
            (0, 0),
            "self-test at {} bytes: {s:?}",
            s.size
        );
        assert_eq!(s.received, s.sent);
    }

    // The network over the bridge: ping, curl with its CRC32, iperf3 both ways.
    let ns = Netns::new("usb");
    let bridge_guard = bridge(&ns, &board.port);
    let file = linklab_perf::payload::BENCH_FILES
        .iter()
        .find(|f| f.path == "/100kB.txt")
        .expect("/100kB.txt");
    let out = ns.run(&[
        "curl",
        "-sS",
        "--fail",
        "--max-time",
        "300",
        &format!("http://{DEVICE}/100kB.txt"),
    ]);
    assert_eq!(out.stdout.len() as u64, file.len);
    assert_eq!(
        crc32fast::hash(&out.stdout),
        linklab_perf::http::expected_crc32(*file)
    );
    iperf3_both_ways(&ns, "100K");
    link_counters(&ns, true);

    // The port closed mid-transfer (the bridge stopped during a download), then opened
    // again by a new bridge: DTR dropped and raised; the link resumes.
    let lines_before = board.count(&["usb_acm", "control_line_states"]);
    let mut download = ns
        .command(&[
            "curl",
            "-s",
            "--max-time",
            "30",
            "-o",
            "/dev/null",
            &format!("http://{DEVICE}/1MB.txt"),
        ])
        .spawn()
        .expect("curl");
    board.wait_chip(50_000_000);
    drop(bridge_guard);
    let _ = download.wait();
    board.wait_chip(20_000_000);
    assert_eq!(board.status.read()["usb_acm_open"], false);
    let bridge_guard = bridge(&ns, &board.port);
    assert!(board.count(&["usb_acm", "control_line_states"]) >= lines_before + 2);
    iperf3_both_ways(&ns, "100K");

    usb_reset_mid_iperf3(&board, &ns);
    iperf3_both_ways(&ns, "100K");
    let link = link_counters(&ns, false);
    println!("usb-serial /link after the faults: {link}");
    drop(bridge_guard);
    board.finish();
}

/// Opens the port raw and non-blocking, as a serial program does.
fn open_raw(port: &Path) -> std::fs::File {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(port)
        .expect("open the port");
    // SAFETY: termios calls on a descriptor this function owns, into a zeroed struct.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        assert_eq!(libc::tcgetattr(file.as_raw_fd(), &mut t), 0, "termios");
        libc::cfmakeraw(&mut t);
        assert_eq!(
            libc::tcsetattr(file.as_raw_fd(), libc::TCSANOW, &t),
            0,
            "raw"
        );
    }
    file
}

use std::os::unix::fs::OpenOptionsExt;

/// Reads from the non-blocking `file` until `n` bytes came or `limit` passed.
fn read_n(file: &mut std::fs::File, n: usize, limit: Duration) -> Vec<u8> {
    let mut got = Vec::new();
    let started = Instant::now();
    let mut buf = [0u8; 4096];
    while got.len() < n && started.elapsed() < limit {
        match file.read(&mut buf) {
            Ok(k) if k > 0 => got.extend_from_slice(&buf[..k]),
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    }
    got
}

/// Writes what the port takes now; returns how many bytes.
fn write_some(file: &mut std::fs::File, bytes: &[u8]) -> usize {
    match file.write(bytes) {
        Ok(n) => n,
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
        Err(e) => panic!("write: {e}"),
    }
}

/// A pattern whose every byte says where it is (mod 251, a prime not dividing any packet).
fn pattern(from: usize, n: usize) -> Vec<u8> {
    (from..from + n).map(|i| (i % 251) as u8).collect()
}

/// Writes `data` to the echo's `port` with nobody reading until the writer blocks: cdc-acm
/// throttled, the device's own buffers full, no IN token on the bus. Returns the bytes taken.
fn write_until_blocked(board: &UsbBoard, port: &mut std::fs::File, data: &[u8]) -> usize {
    let mut written = 0;
    let started = Instant::now();
    loop {
        let n = write_some(port, &data[written..]);
        written += n;
        if n == 0 && board.status.read()["usb_acm_throttled"] == true {
            break;
        }
        assert!(
            written < data.len(),
            "the port took everything without a reader"
        );
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "never throttled: {}",
            board.status.read()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The bulk IN endpoint's transactions (the notification endpoint keeps its 128 ms polls).
    let ins = || {
        board.count(&["usb_pipes", "ep2-in-bulk", "data"])
            + board.count(&["usb_pipes", "ep2-in-bulk", "naks"])
    };
    // The read URBs already on the bus fill up first, and the device takes what its own
    // buffers hold; once nothing moves, the writer fills the port again.
    loop {
        let outs = board.count(&["usb_pipes", "ep1-out-bulk", "data"]);
        board.wait_chip(50_000_000);
        let n = write_some(port, &data[written..]);
        written += n;
        if n == 0 && board.count(&["usb_pipes", "ep1-out-bulk", "data"]) == outs {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the device never stopped taking data"
        );
    }
    let before = ins();
    board.wait_chip(200_000_000);
    assert_eq!(ins(), before, "IN tokens while throttled");
    assert_eq!(
        write_some(port, &data[written..written + 1]),
        0,
        "the writer was not blocked"
    );
    written
}

#[test]
fn usb_echo_blocks_a_writer_without_a_reader_and_survives_closes_and_resets() {
    let _one = ONE_BOARD.lock().unwrap_or_else(|e| e.into_inner());
    // The example's own double-buffered driver here (usb-serial above runs embassy-rp's).
    let board = UsbBoard::boot("usb-echo", "echo,double-buffered");

    // A writer with no reader: it blocks (the port takes no more), cdc-acm is throttled and
    // the host issues no IN token; then every byte comes back, in order.
    let mut port = open_raw(&board.port);
    let data = pattern(0, 200_000);
    let written = write_until_blocked(&board, &mut port, &data);
    println!("usb-echo: {written} bytes taken before the writer blocked");
    let echoed = read_n(&mut port, written, Duration::from_secs(300));
    assert_eq!(echoed, data[..written], "the echo");

    // Closed mid-transfer (DTR dropped), opened again (DTR raised): every byte the device
    // echoed reached the program or a counter.
    let lines = board.count(&["usb_acm", "control_line_states"]);
    let chunk = pattern(0, 20_000);
    let mut sent = 0;
    while sent < chunk.len() {
        sent += write_some(&mut port, &chunk[sent..]);
    }
    board.wait_chip(5_000_000);
    drop(port);
    board.wait_chip(50_000_000);
    assert_eq!(board.status.read()["usb_acm_open"], false);
    let mut port = open_raw(&board.port);
    let probe = pattern(7, 1000);
    let mut sent = 0;
    while sent < probe.len() {
        sent += write_some(&mut port, &probe[sent..]);
    }
    let mut got = read_n(&mut port, probe.len(), Duration::from_secs(300));
    // What came first is the tail of the closed transfer the device still held.
    board.wait_chip(20_000_000);
    got.extend(read_n(&mut port, usize::MAX, Duration::from_millis(500)));
    assert!(got.ends_with(&probe), "the probe did not come back last");
    assert!(board.count(&["usb_acm", "control_line_states"]) >= lines + 2);
    drop(port);
    board.wait_chip(50_000_000);

    // A USB reset while the port is open: it is hung up; opened again, it echoes.
    let mut port = open_raw(&board.port);
    board.wait_chip(10_000_000);
    board.usb_reset();
    board.wait_state("resetting", Duration::from_secs(60));
    board.wait_state("configured", Duration::from_secs(300));
    let mut buf = [0u8; 16];
    let hung = matches!(port.read(&mut buf), Ok(0))
        || matches!(port.read(&mut buf), Err(e) if e.raw_os_error() == Some(libc::EIO));
    assert!(hung, "the port was not hung up");
    drop(port);
    let mut port = open_raw(&board.port);
    let probe = pattern(3, 300);
    assert_eq!(write_some(&mut port, &probe), probe.len());
    assert_eq!(
        read_n(&mut port, probe.len(), Duration::from_secs(300)),
        probe
    );
    drop(port);
    board.wait_chip(50_000_000);

    // Every byte the device sent reached the program, or arrived closed, or was in a read
    // URB killed by a close: nothing else.
    let last = board.status.read();
    let summary = board.finish();
    let field = |name: &str| -> u64 {
        summary
            .split_whitespace()
            .skip_while(|w| *w != name)
            .nth(1)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let lost = last["usb_acm"]["read_bytes_lost"].as_u64().unwrap_or(0);
    assert_eq!(
        field("to_device"),
        field("to_pty") + field("dropped_closed") + lost,
        "{summary} read_bytes_lost {lost}"
    );
}
