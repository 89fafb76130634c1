//! Frames on the 10BASE-T line as bytes and samples: the wire format (preamble, SFD, padding,
//! FCS), packed captures, line time, and the malformed captures of `--bad-captures`.

use std::time::{Duration, Instant};

use linklab_phy10::{Capture, Oversample};
use linklab_sim::sample_wire::{SampleWire, SampleWireConfig};
use rand::{Rng, SeedableRng};

/// The firmware's capture buffer less its virtio header (firmware's `RX_WORDS` − 3 words).
pub const MAX_CAPTURE_BYTES: usize = (3200 - 3) * 4;
/// 10BASE-T: 100 ns a bit.
const BIT_NS: u64 = 100;
/// The inter-packet gap: 96 bit times.
const IPG_NS: u64 = 96 * BIT_NS;
/// Preamble and SFD.
const PREAMBLE_SFD: [u8; 8] = [0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0xD5];

/// Packs `capture`'s samples as little-endian bytes (LSB first within each).
pub fn capture_bytes(capture: &Capture<'_>) -> Vec<u8> {
    let n = capture.len().div_ceil(8);
    let mut out: Vec<u8> = capture
        .words()
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    out.truncate(n);
    // Clear samples past the end in the last byte.
    if capture.len() % 8 != 0 {
        if let Some(last) = out.last_mut() {
            *last &= (1u8 << (capture.len() % 8)) - 1;
        }
    }
    out
}

/// Packed samples as bytes (little-endian words, as the device's DMA sees them) back into
/// words; a last partial word is padded with idle.
pub fn words_of(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect()
}

/// Preamble, SFD, the frame padded to 60 bytes, FCS.
pub fn wire_bytes(frame: &[u8]) -> Vec<u8> {
    let mut wire = PREAMBLE_SFD.to_vec();
    wire.extend_from_slice(frame);
    wire.resize(PREAMBLE_SFD.len() + frame.len().max(60), 0);
    let fcs = crc32fast::hash(&wire[PREAMBLE_SFD.len()..]);
    wire.extend_from_slice(&fcs.to_le_bytes());
    wire
}

/// Time a transmission of `bits` occupies the line, with the gap after it.
pub fn line_time(bits: u64) -> Duration {
    Duration::from_nanos(bits * BIT_NS + IPG_NS)
}

/// Sleeps until `t` (no-op if it has passed).
pub fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// The next normal link pulse: 16 ± 8 ms from now.
pub fn next_pulse(rng: &mut impl Rng) -> Instant {
    Instant::now() + Duration::from_micros(rng.gen_range(8_000..=24_000))
}

/// The malformed captures of `--bad-captures`, at the receiver's factor.
pub fn bad_captures(os: Oversample) -> Vec<Vec<u8>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let garbage: Vec<u8> = (0..1500).map(|_| rng.gen()).collect();
    let all_ones = vec![0xFF; 2000];
    let all_zeros = vec![0; 200];
    // A pulse train: 100 ns high every 1.6 us, 200 of them.
    let n = os.samples_per_bit();
    let mut train = vec![0u8; (200 * 16 * n).div_ceil(8)];
    for p in 0..200 {
        for s in 0..n {
            let i = p * 16 * n + s;
            train[i / 8] |= 1 << (i % 8);
        }
    }
    // A real frame to the device (broadcast ARP-sized), exactly encoded.
    let mut frame = vec![0xFFu8; 6];
    frame.extend_from_slice(&[0x02, 0x4c, 0x4c, 0, 0, 0x99, 0x08, 0x06]);
    frame.resize(60, 0xA5);
    let wire = wire_bytes(&frame);
    // The same frame with one payload bit flipped after its FCS was computed: a bit error
    // on the line, which the MAC's FCS check must catch.
    let mut damaged = wire.clone();
    damaged[8 + 40] ^= 0x08;
    let mut exact = SampleWire::new(SampleWireConfig {
        oversample: os.get(),
        drift_ppm: 0,
        jitter_samples: 0,
        noise: 0.0,
    })
    .expect("a valid factor")
    .with_transmitter(Oversample::X2);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
    let clean = capture_bytes(&exact.capture(&wire, 0, &mut rng));
    // Cut short in the middle of the frame.
    let truncated = clean[..clean.len() / 2].to_vec();
    let flipped = capture_bytes(&exact.capture(&damaged, 0, &mut rng));
    vec![
        garbage,
        all_ones,
        all_zeros,
        train,
        truncated,
        flipped,
        // The shortest capture the transport carries (QEMU's virtio-net takes a 0-byte
        // message as "no room" and stops receiving: a sampler never completes an empty
        // capture, and the line never sends one).
        vec![0x01],
        vec![0xAA; MAX_CAPTURE_BYTES],
    ]
}

#[cfg(test)]
mod tests {
    use super::super::settings::max_jitter;
    use super::*;
    use linklab_phy10::{Decoder, RxOutcome};

    #[test]
    fn wire_bytes_pad_and_end_with_the_fcs() {
        let w = wire_bytes(&[1, 2, 3]);
        assert_eq!(w.len(), 8 + 60 + 4);
        assert_eq!(&w[..8], &PREAMBLE_SFD);
        let fcs = crc32fast::hash(&w[8..68]).to_le_bytes();
        assert_eq!(&w[68..], &fcs);
    }

    #[test]
    fn captures_through_the_line_decode_at_every_factor() {
        let frame: Vec<u8> = (0..1514u32).map(|i| (i * 7) as u8).collect();
        let wire = wire_bytes(&frame);
        for os in 4..=8u8 {
            let mut line = SampleWire::new(SampleWireConfig {
                oversample: os,
                drift_ppm: 5000,
                jitter_samples: 0,
                noise: 0.0,
            })
            .unwrap()
            .with_transmitter(Oversample::X2);
            line.set_jitter(max_jitter(os)).unwrap();
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(u64::from(os));
            let bytes = capture_bytes(&line.capture(&wire, 0, &mut rng));
            assert!(bytes.len() <= MAX_CAPTURE_BYTES, "{os}x: {}", bytes.len());
            let words = words_of(&bytes);
            let mut out = vec![0u8; 1600];
            let got = Decoder::new(Oversample::new(os).unwrap())
                .decode(&Capture::new(&words, bytes.len() * 8), &mut out);
            assert_eq!(got, RxOutcome::Frame { len: 1518 }, "{os}x");
            assert_eq!(&out[..1518], &wire[8..], "{os}x");
        }
    }
}
#[cfg(test)]
mod bad_capture_tests {
    use super::*;
    use linklab_phy10::RxInterrupt;

    /// Every malformed capture, at every factor, through the same receive interrupt the
    /// firmware runs: it ends, never commits more than the grant, and lands in a bucket.
    #[test]
    fn bad_captures_decode_to_a_bucket_quickly() {
        for os in 4..=8u8 {
            let factor = Oversample::new(os).unwrap();
            let mut rx = RxInterrupt::new(factor);
            let mut grant = vec![0u8; 1536];
            for (i, bytes) in bad_captures(factor).iter().enumerate() {
                let words = words_of(bytes);
                let t = Instant::now();
                let n = rx.receive(&Capture::new(&words, bytes.len() * 8), &mut grant);
                eprintln!(
                    "{os}x capture {i}: {:?} {n} in {:?}",
                    rx.last_outcome(),
                    t.elapsed()
                );
                assert!(n <= grant.len());
            }
        }
    }
}
