//! Fuzzes the iperf 2 sessions as a host drives them: a server TCP connection and a client
//! TCP flow fed arbitrary bytes in fuzzer-chosen chunks (with FIN and the host's writes and
//! shutdowns), and the UDP server fed arbitrary datagrams from fuzzer-chosen peers. The
//! clock advances by fuzzer-chosen steps. Nothing may panic; every output is bounded; a
//! connect-back never goes to port 0.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_perf::iperf2::client::{TcpClientConfig, TcpClientFlow};
use linklab_perf::iperf2::flow::TcpFlow;
use linklab_perf::iperf2::request::{Amount, Mode, Protocol, TestRequest};
use linklab_perf::iperf2::tcp_server::{TcpServerConfig, TcpServerConn};
use linklab_perf::iperf2::udp_server::{UdpServer, UdpServerConfig};

fn step(chunk: &[u8]) -> u64 {
    chunk.last().map_or(1000, |b| 1u64 << (b % 40))
}

fn drive(flow: &mut impl TcpFlow, data: &[u8], split: usize, close_at: usize) {
    let mut now = 0u64;
    let mut buf = [0u8; 512];
    for (i, chunk) in data.chunks(split).enumerate() {
        flow.on_received(chunk, now);
        if i == close_at {
            flow.on_peer_closed(now);
        }
        let c = flow.control_output().len();
        assert!(c <= 60);
        flow.control_sent(c.min(7), now);
        let n = flow.send_allowance(now).min(buf.len());
        flow.fill(&mut buf[..n]);
        flow.on_sent(n, now);
        if flow.wants_close_write() {
            flow.write_closed(now);
        }
        now = now.saturating_add(step(chunk));
        flow.poll(now);
        let _ = flow.poll_at(now);
        if flow.is_finished() {
            break;
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(1, |b| usize::from(*b % 61) + 1);
    let close_at = data.get(1).map_or(usize::MAX, |b| usize::from(*b));

    let mut conn = TcpServerConn::new(TcpServerConfig::default(), 0);
    drive(&mut conn, data, split, close_at);
    if let Some(cb) = conn.take_connect_back() {
        assert_ne!(cb.port, 0);
    }
    let _ = conn.outcome();

    for mode in [Mode::Normal, Mode::Reverse, Mode::FullDuplex] {
        let req = TestRequest {
            mode,
            amount: Amount::Time(10),
            port: 5001,
            peer_detect: data.get(2).is_some_and(|b| b & 1 != 0),
            ..TestRequest::plain(Protocol::Tcp)
        };
        let mut client = TcpClientFlow::new(TcpClientConfig::new(req), 0);
        drive(&mut client, data, split, close_at);
        let _ = (client.end(), client.received(), client.sent());
    }

    let mut udp = UdpServer::<u8, 4>::new(UdpServerConfig::default());
    let mut out = [0u8; 2048];
    let mut now = 0u64;
    let mut rest = data.get(2..).unwrap_or(&[]);
    while let Some((&head, tail)) = rest.split_first() {
        let n = usize::from(head).min(tail.len());
        let (d, next) = tail.split_at(n);
        udp.on_datagram(head % 6, d, now);
        let mut sent = 0;
        while let Some((_, len)) = udp.next_output(now, &mut out) {
            assert!(len <= out.len());
            sent += 1;
            if sent > 64 {
                break;
            }
        }
        while let Some((_, cb)) = udp.take_connect_back() {
            assert_ne!(cb.port, 0);
        }
        now = now.saturating_add(step(d));
        udp.poll(now);
        while udp.take_finished().is_some() {}
        rest = next;
    }
});
