//! Fuzzes the iperf3 UDP datagram path: header parsing (32- and 64-bit counters), the hello
//! recognisers, and the loss / out-of-order / jitter accounting over a sequence of
//! fuzzer-made datagrams. Nothing may panic; counters stay consistent.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_perf::iperf::stream::Stream;
use linklab_perf::iperf::wire::{self, UdpHeader};

fuzz_target!(|data: &[u8]| {
    let _ = wire::is_udp_hello(data);
    let _ = wire::is_udp_hello_reply(data);
    for c64 in [false, true] {
        if let Some(h) = UdpHeader::parse(data, c64) {
            let mut b = [0u8; 16];
            let n = h.write(&mut b, c64).unwrap();
            let back = UdpHeader::parse(&b[..n], c64).unwrap();
            assert_eq!(back.sec, h.sec);
            assert_eq!(back.usec, h.usec);
        }
        let mut s = Stream::new(1, false);
        let mut now = 0u64;
        let mut total = 0u64;
        for d in data.chunks(17) {
            now = now.wrapping_add(u64::from(d[0]) * 1000);
            s.on_udp_datagram(d, now, c64);
            total += d.len() as u64;
        }
        assert_eq!(s.bytes_received, total);
        assert!(s.jitter.is_finite() && s.jitter >= 0.0);
    }
});
