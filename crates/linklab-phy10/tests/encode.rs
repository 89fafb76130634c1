//! The TX line code: bit order, cell shapes at every factor, TP_IDL, buffer sizing.

use linklab_phy10::encode::{encode_bit, encode_byte_x2, encode_byte_x4, TP_IDL_BIT_TIMES};
use linklab_phy10::{encode_frame, samples_for_frame, words_for_frame, EncodeError, Oversample};

fn sample(words: &[u32], i: usize) -> u32 {
    (words[i / 32] >> (i % 32)) & 1
}

#[test]
fn bits_go_lsb_first_with_a_rising_edge_for_one() {
    // 0x01: bit 0 = 1 (low, high), bits 1..7 = 0 (high, low). Samples are LSB first.
    assert_eq!(encode_byte_x4(0x01), 0x3333_333C);
    assert_eq!(encode_byte_x2(0x01), 0x5556);
    assert_eq!(encode_byte_x4(0xFF), 0xCCCC_CCCC);
    assert_eq!(encode_byte_x2(0x00), 0x5555);
}

#[test]
fn every_factor_encodes_cells_and_tp_idl() {
    let wire = [0x55, 0xD5, 0x00, 0xFF, 0x81];
    for n in Oversample::MIN..=Oversample::MAX {
        let os = Oversample::new(n).unwrap();
        let spb = os.samples_per_bit();
        let mut words = vec![0xDEAD_BEEF_u32; words_for_frame(wire.len(), os) + 1];
        let samples = encode_frame(&wire, os, &mut words).unwrap();
        assert_eq!(samples, samples_for_frame(wire.len(), os));
        assert_eq!(samples, (wire.len() * 8 + TP_IDL_BIT_TIMES) * spb);
        for (byte_index, byte) in wire.iter().enumerate() {
            for bit in 0..8 {
                let value = (byte >> bit) & 1 == 1;
                let cell = encode_bit(value, os);
                for s in 0..spb {
                    let i = (byte_index * 8 + bit) * spb + s;
                    assert_eq!(
                        sample(&words, i),
                        (cell >> s) & 1,
                        "os {n} byte {byte_index} bit {bit} sample {s}"
                    );
                }
                // Mid-bit transition in the right direction, first half longer if odd.
                assert_eq!(cell & 1, !value as u32);
                assert_eq!((cell >> (spb - 1)) & 1, value as u32);
            }
        }
        // TP_IDL: high for >= 250 ns after the last bit, then idle.
        let end = wire.len() * 8 * spb;
        let high = os.samples_for_ns(250);
        assert!((end..end + high).all(|i| sample(&words, i) == 1), "os {n}");
        let last_word_end = words_for_frame(wire.len(), os) * 32;
        assert!(
            (samples..last_word_end).all(|i| sample(&words, i) == 0),
            "os {n}"
        );
        assert_eq!(
            *words.last().unwrap(),
            0xDEAD_BEEF,
            "words past the frame untouched"
        );
    }
}

#[test]
fn short_buffer_is_refused() {
    let os = Oversample::X4;
    let mut words = vec![0u32; words_for_frame(64, os) - 1];
    assert_eq!(
        encode_frame(&[0u8; 64], os, &mut words),
        Err(EncodeError::BufferTooSmall {
            needed_words: words_for_frame(64, os)
        })
    );
}

#[test]
fn oversample_range_is_2_to_8() {
    assert!(Oversample::new(1).is_none());
    assert!(Oversample::new(9).is_none());
    assert_eq!(Oversample::new(4), Some(Oversample::X4));
    assert_eq!(Oversample::X4.sample_rate_hz(), 40_000_000);
    assert_eq!(Oversample::X2.samples_for_ns(100), 2);
}
