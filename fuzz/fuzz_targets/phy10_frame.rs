//! The 10BASE-T decoder on damaged frames. Arbitrary captures (`phy10_decode`) rarely hold a
//! preamble long enough to lock, so the word path is seldom reached; here the capture is a
//! real frame encoded by linklab-phy10, cut and damaged where the input says, so the decoder
//! gets through lock and SFD into the frame with arbitrary damage. It must never panic, never
//! write past its buffer, and report no more than the buffer; an undamaged frame in a large
//! enough buffer must come back exactly.
//!
//! Input layout: byte 0 picks the oversampling factor (2..=8) and the polarity (bit 7);
//! byte 1 the output buffer size (0..=255 * 8 bytes); byte 2 the samples cut off the front;
//! byte 3 the payload length / 8; then the payload; the bytes after it, in pairs, are sample
//! positions (little-endian u16, wrapped to the capture) to flip.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_phy10::{encode_frame, words_for_frame, Capture, Decoder, Oversample, RxOutcome};

/// Idle words after the frame, so TP_IDL's end is in the capture.
const IDLE_WORDS: usize = 2;

fuzz_target!(|data: &[u8]| {
    let [mode, size, cut, payload_len, rest @ ..] = data else {
        return;
    };
    let os = Oversample::new(2 + (mode & 0x7F) % 7).expect("2..=8");
    let invert = mode & 0x80 != 0;
    let (payload, flips) = rest.split_at(rest.len().min(*payload_len as usize * 8));
    let mut wire = vec![0x55u8; 7];
    wire.push(0xD5);
    wire.extend_from_slice(payload);
    let mut words = vec![0u32; words_for_frame(wire.len(), os) + IDLE_WORDS];
    let encoded = encode_frame(&wire, os, &mut words).expect("sized by words_for_frame");
    // Cut `cut` samples (at most the frame's) off the front: shift the capture down.
    let cut = usize::from(*cut).min(encoded);
    let samples = words.len() * 32 - cut;
    let mut capture: Vec<u32> = (0..words.len())
        .map(|i| {
            let bit = i * 32 + cut;
            let (w, s) = (bit / 32, (bit % 32) as u32);
            let lo = words.get(w).copied().unwrap_or(0) >> s;
            let hi = if s == 0 {
                0
            } else {
                words.get(w + 1).copied().unwrap_or(0) << (32 - s)
            };
            lo | hi
        })
        .collect();
    if invert {
        for w in &mut capture {
            *w = !*w;
        }
    }
    for pair in flips.chunks_exact(2) {
        let at = usize::from(u16::from_le_bytes([pair[0], pair[1]])) % samples;
        capture[at / 32] ^= 1 << (at % 32);
    }
    let mut out = vec![0xA5u8; usize::from(*size) * 8];
    let outcome = Decoder::new(os).decode(&Capture::new(&capture, samples), &mut out);
    if let RxOutcome::Frame { len } | RxOutcome::Truncated { len } = outcome {
        assert!(len <= out.len());
    }
    // Undamaged, and no more than a few preamble bits cut: the frame must come back.
    let clean = flips.len() < 2 && cut < 8 * os.samples_per_bit();
    if clean && out.len() >= payload.len() {
        assert_eq!(outcome, RxOutcome::Frame { len: payload.len() }, "{os:?}");
        assert_eq!(&out[..payload.len()], payload);
    }
});
