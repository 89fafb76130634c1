//! Workload for measuring the line code's cost per bit with callgrind (not a timed test).
//!
//! `phy_cost CASE ITERATIONS` runs one case ITERATIONS times over a 1514-byte frame (+ FCS,
//! preamble and SFD: 1526 bytes = 12208 bits on the wire) and prints the bits processed.
//! Cases: `decode4` (clean 4x capture), `decode4-drift` (4x, +0.5 % drift, 0.25 sample
//! jitter, made by the sample wire before the measured loop), `decode8-drift` (8x, +0.5 %,
//! 1 sample), `encode4`, `encode2`.
//!
//! ```text
//! valgrind --tool=callgrind --callgrind-out-file=cg.out \
//!     target/release/examples/phy_cost decode4 200
//! callgrind_annotate --inclusive=yes cg.out | grep -E 'Decoder::decode|encode_frame'
//! ```
//! Instructions per bit = inclusive Ir of `Decoder::decode` (or `encode_frame`) / bits.

#[path = "../../linklab-sim/src/sample_wire.rs"]
#[allow(dead_code)]
mod sample_wire;

use linklab_phy10::{encode_frame, words_for_frame, Capture, Decoder, Oversample, RxOutcome};
use rand::SeedableRng;
use std::hint::black_box;

fn wire_frame() -> Vec<u8> {
    let frame: Vec<u8> = (0..1514u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut wire = vec![0x55; 7];
    wire.push(0xD5);
    wire.extend_from_slice(&frame);
    wire.extend_from_slice(&crc32fast::hash(&frame).to_le_bytes());
    wire
}

/// A capture of `wire` through the sample wire with the given impairments.
fn impaired_capture(wire: &[u8], oversample: u8, drift_ppm: i32, jitter: f64) -> (Vec<u32>, usize) {
    let cfg = sample_wire::SampleWireConfig {
        oversample,
        drift_ppm,
        jitter_samples: 0,
        noise: 0.0,
    };
    let mut line = sample_wire::SampleWire::new(cfg).expect("valid config");
    line.set_jitter(jitter).expect("valid jitter");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let mut out = vec![0u8; 1600];
    let outcome = line.transfer(wire, &mut rng, &mut out);
    assert_eq!(
        outcome,
        sample_wire::SampleOutcome::Frame {
            len: wire.len() - 8
        }
    );
    let (words, len) = line.last_capture();
    (words.to_vec(), len)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let case = args.next().unwrap_or_else(|| "decode4".to_string());
    let iterations: usize = args
        .next()
        .map_or(100, |a| a.parse().expect("ITERATIONS: a count"));
    let wire = wire_frame();
    let wire_bits = wire.len() * 8;
    let mut out = vec![0u8; 1600];
    match case.as_str() {
        "decode4" | "decode4-drift" | "decode8-drift" => {
            let (os, capture) = match case.as_str() {
                "decode4" => {
                    let os = Oversample::X4;
                    let mut words = vec![0u32; words_for_frame(wire.len(), os) + 4];
                    let samples = encode_frame(&wire, os, &mut words).unwrap();
                    (os, (words, samples + 64))
                }
                "decode4-drift" => (Oversample::X4, impaired_capture(&wire, 4, 5000, 0.25)),
                _ => (
                    Oversample::new(8).unwrap(),
                    impaired_capture(&wire, 8, 5000, 1.0),
                ),
            };
            let mut decoder = Decoder::new(os);
            for _ in 0..iterations {
                let view = Capture::new(black_box(&capture.0), capture.1);
                let outcome = decoder.decode(&view, black_box(&mut out));
                assert_eq!(
                    outcome,
                    RxOutcome::Frame {
                        len: wire.len() - 8
                    }
                );
            }
            assert_eq!(&out[..wire.len() - 8], &wire[8..]);
        }
        "encode4" | "encode2" => {
            let os = if case == "encode4" {
                Oversample::X4
            } else {
                Oversample::X2
            };
            let mut words = vec![0u32; words_for_frame(wire.len(), os)];
            for _ in 0..iterations {
                black_box(encode_frame(black_box(&wire), os, &mut words).unwrap());
            }
        }
        other => {
            panic!("CASE: decode4, decode4-drift, decode8-drift, encode4 or encode2, not {other}")
        }
    }
    println!(
        "case {case}: {iterations} x {wire_bits} wire bits = {} bits",
        iterations * wire_bits
    );
}
