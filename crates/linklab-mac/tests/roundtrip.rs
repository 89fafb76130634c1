//! TX → impairment → RX queue → deframe round trips (proptest).
// Its frames are built in the soft PHY's formats (`TxFormat::Wire`, `MacConfig::raw_phy`).
#![cfg(feature = "soft-framing")]

mod common;

use common::*;
use linklab_mac::impair::shift_into;
use linklab_mac::{Inline, Mac, MacConfig, NoClock, RxQueue};
use proptest::prelude::*;

const Q: usize = 8192;

/// Builds the wire image of a frame to ME carrying `payload`, via the MAC's own TX path.
fn wire_for(payload: &[u8]) -> Vec<u8> {
    let q: RxQueue<Inline<Q>> = RxQueue::new();
    let rec = Recorder::default();
    let mut tx = Mac::new(
        q.consumer(),
        rec.clone(),
        NoClock,
        MacConfig::raw_phy(PEER, 0),
    );
    tx.transmit(14 + payload.len(), |f| fill_frame(f, ME, PEER, payload))
        .unwrap();
    let mut w = rec.take();
    assert_eq!(w.len(), 1);
    w.pop().unwrap()
}

/// A raw capture of `wire` that starts `skip` bytes into the preamble, `offset` bits late.
fn capture(wire: &[u8], skip: usize, offset: usize, invert: bool) -> Vec<u8> {
    let mut raw = vec![0u8; wire.len() + 2];
    let n = shift_into(&mut raw, &wire[skip..], offset, invert);
    raw.truncate(n);
    raw
}

proptest! {
    // Under Miri a case is a full run under the interpreter: a few.
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 256 }))]

    /// Every bit offset, both polarities, any payload 0..=1500: the frame comes back intact.
    #[test]
    fn round_trip_any_offset_and_polarity(
        payload in proptest::collection::vec(any::<u8>(), 0..=1500),
        skip in 0usize..7,
        invert in any::<bool>(),
    ) {
        let wire = wire_for(&payload);
        for offset in 0..8 {
            let q: RxQueue<Inline<Q>> = RxQueue::new();
            let mut rx = Mac::new(q.consumer(), Recorder::default(), NoClock, MacConfig::raw_phy(ME, 0));
            let raw = capture(&wire, skip, offset, invert);
            prop_assert!(q.producer().push(&raw));
            let frame = rx.receive().expect("frame delivered");
            let want_len = (14 + payload.len()).max(60);
            prop_assert_eq!(frame.len(), want_len);
            prop_assert_eq!(&frame[..6], &ME.0[..]);
            prop_assert_eq!(&frame[14..14 + payload.len()], &payload[..]);
            prop_assert!(frame[14 + payload.len()..].iter().all(|&b| b == 0));
            drop(frame);
            let c = rx.counters();
            prop_assert_eq!(c.rx_packets, 1);
            prop_assert_eq!(c.rx_bytes, want_len as u64);
            prop_assert_eq!(c.check_conservation(), Ok(()));
        }
    }

    /// Any single bit error inside the frame or FCS is detected as an FCS error; anywhere in
    /// the capture it is never delivered altered.
    #[test]
    fn every_single_bit_error_detected(
        payload in proptest::collection::vec(any::<u8>(), 0..=300),
        offset in 0usize..8,
        invert in any::<bool>(),
        which in any::<prop::sample::Index>(),
    ) {
        let wire = wire_for(&payload);
        let raw = capture(&wire, 0, offset, invert);
        // Bits of the frame and FCS (after the 64 preamble/SFD bits and the offset).
        let first = 64 + offset;
        let last = 8 * wire.len() + offset;
        let bit = first + which.index(last - first);
        let mut bad = raw.clone();
        bad[bit / 8] ^= 1 << (bit % 8);
        let q: RxQueue<Inline<Q>> = RxQueue::new();
        let mut rx = Mac::new(q.consumer(), Recorder::default(), NoClock, MacConfig::raw_phy(ME, 0));
        prop_assert!(q.producer().push(&bad));
        prop_assert!(rx.receive().is_none());
        let c = rx.counters();
        prop_assert_eq!(c.rx_crc_errors, 1);
        prop_assert_eq!(rx_outcomes(&c), 1);
        prop_assert_eq!(c.check_conservation(), Ok(()));
    }

    /// A truncated capture (any length short of complete) is never delivered and lands in
    /// exactly one bucket.
    #[test]
    fn truncation_counted_exactly_once(
        payload in proptest::collection::vec(any::<u8>(), 0..=200),
        offset in 0usize..8,
        invert in any::<bool>(),
        cut in any::<prop::sample::Index>(),
    ) {
        let wire = wire_for(&payload);
        let raw = capture(&wire, 0, offset, invert);
        let len = 1 + cut.index(raw.len() - 1); // 1..raw.len()
        let q: RxQueue<Inline<Q>> = RxQueue::new();
        let mut rx = Mac::new(q.consumer(), Recorder::default(), NoClock, MacConfig::raw_phy(ME, 0));
        prop_assert!(q.producer().push(&raw[..len]));
        prop_assert!(rx.receive().is_none());
        let c = rx.counters();
        prop_assert_eq!(c.rx_transmissions, 1);
        prop_assert_eq!(c.rx_packets, 0);
        prop_assert_eq!(rx_error_buckets(&c).iter().sum::<u64>(), 1);
        prop_assert_eq!(c.check_conservation(), Ok(()));
    }
}

/// Every single bit of a minimum frame, exhaustively, at every offset and polarity.
#[test]
#[cfg_attr(
    miri,
    ignore = "huge loop for Miri: 10 240 damaged frames; the round trips above cover the same code"
)]
fn exhaustive_single_bit_errors_small_frame() {
    let wire = wire_for(b"hello");
    for offset in 0..8 {
        for invert in [false, true] {
            let raw = capture(&wire, 0, offset, invert);
            for bit in 0..8 * raw.len() {
                let mut bad = raw.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                let q: RxQueue<Inline<Q>> = RxQueue::new();
                let mut rx = Mac::new(
                    q.consumer(),
                    Recorder::default(),
                    NoClock,
                    MacConfig::raw_phy(ME, 0),
                );
                assert!(q.producer().push(&bad));
                let in_frame = bit >= 64 + offset && bit < 8 * wire.len() + offset;
                match rx.receive() {
                    Some(f) => {
                        // Only a flip in the preamble or idle bits may still deliver, and
                        // then the frame is exactly the one sent.
                        assert!(!in_frame, "bit {bit} offset {offset} inv {invert}");
                        assert_eq!(&f[14..19], b"hello");
                    }
                    None => {
                        let c = rx.counters();
                        assert_eq!(rx_outcomes(&c), 1);
                        if in_frame {
                            assert_eq!(c.rx_crc_errors, 1, "bit {bit}");
                        }
                    }
                }
                rx.counters().check_conservation().unwrap();
            }
        }
    }
}
