use super::*;
use crate::iperf2::request::Protocol;
use crate::iperf2::tcp_server::{TcpEnd, TcpServerConfig, TcpServerConn};

fn request(mode: Mode, amount: Amount) -> TestRequest {
    TestRequest {
        mode,
        amount,
        port: 5001,
        ..TestRequest::plain(Protocol::Tcp)
    }
}

/// Runs a client flow against our server flow in memory, 1 ms per turn; returns both.
fn pair(cfg: TcpClientConfig) -> (TcpClientFlow, TcpServerConn) {
    let mut c = TcpClientFlow::new(cfg, 0);
    let mut s = TcpServerConn::new(TcpServerConfig::default(), 0);
    let mut buf = [0u8; 4096];
    let (mut c_shut, mut s_shut) = (false, false);
    let mut now = 0;
    while !(c.is_finished() && s.is_finished()) && now < 20_000_000 {
        // client -> server
        let h = c.control_output().len();
        if h > 0 {
            let out = c.control_output();
            let mut tmp = [0u8; 60];
            tmp[..h].copy_from_slice(out);
            s.on_received(&tmp[..h], now);
            c.control_sent(h, now);
        }
        let n = TcpFlow::send_allowance(&mut c, now).min(buf.len());
        if n > 0 {
            TcpFlow::fill(&c, &mut buf[..n]);
            s.on_received(&buf[..n], now);
            TcpFlow::on_sent(&mut c, n, now);
        }
        if TcpFlow::wants_close_write(&c) {
            TcpFlow::write_closed(&mut c, now);
            c_shut = true;
            s.on_peer_closed(now);
        }
        // server -> client
        let a = s.control_output().len();
        if a > 0 {
            let mut tmp = [0u8; 28];
            tmp[..a].copy_from_slice(s.control_output());
            c.on_received(&tmp[..a], now);
            s.control_sent(a, now);
        }
        let n = s.send_allowance(now).min(buf.len());
        if n > 0 {
            s.fill(&mut buf[..n]);
            c.on_received(&buf[..n], now);
            s.on_sent(n, now);
        }
        if s.wants_close_write() {
            s.write_closed();
            s_shut = true;
            c.on_peer_closed(now);
        }
        c.poll(now);
        s.poll(now);
        now += 1000;
    }
    assert!(c_shut || c.end() != Some(ClientEnd::Completed) || cfg.request.mode == Mode::Reverse);
    let _ = s_shut;
    (c, s)
}

#[test]
fn bytes_test_sends_exactly_n_header_included() {
    let (c, s) = pair(TcpClientConfig::new(request(
        Mode::Normal,
        Amount::Bytes(100_000),
    )));
    assert_eq!(c.end(), Some(ClientEnd::Completed));
    assert_eq!(c.sent(), 100_000);
    assert_eq!(s.outcome().bytes_received, 100_000);
    assert_eq!(s.outcome().end, Some(TcpEnd::Completed));
    assert_eq!(c.peer_version(), Some((0x0002_0001, 0x0008_0003)));
}

#[test]
fn reverse_and_full_duplex_move_both_counts() {
    let (c, s) = pair(TcpClientConfig::new(request(
        Mode::Reverse,
        Amount::Bytes(50_000),
    )));
    assert_eq!(c.end(), Some(ClientEnd::Completed));
    assert_eq!((c.received(), s.outcome().bytes_sent), (50_000, 50_000));
    let (c, s) = pair(TcpClientConfig::new(request(
        Mode::FullDuplex,
        Amount::Time(10),
    )));
    assert_eq!(c.end(), Some(ClientEnd::Completed));
    assert_eq!(c.received(), s.outcome().bytes_sent);
    assert_eq!(c.sent(), s.outcome().bytes_received);
    assert!(c.received() > 0 && c.sent() > 60);
}

#[test]
fn peer_detect_waits_for_the_reply() {
    let r = TestRequest {
        peer_detect: true,
        ..request(Mode::Normal, Amount::Bytes(1000))
    };
    let mut c = TcpClientFlow::new(TcpClientConfig::new(r), 0);
    c.control_sent(60, 0);
    assert_eq!(TcpFlow::send_allowance(&mut c, 1), 0);
    c.on_received(&crate::iperf2::wire::ack::ack_bytes(), 2);
    assert_eq!(TcpFlow::send_allowance(&mut c, 3), 940);
    // A server that never replies: the watchdog.
    let mut c = TcpClientFlow::new(TcpClientConfig::new(r), 0);
    c.control_sent(60, 0);
    TcpFlow::poll(&mut c, 10_000_000);
    assert_eq!(c.end(), Some(ClientEnd::Timeout));
}

#[test]
fn an_iperf3_server_is_named() {
    for style in [HeaderStyle::V21, HeaderStyle::V20, HeaderStyle::None] {
        let mut cfg = TcpClientConfig::new(request(Mode::Normal, Amount::Time(100)));
        cfg.style = style;
        let mut c = TcpClientFlow::new(cfg, 0);
        c.control_sent(60, 0);
        // iperf3's PARAM_EXCHANGE after reading the first 37 bytes as its cookie.
        c.on_received(&[9], 1);
        assert_eq!(c.end(), Some(ClientEnd::Iperf3Server), "{style:?}");
    }
}
