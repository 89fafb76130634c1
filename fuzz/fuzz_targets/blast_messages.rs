//! Fuzzes the packet blaster's messages (what firmware reads from UDP port 5202, and what
//! `linklab emu --blast` reads back): any bytes are either a request that round-trips
//! exactly and is within the limits, or refused; the same for reports; a payload check never
//! panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_perf::blast::{self, Report, Request};

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = Request::parse(data) {
        assert_eq!(&req.to_bytes()[..], data);
        assert!((blast::MIN_PAYLOAD..=blast::MAX_PAYLOAD).contains(&req.payload_len));
        assert!((1..=blast::MAX_DURATION_MS).contains(&req.duration_ms));
    }
    if let Some(report) = Report::parse(data) {
        assert_eq!(&report.to_bytes()[..], data);
    }
    if let Some(seq) = blast::check_payload(data) {
        let mut again = data.to_vec();
        blast::fill_payload(seq, &mut again);
        assert_eq!(again, data);
    }
});
