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
            let nbad = (0..exp.len()).filter(|&i| out[i] != exp[i]).count();
            println!("frame {f}: {o:?} first bad byte {first:?} bad bytes {nbad}");
            if let Some(i) = first {
                let diff = out[i] ^ exp[i];
                let bit = diff.trailing_zeros() as usize;
                let wb = (8 + i) * 8 + bit;
                let (words, _len) = w.last_capture();
                let cap = linklab_phy10::Capture::from_words(words);
                let centre = (wb as f64 * 4.0 * 1e6 / (1e6 + drift as f64)) as usize;
                let mut line = String::new();
                let mut bits = String::new();
                for s in centre.saturating_sub(24)..centre + 24 { line.push(if cap.sample(s) == 1 { '1' } else { '0' }); }
                for b in wb - 6..wb + 6 { bits.push(if (on[b / 8] >> (b % 8)) & 1 == 1 { '1' } else { '0' }); }
                println!("  wire bit {wb} (byte {i} bit {bit}) samples {}..: {line}  bits {}..: {bits} (bad is 7th)", centre - 24, wb - 6);
            }
        }
    }
}
