//! `linklab probe` against a device linklab did not build: lwIP 2.2.1 with lwiperf (lwIP's
//! iperf 2 server, TCP 5001) and httpd, on QEMU's mps2-an385 (`tests/data/
//! lwip-2.2.1-mps2-an385.elf`, its README says what it is and how it was built).
//!
//! The image has its own address (198.18.9.2/24) and ignores linklab's config blob, and it
//! prints no linklab boot line, so QEMU is started here as the peer's `boot.sh` does (free
//! running, the LAN9118 on a TAP in a namespace the test creates) and the test waits for the
//! image's own "lwip peer up" line and a ping.
//!
//! What the probe must say: ICMP round trips measured; HTTP `/big.bin` downloaded at a rate,
//! its length checked (HTTP/1.0 without Content-Length: the body to the close, 1 MiB) and its
//! content checked against byte i = i & 0xff; `/100kB.txt` and `/1MB.txt` absent with the 404
//! status line and no rate; TCP both ways through iperf 2 — to the device a plain test, from
//! it lwiperf's `-r` connect-back; UDP absent (lwiperf has no UDP server) and echo absent, in
//! plain lines; exit 0.
//!
//! Then `linklab iperf2 -c DEVICE -r` as a user types it, with `-t` and `-n`: both halves
//! pass, and the bytes each end counted agree with the device's own `iperf-done` console
//! lines (lwiperf aborts a `-r` test whose data blocks do not begin with the header, as
//! stock iperf 2.1.8's do).
//!
//! Needs root (namespaces, a TAP) and qemu-system-arm.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use linklab_results::probe::{PathState, ServiceState, Unmeasured};
use linklab_testkit::probe::probe;
use linklab_testkit::{linklab_bin, run_bounded, tempdir, wait_until, ChildGuard, Netns};

/// The image's address (fixed in the image).
const DEVICE: &str = "198.18.9.2";
/// The host's side of the TAP.
const HOST_CIDR: &str = "198.18.9.1/24";
/// The MAC QEMU gives the LAN9118 (the image takes it).
const MAC: &str = "02:4c:57:00:00:02";
/// The TAP inside the test's namespace.
const TAP: &str = "lwt0";

fn image() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lwip-2.2.1-mps2-an385.elf")
}

/// The lwIP image running in QEMU on a TAP in its own namespace; stopped on drop.
struct Lwip {
    ns: Netns,
    console: PathBuf,
    _qemu: ChildGuard,
}

impl Lwip {
    fn boot() -> Lwip {
        let ns = Netns::new("plw");
        let console = tempdir("probe-lwip").join("console.log");
        let _ = std::fs::remove_file(&console);
        let image = image();
        let serial = format!("file:{}", console.display());
        let netdev = format!("tap,id=n0,ifname={TAP},script=no,downscript=no");
        let nic = format!("nic,netdev=n0,macaddr={MAC}");
        let qemu = ns
            .command(&[
                "qemu-system-arm",
                "-M",
                "mps2-an385",
                "-kernel",
                image.to_str().unwrap(),
                "-nographic",
                "-monitor",
                "none",
                "-serial",
                &serial,
                "-netdev",
                &netdev,
                "-net",
                &nic,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start qemu-system-arm");
        let lwip = Lwip {
            ns,
            console,
            _qemu: ChildGuard(Some(qemu)),
        };
        let tap = wait_until(Duration::from_secs(10), || {
            lwip.ns
                .command(&["ip", "link", "show", TAP])
                .output()
                .is_ok_and(|o| o.status.success())
        });
        assert!(tap, "QEMU made no TAP {TAP}");
        lwip.ns.run(&["ip", "addr", "add", HOST_CIDR, "dev", TAP]);
        lwip.ns.run(&["ip", "link", "set", TAP, "up"]);
        let up = wait_until(Duration::from_secs(20), || {
            lwip.console_text().contains("lwip peer up: 198.18.9.2")
        });
        assert!(up, "no boot line; console: {}", lwip.console_text());
        let answered = wait_until(Duration::from_secs(20), || {
            lwip.ns
                .command(&["ping", "-c", "1", "-W", "1", DEVICE])
                .output()
                .is_ok_and(|o| o.status.success())
        });
        assert!(answered, "the lwIP device never answered a ping");
        lwip
    }

    fn console_text(&self) -> String {
        std::fs::read_to_string(&self.console).unwrap_or_default()
    }
}

/// One line of lwiperf's console report: `iperf-done: type=T local_port=L remote_port=R
/// bytes=B ...` as `(type, local port, remote port, bytes)`.
fn iperf_done(line: &str) -> Option<(u32, u16, u16, u64)> {
    let rest = line.trim().strip_prefix("iperf-done: ")?;
    let field = |name: &str| {
        rest.split_whitespace()
            .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
    };
    Some((
        field("type")?.parse().ok()?,
        field("local_port")?.parse().ok()?,
        field("remote_port")?.parse().ok()?,
        field("bytes")?.parse().ok()?,
    ))
}

/// One line of iperf 2's CSV (`-y C`): `(source address, source port, bytes)`.
fn csv_flow(line: &str) -> Option<(String, u16, u64)> {
    let f: Vec<&str> = line.trim().split(',').collect();
    if f.len() != 9 {
        return None;
    }
    Some((f[1].to_string(), f[2].parse().ok()?, f[7].parse().ok()?))
}

/// `linklab iperf2 -c DEVICE -r` with `-t 1` and with `-n 1M`: our test to lwiperf, then
/// its connect-back, each counted by both ends. lwiperf counts 24 bytes of the first
/// segment it receives (the settings) and drops the rest of that segment (lwIP 2.2.1
/// `lwiperf_tcp_recv`): the 60-byte 2.1 header goes alone, as stock 2.1.8 sends it, so the
/// device counts 36 bytes fewer than we sent (stock 2.1.8 against this image: 23 330 876
/// sent, 23 330 840 counted). The way back it counts what it queued, all of which arrived.
fn tradeoff_with_our_client(lwip: &Lwip) {
    let bin = linklab_bin();
    let bin = bin.to_str().unwrap();
    for extra in [["-t", "1"], ["-n", "1M"]] {
        let seen = lwip.console_text().len();
        let mut argv = vec![bin, "iperf2", "-c", DEVICE, "-r", "-y", "C"];
        argv.extend(extra);
        let out = run_bounded(&mut lwip.ns.command(&argv), Duration::from_secs(40));
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let what = format!(
            "{argv:?}:\n{stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{what}");
        let flows: Vec<(String, u16, u64)> = stdout.lines().filter_map(csv_flow).collect();
        let to = flows.iter().find(|f| f.0 == "198.18.9.1").expect(&what);
        let back = flows.iter().find(|f| f.0 == DEVICE).expect(&what);
        // The device prints the connect-back's line when it closes it.
        let done = |t: u32, local: Option<u16>, remote: Option<u16>| {
            let console = lwip.console_text();
            console[seen.min(console.len())..]
                .lines()
                .filter_map(iperf_done)
                .find(|d| {
                    d.0 == t && local.is_none_or(|p| d.1 == p) && remote.is_none_or(|p| d.2 == p)
                })
        };
        assert!(
            wait_until(Duration::from_secs(5), || done(1, Some(back.1), None)
                .is_some()),
            "{what}\nno report of the connect-back; console:\n{}",
            lwip.console_text()
        );
        let received = done(0, Some(5001), Some(to.1)).expect(&what);
        let sent_back = done(1, Some(back.1), None).expect(&what);
        assert_eq!(received.3 + 36, to.2, "{what}\n{received:?}");
        assert_eq!(sent_back.3, back.2, "{what}\n{sent_back:?}");
        if extra[0] == "-n" {
            assert_eq!(to.2, 1 << 20, "{what}");
            // lwiperf stops once it queued the amount (up to one segment more).
            assert!((1 << 20..(1 << 20) + 1460).contains(&back.2), "{what}");
        } else {
            assert!(to.2 > 0 && back.2 > 0, "{what}");
        }
    }
    let console = lwip.console_text();
    assert!(!console.contains("type=3"), "a DATAERROR: {console}");
}

#[test]
fn lwip_device_through_iperf2_and_its_own_http() {
    let lwip = Lwip::boot();
    let run = probe(&lwip.ns, "lwip", DEVICE, 30, &["--http", "/big.bin"], &[]);
    let console = lwip.console_text();
    eprintln!("lwIP console:\n{console}");
    let v = run.report();
    assert_eq!(run.out.status.code(), Some(0), "{}", run.stderr());
    assert!(run.stderr().is_empty(), "{}", run.stderr());

    // Services: ICMP, iperf 2 without a version reply, HTTP; no iperf3, no echo.
    assert_eq!(run.service("icmp"), ServiceState::Present);
    assert_eq!(run.service("iperf3"), ServiceState::Absent);
    assert_eq!(run.service("iperf2"), ServiceState::Present);
    assert!(run.service_entry("iperf2").version.is_none());
    assert_eq!(run.service("http"), ServiceState::Present);
    for s in ["echo-udp", "echo-tcp"] {
        assert_eq!(run.service(s), ServiceState::Absent, "{s}");
    }

    // ICMP round trips.
    for size in [64, 512, 1472] {
        let p50 = run.figure(&format!("icmp.rtt_p50.{size}B"));
        assert!(p50 > 0.0 && p50 < 1e6, "{size} B: {p50} µs");
    }

    // HTTP: /big.bin whole (1 MiB to the close), every byte i & 0xff, a rate; the bench
    // files absent with lwIP's 404 status line and no rate.
    let big = run.http("/big.bin");
    assert_eq!(big.state, PathState::Done, "{big:?}");
    assert_eq!(big.status_line.as_deref(), Some("HTTP/1.0 200 OK"));
    assert!(big.content_length.is_none(), "none announced: {big:?}");
    assert_eq!(big.body.value, 1_048_576.0);
    assert_eq!(big.index_bytes_ok, Some(true), "{big:?}");
    assert!(run.figure("http./big.bin") > 1e6);
    for path in ["/100kB.txt", "/1MB.txt"] {
        let h = run.http(path);
        assert_eq!(h.state, PathState::Absent, "{h:?}");
        let status = h.status_line.as_deref();
        assert_eq!(status, Some("HTTP/1.0 404 File not found"), "{h:?}");
        assert!(h.rate.is_none(), "{h:?}");
        assert!(!run.has_figure(&format!("http.{path}")));
        let m = run.not_measured(&format!("http.{path}"));
        assert_eq!(m.state, Unmeasured::Absent);
    }

    // TCP both ways through iperf 2: to the device a plain test, from it lwiperf's -r.
    let to = run.figure_of("iperf2.tcp.to_device");
    let from = run.figure_of("iperf2.tcp.from_device");
    assert_eq!(to.via.as_deref(), Some("iperf 2"), "{to:?}");
    assert_eq!(
        from.via.as_deref(),
        Some("iperf 2 -r (the device connected back)"),
        "{from:?}"
    );
    assert!(run.figure("iperf2.tcp.to_device") > 1e6);
    assert!(run.figure("iperf2.tcp.from_device") > 1e6);
    assert!(!run.has_figure("tcp.to_device"), "no iperf3 figure");
    for t in &v.tcp {
        assert_eq!(t.iperf, "iperf2", "{t:?}");
    }
    // lwiperf's own console lines: a test received (type 0) and a connect-back sent (type 1).
    assert!(console.contains("iperf-done: type=0"), "{console}");
    assert!(console.contains("iperf-done: type=1"), "{console}");

    // UDP: no server, so no knee either way — plain lines, no zero.
    for way in ["to_device", "from_device"] {
        let id = format!("iperf2.udp.knee.{way}");
        assert!(!run.has_figure(&id), "{id}");
        let m = run.not_measured(&id);
        assert_eq!(m.state, Unmeasured::Absent, "{m:?}");
    }
    let text = run.stdout();
    for needle in [
        "TCP and UDP through iperf 2 on port 5001",
        "HTTP GET /1MB.txt",
        "HTTP/1.0 404 File not found",
        "UDP knee to the device (iperf 2)",
    ] {
        assert!(text.contains(needle), "{needle:?} in:\n{text}");
    }
    let udp = text
        .lines()
        .find(|l| l.contains("UDP knee to the device (iperf 2)"))
        .unwrap();
    assert!(
        udp.contains(" absent ")
            && udp.contains("got no UDP report back")
            && udp.ends_with("(no figure)"),
        "{udp}"
    );
    assert!(
        text.contains("absent (skipped): echo-udp, echo-tcp"),
        "{text}"
    );

    tradeoff_with_our_client(&lwip);
}
