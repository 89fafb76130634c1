use super::*;
use crate::iperf2::request::{Amount, HeaderStyle, Protocol};
use crate::iperf2::wire::report::DATAGRAM_LEN;

/// A client datagram: id, send time, the 2.1.8 header of `mode` inside.
fn dgram(id: i64, sent_us: u64, mode: Mode, port: u32) -> [u8; 200] {
    let mut b = [b'0'; 200];
    let r = TestRequest {
        mode,
        port,
        amount: Amount::Time(100),
        rate_bps: 8_000_000,
        ..TestRequest::plain(Protocol::Udp)
    };
    r.write(HeaderStyle::V21, &mut b[16..]);
    let mut d = UdpDatagram::new_unchecked(&mut b[..]);
    d.set_seq(id);
    d.set_sent_us(sent_us);
    b
}

fn report_of(buf: &[u8]) -> ReportInfo {
    ServerReport::new_checked(&buf[16..]).unwrap().info()
}

#[test]
fn flow_fin_report_and_fresh_repeats() {
    let mut s = UdpServer::<u8, 2>::new(UdpServerConfig::default());
    let mut out = [0u8; 2048];
    // ids 1 2 4 3 5, transit 1 ms each, then the FIN -6.
    for (i, id) in [1i64, 2, 4, 3, 5].iter().enumerate() {
        let t = i as u64 * 1000;
        assert!(s.on_datagram(7, &dgram(*id, t, Mode::Normal, 5001), t + 1000));
    }
    assert_eq!(s.next_output(5_000, &mut out), None);
    assert!(s.on_datagram(7, &dgram(-6, 5_000, Mode::Normal, 5001), 6_000));
    let (peer, n) = s.next_output(6_000, &mut out).unwrap();
    assert_eq!((peer, n), (7, DATAGRAM_LEN));
    assert_eq!(&out[..16], &[0u8; 16]);
    let r = report_of(&out[..n]);
    assert_eq!(r.flags, 0x8800_0000);
    assert_eq!(
        (r.bytes, r.datagrams, r.lost, r.out_of_order),
        (1200, 6, 0, 1)
    );
    assert!((r.duration_s - 0.005).abs() < 1e-9);
    // Jitter as 2.1.8: the first transit (1 ms) from 0, then equal transits.
    let mut j = 0.001 / 16.0;
    for _ in 0..5 {
        j -= j / 16.0;
    }
    assert!((r.jitter_s - j).abs() < 2e-6, "{} vs {}", r.jitter_s, j);
    assert_eq!(s.next_output(6_000, &mut out), None);
    // The client's repeat gets the report again, built fresh.
    out.fill(0xEE);
    assert!(s.on_datagram(7, &dgram(-7, 5_000, Mode::Normal, 5001), 16_000));
    let (_, n) = s.next_output(16_000, &mut out).unwrap();
    assert_eq!(report_of(&out[..n]).datagrams, 6);
    // After the linger the flow is done and reported once.
    s.poll(16_000 + 2_500_000);
    let (peer, o) = s.take_finished().unwrap();
    assert_eq!((peer, o.reports_sent, o.timed_out), (7, 2, false));
    assert!(s.take_finished().is_none());
    assert!(!s.is_busy());
}

#[test]
fn fin_flood_gets_bounded_reports() {
    let mut s = UdpServer::<u8, 1>::new(UdpServerConfig::default());
    let mut out = [0u8; 256];
    s.on_datagram(1, &dgram(1, 0, Mode::Normal, 5001), 0);
    let mut reports = 0;
    for k in 0..1000 {
        s.on_datagram(1, &dgram(-2 - k, 0, Mode::Normal, 5001), 10 + k as u64);
        while s.next_output(10, &mut out).is_some() {
            reports += 1;
        }
    }
    assert_eq!(reports, usize::from(UdpServerConfig::default().max_reports));
}

#[test]
fn stale_fin_and_runts_start_nothing_and_full_table_refuses() {
    let mut s = UdpServer::<u8, 1>::new(UdpServerConfig::default());
    assert!(!s.on_datagram(1, &dgram(-9, 0, Mode::Normal, 5001), 0));
    assert!(!s.on_datagram(1, &[1, 2, 3], 0));
    assert!(!s.is_busy());
    assert!(s.on_datagram(1, &dgram(1, 0, Mode::Normal, 5001), 0));
    assert!(!s.on_datagram(2, &dgram(1, 0, Mode::Normal, 5001), 0));
    assert_eq!(s.refused(), 1);
    // Runts inside a flow are ignored, not counted.
    assert!(s.on_datagram(1, &[0; 5], 1));
    assert_eq!(s.sessions().next().unwrap().1.stats().received, 1);
    // A flow without a FIN ends by the watchdog, no report sent.
    s.poll(10_000_001);
    let (_, o) = s.take_finished().unwrap();
    assert!(o.timed_out && o.reports_sent == 0);
}

#[test]
fn connect_back_dual_at_once_tradeoff_after_fin_port_zero_refused() {
    let mut s = UdpServer::<u8, 3>::new(UdpServerConfig::default());
    s.on_datagram(1, &dgram(1, 0, Mode::Dual, 6001), 0);
    let (p, cb) = s.take_connect_back().unwrap();
    assert_eq!(
        (p, cb.port, cb.dual, cb.protocol),
        (1, 6001, true, Protocol::Udp)
    );
    assert_eq!(cb.rate_bps, 8_000_000);
    s.on_datagram(2, &dgram(1, 0, Mode::Tradeoff, 6002), 0);
    assert!(s.take_connect_back().is_none());
    s.on_datagram(2, &dgram(-2, 0, Mode::Tradeoff, 6002), 1);
    assert_eq!(s.take_connect_back().unwrap().1.port, 6002);
    s.on_datagram(3, &dgram(1, 0, Mode::Dual, 0), 0);
    assert!(s.take_connect_back().is_none());
    assert!(s
        .sessions()
        .any(|(p, x)| p == 3 && x.outcome().connect_back_refused));
}

#[test]
fn reverse_sends_paced_then_one_fin() {
    let mut s = UdpServer::<u8, 1>::new(UdpServerConfig::default());
    // -R for 1 s at 8 Mbit/s with 1470-byte datagrams: ~680 datagrams.
    s.on_datagram(1, &dgram(1, 0, Mode::Reverse, 5001), 0);
    let mut out = [0u8; 2048];
    let (mut now, mut data, mut fin) = (0u64, 0u64, 0);
    while s.is_busy() && now < 5_000_000 {
        while let Some((_, n)) = s.next_output(now, &mut out) {
            assert!(n == 1470 || n == DATAGRAM_LEN);
            if UdpDatagram::new_checked(&out[..n]).unwrap().seq(true) < 0 {
                fin += 1;
            } else {
                data += 1;
            }
        }
        s.poll(now);
        now = s.poll_at(now).unwrap_or(now + 1000).max(now + 1);
    }
    assert_eq!(fin, 1);
    let want = 8_000_000 / (8 * 1470);
    assert!((want..=want + 2).contains(&data), "{data} datagrams");
    assert!(now < 1_100_000, "ended at {now}");
}

#[test]
fn state_sizes_stay_small() {
    // What a device pays per TCP connection and per UDP flow slot (no heap); on x86-64:
    // 368, 608 and 672 bytes when measured.
    let tcp = core::mem::size_of::<crate::iperf2::TcpServerConn>();
    let flow = core::mem::size_of::<UdpServerSession>();
    let server = core::mem::size_of::<UdpServer<[u8; 6], 1>>();
    assert!(tcp <= 384, "TcpServerConn {tcp} B");
    assert!(flow <= 640, "UdpServerSession {flow} B");
    assert!(server <= flow + 64, "UdpServer<_, 1> {server} B");
}
