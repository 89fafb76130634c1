//! Benchmarks by hand (`--ignored`) of the Pico's USB port in rp2040js, every figure in the
//! emulated chip's clock (docs/usb.md has their results):
//!
//! - `link_self_test_payload_rate`: linklab-serial's self-test (`linklab serial --selftest`,
//!   1514-byte frames streamed) against usb-serial and usb-serial-dbuf: payload bytes each way
//!   over the chip's seconds between the harness's status before and after (the round-trip
//!   phase of one frame included: a rate slightly under the stream's).
//! - `cba_echo_histograms`: CBA's USB test on its chip: a host program writes packets of 32,
//!   128 and 512 bytes and reads each echo before the next (CBA's Python loop), on the plain
//!   CDC-ACM echo at 125 and 240 MHz, and the same sizes through linklab-serial (the
//!   self-test's round trips, the device's link echoing each frame); each packet timed by the
//!   bus analyser the harness keeps (RP2040JS_USB_CAPTURE: the write URB's submission and the
//!   read URB that completed its echo, in the chip's ns; linklab-serial's frames decoded from
//!   the captured bytes and matched by their self-test head). Printed: the time between
//!   packets and the rate it realises, as CBA's charts, the write-to-echo time (device and bus
//!   alone), and the part the host took between an echo and the next write (the harness's
//!   slice and the real host's scheduling: see docs/usb.md).
//!
//! - `cba_rtt_over_the_network`: `linklab rtt` UDP echo round trips at CBA's 64, 256 and 768
//!   bytes over usb-serial's network (the port bridged by `linklab serial --tap`; one probe every
//!   200 ms of real time, tens of ms of the chip's: one echo at a time), each echo
//!   timed by the capture: the request's link frame from its write URB to its echo's read URB.
//!
//! `cargo test -p linklab --test emu_usb_figures -- --ignored --nocapture --test-threads 1`
//! (root; node with rp2040js installed; minutes).

mod common;

use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::device::DEVICE;
use common::usb::{UsbBoard, BAUD, ONE_BOARD};
use common::{linklab_bin, run_ok, Netns};

/// `linklab serial --selftest` on `board`'s port with `args`; the document and the chip's
/// seconds it took.
fn self_test(board: &UsbBoard, args: &[&str]) -> (linklab_results::serial::SerialReport, f64) {
    let json = board.dir.join("selftest.json");
    let before = board.status.emulated_ns();
    run_ok(
        Command::new(linklab_bin())
            .args(["serial", "--dev"])
            .arg(&board.port)
            .args(["--baud", BAUD, "--selftest"])
            .args(args)
            .arg("--json")
            .arg(&json),
    );
    let after = board.status.emulated_ns();
    let text = std::fs::read_to_string(&json).expect("the self-test's document");
    let report = serde_json::from_str(&text).expect("a serial-selftest document");
    (report, (after - before) as f64 / 1e9)
}

#[test]
#[ignore = "a benchmark of minutes: docs/usb.md"]
fn link_self_test_payload_rate() {
    let _one = ONE_BOARD.lock().unwrap_or_else(|e| e.into_inner());
    for (image, features) in [("usb-serial", ""), ("usb-serial-dbuf", "double-buffered")] {
        let board = UsbBoard::boot(image, features);
        let frames = 600u64;
        let (report, chip_s) = self_test(
            &board,
            &[
                "--sizes",
                "1514",
                "--rtt-frames",
                "1",
                "--stream-frames",
                &frames.to_string(),
            ],
        );
        let size = &report.sizes[0];
        assert_eq!((size.lost, size.corrupt), (0, 0), "{size:?}");
        let payload = (size.received * 1514) as f64;
        println!(
            "{image}: self-test, {} frames of 1514 bytes echoed in {chip_s:.3} s of the chip's clock: {:.0} kB/s of link payload each way ({} retransmissions by the host's end)",
            size.received,
            payload / chip_s / 1e3,
            report.counters.iter().find(|(k, _)| k == "tx_retransmissions").map_or(0, |(_, v)| *v),
        );
        board.finish();
    }
}

/// One capture line: what it is, the chip's ns, its bytes.
struct Event {
    kind: char,
    ns: u64,
    bytes: Vec<u8>,
}

/// The `S` (write submitted) and `R` (read completed) lines of a capture.
fn events(capture: &Path) -> Vec<Event> {
    let text = std::fs::read_to_string(capture).expect("the capture");
    text.lines()
        .filter_map(|l| {
            let mut w = l.split(' ');
            let kind = w.next()?.chars().next()?;
            if kind != 'S' && kind != 'R' {
                return None;
            }
            let ns = w.next()?.parse().ok()?;
            let hex = w.next().unwrap_or("");
            let bytes = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap_or(0))
                .collect();
            Some(Event { kind, ns, bytes })
        })
        .collect()
}

/// Percentiles and a histogram line of `v` (µs).
fn summary(v: &mut [f64]) -> String {
    v.sort_by(|a, b| a.total_cmp(b));
    let p = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    format!(
        "p10 {:.0} p50 {:.0} p90 {:.0} max {:.0} µs",
        p(0.1),
        p(0.5),
        p(0.9),
        p(1.0)
    )
}

/// Prints CBA's figures for the raw echo: packets of `size` one at a time, from the capture's
/// events after `from_ns`: the time between echoed packets (write to the end of its echo,
/// through the next), the rate it realises, and the host's turn-around.
fn raw_echo_figures(label: &str, size: usize, evs: &[Event], from_ns: u64, count: usize) {
    let (mut writes, mut dones) = (Vec::new(), Vec::new());
    let mut got = 0usize;
    for e in evs.iter().filter(|e| e.ns >= from_ns) {
        match e.kind {
            'S' => writes.push(e.ns),
            _ => {
                got += e.bytes.len();
                while dones.len() < got / size {
                    dones.push(e.ns);
                }
            }
        }
    }
    let n = count.min(writes.len()).min(dones.len());
    let mut between: Vec<f64> = (1..n)
        .map(|k| (dones[k] - dones[k - 1]) as f64 / 1e3)
        .collect();
    let mut bus: Vec<f64> = (0..n)
        .map(|k| (dones[k] - writes[k]) as f64 / 1e3)
        .collect();
    let mut host: Vec<f64> = (1..n)
        .map(|k| (writes[k] - dones[k - 1]) as f64 / 1e3)
        .collect();
    let mut sorted = between.clone();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let median = sorted[sorted.len() / 2];
    println!(
        "{label} {size:>4} B: between packets {}; {:.2} Mbit/s at the median; write to echo {}; host turn-around {}",
        summary(&mut between),
        size as f64 * 8.0 / median,
        summary(&mut bus),
        summary(&mut host),
    );
}

/// Writes `count` packets of `size` to the echo on `port`, each after the last one's echo.
fn ping_pong(port: &Path, size: usize, count: usize) {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOCTTY)
        .open(port)
        .expect("open the port");
    // SAFETY: termios calls on a descriptor this function owns, into a zeroed struct.
    unsafe {
        use std::os::fd::AsRawFd;
        let mut t: libc::termios = std::mem::zeroed();
        assert_eq!(libc::tcgetattr(f.as_raw_fd(), &mut t), 0);
        libc::cfmakeraw(&mut t);
        t.c_cc[libc::VMIN] = 1;
        assert_eq!(libc::tcsetattr(f.as_raw_fd(), libc::TCSANOW, &t), 0);
    }
    let packet: Vec<u8> = (0..size).map(|i| (i % 251) as u8 | 1).collect();
    let mut buf = vec![0u8; size];
    let started = Instant::now();
    for _ in 0..count {
        f.write_all(&packet).expect("write");
        f.read_exact(&mut buf).expect("the echo");
        assert_eq!(buf, packet);
        assert!(started.elapsed() < Duration::from_secs(600));
    }
}

#[test]
#[ignore = "a benchmark of minutes: docs/usb.md"]
fn cba_echo_histograms() {
    let _one = ONE_BOARD.lock().unwrap_or_else(|e| e.into_inner());
    const COUNT: usize = 200;
    for (image, features) in [("usb-echo", "echo"), ("usb-echo-240mhz", "echo,sys-240mhz")] {
        let capture =
            std::env::temp_dir().join(format!("linklab-{image}-{}.cap", std::process::id()));
        let board = UsbBoard::boot_with(
            image,
            features,
            &[("RP2040JS_USB_CAPTURE", capture.to_str().unwrap())],
        );
        let mut starts = Vec::new();
        for size in [32, 128, 512] {
            board.wait_chip(10_000_000);
            starts.push((size, board.status.emulated_ns()));
            ping_pong(&board.port, size, COUNT);
        }
        board.finish();
        let evs = events(&capture);
        for (size, from) in starts {
            raw_echo_figures(&format!("{image}, raw echo,"), size, &evs, from, COUNT);
        }
        let _ = std::fs::remove_file(&capture);
    }
    // Through linklab-serial: the self-test's round trips (one frame at a time, the device's
    // link echoing), timed by the capture.
    for (image, features) in [("usb-serial", ""), ("usb-serial-240mhz", "sys-240mhz")] {
        let capture =
            std::env::temp_dir().join(format!("linklab-{image}-{}.cap", std::process::id()));
        let board = UsbBoard::boot_with(
            image,
            features,
            &[("RP2040JS_USB_CAPTURE", capture.to_str().unwrap())],
        );
        for size in [32usize, 128, 512] {
            let (report, _) = self_test(
                &board,
                &[
                    "--sizes",
                    &size.to_string(),
                    "--rtt-frames",
                    &COUNT.to_string(),
                    "--stream-frames",
                    "1",
                ],
            );
            let s = &report.sizes[0];
            assert_eq!((s.lost, s.corrupt), (0, 0));
        }
        board.finish();
        linklab_serial_figures(image, &events(&capture));
        let _ = std::fs::remove_file(&capture);
    }
}

/// CBA's figures through linklab-serial: each self-test frame's echo, the frames decoded from
/// the capture's bytes both ways (requests from the writes, echoes from the reads) and
/// matched by their 16-byte self-test head.
fn linklab_serial_figures(image: &str, evs: &[Event]) {
    use linklab_serial::framing::Deframer;
    use linklab_serial::wire::{open, FLAG_ECHO_REPLY, FLAG_ECHO_REQUEST};
    let (mut out, mut inn) = (Deframer::new(), Deframer::new());
    let mut sent = std::collections::HashMap::new();
    // (size, write-to-echo, echo time) of each echo.
    let mut echoes: Vec<(usize, u64, u64)> = Vec::new();
    for e in evs {
        let deframer = if e.kind == 'S' { &mut out } else { &mut inn };
        deframer.push(&e.bytes, |chunk| {
            let Ok((h, payload)) = chunk.map_err(|_| ()).and_then(|c| open(c).map_err(|_| ()))
            else {
                return;
            };
            if payload.len() < 16 {
                return;
            }
            let head: [u8; 16] = payload[..16].try_into().unwrap_or([0; 16]);
            if e.kind == 'S' && h.flags & FLAG_ECHO_REQUEST != 0 {
                sent.entry(head).or_insert(e.ns);
            } else if e.kind == 'R' && h.flags & FLAG_ECHO_REPLY != 0 {
                if let Some(t0) = sent.get(&head) {
                    echoes.push((payload.len(), e.ns - t0, e.ns));
                }
            }
        });
    }
    for size in [32usize, 128, 512] {
        let mine: Vec<_> = echoes.iter().filter(|(s, _, _)| *s == size).collect();
        if mine.len() < 2 {
            continue;
        }
        let mut rtt: Vec<f64> = mine.iter().map(|(_, r, _)| *r as f64 / 1e3).collect();
        let mut between: Vec<f64> = mine
            .windows(2)
            .map(|w| (w[1].2 - w[0].2) as f64 / 1e3)
            .collect();
        let mut host: Vec<f64> = mine
            .windows(2)
            .map(|w| (w[1].2 - w[1].1).saturating_sub(w[0].2) as f64 / 1e3)
            .collect();
        let mut sorted = between.clone();
        sorted.sort_by(|a, b| a.total_cmp(b));
        let median = sorted[sorted.len() / 2];
        println!(
            "{image}, linklab-serial {size:>4} B: between frames {}; {:.2} Mbit/s at the median; write to echo {}; host turn-around {} ({} echoes)",
            summary(&mut between),
            size as f64 * 8.0 / median,
            summary(&mut rtt),
            summary(&mut host),
            mine.len()
        );
    }
}

/// The UDP payload of an Ethernet frame carrying IPv4/UDP with `port` as source or
/// destination (`to`: destination), if it is one.
fn udp_payload(frame: &[u8], port: u16, to: bool) -> Option<&[u8]> {
    if frame.len() < 14 + 20 + 8 || frame[12..14] != [0x08, 0x00] || frame[14 + 9] != 17 {
        return None;
    }
    let ihl = usize::from(frame[14] & 0x0f) * 4;
    let udp = frame.get(14 + ihl..)?;
    let at = if to { 2 } else { 0 };
    (udp.get(at..at + 2)? == port.to_be_bytes()).then(|| &udp[8..])
}

#[test]
#[ignore = "a benchmark of minutes: docs/usb.md"]
fn cba_rtt_over_the_network() {
    use linklab_serial::framing::Deframer;
    use linklab_serial::wire::open;
    let _one = ONE_BOARD.lock().unwrap_or_else(|e| e.into_inner());
    for (image, features) in [("usb-serial", ""), ("usb-serial-dbuf", "double-buffered")] {
        let capture =
            std::env::temp_dir().join(format!("linklab-rtt-{image}-{}.cap", std::process::id()));
        let board = UsbBoard::boot_with(
            image,
            features,
            &[("RP2040JS_USB_CAPTURE", capture.to_str().unwrap())],
        );
        let ns = Netns::new("usbrtt");
        let bridge = ns.spawn(&[
            linklab_bin().to_str().unwrap(),
            "serial",
            "--dev",
            board.port.to_str().unwrap(),
            "--baud",
            BAUD,
            "--tap",
            "usb0",
            "--ip",
            "198.18.0.1/24",
        ]);
        let started = Instant::now();
        while !ns
            .command(&["ping", "-c", "1", "-W", "5", DEVICE])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            assert!(
                started.elapsed() < Duration::from_secs(180),
                "no answer through the bridge"
            );
        }
        ns.run(&[
            "timeout",
            "600",
            linklab_bin().to_str().unwrap(),
            "rtt",
            "-c",
            DEVICE,
            "--udp",
            "--sizes",
            "64,256,768",
            "-n",
            "60",
            "--interval",
            "200000",
        ]);
        drop(bridge);
        board.finish();
        // Each UDP echo: its request's frame (written) to its reply's (read), by payload.
        let (mut out, mut inn) = (Deframer::new(), Deframer::new());
        let mut sent = std::collections::HashMap::new();
        let mut rtt: std::collections::BTreeMap<usize, Vec<f64>> = Default::default();
        for e in events(&capture) {
            let deframer = if e.kind == 'S' { &mut out } else { &mut inn };
            deframer.push(&e.bytes, |chunk| {
                let Ok((_, frame)) = chunk.map_err(|_| ()).and_then(|c| open(c).map_err(|_| ()))
                else {
                    return;
                };
                if e.kind == 'S' {
                    if let Some(p) = udp_payload(frame, 7, true) {
                        sent.entry(p.to_vec()).or_insert(e.ns);
                    }
                } else if let Some(p) = udp_payload(frame, 7, false) {
                    if let Some(t0) = sent.get(p) {
                        rtt.entry(p.len())
                            .or_default()
                            .push((e.ns - t0) as f64 / 1e3);
                    }
                }
            });
        }
        for (size, mut v) in rtt {
            let n = v.len();
            println!(
                "{image}, linklab rtt UDP {size:>4} B: write to echo {} ({n} echoes)",
                summary(&mut v)
            );
        }
        let _ = std::fs::remove_file(&capture);
    }
}
