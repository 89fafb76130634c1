//! A deterministic impaired line for the decoder's benchmarks, in fixed point and `no_std`
//! (riscv32imac has no FPU): used on the host by `examples/phy_goals.rs` and on the MCU by
//! firmware/phy10-bench (both include this file), so both see the same captures.
//!
//! The transmitter is linklab-phy10's encoder at 2x (20 MHz: every edge exactly on a half-bit
//! boundary, as a real 10BASE-T transmitter puts it); the receiver samples at any factor.
//! Per frame:
//! - the receiver's first sample falls at a uniformly random phase in [0, 1) sample;
//! - an edge at transmitter half-bit `h` reaches the receiver at
//!   `h * (N / 2) * 1e6 / (1e6 + drift_ppm)` receiver samples (`N` = receiver samples per
//!   bit; a positive drift is a transmitter clock running fast);
//! - each edge then moves by an independent uniform offset in [-jitter, +jitter] receiver
//!   samples (edges never pass each other);
//! - the receiver's sample `s` shows the level after every edge at time <= `s`.
//!
//! This is crates/linklab-sim/src/sample_wire.rs's model without noise, except for the
//! transmitter: the sample wire encodes at the receiver's factor, which at odd factors puts
//! the extra sample into the first half of each bit (60/40 ns at 5x), a duty-cycle error no
//! real transmitter has. Times are in 1/2^24 receiver samples.

use linklab_phy10::Capture;

/// Fractional bits of the model's times.
const FRAC: u32 = 24;
/// One receiver sample.
const ONE: i64 = 1 << FRAC;
/// Transmitter samples per bit (linklab-phy10's 2x encoder).
pub const TX_SAMPLES_PER_BIT: u32 = 2;

/// SplitMix64: a small, well-mixed deterministic generator (the bench needs repeatability,
/// not cryptography).
pub struct Rng(u64);

impl Rng {
    /// A generator started at `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fills `bytes` with random bytes.
    pub fn fill(&mut self, bytes: &mut [u8]) {
        for chunk in bytes.chunks_mut(8) {
            let r = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&r[..chunk.len()]);
        }
    }

    /// Uniform in [0, 2^FRAC): a fraction of a sample.
    fn fraction(&mut self) -> i64 {
        (self.next_u64() >> (64 - FRAC)) as i64
    }
}

/// The receiver and the line.
#[derive(Clone, Copy, Debug)]
pub struct Line {
    /// Receiver samples per bit (2..=8).
    pub samples_per_bit: u32,
    /// Transmitter clock offset, ppm (+ = transmitter fast).
    pub drift_ppm: i32,
    /// Peak edge jitter in thousandths of a receiver sample.
    pub jitter_milli: u32,
}

/// Idle bit times the receiver keeps sampling after the transmission (as the sample wire).
const IDLE_TAIL_BITS: usize = 16;

/// Re-samples `tx_samples` samples of the 2x transmitter capture `tx` at the receiver's clock
/// into `rx` (zeroed first); returns the receiver's sample count (at most `rx.len() * 32`).
pub fn impair(tx: &[u32], tx_samples: usize, line: Line, rng: &mut Rng, rx: &mut [u32]) -> usize {
    // Receiver samples per transmitter sample, fixed point.
    let scale = ((i64::from(line.samples_per_bit) * 1_000_000) << FRAC)
        / (i64::from(TX_SAMPLES_PER_BIT) * (1_000_000 + i64::from(line.drift_ppm)));
    let jitter = i64::from(line.jitter_milli) * ONE / 1000;
    let phase = rng.fraction();
    let end = phase + tx_samples as i64 * scale;
    let rx_samples =
        (((end + ONE - 1) >> FRAC) as usize + IDLE_TAIL_BITS * line.samples_per_bit as usize + 1)
            .min(rx.len() * 32);
    rx.fill(0);
    let tx = Capture::new(tx, tx_samples);
    let mut level = tx.sample(0);
    let mut run_start = 0usize;
    let mut last_time = 0i64;
    let mut pos = 0usize;
    while let Some(edge) = tx.next_edge(pos) {
        pos = edge;
        let offset = if jitter > 0 {
            // Uniform in [-jitter, +jitter].
            (((rng.next_u64() >> 32) as i64 * (2 * jitter + 1)) >> 32) - jitter
        } else {
            0
        };
        let time = (phase + edge as i64 * scale + offset).max(last_time);
        last_time = time;
        let first_new = (((time + ONE - 1) >> FRAC) as usize).clamp(run_start, rx_samples);
        if level == 1 {
            set_range(rx, run_start, first_new);
        }
        run_start = first_new;
        level ^= 1;
    }
    if level == 1 {
        set_range(rx, run_start, rx_samples);
    }
    rx_samples
}

/// Sets samples `start..end` to 1.
fn set_range(words: &mut [u32], start: usize, end: usize) {
    let mut i = start;
    while i < end {
        let shift = i & 31;
        let take = (32 - shift).min(end - i);
        let mask = if take == 32 {
            u32::MAX
        } else {
            ((1u32 << take) - 1) << shift
        };
        if let Some(word) = words.get_mut(i >> 5) {
            *word |= mask;
        }
        i += take;
    }
}
