//! The 10BASE-T decoder on arbitrary captures: it must never panic, never write past its
//! buffer, and report a length no larger than the buffer.
//!
//! Input layout: byte 0 picks the oversampling factor (2..=8) and the output buffer size
//! (byte 1, 0..=255 * 8 bytes); the rest is the bit-packed capture, LSB first.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_phy10::{Capture, Decoder, Oversample, RxOutcome};

fuzz_target!(|data: &[u8]| {
    let [mode, size, capture @ ..] = data else {
        return;
    };
    let os = Oversample::new(2 + mode % 7).expect("2..=8");
    let words: Vec<u32> = capture
        .chunks(4)
        .map(|c| c.iter().rev().fold(0u32, |w, &b| (w << 8) | b as u32))
        .collect();
    // Any sample count, including one that ends mid-word or past the words.
    let samples = capture.len() * 8 + (*mode as usize >> 3);
    let mut out = vec![0xA5u8; *size as usize * 8];
    let guard = out.len();
    let outcome = Decoder::new(os).decode(&Capture::new(&words, samples), &mut out);
    if let RxOutcome::Frame { len } | RxOutcome::Truncated { len } = outcome {
        assert!(len <= guard);
    }
});
