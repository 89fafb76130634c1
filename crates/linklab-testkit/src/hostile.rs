//! The hostile-peer campaign, as cases that run against any [`Device`] — `linklab serve`
//! (tests/hostile.rs, a fresh device per case) and an emulated board (tests/hostile_emu.rs,
//! one boot for all): idle holders of every TCP service, a download and a zero-window reader,
//! spoofed SYNs and spoofed UDP from hosts that never answer ARP, a SYN flood, oversized
//! requests. Real peers only: stock curl and iperf3, the kernel's TCP in the namespace, and
//! frames written on the TAP with an AF_PACKET socket. Each case checks that the services come
//! back (and how fast), and that the counters still conserve; counters are compared before
//! and after, so cases can follow one another on one device.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::stats::Stats;

use super::device::{Device, DEVICE, HOST};
use super::paced::PacedDownload;
use super::spoof::{ipv6_multicast, spoofed_syn, spoofed_udp, tcp_flags};
use super::{assert_conserved, counter, enter_netns, in_netns, wait_until};

mod spoofed;
mod zero_window;

// Each test binary runs some of the cases.
#[allow(unused_imports)]
pub use spoofed::{
    a_continuous_syn_flood_does_not_lock_out_clients, a_syn_behind_filtered_frames_finds_room,
    answered_taken, half_open_sockets_time_out, spoofed_syns_do_not_kill_services,
    spoofed_syns_then_clients, tcp_echo, udp_echo_answers_right_after_a_spoofed_burst,
};
#[allow(unused_imports)]
pub use zero_window::a_download_stays_a_zero_window_reader_goes;

/// The grace after which an idle connection may be evicted for a new client
/// (linklab_perf::evict::GRACE_MS).
pub const GRACE: Duration = Duration::from_millis(linklab_perf::evict::GRACE_MS);
/// The grace of a connection with bytes of the device's unacknowledged, such as a reader
/// that stopped reading (linklab_perf::evict::SENDING_GRACE_MS).
pub const SENDING_GRACE: Duration = Duration::from_millis(linklab_perf::evict::SENDING_GRACE_MS);

/// What must hold of the counters at any time: the MAC's RX law ([`assert_conserved`]), the
/// UDP echo's — every datagram received was echoed or dropped, and the replies dropped
/// unsent (their requester never answered ARP) are some of those echoed — and every TCP
/// service's SYN law ([`assert_syns_conserve`]).
pub fn assert_counters_conserve(stats: &Stats) {
    assert_conserved(stats);
    let c = |name| counter(stats, "echo", name);
    assert_eq!(
        c("udp_rx_datagrams"),
        c("udp_tx_datagrams") + c("udp_dropped"),
        "echo: {stats}"
    );
    assert!(c("udp_unsent") <= c("udp_tx_datagrams"), "echo: {stats}");
    assert_syns_conserve(stats);
}

/// Every SYN a TCP service saw is one of: passed to a listening socket at once, held until
/// one was freed (`syns_held`), dropped unanswered (`listen_drops`) — so the held and the
/// dropped are some of the SYNs (linklab_perf::syns; `common::clients` holds the whole law to
/// what the clients' kernel counted).
pub fn assert_syns_conserve(stats: &Stats) {
    for (app, prefix) in [
        ("http", ""),
        ("echo", "tcp_"),
        ("iperf", ""),
        ("iperf2", ""),
    ] {
        let c = |name: &str| counter(stats, app, &format!("{prefix}{name}"));
        let waited = c("syns_held") + c("listen_drops");
        let syns = c("syns");
        assert!(
            waited <= syns,
            "{app}: {syns} SYNs, {waited} of them held or dropped: {stats}"
        );
    }
}

/// TCP sockets in /stats's list that are neither established nor listening.
pub fn stuck(stats: &Stats) -> usize {
    stats
        .sockets()
        .iter()
        .filter(|s| !matches!(s.state.as_str(), "ESTABLISHED" | "LISTEN"))
        .count()
}

/// TCP connections the device holds on `port`, per /stats (the /stats request's own
/// connection is on port 80).
fn connections_on(stats: &Stats, port: u16) -> usize {
    stats.sockets().iter().filter(|s| s.port == port).count()
}

/// Waits (at most `within`) until the device holds nothing on ports 7 and 5201, and on port 80
/// nothing but /stats's own connection: the previous case's peers are gone.
pub fn wait_quiet(dev: &Device, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let stats = dev.stats();
        let busy = connections_on(&stats, 80) > 1
            || connections_on(&stats, 7) > 0
            || connections_on(&stats, 5201) > 0;
        if !busy {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the device is not quiet: {stats}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One connection held open by a holder, and when it was made.
pub struct Held {
    /// The connection (in the device's namespace).
    pub stream: TcpStream,
    /// When it was established.
    pub at: Instant,
}

/// True if the device reset `stream` (reads the bytes that came before, if any); false if it
/// is still open after `wait`, or was closed with a FIN.
pub fn was_reset(stream: &mut TcpStream, wait: Duration) -> bool {
    stream.set_read_timeout(Some(wait)).unwrap();
    let mut sink = [0u8; 4096];
    loop {
        match stream.read(&mut sink) {
            Ok(0) => return false,
            Ok(_) => continue,
            Err(e) => return e.kind() == ErrorKind::ConnectionReset,
        }
    }
}

/// `n` idle holders of `port`: each connects (again every 250 ms while refused or reset,
/// as an attacker would, for up to 30 s), says `says(i)` and then nothing. Returns their
/// connections. A holder is a hostile peer: the device may refuse it, drop its SYN or reset
/// it; only the real clients of a case are held to account.
pub fn hold(dev: &Device, port: u16, n: usize, says: fn(usize) -> Vec<u8>) -> Vec<Held> {
    let path = format!("/run/netns/{}", dev.ns.name);
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let path = path.clone();
            std::thread::spawn(move || {
                enter_netns(&path);
                let device: SocketAddr = format!("{DEVICE}:{port}").parse().unwrap();
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    let held = TcpStream::connect_timeout(&device, Duration::from_secs(3))
                        .and_then(|mut stream| {
                            stream.write_all(&says(i))?;
                            Ok(stream)
                        });
                    match held {
                        Ok(stream) => {
                            let at = Instant::now();
                            return Held { stream, at };
                        }
                        Err(e) => {
                            assert!(Instant::now() < deadline, "holder {i} never connected: {e}")
                        }
                    }
                    std::thread::sleep(Duration::from_millis(250));
                }
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

/// What an idle HTTP holder says: the odd ones a request head cut short, the even ones
/// nothing.
fn partial_head(i: usize) -> Vec<u8> {
    if i % 2 == 1 {
        b"GET /10kB.txt HTTP/1.1\r\nHost: holder\r\n".to_vec()
    } else {
        Vec::new()
    }
}

/// Sleeps until every connection in `held` has been idle for more than the grace.
fn until_idle(held: &[Held]) {
    let youngest = held.iter().map(|h| h.at).max().unwrap_or_else(Instant::now);
    let idle = youngest + GRACE + Duration::from_millis(250);
    std::thread::sleep(idle.saturating_duration_since(Instant::now()));
}

/// 4 POSTs of 100 kB bodies (answered 405), then an ordinary GET answered within 2 s.
pub fn oversized_requests_do_not_wedge_http(dev: &Device, dir: &std::path::Path) {
    let body = dir.join("100k.bin");
    std::fs::write(&body, vec![b'x'; 100_000]).unwrap();
    let data = format!("@{}", body.display());
    for _ in 0..4 {
        let out = dev.curl(&["-m", "10", "--data-binary", &data], "/10kB.txt");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "405", "{out:?}");
    }
    let started = Instant::now();
    let out = dev.curl(&["-m", "5", "--fail"], "/10kB.txt");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200", "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    std::thread::sleep(Duration::from_millis(500));
    let stats = dev.stats();
    assert_counters_conserve(&stats);
    assert_eq!(stuck(&stats), 0, "{stats}");
}

/// `n` idle holders on port 80 (the device has 2 HTTP sockets; half the holders send a
/// request head cut short), each connecting again while refused until it got in; then a new
/// curl, without retries, is served within 3 s by evicting an idle holder (counted), and no
/// handshake the device had answered was taken (`reclaimed_answered`).
pub fn idle_http_holders_give_way(dev: &Device, n: usize) {
    let stats = dev.stats();
    let before = (
        counter(&stats, "http", "evicted"),
        counter(&stats, "http", "reclaimed_answered"),
    );
    let mut held = hold(dev, 80, n, partial_head);
    until_idle(&held);
    let started = Instant::now();
    let out = dev.curl(&["-m", "3", "--fail"], "/10kB.txt");
    let waited = started.elapsed();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "200",
        "{out:?}; {}",
        dev.stats()
    );
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    // The curl took the socket of an idle holder.
    let reset = held
        .iter_mut()
        .map(|h| was_reset(&mut h.stream, Duration::from_millis(500)))
        .filter(|&r| r)
        .count();
    let stats = dev.stats();
    assert!(reset >= 1, "no holder gave way: {stats}");
    assert!(counter(&stats, "http", "evicted") > before.0, "{stats}");
    assert_eq!(
        counter(&stats, "http", "reclaimed_answered"),
        before.1,
        "{stats}"
    );
    assert_counters_conserve(&stats);
}

/// `n` idle iperf3 control connections (half send their cookie, half nothing), each
/// connecting again while it is answered ACCESS_DENIED until it held the server; then a stock
/// `iperf3 -c` test runs within 3 s, and the idle tests were evicted (counted).
pub fn idle_iperf3_controls_give_way(dev: &Device, n: usize) {
    let before = counter(&dev.stats(), "iperf", "evicted");
    idle_iperf3_controls_give_way_to_a_client(dev, n);
    let stats = dev.stats();
    let evicted = counter(&stats, "iperf", "evicted") - before;
    assert!(evicted >= n as u64, "{evicted} evicted: {stats}");
    assert_counters_conserve(&stats);
}

/// [`idle_iperf3_controls_give_way`] without `/stats`: `n` idle control connections hold
/// the server in turn; a stock `iperf3 -c` is served within 3 s and every holder is reset.
fn idle_iperf3_controls_give_way_to_a_client(dev: &Device, n: usize) {
    let path = format!("/run/netns/{}", dev.ns.name);
    // One at a time: a holder holds the server once it is not denied.
    let mut held = Vec::new();
    for i in 0..n {
        let path = path.clone();
        held.push(
            std::thread::spawn(move || {
                enter_netns(&path);
                control_holder(i)
            })
            .join()
            .unwrap(),
        );
    }
    until_idle(&held);
    let started = Instant::now();
    let report = dev.iperf3(&["-n", "100K", "--connect-timeout", "3000"]);
    let waited = started.elapsed();
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    assert!(report.end_bytes("sum_sent") >= 100_000, "{:?}", report.end);
    for (i, h) in held.iter_mut().enumerate() {
        assert!(
            was_reset(&mut h.stream, Duration::from_secs(1)),
            "holder {i}"
        );
    }
}

/// A build without socket eviction (linklab-perf's `evict`; the minimal image): an idle
/// iperf3 control connection holds the server, and a stock `iperf3 -c` is told at once what a
/// stock server tells it while busy (ACCESS_DENIED: "the server is busy running a test"),
/// not left to hang; the holder is not reset for it. The session's watchdog (10 s without
/// activity) then ends the idle test, and the next client is served.
pub fn a_held_iperf3_server_answers_busy(dev: &Device) {
    let path = format!("/run/netns/{}", dev.ns.name);
    let mut holder = std::thread::spawn(move || {
        enter_netns(&path);
        control_holder(0)
    })
    .join()
    .unwrap();
    until_idle(std::slice::from_ref(&holder));
    let (status, text, took) = dev.iperf3_text(&["-n", "100K", "--connect-timeout", "3000"]);
    assert_eq!(status, Some(1), "{text}");
    assert!(text.contains("the server is busy running a test"), "{text}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    // Still held: the new client took nothing from it.
    assert!(!was_reset(&mut holder.stream, Duration::from_millis(300)));
    // The watchdog ends the idle test (a FIN or a RST) within its 10 s of the holder's
    // last byte, with a second to spare for the loop.
    let ended = wait_until(Duration::from_secs(12), || {
        holder
            .stream
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut sink = [0u8; 64];
        match holder.stream.read(&mut sink) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        }
    });
    assert!(ended, "the idle test held the server past its watchdog");
    let report = dev.iperf3(&["-n", "100K"]);
    assert!(report.end_bytes("sum_sent") >= 100_000, "{:?}", report.end);
}

/// One idle iperf3 control connection: connects, sends a cookie (even `i`) or nothing, and
/// keeps trying (every 250 ms, for up to 20 s) while the server answers ACCESS_DENIED.
fn control_holder(i: usize) -> Held {
    let device: SocketAddr = format!("{DEVICE}:5201").parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        assert!(Instant::now() < deadline, "holder {i} never held iperf3");
        let Ok(mut stream) = TcpStream::connect_timeout(&device, Duration::from_secs(3)) else {
            std::thread::sleep(Duration::from_millis(250));
            continue;
        };
        let at = Instant::now();
        if i.is_multiple_of(2) {
            let cookie = format!("{:0>36}\0", format!("idleholder{i}"));
            stream.write_all(cookie.as_bytes()).unwrap();
        }
        stream
            .set_read_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        let mut b = [0u8; 1];
        // ACCESS_DENIED (-1), a close or a reset: someone else holds the server. The
        // PARAM_EXCHANGE that answers a cookie, or nothing at all: we are the test.
        let denied = match stream.read(&mut b) {
            Ok(0) => true,
            Ok(_) => b[0] == 0xff,
            Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
        };
        if !denied {
            return Held { stream, at };
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}
