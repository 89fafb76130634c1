//! Fuzzes the UDP datagram view and the receiver's accounting: the input is a run of
//! datagrams (a length byte, then that many bytes), each counted with 64- or 32-bit ids at
//! a fuzzer-driven arrival time. Ids that jump back, wrap or go negative must never panic
//! or overflow; loss never exceeds what the ids allow.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_perf::iperf2::request::Amount;
use linklab_perf::iperf2::udp_stats::{FirstTransit, UdpReceiveStats};
use linklab_perf::iperf2::wire::UdpDatagram;

fuzz_target!(|data: &[u8]| {
    let wide = data.first().is_some_and(|b| b & 1 != 0);
    let first = if data.get(1).is_some_and(|b| b & 1 != 0) {
        FirstTransit::Skip
    } else {
        FirstTransit::AsIperf218
    };
    let mut stats = UdpReceiveStats::new(first);
    let mut rest = data.get(2..).unwrap_or(&[]);
    let mut now: u64 = 0;
    while let Some((&len, tail)) = rest.split_first() {
        let n = usize::from(len).min(tail.len());
        let (d, next) = tail.split_at(n);
        if let Ok(v) = UdpDatagram::new_checked(d) {
            let _ = (v.seq(true), v.seq(false), v.sent_us(), v.id_hi());
            let _ = Amount::from_wire(v.id_lo()).time_us();
        }
        now = now.wrapping_add(u64::from(len) << (len % 48));
        let _ = stats.on_datagram_bytes(d, wide, now);
        rest = next;
    }
    assert!(stats.lost() <= stats.gaps);
    assert!(stats.received <= data.len() as u64);
    let r = stats.report(1.0, true);
    assert_eq!(r.datagrams, stats.max_id);
});
