use super::*;
use crate::iperf2::request::HeaderStyle;

fn header(mode: Mode, amount: Amount, port: u32) -> [u8; 60] {
    let r = TestRequest {
        mode,
        amount,
        port,
        ..TestRequest::plain(Protocol::Tcp)
    };
    let mut b = [0u8; 60];
    r.write(HeaderStyle::V21, &mut b);
    b
}

#[test]
fn plain_2_1_8_client_gets_the_reply_and_completes() {
    let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
    let h = header(Mode::Normal, Amount::Time(100), 5001);
    // The header arrives one byte at a time, then data.
    for (i, b) in h.iter().enumerate() {
        c.on_received(core::slice::from_ref(b), i as u64);
    }
    assert_eq!(c.phase(), TcpPhase::Running);
    assert_eq!(c.control_output(), &ack_bytes()[..]);
    c.control_sent(10, 100);
    assert_eq!(c.control_output().len(), 18);
    c.control_sent(18, 100);
    assert!(c.control_output().is_empty());
    c.on_received(&[b'0'; 1000], 200);
    assert_eq!(c.send_allowance(200), 0);
    assert_eq!(c.take_connect_back(), None);
    c.on_peer_closed(300);
    assert!(c.is_finished());
    let o = c.outcome();
    // The header's 60 bytes count as received, as 2.1.8 counts them.
    assert_eq!((o.bytes_received, o.end), (1060, Some(TcpEnd::Completed)));
    assert_eq!(o.request.unwrap().mode, Mode::Normal);
}

use crate::iperf2::wire::ack::ack_bytes;

#[test]
fn headerless_client_is_a_plain_test() {
    let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
    c.on_received(b"0123456789012345", 1);
    assert_eq!(c.phase(), TcpPhase::Running);
    assert!(c.control_output().is_empty());
    c.on_peer_closed(2);
    assert_eq!(c.outcome().bytes_received, 16);
    assert_eq!(c.outcome().request, None);
    assert_eq!(c.outcome().end, Some(TcpEnd::Completed));
}

#[test]
fn tradeoff_connects_back_after_the_test_dual_at_once() {
    let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
    c.on_received(&header(Mode::Tradeoff, Amount::Bytes(1 << 20), 6001), 0);
    assert_eq!(c.take_connect_back(), None);
    c.control_sent(28, 0);
    c.on_peer_closed(5);
    let cb = c.take_connect_back().unwrap();
    assert_eq!(
        (cb.port, cb.amount, cb.dual),
        (6001, Amount::Bytes(1 << 20), false)
    );
    assert_eq!(c.take_connect_back(), None);

    let mut d = TcpServerConn::new(TcpServerConfig::default(), 0);
    d.on_received(&header(Mode::Dual, Amount::Time(0x8000_0000), 5001), 0);
    let cb = d.take_connect_back().unwrap();
    // A hostile 2^31 × 10 ms is cut to the server's cap (1 h).
    assert_eq!((cb.dual, cb.amount), (true, Amount::Time(360_000)));
}

#[test]
fn connect_back_to_port_zero_is_refused_the_test_still_runs() {
    let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
    c.on_received(&header(Mode::Dual, Amount::Time(100), 0), 0);
    assert_eq!(c.take_connect_back(), None);
    assert_eq!(c.phase(), TcpPhase::Running);
    assert!(c.outcome().connect_back_refused);
    let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
    c.on_received(&header(Mode::Dual, Amount::Time(100), 70_000), 0);
    assert_eq!(c.take_connect_back(), None);
}

#[test]
fn reverse_sends_its_amount_then_closes_write() {
    let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
    c.on_received(&header(Mode::Reverse, Amount::Bytes(5000), 5001), 0);
    // -R sets VERSION2: no reply.
    assert!(c.control_output().is_empty());
    assert_eq!(c.send_allowance(1), 5000);
    let mut buf = [0u8; 12];
    c.fill(&mut buf);
    assert_eq!(&buf, b"012345678901");
    c.on_sent(3000, 2);
    c.fill(&mut buf);
    assert_eq!(buf[0], b'0');
    c.on_sent(2000, 3);
    assert!(c.wants_close_write());
    c.write_closed();
    assert!(!c.is_finished());
    c.on_peer_closed(4);
    assert_eq!(c.outcome().bytes_sent, 5000);
    assert_eq!(c.outcome().end, Some(TcpEnd::Completed));
}

#[test]
fn full_duplex_ends_when_both_sides_are_done() {
    let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
    c.on_received(&header(Mode::FullDuplex, Amount::Time(100), 5001), 0);
    assert!(c.send_allowance(0) > 0);
    c.on_sent(100, 0);
    c.on_peer_closed(500_000);
    assert!(!c.is_finished());
    c.poll(1_000_000);
    assert!(c.wants_close_write());
    c.write_closed();
    assert_eq!(c.outcome().end, Some(TcpEnd::Completed));
}

#[test]
fn refusals() {
    let cfg = TcpServerConfig {
        serve_reverse: false,
        ..TcpServerConfig::default()
    };
    let mut c = TcpServerConn::new(cfg, 0);
    c.on_received(&header(Mode::Reverse, Amount::Time(100), 5001), 0);
    assert_eq!(
        c.phase(),
        TcpPhase::Finished(TcpEnd::Refused("-R is not served"))
    );
    // A bounceback header.
    let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
    c.on_received(&0x4081_0078u32.to_be_bytes(), 0);
    c.on_received(&[0; 56], 0);
    assert_eq!(
        c.phase(),
        TcpPhase::Finished(TcpEnd::Refused("--bounceback"))
    );
    // Length bits that say less than a v1 header.
    let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
    c.on_received(&0x4001_0008u32.to_be_bytes(), 0);
    assert!(matches!(c.phase(), TcpPhase::Finished(TcpEnd::Refused(_))));
}

#[test]
fn iperf3_cookie_is_refused_at_once() {
    // Cookies that start with a letter read as a header, with a digit as data: both refused
    // as soon as the 37th byte is in.
    let mut kinds = [false; 2];
    for seed in 0..64 {
        let cookie = crate::iperf::wire::make_cookie(seed);
        kinds[usize::from(cookie[0].is_ascii_digit())] = true;
        let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
        c.on_received(&cookie[..20], 0);
        assert!(!c.is_finished());
        c.on_received(&cookie[20..], 1);
        assert!(matches!(c.phase(), TcpPhase::Finished(TcpEnd::Refused(_))));
    }
    assert_eq!(kinds, [true, true]);
}

#[test]
fn watchdog_and_long_headers() {
    let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
    c.on_received(&header(Mode::Normal, Amount::Time(100), 5001)[..30], 0);
    assert_eq!(c.poll_at(0), Some(10_000_000));
    c.poll(10_000_000);
    assert_eq!(c.outcome().end, Some(TcpEnd::IdleTimeout));
    // An 80-byte header (trip times): 60 kept, 20 skipped, all counted; then data.
    let mut h = [0u8; 100];
    h[..60].copy_from_slice(&header(Mode::Normal, Amount::Time(100), 5001));
    h[..4].copy_from_slice(&0x4001_00A0u32.to_be_bytes());
    let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
    c.on_received(&h, 0);
    assert_eq!(c.request().unwrap().header_len, 80);
    assert_eq!(c.outcome().bytes_received, 100);
}

#[test]
fn never_panics_on_any_prefix() {
    // Every short prefix of every mode's header, each byte value at each position.
    for mode in [Mode::Normal, Mode::Tradeoff, Mode::Reverse] {
        let h = header(mode, Amount::Time(100), 5001);
        for cut in 0..h.len() {
            for v in [0u8, 0xFF, 0x80] {
                let mut b = h;
                b[cut] = v;
                let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
                c.on_received(&b[..cut + 1], 0);
                c.on_peer_closed(1);
                let _ = c.send_allowance(2);
                let _ = c.take_connect_back();
                c.poll(20_000_000);
                assert!(c.is_finished() || c.send_allowance(3) > 0);
            }
        }
    }
}

#[test]
fn iperf3_probe_cookie_gets_the_reply_then_refused() {
    let seed = (0..4000u64)
        .find(|s| crate::iperf2::detect::elicits_iperf2_reply(&crate::iperf::wire::make_cookie(*s)))
        .unwrap();
    let cookie = crate::iperf::wire::make_cookie(seed);
    let mut c = TcpServerConn::new(TcpServerConfig::default(), 0);
    c.on_received(&cookie, 0);
    assert!(!c.is_finished());
    assert_eq!(c.control_output().len(), 28);
    c.control_sent(28, 1);
    assert!(c.is_finished());
    assert!(matches!(c.outcome().end, Some(TcpEnd::Refused(_))));
}
