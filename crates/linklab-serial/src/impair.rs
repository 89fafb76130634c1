//! A deterministic impairment model for a byte stream: flipped bits, dropped bytes, bursts of
//! garbage. The tests and benchmarks put it between two links (in process with virtual time,
//! or in the relay between two pseudo-terminals); a seed makes every run repeatable.

/// What to do to the bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Impairment {
    /// Probability that any one bit is flipped.
    pub bit_error_rate: f64,
    /// Probability that any one byte is dropped.
    pub drop_rate: f64,
    /// Insert a burst of garbage after every this many bytes (0: never).
    pub garbage_every: u64,
    /// Bytes per garbage burst (random values, zeros included).
    pub garbage_len: usize,
}

/// Applies an [`Impairment`] to a stream, counting what it did.
#[derive(Clone, Debug)]
pub struct Impairer {
    cfg: Impairment,
    rng: u64,
    byte_error: u64,
    byte_drop: u64,
    since_garbage: u64,
    /// Bits flipped so far.
    pub flipped_bits: u64,
    /// Bytes dropped so far.
    pub dropped_bytes: u64,
    /// Garbage bytes inserted so far.
    pub garbage_bytes: u64,
    /// Bytes passed in.
    pub bytes_in: u64,
}

/// `p` as a threshold for a uniform 64-bit draw.
fn threshold(p: f64) -> u64 {
    if p <= 0.0 {
        0
    } else if p >= 1.0 {
        u64::MAX
    } else {
        (p * 18_446_744_073_709_551_616.0) as u64
    }
}

impl Impairer {
    /// An impairer for `cfg`, its random choices drawn from `seed`.
    pub fn new(cfg: Impairment, seed: u64) -> Impairer {
        // A byte has a flipped bit with probability 1 - (1 - ber)^8, about 8 * ber.
        let q = 1.0 - cfg.bit_error_rate.clamp(0.0, 1.0);
        let byte_p = 1.0 - q * q * q * q * q * q * q * q;
        Impairer {
            cfg,
            rng: seed ^ 0x9E37_79B9_7F4A_7C15 | 1,
            byte_error: threshold(byte_p),
            byte_drop: threshold(cfg.drop_rate),
            since_garbage: 0,
            flipped_bits: 0,
            dropped_bytes: 0,
            garbage_bytes: 0,
            bytes_in: 0,
        }
    }

    /// The next uniform 64-bit draw (xorshift64*).
    pub fn next_u64(&mut self) -> u64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Passes `input` through, calling `emit` for every byte that comes out.
    pub fn apply(&mut self, input: &[u8], mut emit: impl FnMut(u8)) {
        for &b in input {
            self.bytes_in += 1;
            if self.cfg.garbage_every > 0 {
                self.since_garbage += 1;
                if self.since_garbage >= self.cfg.garbage_every {
                    self.since_garbage = 0;
                    for _ in 0..self.cfg.garbage_len {
                        let g = self.next_u64() as u8;
                        self.garbage_bytes += 1;
                        emit(g);
                    }
                }
            }
            if self.byte_drop > 0 && self.next_u64() < self.byte_drop {
                self.dropped_bytes += 1;
                continue;
            }
            let mut b = b;
            if self.byte_error > 0 && self.next_u64() < self.byte_error {
                b ^= 1 << (self.next_u64() % 8);
                self.flipped_bits += 1;
            }
            emit(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_come_out_as_asked() {
        let cfg = Impairment {
            bit_error_rate: 1e-3,
            drop_rate: 0.01,
            garbage_every: 10_000,
            garbage_len: 20,
        };
        let mut imp = Impairer::new(cfg, 7);
        let input = [0x55u8; 1000];
        let mut out = 0u64;
        for _ in 0..1000 {
            imp.apply(&input, |_| out += 1);
        }
        // 1e6 bytes: ~10 000 dropped, ~8 000 bits flipped, 100 bursts of 20.
        assert!((9_000..11_000).contains(&imp.dropped_bytes), "{imp:?}");
        assert!((7_000..9_000).contains(&imp.flipped_bits), "{imp:?}");
        assert_eq!(imp.garbage_bytes, 2_000);
        assert_eq!(out, 1_000_000 - imp.dropped_bytes + 2_000);
    }
}
