//! The SYN rule of `DeviceApps` (`linklab_perf::evict`), frame by frame: the device's apps
//! over smoltcp on a scripted wire, peers that are TCP clients of a few lines (SYN, then the
//! ACK of the SYN-ACK, as a kernel does) and ghosts that never answer ARP. What must hold: a
//! client whose SYN-ACK left is never reset by another client's SYN — it was answered, so it
//! believes it is connected — and spoofed SYNs still cannot keep real clients out.
//!
//! The first case is the sequence that reset an idle holder in CI: three SYNs in
//! one batch while two idle connections hold both HTTP sockets. The first two evict them; the
//! flush that sends the second eviction's RST also sends the first newcomer's SYN-ACK; the
//! third SYN then took that answered half-open socket, and the newcomer's ACK met a RST.
//!
//! The embassy image's residual: a download one of whose segments was lost waits
//! for the device's retransmission (1 s), its client sending duplicate ACKs, no progress; a
//! holder's SYN 800 ms in took its socket and reset it.
//!
//! The last cases are the real iperf3 tests a mixed-load soak lost: a stream's
//! SYN taken by the next SYN of the same batch before its SYN-ACK could leave, and a test
//! evicted at 0.75 s while it waited for its stream's retransmitted SYN (1 s).

mod lab;
mod wire;

use lab::{Client, Lab};
use smoltcp::time::Duration;
use smoltcp::wire::{EthernetFrame, Ipv4Packet, TcpControl, TcpPacket};
use wire::*;

#[test]
fn an_answered_handshake_is_not_reset_by_the_next_syn() {
    let mut lab = Lab::new();
    // Two idle holders hold both HTTP sockets for longer than the grace.
    lab.syn(40001, 80);
    lab.syn(40002, 80);
    lab.poll(); // SYN-ACKs
    lab.poll(); // their ACKs
    assert_eq!(lab.client(40001), Client::Connected);
    assert_eq!(lab.client(40002), Client::Connected);
    lab.wait(1000);
    // Three newcomers in one batch.
    lab.syn(40003, 80);
    lab.syn(40004, 80);
    lab.syn(40005, 80);
    lab.poll();
    lab.poll();
    // The idle holders were evicted (that is the rule); no newcomer that was answered was
    // reset. The one whose socket went to the next SYN before its SYN-ACK left waits for its
    // own retransmission, unhurt.
    assert_eq!(lab.client(40001), Client::Reset);
    assert_eq!(lab.client(40002), Client::Reset);
    for port in [40003, 40004, 40005] {
        assert_ne!(
            lab.client(port),
            Client::Reset,
            "client {port} was reset after it was answered"
        );
    }
    let connected = [40003, 40004, 40005]
        .iter()
        .filter(|p| lab.client(**p) == Client::Connected)
        .count();
    assert_eq!(connected, 2);
    assert_eq!(lab.counter("http", "evicted"), 2);
    assert_eq!(lab.counter("http", "reclaimed_answered"), 0);
}

#[test]
fn a_syn_waits_while_a_handshake_we_answered_completes() {
    let mut lab = Lab::new();
    // Client A's SYN is answered; before its ACK comes, B's SYN for the one echo socket.
    lab.syn(41001, 7);
    lab.device_pass(); // A's SYN in, its SYN-ACK out; A's ACK is "in flight"
    let syn_ack_out: Vec<Vec<u8>> = std::mem::take(&mut lab.wire.from_device);
    assert!(!syn_ack_out.is_empty(), "A's SYN-ACK left");
    lab.now += Duration::from_millis(5);
    lab.syn(41002, 7);
    lab.device_pass();
    assert!(
        lab.wire.from_device.is_empty(),
        "B's SYN was dropped unanswered, not refused: {:?}",
        lab.wire.from_device
    );
    assert_eq!(lab.counter("echo", "tcp_listen_drops"), 1);
    // A's ACK arrives: A is connected, never reset.
    for frame in syn_ack_out {
        lab.host_sees(&frame);
    }
    lab.poll();
    lab.poll();
    assert_eq!(lab.client(41001), Client::Connected);
    assert_eq!(lab.counter("echo", "tcp_reclaimed"), 0);
}

#[test]
fn spoofed_syns_do_not_keep_a_real_client_out() {
    let mut lab = Lab::new();
    // Ghosts (no ARP answer: their SYN-ACKs never leave) hold both HTTP sockets.
    lab.ghost_syn(30001, 80);
    lab.ghost_syn(30002, 80);
    lab.poll();
    // A real client, then more ghosts in the same batch as its handshake and right after.
    lab.syn(42001, 80);
    lab.ghost_syn(30003, 80);
    lab.poll();
    lab.ghost_syn(30004, 80);
    lab.wait(10);
    lab.ghost_syn(30005, 80);
    lab.wait(10);
    lab.poll();
    assert_eq!(lab.client(42001), Client::Connected);
    assert!(lab.counter("http", "reclaimed") >= 3);
    assert_eq!(lab.counter("http", "reclaimed_answered"), 0);
    assert_eq!(lab.counter("http", "listen_drops"), 0);
}

#[test]
fn a_handshake_unanswered_for_the_grace_gives_way() {
    let mut lab = Lab::new();
    // A client that is answered but never completes (its ACK lost, or a spoofed source
    // with a route): after the grace, a new SYN takes its socket, counted as answered.
    lab.syn(43001, 7);
    lab.device_pass();
    // The SYN-ACK is lost on the way: nothing comes back.
    lab.wire.from_device.clear();
    lab.now += Duration::from_millis(800);
    lab.syn(43002, 7);
    lab.poll();
    lab.poll();
    assert_eq!(lab.client(43002), Client::Connected);
    assert_eq!(lab.counter("echo", "tcp_reclaimed_answered"), 1);
}

#[test]
fn a_spoofed_syn_does_not_take_an_iperf3_client_s_answered_handshake() {
    // CI's second reset: stock iperf3's control connection under the SYN flood. Ghosts hold
    // every socket of the iperf3 pool; a real client takes one (an unanswered ghost's), is
    // answered, and before its ACK another ghost SYN comes. Every half-open socket then
    // looked alike to the pool (none had a time), and the first — the client's — was taken.
    let mut lab = Lab::new();
    let pool = linklab_perf::iperf::device::MAX_TCP_SOCKETS as u16;
    for port in 30001..=30000 + pool {
        lab.ghost_syn(port, 5201);
    }
    lab.wait(10);
    lab.syn(44001, 5201);
    lab.device_pass();
    let answer: Vec<Vec<u8>> = std::mem::take(&mut lab.wire.from_device);
    lab.now += Duration::from_millis(5);
    lab.ghost_syn(31000, 5201);
    lab.poll();
    for frame in answer {
        lab.host_sees(&frame); // the SYN-ACK reaches the client, its ACK goes back
    }
    lab.poll();
    lab.poll();
    assert_eq!(lab.client(44001), Client::Connected);
    assert_eq!(lab.counter("iperf", "reclaimed_answered"), 0);
    assert!(lab.counter("iperf", "reclaimed") >= 2);
}

/// The data segments in `frames` the device sent to host port `port`: (sequence number,
/// payload length, FIN, RST).
fn data_to(frames: &[Vec<u8>], port: u16) -> Vec<(u32, usize, bool, bool)> {
    frames
        .iter()
        .filter_map(|f| {
            let eth = EthernetFrame::new_checked(f).ok()?;
            let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
            let tcp = TcpPacket::new_checked(ip.payload()).ok()?;
            (tcp.dst_port() == port).then(|| {
                let seq = tcp.seq_number().0 as u32;
                (seq, tcp.payload().len(), tcp.fin(), tcp.rst())
            })
        })
        .collect()
}

#[test]
fn a_download_waiting_for_our_retransmission_is_not_evicted() {
    let mut lab = Lab::new();
    // Client A downloads /10kB.txt; the device's first data segment is lost on the way.
    lab.syn(45001, 80);
    lab.device_pass();
    let syn_ack = data_to(&lab.wire.from_device, 45001);
    let device_isn = syn_ack[0].0;
    lab.wire.from_device.clear();
    let request = b"GET /10kB.txt HTTP/1.1\r\nHost: x\r\n\r\n";
    let ack = device_isn.wrapping_add(1);
    lab.wire.to_device.push_back(data_segment(
        HOST_IP,
        45001,
        80,
        TcpControl::Psh,
        ISN + 1,
        Some(ack),
        request,
    ));
    lab.device_pass();
    let sent = data_to(&lab.wire.from_device, 45001);
    assert!(
        sent.len() >= 2 && sent[0].1 > 0,
        "the device sent data: {sent:?}"
    );
    lab.wire.from_device.clear();
    // A acknowledges what arrived in order: nothing (the first segment is missing) — one
    // duplicate ACK per segment that came.
    let client_seq = ISN + 1 + request.len() as u32;
    for _ in 1..sent.len() {
        lab.wire.to_device.push_back(data_segment(
            HOST_IP,
            45001,
            80,
            TcpControl::None,
            client_seq,
            Some(ack),
            &[],
        ));
    }
    lab.device_pass();
    lab.wire.from_device.clear();
    // B takes the other HTTP socket 500 ms later (within the grace at C's SYN).
    lab.now += Duration::from_millis(500);
    lab.syn(45002, 80);
    lab.poll();
    lab.poll();
    assert_eq!(lab.client(45002), Client::Connected);
    // C's SYN 800 ms after A's last progress: A may be waiting for our retransmission.
    lab.now += Duration::from_millis(300);
    lab.syn(45003, 80);
    lab.device_pass();
    let to_a = data_to(&lab.wire.from_device, 45001);
    assert!(
        to_a.iter().all(|s| !s.3),
        "A, waiting for our retransmission, was reset: {to_a:?}"
    );
    lab.wire.from_device.clear();
    assert_eq!(lab.counter("http", "evicted"), 0);
    assert_eq!(lab.counter("http", "listen_drops"), 1);
    // At 1 s the device sends the lost segment again: A acknowledges everything it has.
    let mut resent = Vec::new();
    for _ in 0..12 {
        lab.now += Duration::from_millis(25);
        lab.device_pass();
        resent.extend(data_to(&std::mem::take(&mut lab.wire.from_device), 45001));
        if resent.iter().any(|s| s.0 == ack) {
            break;
        }
    }
    assert!(
        resent.iter().any(|s| s.0 == ack && s.1 > 0 && !s.3),
        "the lost segment was not sent again by 1.1 s: {resent:?}"
    );
}

#[test]
fn a_syn_in_the_same_batch_does_not_take_a_real_client_s_fresh_handshake() {
    // A mixed-load soak's lost stream SYNs: a real client's SYN takes the one listening
    // socket, and another SYN in the same batch finds none listening. The first handshake's
    // SYN-ACK had not left yet, so it looked unanswered — like a spoofed one's — and the
    // second SYN took its socket: the client's SYN vanished, neither answered nor reset.
    let mut lab = Lab::new();
    lab.syn(46001, 7);
    lab.ghost_syn(30001, 7);
    lab.poll();
    lab.poll();
    assert_eq!(lab.client(46001), Client::Connected);
    assert_eq!(lab.counter("echo", "tcp_reclaimed"), 0);
    assert_eq!(lab.counter("echo", "tcp_listen_drops"), 1);
    // The other way round a spoofed SYN's socket still gives way to the real client.
    let mut lab = Lab::new();
    lab.ghost_syn(30002, 7);
    lab.syn(46002, 7);
    lab.poll();
    lab.poll();
    assert_eq!(lab.client(46002), Client::Connected);
    assert_eq!(lab.counter("echo", "tcp_reclaimed"), 1);
}

/// An iperf3 client on host port `control` that connected its control connection, sent its
/// cookie and parameters for one TCP stream and got CREATE_STREAMS: the device now waits for
/// the stream's SYN.
fn iperf3_creating_streams(lab: &mut Lab, control: u16) {
    let cookie = *b"linklabsynruleabcdefghijklmnopqrstuv\0";
    lab.talk(control, 5201);
    lab.poll();
    lab.poll();
    lab.send(control, 5201, &cookie);
    lab.poll();
    lab.poll();
    assert_eq!(lab.got(control), [9], "PARAM_EXCHANGE");
    let params = br#"{"tcp":true,"omit":0,"time":0,"num":1000,"parallel":1,"len":1000}"#;
    let mut message = (params.len() as u32).to_be_bytes().to_vec();
    message.extend_from_slice(params);
    lab.send(control, 5201, &message);
    lab.poll();
    lab.poll();
    assert_eq!(lab.got(control), [9, 10], "CREATE_STREAMS");
}

#[test]
fn an_iperf3_test_waits_for_its_stream_s_retransmitted_syn() {
    // The other half of the soak's lost streams: the stream's SYN is lost, and the client
    // sends it again after 1 s. Meanwhile spoofed SYNs fill the data socket that listens for
    // it; at 0.75 s the next one evicted the test (an idle connection goes before a half-open
    // one), and the client's control connection got a RST ("Broken pipe").
    let mut lab = Lab::new();
    let (control, stream) = (47001, 47002);
    iperf3_creating_streams(&mut lab, control);
    // The stream's first SYN is lost. Ghosts' SYNs every 100 ms.
    for n in 0..10 {
        lab.ghost_syn(32000 + n, 5201);
        lab.wait(100);
    }
    assert_eq!(
        lab.client(control),
        Client::Connected,
        "the test was evicted"
    );
    // At 1 s the client sends the stream's SYN again: it finds a ghost's socket.
    lab.syn(stream, 5201);
    lab.poll();
    lab.poll();
    assert_eq!(lab.client(stream), Client::Connected);
    assert_eq!(lab.client(control), Client::Connected);
    assert_eq!(lab.counter("iperf", "evicted"), 0);
    assert!(lab.counter("iperf", "reclaimed") >= 1);
}

#[test]
fn an_iperf3_test_whose_streams_never_come_gives_way_after_twice_the_grace() {
    // A holder that connects, gets CREATE_STREAMS and never opens a stream still gives way
    // to a new client, once twice the grace passed.
    let mut lab = Lab::new();
    iperf3_creating_streams(&mut lab, 48001);
    for n in 0..20 {
        lab.ghost_syn(33000 + n, 5201);
        lab.wait(100);
    }
    assert_eq!(lab.client(48001), Client::Reset);
    assert_eq!(lab.counter("iperf", "evicted"), 1);
}

#[test]
fn a_stream_s_syn_is_not_refused_while_a_would_be_stream_holds_its_listener() {
    // A mixed-load soak's "unable to connect stream: Connection refused": another client
    // connected to the port while a test's streams were being connected and took the one
    // data socket listening; the stream's SYN, right after, found none and got a RST. The
    // would-be stream is settled within a round trip (its cookie is the test's or it is not),
    // so the SYN is dropped for the client to send again, as a stock server's backlog would
    // have taken it.
    let mut lab = Lab::new();
    let (control, stray, stream) = (49001, 49002, 49003);
    iperf3_creating_streams(&mut lab, control);
    lab.talk(stray, 5201);
    lab.poll();
    lab.poll();
    assert_eq!(lab.client(stray), Client::Connected);
    lab.syn(stream, 5201);
    lab.poll();
    assert_ne!(
        lab.client(stream),
        Client::Reset,
        "the stream's SYN was refused"
    );
    // The stray sends a cookie that is not the test's: denied, its socket listens again.
    lab.send(stray, 5201, b"strayxxxxxxabcdefghijklmnopqrstuvwxy\0");
    lab.wait(10);
    lab.wait(10);
    // The client sends the stream's SYN again (1 s later): it connects.
    lab.clients.retain(|(p, _)| *p != stream);
    lab.now += Duration::from_millis(1000);
    lab.syn(stream, 5201);
    lab.poll();
    lab.poll();
    assert_eq!(lab.client(stream), Client::Connected);
    assert_eq!(lab.client(control), Client::Connected);
}

/// The SYN counters of `app` (with `prefix` on echo's names): syns, held, dropped.
fn syn_counters(lab: &Lab, app: &str, prefix: &str) -> [u64; 3] {
    ["syns", "syns_held", "listen_drops"].map(|n| lab.counter(app, &format!("{prefix}{n}")))
}

#[test]
fn a_syn_that_finds_every_connection_moving_waits_unanswered_and_gets_in_later() {
    // Two downloads hold both HTTP sockets, each acknowledged as it comes: a third client's
    // SYN is dropped unanswered — no RST, as lwIP drops a SYN it has no PCB for — and its
    // SYN sent again once a download ended is served. Every SYN is counted by its fate.
    let mut lab = Lab::new();
    let (a, b, c) = (50001, 50002, 50003);
    for port in [a, b] {
        lab.talk(port, 80);
    }
    lab.poll();
    lab.poll();
    for port in [a, b] {
        lab.send(port, 80, b"GET /100kB.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    }
    lab.wait(1);
    lab.wait(1);
    assert!(
        !lab.got(a).is_empty() && !lab.got(b).is_empty(),
        "both download"
    );
    lab.syn(c, 80);
    lab.device_pass();
    let to_c: Vec<_> = lab
        .wire
        .from_device
        .iter()
        .filter(|f| !data_to(std::slice::from_ref(f), c).is_empty())
        .collect();
    assert!(
        to_c.is_empty(),
        "the busy device answered the SYN: {to_c:?}"
    );
    lab.poll();
    assert_eq!(lab.client(c), Client::Connecting);
    assert_eq!(syn_counters(&lab, "http", ""), [3, 0, 1]);
    // The downloads go on (a millisecond a pass) until both are whole.
    for _ in 0..2000 {
        if lab.got(a).len() > 100_000 && lab.got(b).len() > 100_000 {
            break;
        }
        lab.wait(1);
    }
    assert!(lab.got(a).len() > 100_000 && lab.got(b).len() > 100_000);
    assert_ne!(lab.client(a), Client::Reset);
    assert_ne!(lab.client(b), Client::Reset);
    // The client's retransmitted SYN (same port) finds a socket.
    lab.clients.retain(|(p, _)| *p != c);
    lab.now += Duration::from_millis(1000);
    lab.syn(c, 80);
    lab.poll();
    lab.poll();
    assert_eq!(lab.client(c), Client::Connected);
    assert_eq!(syn_counters(&lab, "http", ""), [4, 0, 1]);
    assert_eq!(lab.counter("http", "evicted"), 0);
}

#[test]
fn echo_s_one_socket_busy_drops_the_next_syn_and_counts_it() {
    // TCP echo's one socket carries a connection that just opened (progress within the
    // grace): the next client waits unanswered, and every SYN is counted.
    let mut lab = Lab::new();
    lab.syn(51001, 7);
    lab.poll();
    lab.poll();
    assert_eq!(lab.client(51001), Client::Connected);
    lab.wait(10);
    lab.syn(51002, 7);
    lab.poll();
    assert_eq!(lab.client(51002), Client::Connecting);
    assert_eq!(syn_counters(&lab, "echo", "tcp_"), [2, 0, 1]);
}
