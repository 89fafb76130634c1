//! Hostile but ordinary peers against `linklab serve` (linklab-perf's device apps, the same
//! code the firmware runs; tests/hostile_emu.rs runs the same campaign against an emulated
//! board): the cases of `linklab_testkit::hostile`, each on a fresh device, plus what only the soft NIC
//! has (its idle timeout without a new client, SIGTERM, a busy TAP, `linklab iperf -s` and
//! SIGINT).
//!
//! What the campaign tries:
//! - 4 POSTs of 100 kB bodies to the HTTP server (answered 405), then an ordinary GET;
//! - 2 and 6 idle holders of port 80 (2 HTTP sockets), some with a request head cut short,
//!   then a new curl without retries: served within 3 s, the holders evicted;
//! - 4 idle iperf3 control connections, then a stock `iperf3 -c`: runs within 3 s;
//! - a download and a zero-window reader: a new client evicts the reader, never the
//!   download; two downloads hold both sockets through new SYNs and complete;
//! - 40 spoofed UDP echo requests from hosts that never answer ARP, then one real request:
//!   answered within 2 s;
//! - 6 spoofed SYNs to port 80 and 2 to port 7 from a host that does not exist, then clients;
//! - spoofed SYNs holding both HTTP sockets, then the host's SYN right behind frames the MAC
//!   filters: answered with a SYN-ACK;
//! - a continuous flood of spoofed SYNs (40 per second to ports 80, 7, 5201 and 5001 in turn)
//!   while ordinary clients use the services (iperf 2 too), each without retries;
//! - idle connections and no new client: closed by the idle timeout;
//! - SIGTERM during a download: curl must end at once (RST), not hang;
//! - a second `serve` on the TAP the first one holds: one line saying it is in use.
//!
//! Spoofed frames are written by the test on the kernel side of the TAP with an AF_PACKET
//! socket, inside the namespace the test creates (198.18.0.0/15).

use std::process::Command;
use std::time::{Duration, Instant};

use linklab_testkit::counter;
use linklab_testkit::device::{Device, DEVICE};
use linklab_testkit::hostile::{self as campaign, was_reset};
use linklab_testkit::paced::PacedDownload;
use linklab_testkit::{linklab_bin, linklab_in};

#[test]
fn oversized_requests_do_not_wedge_http() {
    let dev = Device::serve("big");
    campaign::oversized_requests_do_not_wedge_http(&dev, &linklab_testkit::tempdir("hostile-big"));
}

#[test]
fn two_idle_http_holders_give_way_to_a_new_client() {
    campaign::idle_http_holders_give_way(&Device::serve("hold2"), 2);
}

#[test]
fn six_idle_http_holders_give_way_to_a_new_client() {
    campaign::idle_http_holders_give_way(&Device::serve("hold6"), 6);
}

#[test]
fn idle_iperf3_controls_give_way_to_a_stock_test() {
    campaign::idle_iperf3_controls_give_way(&Device::serve("iperfhold"), 4);
}

#[test]
fn a_download_stays_a_zero_window_reader_goes() {
    campaign::a_download_stays_a_zero_window_reader_goes(&Device::serve("zwin"));
}

#[test]
fn udp_echo_answers_right_after_a_spoofed_burst() {
    campaign::udp_echo_answers_right_after_a_spoofed_burst(&Device::serve("udpspoof"));
}

#[test]
fn spoofed_syns_from_silent_hosts_do_not_kill_services() {
    campaign::spoofed_syns_do_not_kill_services(&Device::serve("spoof"));
}

#[test]
fn a_syn_behind_filtered_frames_finds_room() {
    let dev = Device::serve("filtered");
    campaign::a_syn_behind_filtered_frames_finds_room(&dev);
    // The case's premise: its 15 multicasts reached the MAC, which filtered them.
    let stats = dev.stats();
    assert!(
        linklab_testkit::mac_counter(&stats, "rx_filtered") >= 15,
        "{stats}"
    );
}

#[test]
fn a_continuous_syn_flood_does_not_lock_out_clients() {
    campaign::a_continuous_syn_flood_does_not_lock_out_clients(&Device::serve("flood"));
}

#[test]
fn idle_connections_are_closed_after_the_idle_timeout() {
    let dev = Device::serve("idle");
    let mut held = campaign::hold(&dev, 80, 2, |_| Vec::new());
    let started = Instant::now();
    // Nobody else asks for a socket: the idle timeout (10 s) resets both holders.
    for h in &mut held {
        assert!(
            was_reset(&mut h.stream, Duration::from_secs(14)),
            "an idle holder was not reset"
        );
    }
    let waited = started.elapsed();
    assert!(
        waited > Duration::from_secs(9) && waited < Duration::from_secs(12),
        "reset after {waited:?}"
    );
    let stats = dev.stats();
    assert_eq!(counter(&stats, "http", "idle_closed"), 2, "{stats}");
    assert_eq!(counter(&stats, "http", "evicted"), 0, "{stats}");
    campaign::assert_counters_conserve(&stats);
}

#[test]
fn sigterm_resets_open_connections_and_a_busy_tap_is_named() {
    let mut served = Device::serve("term");
    let second = linklab_in(
        &served.ns,
        &["serve", "--tap", served.tap, "--ip", "198.18.0.3/24"],
    );
    linklab_testkit::assert_one_line_error(&second, "in use");

    served.ns.small_receive_buffers();
    let url = format!("http://{DEVICE}/3MB.txt");
    // Read at 500 kB/s: still running at the signal (3 MB last 6 s), and curl, which reads
    // up to 100 kB at a time, reads the socket again well within the 2 s.
    let download = PacedDownload::start(&served.ns, &url, 500_000);
    std::thread::sleep(Duration::from_millis(800));
    let stdout = served.stop(libc::SIGTERM);
    assert!(stdout.contains("stopped by signal"), "{stdout}");
    let (status, _) = download.finish(Duration::from_secs(2));
    let status = status.expect("curl still hangs 2 s after serve got SIGTERM");
    assert!(!status.success(), "the download cannot have completed");
}

/// SIGTERM after hostile traffic: spoofed SYNs from a host that never answers ARP hold the
/// HTTP sockets half-open around a rate-limited download of /3MB.txt; serve stopped by
/// SIGTERM must reset the download (curl ends with "connection reset", exit 56) before its
/// TAP goes: it polls until its RSTs are out (those to the silent host never leave, and are
/// given up after a quarter second), not once.
#[test]
fn sigterm_after_spoofed_syns_resets_the_download() {
    let ghost = [198, 18, 0, 77];
    for round in 0..4u16 {
        let mut served = Device::serve("termspoof");
        let syns = |from: u16| -> Vec<Vec<u8>> {
            (0..6)
                .map(|i| linklab_testkit::spoof::spoofed_syn(served.target(), ghost, from + i, 80))
                .collect()
        };
        // Else the host's kernel takes in megabytes at once: curl, reading them at 200 kB/s,
        // meets the reset seconds late, or completes the file from its buffer.
        served.ns.small_receive_buffers();
        served.inject(syns(44000 + round * 20));
        let url = format!("http://{DEVICE}/3MB.txt");
        let mut curl = served
            .ns
            .command(&[
                "curl",
                "-sS",
                "-o",
                "/dev/null",
                "--limit-rate",
                "200k",
                "-w",
                "HTTP %{http_code}, %{size_download} bytes in %{time_total} s",
                &url,
            ])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(600));
        served.inject(syns(44010 + round * 20));
        std::thread::sleep(Duration::from_millis(200));
        let stdout = served.stop(libc::SIGTERM);
        assert!(stdout.contains("stopped by signal"), "{stdout}");
        // A curl left without a reset never ends (the server is gone).
        let status = linklab_testkit::exit_within(&mut curl, Duration::from_secs(5))
            .unwrap_or_else(|| {
                panic!("round {round}: curl still hangs 5 s after serve got SIGTERM")
            });
        // (curl has exited: its few lines of output are in the pipes.)
        let said = curl.wait_with_output().expect("curl's output");
        assert_eq!(
            status.code(),
            Some(56),
            "round {round}: curl's exit: 56 is a reset connection; curl said {} {}; serve: {stdout}",
            String::from_utf8_lossy(&said.stdout),
            String::from_utf8_lossy(&said.stderr)
        );
    }
}

#[test]
fn iperf_servers_stop_on_sigint_even_when_started_ignoring_it() {
    // `sh -c 'trap "" INT; exec linklab iperf -s'`: the server inherits SIGINT ignored, as a
    // script's background job does (`linklab iperf2 -s` ignored it: iperf2_interop's servers
    // outlived their SIGINT when the tests ran as a background job).
    for (tool, port) in [("iperf", "52019"), ("iperf2", "52018")] {
        let mut child = Command::new("sh")
            .args([
                "-c",
                &format!(
                    "trap '' INT; exec {} {tool} -s -p {port}",
                    linklab_bin().display()
                ),
            ])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let exited = linklab_testkit::exit_within(&mut child, Duration::from_secs(3));
        assert!(exited.is_some(), "linklab {tool} -s ignored SIGINT");
    }
}
