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

/// Everything a client flow writes, as a host would: the header as its own write, then
/// data in writes of `chunk` bytes (partial writes of a non-blocking socket); returns the
/// length written into `out`.
fn stream(cfg: TcpClientConfig, chunk: usize, out: &mut [u8]) -> usize {
    let mut c = TcpClientFlow::new(cfg, 0);
    let mut len = 0;
    let h = c.control_output().len();
    out[..h].copy_from_slice(c.control_output());
    c.control_sent(h, 0);
    len += h;
    let mut now = 0;
    while !TcpFlow::wants_close_write(&c) && now < 1_000_000 {
        let n = TcpFlow::send_allowance(&mut c, now).min(chunk);
        TcpFlow::fill(&c, &mut out[len..len + n]);
        TcpFlow::on_sent(&mut c, n, now);
        len += n;
        now += 1;
    }
    assert!(TcpFlow::wants_close_write(&c), "the flow ended");
    assert_eq!(c.sent(), len as u64);
    len
}

/// The byte stream of stock iperf 2.1.8's client (Client.cpp `SendFirstPayload`, `RunTCP`;
/// compat/string.c `pattern`; Settings.cpp `Settings_GenerateClientHdr`): the header
/// alone, then `-l` blocks of its write buffer — the header's bytes, zeros to 244, then
/// the digit of each byte's index in the buffer — the last cut to what `-n` leaves, the
/// header counted in `-n`.
#[test]
fn the_byte_stream_is_stock_2_1_8s() {
    let mut cfg = TcpClientConfig::new(request(Mode::Tradeoff, Amount::Bytes(3_000)));
    cfg.block_len = 1_000;
    let mut out = [0u8; 4_000];
    let len = stream(cfg, 333, &mut out);
    assert_eq!(len, 3_000);
    let s = &out[..len];
    // -r's 2.1 header: VERSION1 | EXTEND | the length bit | 60 << 1.
    let head = &s[..60];
    assert_eq!(&head[..4], &[0xC0, 0x01, 0x00, 0x78]);
    assert_eq!(
        &head[8..12],
        &5001u32.to_be_bytes(),
        "the port to connect back to"
    );
    assert_eq!(&head[20..24], &3_000u32.to_be_bytes(), "-n");
    // Block k starts at 60 + 1000 k: the header, zeros, the digits of indices 244..1000.
    for start in [60, 1_060, 2_060] {
        assert_eq!(&s[start..start + 60], head, "block at {start}");
        assert!(s[start + 60..start + 244].iter().all(|b| *b == 0));
        assert_eq!(&s[start + 244..start + 250], b"456789");
    }
    assert_eq!(
        &s[1_050..1_060],
        b"0123456789",
        "the end of block 0 (indices 990..999)"
    );
    // The last block cut at 940 bytes: index 939.
    assert_eq!(s[2_999], b'9');
    for (i, b) in s[60..].iter().enumerate() {
        let k = i % 1_000;
        let want = match k {
            0..60 => head[k],
            60..244 => 0,
            _ => b'0' + (k % 10) as u8,
        };
        assert_eq!(*b, want, "data byte {i}");
    }

    // -C: no header; the digits restart with every block (1002 is not a multiple of 10).
    let mut cfg = TcpClientConfig::new(request(Mode::Normal, Amount::Bytes(2_100)));
    cfg.style = HeaderStyle::None;
    cfg.block_len = 1_002;
    let len = stream(cfg, 4_096, &mut out);
    assert_eq!(len, 2_100);
    assert_eq!(&out[998..1_006], b"89010123");
    assert_eq!(&out[2_000..2_008], b"89010123", "and at 2004");

    // 2.0's 24-byte header begins every block the same way.
    let mut cfg = TcpClientConfig::new(request(Mode::Dual, Amount::Bytes(2_048)));
    cfg.style = HeaderStyle::V20;
    cfg.block_len = 1_000;
    let len = stream(cfg, 100, &mut out);
    assert_eq!(len, 2_048);
    assert_eq!(&out[..4], &[0x80, 0x00, 0x00, 0x01]);
    assert_eq!(&out[24..48], &out[..24]);
    assert_eq!(&out[1_024..1_048], &out[..24]);
    assert_eq!(&out[48..52], b"4567", "2.0 clears nothing after its header");
}

#[test]
fn fill_at_is_the_stream_from_any_offset() {
    let mut cfg = TcpClientConfig::new(request(Mode::Normal, Amount::Time(100)));
    cfg.block_len = 777;
    let c = TcpClientFlow::new(cfg, 0);
    let mut whole = [0u8; 3_000];
    c.fill_at(0, &mut whole);
    for offset in [0usize, 1, 59, 60, 776, 777, 778, 1_600] {
        let mut part = [0u8; 900];
        c.fill_at(offset as u64, &mut part);
        assert_eq!(&part[..], &whole[offset..offset + 900], "at {offset}");
    }
    assert_eq!(&whole[777..837], c.header());
}
