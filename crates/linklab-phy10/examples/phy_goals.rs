//! Frame error rates at issue 12's goal points, on the host, with the same line model the
//! riscv32 bench (firmware/phy10-bench) uses: linklab-phy10's 2x encoder as the transmitter,
//! drift and jitter, sampling at the receiver's factor (examples/common/line.rs).
//!
//! Usage: `cargo run --release -p linklab-phy10 --example phy_goals -- [FRAMES] [SET]`
//! (defaults: 20000 frames of 1514 bytes + FCS per point, SET `goals`; `limits` maps the
//! jitter each factor takes). One line per point: frames sent, delivered bit-exact
//! (`Frame` with the right length and bytes), errors, frame error rate.

#[path = "common/line.rs"]
mod line;

use line::{Line, Rng};
use linklab_phy10::{
    encode_frame, words_for_frame, Capture, Decoder, Oversample, RxOutcome, MAX_CAPTURE_SAMPLES,
};

/// Preamble and SFD, a 1514-byte frame, its FCS.
const WIRE_LEN: usize = 8 + 1514 + 4;

fn main() {
    let mut args = std::env::args().skip(1);
    let frames: u32 = args
        .next()
        .map_or(20_000, |a| a.parse().expect("FRAMES: a count"));
    let set = args.next().unwrap_or_else(|| "goals".to_string());
    // (samples per bit, drift ppm, jitter in thousandths of a sample)
    let points: &[(u32, i32, u32)] = match set.as_str() {
        // The goals: 4x with 802.3's +-100 ppm and +-0.25 sample; 5x with +-0.5 % and +-0.5
        // sample. Then 802.3's +-13.5 ns receiver jitter: 0.675 sample at 5x, 0.81 at 6x.
        "goals" => &[
            (4, 100, 250),
            (4, -100, 250),
            (5, 5000, 500),
            (5, -5000, 500),
            (5, 5000, 675),
            (5, -5000, 675),
            (6, 5000, 810),
            (6, -5000, 810),
        ],
        // How far each factor goes at +0.5 %.
        "limits" => &[
            (4, 5000, 0),
            (4, 5000, 250),
            (4, 5000, 400),
            (5, 5000, 600),
            (5, 100, 675),
            (6, 5000, 1000),
            (8, 5000, 1000),
            (8, 5000, 1500),
        ],
        other => panic!("SET: goals or limits, not {other}"),
    };
    println!("frames/point {frames}, frame 1514 B + FCS, transmitter 2x");
    println!("oversample drift_ppm jitter_samples   sent     ok errors  FER");
    let mut wire = [0u8; WIRE_LEN];
    wire[..7].fill(0x55);
    wire[7] = 0xD5;
    let tx_words = words_for_frame(WIRE_LEN, Oversample::X2) + 1;
    let mut tx = vec![0u32; tx_words];
    let mut rx = vec![0u32; (MAX_CAPTURE_SAMPLES / 32).min(tx_words * 5)];
    let mut out = vec![0u8; 1600];
    for (i, &(n, drift_ppm, jitter_milli)) in points.iter().enumerate() {
        let os = Oversample::new(n as u8).expect("2..=8");
        let mut decoder = Decoder::new(os);
        let line = Line {
            samples_per_bit: n,
            drift_ppm,
            jitter_milli,
        };
        let mut rng = Rng::new(0x90a1_0000 + i as u64);
        let mut ok = 0u32;
        for _ in 0..frames {
            rng.fill(&mut wire[8..]);
            encode_frame(&wire, Oversample::X2, &mut tx).expect("sized");
            let mut peek = rng.clone();
            let phase = (peek.next_u64() >> 40) as f64 / (1u64 << 24) as f64;
            let samples = line::impair(&tx, tx_words * 32, line, &mut rng, &mut rx);
            let outcome = decoder.decode(&Capture::new(&rx, samples), &mut out);
            if outcome == (RxOutcome::Frame { len: WIRE_LEN - 8 })
                && out[..WIRE_LEN - 8] == wire[8..]
            {
                ok += 1;
            } else if std::env::var_os("FIRST_BAD").is_some() {
                let first = (0..WIRE_LEN - 8).find(|&i| out[i] != wire[8 + i]);
                eprintln!("bad: {outcome:?} first wrong byte {first:?} phase {phase:.3}");
                if let Some(b) = first {
                    let bitpos = (0..8)
                        .find(|k| (out[b] ^ wire[8 + b]) >> k & 1 == 1)
                        .unwrap()
                        + 8 * b;
                    let scale = n as f64 / 2.0 * 1e6 / (1e6 + drift_ppm as f64);
                    eprintln!(
                        "first wrong bit {bitpos}: true mid {:.3}",
                        phase + (2.0 * (bitpos + 64) as f64 + 1.0) * scale
                    );
                    if std::env::var_os("TRACE").is_some() {
                        linklab_phy10::TRACE.store(true, core::sync::atomic::Ordering::Relaxed);
                        let mut d = Decoder::new(os);
                        let _ = d.decode(&Capture::new(&rx, samples), &mut out);
                        linklab_phy10::TRACE.store(false, core::sync::atomic::Ordering::Relaxed);
                        // true mids around
                        for j in bitpos.saturating_sub(40)..bitpos + 9 {
                            eprintln!(
                                "  true mid bit {j}: {:.3} value {}",
                                phase + (2.0 * (j + 64) as f64 + 1.0) * scale,
                                wire[8 + j / 8] >> (j % 8) & 1
                            );
                        }
                    }
                }
            }
        }
        let errors = frames - ok;
        eprintln!(
            "slow bits/frame {:.1} word calls/frame {:.1}",
            linklab_phy10::SLOW.swap(0, core::sync::atomic::Ordering::Relaxed) as f64
                / frames as f64,
            linklab_phy10::CALLS.swap(0, core::sync::atomic::Ordering::Relaxed) as f64
                / frames as f64
        );
        println!(
            "{n:>10} {drift_ppm:>9} {:>14.3} {frames:>6} {ok:>6} {errors:>6}  {:.2e}",
            f64::from(jitter_milli) / 1000.0,
            f64::from(errors) / f64::from(frames)
        );
    }
}
