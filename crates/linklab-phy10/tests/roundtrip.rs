//! Encode -> decode round trips without impairments: every oversampling factor, every start
//! offset inside the preamble, both polarities, random payloads; plus the ends of a frame
//! (clean end, truncated capture, full buffer).

mod common;

use common::{after_sfd, reshape, wire_frame};
use linklab_phy10::{encode_frame, words_for_frame, Capture, Decoder, Oversample, RxOutcome};
use proptest::prelude::*;

/// Encodes `wire` at `os`: (words, samples).
fn encode(wire: &[u8], os: Oversample) -> (Vec<u32>, usize) {
    let mut tx = vec![0u32; words_for_frame(wire.len(), os)];
    let samples = encode_frame(wire, os, &mut tx).unwrap();
    (tx, samples)
}

/// Encodes `wire`, cuts `skip` samples off the front, inverts if asked, decodes into a
/// buffer of `out_len` bytes.
fn round_trip(
    wire: &[u8],
    os: Oversample,
    skip: usize,
    invert: bool,
    out_len: usize,
) -> (RxOutcome, Vec<u8>, bool) {
    let (tx, samples) = encode(wire, os);
    let (rx, rx_len) = reshape(&tx, samples, skip, invert, 16 * os.samples_per_bit());
    let mut out = vec![0u8; out_len];
    let mut decoder = Decoder::new(os);
    let outcome = decoder.decode(&Capture::new(&rx, rx_len), &mut out);
    (outcome, out, decoder.inverted())
}

fn assert_round_trip(wire: &[u8], os: Oversample, skip: usize, invert: bool) {
    let (outcome, out, inverted) = round_trip(wire, os, skip, invert, 1600);
    let expected = after_sfd(wire);
    assert_eq!(
        outcome,
        RxOutcome::Frame {
            len: expected.len()
        },
        "os {} skip {skip} invert {invert}",
        os.get()
    );
    assert_eq!(&out[..expected.len()], expected);
    assert_eq!(inverted, invert);
}

fn all_factors() -> impl Iterator<Item = Oversample> {
    (Oversample::MIN..=Oversample::MAX).map(|n| Oversample::new(n).unwrap())
}

#[test]
fn full_length_frame_every_factor_offset_and_polarity() {
    let frame: Vec<u8> = (0..1514u32).map(|i| (i * 7 + 3) as u8).collect();
    let wire = wire_frame(&frame);
    for os in all_factors() {
        for skip_bits in [0, 13, 40] {
            for invert in [false, true] {
                let skip = skip_bits * os.samples_per_bit() + os.samples_per_bit() / 2;
                assert_round_trip(&wire, os, skip, invert);
            }
        }
    }
}

#[test]
fn buffer_of_exact_size_holds_a_whole_frame() {
    let wire = wire_frame(&[0xA5; 60]);
    let len = after_sfd(&wire).len();
    let (outcome, out, _) = round_trip(&wire, Oversample::X4, 0, false, len);
    assert_eq!(outcome, RxOutcome::Frame { len });
    assert_eq!(&out[..], after_sfd(&wire));
}

#[test]
fn buffer_too_small_reports_truncation_and_stays_in_bounds() {
    let wire = wire_frame(&[0x3C; 100]);
    let (outcome, out, _) = round_trip(&wire, Oversample::X4, 0, false, 50);
    assert_eq!(outcome, RxOutcome::Truncated { len: 50 });
    assert_eq!(&out[..], &after_sfd(&wire)[..50]);
}

#[test]
fn capture_cut_mid_frame_reports_truncation_with_the_whole_bytes() {
    let wire = wire_frame(&[0x5A; 200]);
    for os in all_factors() {
        let (tx, _) = encode(&wire, os);
        // Keep the preamble, SFD and 100.5 bytes of frame.
        let keep = (8 * 108 + 4) * os.samples_per_bit();
        let mut out = vec![0u8; 1600];
        let outcome = Decoder::new(os).decode(&Capture::new(&tx, keep), &mut out);
        let RxOutcome::Truncated { len } = outcome else {
            panic!("os {}: {outcome:?}", os.get());
        };
        assert!((99..=100).contains(&len), "os {}: len {len}", os.get());
        assert_eq!(&out[..len], &after_sfd(&wire)[..len]);
    }
}

#[test]
fn signal_stopping_mid_byte_is_truncation_not_a_frame() {
    let os = Oversample::X4;
    let wire = wire_frame(&[0x0F; 64]);
    let (mut tx, samples) = encode(&wire, os);
    // Silence (idle) from the middle of byte 20 after the SFD on.
    let cut = (8 * 28 + 3) * os.samples_per_bit();
    for i in cut..samples {
        tx[i / 32] &= !(1 << (i % 32));
    }
    let mut out = vec![0u8; 1600];
    let outcome = Decoder::new(os).decode(&Capture::new(&tx, samples + 64), &mut out);
    assert_eq!(outcome, RxOutcome::Truncated { len: 20 });
}

#[test]
fn preamble_only_is_truncated_at_zero() {
    let os = Oversample::X4;
    let wire = [0x55u8; 7];
    let (tx, samples) = encode(&wire, os);
    let mut out = vec![0u8; 64];
    let outcome = Decoder::new(os).decode(&Capture::new(&tx, samples + 64), &mut out);
    assert_eq!(outcome, RxOutcome::Truncated { len: 0 });
}

#[test]
fn empty_and_idle_captures_are_noise() {
    let mut out = [0u8; 16];
    let mut decoder = Decoder::new(Oversample::X4);
    assert_eq!(
        decoder.decode(&Capture::new(&[], 0), &mut out),
        RxOutcome::Noise
    );
    assert_eq!(
        decoder.decode(&Capture::from_words(&[0; 8]), &mut out),
        RxOutcome::Noise
    );
    assert_eq!(
        decoder.decode(&Capture::from_words(&[u32::MAX; 8]), &mut out),
        RxOutcome::Noise
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn round_trip_any_factor_offset_polarity(
        n in Oversample::MIN..=Oversample::MAX,
        frame in proptest::collection::vec(any::<u8>(), 0..300),
        // Up to 40 of the 56 preamble bits may be missed (lock needs about 10).
        skip_bits in 0usize..40,
        skip_fraction in 0usize..8,
        invert in any::<bool>(),
    ) {
        let os = Oversample::new(n).unwrap();
        let skip = skip_bits * os.samples_per_bit() + skip_fraction % os.samples_per_bit();
        assert_round_trip(&wire_frame(&frame), os, skip, invert);
    }

    #[test]
    fn decoder_never_writes_past_its_buffer(
        frame in proptest::collection::vec(any::<u8>(), 0..100),
        out_len in 0usize..120,
    ) {
        let wire = wire_frame(&frame);
        let (outcome, out, _) = round_trip(&wire, Oversample::X4, 0, false, out_len);
        let expected = after_sfd(&wire);
        let len = match outcome {
            RxOutcome::Frame { len } => { prop_assert_eq!(len, expected.len()); len }
            RxOutcome::Truncated { len } => { prop_assert_eq!(len, out_len); len }
            other => { prop_assert!(false, "{:?}", other); 0 }
        };
        prop_assert!(len <= out_len);
        prop_assert_eq!(&out[..len], &expected[..len]);
    }
}
