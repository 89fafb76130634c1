//! Fuzzes what a UDP client reads back: the server report (whole, cut short, with any
//! flags), the header ack, and a sender waiting after its FIN fed the fuzzer's bytes as
//! replies (a report flood). Nothing may panic; a sender takes at most one report.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_perf::iperf2::request::Amount;
use linklab_perf::iperf2::udp_sender::{FinMode, UdpSendPhase, UdpSender, UdpSenderConfig};
use linklab_perf::iperf2::wire::datagram::DatagramFormat;
use linklab_perf::iperf2::wire::{HeaderAck, ServerReport};

fuzz_target!(|data: &[u8]| {
    if let Ok(r) = ServerReport::new_checked(data) {
        let _ = r.info();
    }
    if let Ok(r) = ServerReport::new_checked(data.get(16..).unwrap_or(&[])) {
        let _ = r.info();
    }
    if let Ok(a) = HeaderAck::new_checked(data) {
        let _ = (a.is_valid(), a.version());
    }
    let mut s = UdpSender::new(UdpSenderConfig {
        len: 100,
        rate_bps: 0,
        amount: Amount::Bytes(100),
        max_us: 1_000_000,
        header: None,
        format: if data.first().is_some_and(|b| b & 1 != 0) {
            DatagramFormat::Legacy
        } else {
            DatagramFormat::Current
        },
        fin: FinMode::AwaitReport,
        wall_offset_us: 0,
    });
    let mut buf = [0u8; 100];
    let mut now = 0;
    while s.phase() == UdpSendPhase::Sending && now < 1000 {
        let _ = s.next_datagram(now, &mut buf);
        now += 1;
    }
    let mut taken = 0;
    for chunk in data.chunks(data.first().map_or(1, |b| usize::from(*b) + 1)) {
        if s.on_datagram(chunk, now) {
            taken += 1;
        }
        let _ = s.next_datagram(now, &mut buf);
        now += 10_000;
        s.poll(now);
    }
    assert!(taken <= 1);
});
