//! Fuzzes iperf 2's test header parsers: the TCP header (whole, or the prefix a server
//! keeps), the header inside a UDP datagram (16- and 12-byte datagram headers), the length
//! rule, the first-bytes classifier and the cookie probe. Nothing may panic; a decoded
//! request never names port 0 for a connect-back, and its header length stays in bounds.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_perf::iperf2::detect::{classify, elicits_iperf2_reply};
use linklab_perf::iperf2::request::{HeaderStyle, TestRequest};
use linklab_perf::iperf2::wire::datagram::DatagramFormat;
use linklab_perf::iperf2::wire::{header_len, ClientHeader};

fn check(r: &TestRequest) {
    assert!(r.connect_back_port() != Some(0));
    assert!(r.header_len <= 16 + 255);
    // What we decode, we can encode again without panicking.
    let mut b = [0u8; 60];
    for style in [HeaderStyle::V21, HeaderStyle::V20, HeaderStyle::None] {
        let n = r.write(style, &mut b);
        assert!(n <= 60);
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() >= 4 {
        let _ = header_len(u32::from_be_bytes([data[0], data[1], data[2], data[3]]));
    }
    if let Some(r) = TestRequest::from_tcp_header(data) {
        check(&r);
    }
    if let Some(r) = TestRequest::from_tcp_header_prefix(data) {
        check(&r);
    }
    for f in [DatagramFormat::Current, DatagramFormat::Legacy] {
        check(&TestRequest::from_udp_datagram(data, f));
    }
    if let Ok(h) = ClientHeader::new_checked(data) {
        let _ = (
            h.flags(),
            h.num_threads(),
            h.port(),
            h.buf_len(),
            h.amount(),
        );
        let _ = (h.upper_flags(), h.version(), h.tos(), h.rate(), h.has_ext());
    }
    let _ = classify(data);
    if let Ok(c) = <[u8; 37]>::try_from(data.get(..37).unwrap_or(&[])) {
        let _ = elicits_iperf2_reply(&c);
    }
});
