#[path = "../../linklab-sim/src/sample_wire.rs"]
#[allow(dead_code)]
mod sample_wire;
use rand::{RngCore, SeedableRng};
use sample_wire::{SampleWire, SampleWireConfig};
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let drift: i32 = a[0].parse().unwrap();
    let jit: f64 = a[1].parse().unwrap();
    let frames: u32 = a[2].parse().unwrap();
    let cfg = SampleWireConfig { oversample: 4, drift_ppm: drift, jitter_samples: 0, noise: 0.0 };
    let mut w = SampleWire::new(cfg).unwrap();
    w.set_jitter(jit).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5eed);
    let mut frame = vec![0u8; 64];
    let mut out = vec![0u8; 1600];
    let truep = 4.0 * 1e6 / (1e6 + drift as f64);
    let mut hist = std::collections::BTreeMap::new();
    for _ in 0..frames {
        rng.fill_bytes(&mut frame);
        let mut on = vec![0x55u8; 7];
        on.push(0xD5);
        on.extend_from_slice(&frame);
        w.transfer(&on, &mut rng, &mut out);
        let (words, len) = w.last_capture();
        let cap = linklab_phy10::Capture::new(words, len);
        if let Some((_t, p, n)) = linklab_phy10::decode::debug_acquire(linklab_phy10::Oversample::X4, &cap) {
            let e = p as f64 / 4096.0 - truep;
            let b = hist.entry(n / 8 * 8).or_insert((0, 0.0f64));
            b.0 += 1; b.1 += e * e;
        }
    }
    for (k, (c, s2)) in hist { println!("edges {k}..: {c} frames, period rms {:.4}", (s2 / c as f64).sqrt()); }
}
