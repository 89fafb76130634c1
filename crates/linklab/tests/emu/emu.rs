//! linklab's firmware on emulated MCUs, against real peers: `linklab emu` boots each board's
//! image in QEMU (mps2-an385 with its LAN9118, riscv32 virt with virtio-net, xilinx-zynq-a9
//! with its Cadence GEM through zynq7000-hal's driver, sabrelite with its i.MX6 ENET through
//! linklab-imx-enet) inside a network namespace the test
//! creates; stock ping, curl and iperf3 3.12 measure it from the kernel
//! side of the TAP. Addresses come from 198.18.0.0/15; nothing leaves the namespace.
//!
//! These tests need root, QEMU (Debian's qemu-system-arm and qemu-system-misc) and the images
//! (scripts/check builds them first; `linklab emu` builds them when missing).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use linklab_results::probe::{ProbeReport, ServiceState};
use linklab_testkit::counter;
use linklab_testkit::device::{Device, DEVICE as DEVICE_IP};
use linklab_testkit::hostile::{self as campaign};
use linklab_testkit::iperf2;
use linklab_testkit::iperf3;
use linklab_testkit::ping::Ping;
use linklab_testkit::{assert_conserved, end_bytes, in_netns, linklab_bin, mac_counter};

/// Stock `ping -c 20`: every echo answered.
fn ping_20_without_loss(emu: &Device) {
    Ping::new(DEVICE_IP, 20)
        .with(&["-i", "0.05"])
        .assert_answered(|argv| emu.run(argv));
}

/// Three pings 0.2 s apart, all answered: the device still serves (and its loop went round).
fn ping_3_without_loss(emu: &Device) {
    Ping::new(DEVICE_IP, 3)
        .with(&["-i", "0.2"])
        .assert_answered(|argv| emu.run(argv));
}

/// Stock `iperf3 -u -b 5M -t 2`: the results exchange completes, and the receiver loses
/// under 5 % — in one of up to three tests. The emulated board's CPU is the host's: on a
/// busy host one test can lose datagrams the firmware never saw (the emulator was not
/// scheduled while its NIC model's buffers filled; `linklab emu` raises its priority where
/// it may, but the client's pacing is at the host's mercy too), so a loss that first appears
/// is measured again before it counts, as probe and sweep do. Loss in all three is a
/// failure.
fn udp_at_5_mbit_s(emu: &Device) {
    let mut seen = Vec::new();
    for _ in 0..3 {
        let udp = emu.iperf3(&["-t", "2", "-u", "-b", "5M"]);
        let sum = udp.end.sum("sum").clone();
        assert!(sum.bytes > 1_000_000, "{sum:?}");
        assert!(sum.packets.unwrap_or(0) > 0, "{sum:?}");
        if sum.lost_percent.unwrap_or(100.0) < 5.0 {
            return;
        }
        seen.push(sum);
    }
    panic!("UDP at 5 Mbit/s lost 5 % or more in three tests: {seen:?}");
}

/// curl of every bench file: its length and CRC32.
fn curl_bench_files(emu: &Device) {
    for file in linklab_perf::payload::BENCH_FILES {
        let body = emu.run(&[
            "curl",
            "-sS",
            "--fail",
            "--max-time",
            "120",
            &format!("http://{DEVICE_IP}{}", file.path),
        ]);
        assert_eq!(body.len() as u64, file.len, "{}: length", file.path);
        assert_eq!(
            crc32fast::hash(&body),
            linklab_perf::http::expected_crc32(file),
            "{}: CRC32",
            file.path
        );
    }
}
/// Stock `linklab probe` against the device (12 s): its report names every service present,
/// measured TCP both ways, and got the HTTP downloads with their CRC32s.
fn probe_reports(emu: &Device) {
    let dir = linklab_testkit::tempdir(&format!("probe-{}", emu.tap));
    let json = dir.join("probe.json");
    let html = dir.join("probe.html");
    let bin = linklab_bin();
    let out = emu.ns.run(&[
        bin.to_str().unwrap(),
        "probe",
        DEVICE_IP,
        "--duration",
        "12",
        "--json",
        json.to_str().unwrap(),
        "-o",
        html.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let v: ProbeReport = linklab_testkit::docs::read(&json);
    assert_eq!(v.kind, "probe", "{v:?}");
    for s in ["icmp", "iperf3", "http", "echo-udp", "echo-tcp"] {
        let present = v
            .services
            .iter()
            .any(|x| x.name == s && x.state == ServiceState::Present);
        assert!(present, "{s}: {:?}", v.services);
    }
    let figure = |id: &str| {
        v.figures
            .iter()
            .find(|f| f.id == id)
            .map(|f| f.value)
            .unwrap_or_else(|| panic!("no figure {id}: {:?}", v.figures))
    };
    for id in ["tcp.to_device", "tcp.from_device"] {
        assert!(figure(id) > 1e6, "{id}");
    }
    for h in &v.http {
        assert_eq!(h.crc_ok, Some(true), "{h:?}");
    }
    assert!(std::fs::metadata(&html).unwrap().len() > 1000);
}

fn end_to_end(board: &str) {
    end_to_end_with(board, false);
}

/// [`end_to_end`], with `linklab probe` against the device before it stops when `probe`.
fn end_to_end_with(board: &str, probe: bool) {
    let mut emu = Device::emu(board);

    ping_20_without_loss(&emu);

    curl_bench_files(&emu);

    // TCP to the device, from it, both at once, UDP at 5 Mbit/s, two parallel streams.
    let tcp = emu.iperf3(&["-t", "2"]);
    assert!(end_bytes(&tcp, "sum_received") > 100_000, "{:?}", tcp.end);
    let reverse = emu.iperf3(&["-t", "2", "-R"]);
    assert!(
        end_bytes(&reverse, "sum_received") > 100_000,
        "{:?}",
        reverse.end
    );
    let bidir = emu.iperf3(&["-t", "2", "--bidir"]);
    assert!(
        end_bytes(&bidir, "sum_received") > 10_000
            && end_bytes(&bidir, "sum_received_bidir_reverse") > 10_000,
        "{:?}",
        bidir.end
    );
    udp_at_5_mbit_s(&emu);
    let parallel = emu.iperf3(&["-t", "2", "-P", "2"]);
    assert_eq!(parallel.end.stream_count(), Some(2), "{:?}", parallel.end);
    assert!(
        end_bytes(&parallel, "sum_received") > 100_000,
        "{:?}",
        parallel.end
    );

    // Garbage on the control port must not wedge the server.
    in_netns(&emu.ns, || {
        let device: SocketAddr = format!("{DEVICE_IP}:5201").parse().unwrap();
        for round in 0..3u8 {
            let mut s = TcpStream::connect_timeout(&device, Duration::from_secs(5)).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let junk: Vec<u8> = (0..600u32)
                .map(|i| (i * 31 + u32::from(round)) as u8)
                .collect();
            let _ = s.write_all(&junk);
            let mut sink = Vec::new();
            let _ = s.read_to_end(&mut sink);
        }
    });

    // 20 back-to-back tests, then the device still answers.
    // (With `-n`, the client counts what it wrote; what was still in flight when it sent
    // TEST_END is not received, so only the sender's count is exact.)
    for _ in 0..20 {
        let r = emu.iperf3(&["-n", "200K"]);
        assert!(end_bytes(&r, "sum_sent") >= 200_000, "{:?}", r.end);
        assert!(end_bytes(&r, "sum_received") > 0, "{:?}", r.end);
    }
    ping_3_without_loss(&emu);

    let stats = emu.stats();
    assert_eq!(stats.text("board"), board, "{stats}");
    assert_conserved(&stats);
    assert!(mac_counter(&stats, "rx_packets") > 1000, "{stats}");
    assert_eq!(mac_counter(&stats, "rx_crc_errors"), 0, "{stats}");
    assert!(stats.counter("iperf", "tests_done") >= 25, "{stats}");
    assert!(stats.counter("memory", "stack_peak_bytes") > 0, "{stats}");
    if probe {
        probe_reports(&emu);
        assert_conserved(&emu.stats());
    }

    let stdout = emu.stop(libc::SIGINT);
    assert!(stdout.contains("stopped by signal"), "{stdout}");
    let links = String::from_utf8(emu.run(&["ip", "-o", "link", "show"])).unwrap();
    assert!(
        !links.contains(&format!(" {}:", emu.tap)),
        "the TAP is still there after emu stopped: {links}"
    );
}

/// The embassy image of `board` (embassy-net over linklab-mac, linklab-perf's embassy apps),
/// booted once for every case: stock ping, curl of the bench files, six curls at once on
/// its two HTTP sockets (`linklab_testkit::clients`: all served, none reset); the hostile peers of
/// tests/hostile.rs that matter most to a user (`linklab_testkit::hostile`): 2 idle holders of both
/// HTTP sockets give way to a new curl within 3 s (evicted, counted), 4 idle iperf3 control
/// connections to a stock `iperf3 -c` within 3 s (the iperf3 pool's eviction, where an
/// evicted socket listens again only once its RST left), one UDP echo request right after
/// 40 spoofed ones is answered within 2 s, spoofed SYNs to ports 80 and 7 do
/// not keep real clients out and their half-open sockets are gone within the TCP timeout;
/// stock iperf3 TCP, -R, --bidir, -P 2, UDP at 5 Mbit/s (each -J checked for bytes on both
/// sides), garbage on the control port then a normal test; /stats conservation, and the
/// decoded defmt boot line.
fn embassy_end_to_end(board: &str) {
    embassy_end_to_end_with(board, false);
}

/// [`embassy_end_to_end`], with `linklab probe` against the device before it stops when
/// `probe`.
fn embassy_end_to_end_with(board: &str, probe: bool) {
    let mut emu = Device::emu_args(board, &["--image", "embassy"]);

    ping_20_without_loss(&emu);
    curl_bench_files(&emu);
    let served = linklab_testkit::clients::Clients {
        n: 6,
        sockets: 2,
        path: "/100kB.txt",
        rate: "100K",
        syn_retries: None,
    }
    .run(&emu.ns, &|| emu.stats());
    println!("{board} embassy: 6 parallel curls: {served:?}");
    campaign::wait_quiet(&emu, Duration::from_secs(15));

    campaign::idle_http_holders_give_way(&emu, 2);
    campaign::idle_iperf3_controls_give_way(&emu, 4);
    campaign::udp_echo_answers_right_after_a_spoofed_burst(&emu);
    campaign::wait_quiet(&emu, Duration::from_secs(15));
    campaign::a_continuous_syn_flood_does_not_lock_out_clients(&emu);
    campaign::wait_quiet(&emu, Duration::from_secs(15));
    // The spoofed half-open sockets time out while stock iperf3 runs.
    let spoofed_at = campaign::spoofed_syns_then_clients(&emu);

    let both = |r: &iperf3::Report, sent: &str, received: &str| {
        let (s, d) = (end_bytes(r, sent), end_bytes(r, received));
        assert!(
            s > 100_000 && d > 100_000,
            "{sent} {s}, {received} {d}: {:?}",
            r.end
        );
    };
    let tcp = emu.iperf3(&["-t", "2"]);
    both(&tcp, "sum_sent", "sum_received");
    let reverse = emu.iperf3(&["-t", "2", "-R"]);
    both(&reverse, "sum_sent", "sum_received");
    let bidir = emu.iperf3(&["-t", "2", "--bidir"]);
    both(&bidir, "sum_sent", "sum_received");
    both(
        &bidir,
        "sum_sent_bidir_reverse",
        "sum_received_bidir_reverse",
    );
    let parallel = emu.iperf3(&["-t", "2", "-P", "2"]);
    assert_eq!(parallel.end.stream_count(), Some(2));
    both(&parallel, "sum_sent", "sum_received");
    udp_at_5_mbit_s(&emu);

    // Garbage on the control port, then a normal test.
    in_netns(&emu.ns, || {
        let device: SocketAddr = format!("{DEVICE_IP}:5201").parse().unwrap();
        let mut s = TcpStream::connect_timeout(&device, Duration::from_secs(5)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let junk: Vec<u8> = (0..600u32).map(|i| (i * 31) as u8).collect();
        let _ = s.write_all(&junk);
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
    });
    let r = emu.iperf3(&["-n", "200K"]);
    assert!(end_bytes(&r, "sum_sent") >= 200_000, "{:?}", r.end);
    assert!(end_bytes(&r, "sum_received") > 0, "{:?}", r.end);

    campaign::half_open_sockets_time_out(&emu, spoofed_at);
    let stats = emu.stats();
    assert_eq!(stats.text("board"), board, "{stats}");
    assert!(mac_counter(&stats, "rx_packets") > 1000, "{stats}");
    assert!(counter(&stats, "http", "reclaimed") >= 1, "{stats}");
    assert!(counter(&stats, "iperf", "tests_done") >= 6, "{stats}");
    assert!(stats.counter("memory", "stack_peak_bytes") > 0, "{stats}");
    if probe {
        probe_reports(&emu);
        assert_conserved(&emu.stats());
    }

    // The console: the image's defmt boot line, decoded (timestamp, level, text).
    let stdout = emu.stop(libc::SIGINT);
    let boot = format!("INFO  linklab firmware: {board} up (embassy), 198.18.0.2/24");
    assert!(stdout.contains(&boot), "no decoded boot line in: {stdout}");
    assert!(stdout.contains("stopped by signal"), "{stdout}");
    let links = String::from_utf8(emu.run(&["ip", "-o", "link", "show"])).unwrap();
    assert!(!links.contains(&format!(" {}:", emu.tap)), "{links}");
}

#[test]
fn riscv32_virt_embassy_image_serves_ping_http_iperf3_and_survives_hostile_peers() {
    embassy_end_to_end("riscv32-virt");
}

#[test]
fn mps2_an385_embassy_image_serves_ping_http_iperf3_and_survives_hostile_peers() {
    embassy_end_to_end("mps2-an385");
}

/// The embassy image over zynq7000-hal's embassy-net driver (behind the board's wrapper,
/// which hosts linklab-perf's service gate by looking into the HAL's RX ring), with stock
/// `linklab probe` against it too.
#[test]
fn zynq7000_embassy_image_serves_ping_http_iperf3_probe_and_survives_hostile_peers() {
    embassy_end_to_end_with("zynq7000", true);
}

/// The minimal image of `board` (`linklab emu BOARD --image minimal`: the iperf3 TCP server alone
/// and ICMP): stock ping; stock iperf3 TCP and `-R` with the results exchange (the client's
/// report carries the device's byte count each way); UDP, `--bidir` and `-P 2` refused as a
/// stock server built without them refuses (SERVER_ERROR with iperf3's "not implemented":
/// the client says so and exits non-zero, within seconds), and `-b` likewise (no rate
/// limits: linklab-perf's `iperf-rate`); without socket eviction (linklab-perf's `evict`), an
/// idle control connection holds the server, a new client is told it is busy, and the
/// session's watchdog frees it; back-to-back tests; the console's boot and work lines;
/// SIGINT and the TAP is gone.
fn minimal_end_to_end(board: &str) {
    let mut emu = Device::emu_args(board, &["--image", "minimal"]);

    ping_20_without_loss(&emu);

    let tcp = emu.iperf3(&["-t", "2"]);
    let (sent, received) = (end_bytes(&tcp, "sum_sent"), end_bytes(&tcp, "sum_received"));
    assert!(sent > 100_000 && received > 100_000, "{:?}", tcp.end);
    let reverse = emu.iperf3(&["-t", "2", "-R"]);
    let (sent, received) = (
        end_bytes(&reverse, "sum_sent"),
        end_bytes(&reverse, "sum_received"),
    );
    assert!(sent > 100_000 && received > 100_000, "{:?}", reverse.end);

    for mode in [
        &["-u", "-b", "5M"][..],
        &["--bidir"][..],
        &["-P", "2"][..],
        &["-R", "-b", "5M"][..],
    ] {
        let mut argv = vec!["-t", "1", "--connect-timeout", "5000"];
        argv.extend_from_slice(mode);
        let (status, text, took) = emu.iperf3_text(&argv);
        assert_eq!(status, Some(1), "iperf3 {mode:?}: {text}");
        assert!(
            text.contains("iperf3: error - an option you are trying to set is not implemented yet"),
            "iperf3 {mode:?}: {text}"
        );
        assert!(
            took < Duration::from_secs(10),
            "iperf3 {mode:?} took {took:?}"
        );
    }

    campaign::a_held_iperf3_server_answers_busy(&emu);
    for _ in 0..5 {
        let r = emu.iperf3(&["-n", "200K"]);
        assert!(end_bytes(&r, "sum_sent") >= 200_000, "{:?}", r.end);
        assert!(end_bytes(&r, "sum_received") > 0, "{:?}", r.end);
    }

    // The device counts a test, and writes its work line, once the client's IPERF_DONE has
    // come in, which can be after the client exited; the line takes a while on a UART that
    // QEMU paces at its baud rate (zynq7000's). Pings answered after the last test mean the
    // device's loop has been round since: its line is out before the stop.
    ping_3_without_loss(&emu);
    let stdout = emu.stop(libc::SIGINT);
    let boot = format!("linklab firmware: {board} up, 198.18.0.2/24");
    assert!(
        stdout
            .lines()
            .any(|l| l.contains(&boot) && l.ends_with(", minimal")),
        "no minimal boot line in: {stdout}"
    );
    // The work line after the last test (2 timed, 4 refused, the holder's (ended by the
    // watchdog, counted or not), 1 after it, 5 more).
    let last = stdout
        .lines()
        // A whole line: one the stop cut short lacks its last member.
        .rfind(|l| l.starts_with("linklab work: ") && l.contains(" unit="))
        .unwrap_or_else(|| panic!("no work line in: {stdout}"));
    let tests: u64 = last
        .split_whitespace()
        .find_map(|m| m.strip_prefix("tests="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no test count in {last}"));
    assert!(tests >= 12, "{last}");
    assert!(stdout.contains("stopped by signal"), "{stdout}");
    let links = String::from_utf8(emu.run(&["ip", "-o", "link", "show"])).unwrap();
    assert!(!links.contains(&format!(" {}:", emu.tap)), "{links}");
}

/// The compact image (`linklab emu --image compact`, mps2-an385: lwIP's feature set): stock
/// ping; curl of every bench file (the 1 MB one among them) with its CRC32; stock iperf 2
/// received and sent back (`-R`), each stream's bytes in iperf's own report, back to back
/// (the one socket listens again at once); a second stream (`-P 2`) finds nothing listening
/// and is refused while the first is carried whole; iperf3's port is closed (no iperf3 in
/// this image), and an iperf3 client on iperf 2's port is reset while the next iperf 2
/// client right after it is served; the console's boot and work lines (each test counted,
/// the iperf3 client's as failed);
/// SIGINT and the TAP is gone.
#[test]
fn mps2_an385_compact_image_serves_ping_http_and_iperf2_both_ways() {
    let mut emu = Device::emu_args("mps2-an385", &["--image", "compact"]);
    ping_20_without_loss(&emu);
    curl_bench_files(&emu);
    for _ in 0..2 {
        let run = iperf2::iperf(&emu, &["-n", "2M", "-y", "C"]);
        assert_eq!(run.received(), 2 * 1024 * 1024, "{}", run.text);
        let run = iperf2::iperf(&emu, &["-n", "2M", "-R", "-y", "C"]);
        assert_eq!(run.sent_inline(), 2 * 1024 * 1024, "{}", run.text);
    }
    let run = iperf2::iperf(&emu, &["-n", "1M", "-P", "2", "-y", "C"]);
    assert_eq!(
        run.received(),
        1024 * 1024,
        "-P 2: one stream whole: {}",
        run.text
    );
    assert!(run.text.contains("connect failed"), "-P 2: {}", run.text);
    let (status, text, _) = emu.iperf3_text(&["-t", "1", "--connect-timeout", "5000"]);
    assert_eq!(status, Some(1), "iperf3: {text}");
    assert!(text.contains("unable to connect"), "iperf3: {text}");
    // An iperf3 client on iperf 2's port is reset (a failed test), and the next iperf 2
    // client, right after, is served.
    let (status, text, _) =
        emu.iperf3_text(&["-p", "5001", "-t", "1", "--connect-timeout", "5000"]);
    assert_eq!(status, Some(1), "iperf3 -p 5001: {text}");
    let run = iperf2::iperf(&emu, &["-n", "1M", "-y", "C"]);
    assert_eq!(
        run.received(),
        1024 * 1024,
        "right after iperf3: {}",
        run.text
    );
    ping_3_without_loss(&emu);
    let stdout = emu.stop(libc::SIGINT);
    assert!(
        stdout.lines().any(
            |l| l.contains("linklab firmware: mps2-an385 up, 198.18.0.2/24")
                && l.ends_with(", compact")
        ),
        "no compact boot line in: {stdout}"
    );
    let last = stdout
        .lines()
        // A whole line: one the stop cut short lacks its last member.
        .rfind(|l| l.starts_with("linklab work: ") && l.contains(" unit="))
        .unwrap_or_else(|| panic!("no work line in: {stdout}"));
    assert!(
        last.contains(" tests=7 failed=1 "),
        "seven iperf 2 tests ended, iperf3's on port 5001 failed: {last}"
    );
    let links = String::from_utf8(emu.run(&["ip", "-o", "link", "show"])).unwrap();
    assert!(!links.contains(&format!(" {}:", emu.tap)), "{links}");
}

#[test]
fn mps2_an385_minimal_image_serves_iperf3_and_refuses_what_it_leaves_out() {
    minimal_end_to_end("mps2-an385");
}

#[test]
fn riscv32_virt_minimal_image_serves_iperf3_and_refuses_what_it_leaves_out() {
    minimal_end_to_end("riscv32-virt");
}

#[test]
fn zynq7000_minimal_image_serves_iperf3_and_refuses_what_it_leaves_out() {
    minimal_end_to_end("zynq7000");
}

#[test]
fn riscv32_virt_serves_ping_http_iperf3() {
    end_to_end("riscv32-virt");
}

#[test]
fn mps2_an385_serves_ping_http_iperf3() {
    end_to_end("mps2-an385");
}

/// The main-loop image over a driver linklab did not write: zynq7000-hal's GEM driver from
/// crates.io, its smoltcp path under the same apps; `/stats`' law there joins the GEM's own
/// statistics registers to what the driver delivered and what waits in its rings.
#[test]
fn zynq7000_serves_ping_http_iperf3_and_probe() {
    end_to_end_with("zynq7000", true);
}

/// The i.MX6 FEC iperf study's board: the main loop over linklab-imx-enet, the ENET's
/// receive interrupt writing frames straight into linklab-mac's RX queue.
#[test]
fn sabrelite_serves_ping_http_iperf3_and_probe() {
    end_to_end_with("sabrelite", true);
}

#[test]
fn sabrelite_embassy_image_serves_ping_http_iperf3_probe_and_survives_hostile_peers() {
    embassy_end_to_end_with("sabrelite", true);
}

#[test]
fn sabrelite_minimal_image_serves_iperf3_and_refuses_what_it_leaves_out() {
    minimal_end_to_end("sabrelite");
}
