#[path = "../../linklab-sim/src/sample_wire.rs"]
#[allow(dead_code)]
mod sample_wire;
use rand::{RngCore, SeedableRng};
use sample_wire::{SampleOutcome, SampleWire, SampleWireConfig};
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let drift: i32 = a[0].parse().unwrap();
    let jit: f64 = a[1].parse().unwrap();
    let frames: u32 = a[2].parse().unwrap();
    let cfg = SampleWireConfig { oversample: 4, drift_ppm: drift, jitter_samples: 0, noise: 0.0 };
    let mut w = SampleWire::new(cfg).unwrap();
    w.set_jitter(jit).unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x5eed);
    let mut frame = vec![0u8; 1514];
    let mut out = vec![0u8; 1600];
    for f in 0..frames {
        rng.fill_bytes(&mut frame);
        let mut on = vec![0x55u8; 7];
        on.push(0xD5);
        on.extend_from_slice(&frame);
        on.extend_from_slice(&[1, 2, 3, 4]);
        let o = w.transfer(&on, &mut rng, &mut out);
        let exp = &on[8..];
        let first = (0..exp.len()).find(|&i| out[i] != exp[i]);
        if o != (SampleOutcome::Frame { len: exp.len() }) || first.is_some() {
            println!("frame {f}: {o:?} first bad byte {first:?}");
        }
    }
}
