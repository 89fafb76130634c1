//! The wire: line rate, preamble + SFD, inter-packet gap, propagation delay, half or full
//! duplex, and the impairments applied to each transmission (each one counted).

use std::fmt;
use std::str::FromStr;

use rand::Rng;

use crate::name::UnknownName;

/// Line rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum Rate {
    /// 10 Mbit/s (10BASE-T, Niccle's link).
    M10,
    /// 100 Mbit/s.
    M100,
    /// 1000 Mbit/s.
    G1,
}

impl Rate {
    /// Every rate, slowest first.
    pub const ALL: [Rate; 3] = [Rate::M10, Rate::M100, Rate::G1];

    /// Bits per second.
    pub fn bits_per_s(self) -> u64 {
        match self {
            Rate::M10 => 10_000_000,
            Rate::M100 => 100_000_000,
            Rate::G1 => 1_000_000_000,
        }
    }

    /// Duration of one bit in picoseconds.
    pub fn bit_ps(self) -> u64 {
        1_000_000_000_000 / self.bits_per_s()
    }

    /// Wire time of `bytes` bytes in nanoseconds (rounded up).
    pub fn bytes_ns(self, bytes: usize) -> u64 {
        (bytes as u64 * 8 * self.bit_ps()).div_ceil(1000)
    }

    /// The rate's name: `10M`, `100M` or `1G` (what `FromStr` accepts).
    pub fn name(self) -> &'static str {
        match self {
            Rate::M10 => "10M",
            Rate::M100 => "100M",
            Rate::G1 => "1G",
        }
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Rate {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Rate, UnknownName> {
        Rate::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| UnknownName::new("rate", s, Rate::ALL.map(Rate::name)))
    }
}

/// Duplex mode (`FromStr`/`Display`: `half`, `full`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Duplex {
    /// One talker at a time (carrier sense, defer); Niccle's negotiated mode.
    Half,
    /// Each direction has its own medium.
    Full,
}

impl Duplex {
    /// Both modes.
    pub const ALL: [Duplex; 2] = [Duplex::Half, Duplex::Full];

    /// The mode's name: `half` or `full`.
    pub const fn name(self) -> &'static str {
        match self {
            Duplex::Half => "half",
            Duplex::Full => "full",
        }
    }

    /// One sentence on what the mode means (for help texts).
    pub const fn summary(self) -> &'static str {
        match self {
            Duplex::Half => "One talker at a time (carrier sense, defer); Niccle's negotiated mode",
            Duplex::Full => "Each direction has its own medium",
        }
    }
}

impl fmt::Display for Duplex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Duplex {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Duplex, UnknownName> {
        Duplex::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| UnknownName::new("duplex mode", s, Duplex::ALL.map(Duplex::name)))
    }
}

/// Inter-packet gap in bit times (IEEE 802.3).
pub const IPG_BITS: u64 = 96;

/// Normal link pulse period of an idle 10BASE-T transmitter (16 ms).
pub const NLP_PERIOD_NS: u64 = 16_000_000;

/// Link parameters.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct LinkConfig {
    /// Line rate.
    pub rate: Rate,
    /// Half or full duplex.
    pub duplex: Duplex,
    /// One-way propagation delay (ns); 2 m of cable ≈ 10 ns.
    pub propagation_ns: u64,
}

impl LinkConfig {
    /// The inter-packet gap in nanoseconds.
    pub fn ipg_ns(&self) -> u64 {
        (IPG_BITS * self.rate.bit_ps()).div_ceil(1000)
    }
}

/// Impairment settings applied to every transmission in both directions.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct Impairments {
    /// Probability that a transmission is lost entirely.
    pub loss: f64,
    /// Probability that any single bit is flipped.
    pub ber: f64,
    /// Probability that a transmission is cut short at a random byte.
    pub truncate: f64,
}

/// What the impairments did to the transmissions in one direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImpairmentCounters {
    /// Transmissions put on the wire.
    pub transmissions: u64,
    /// Transmissions lost entirely.
    pub lost: u64,
    /// Transmissions with at least one flipped bit.
    pub corrupted: u64,
    /// Bits flipped.
    pub bits_flipped: u64,
    /// Transmissions cut short.
    pub truncated: u64,
}

/// What a transmission looks like after the impairments.
#[derive(Debug, PartialEq, Eq)]
pub enum Impaired {
    /// Lost: the receiver sees nothing.
    Lost,
    /// Delivered, possibly corrupted or shortened (in place).
    Delivered,
}

impl Impairments {
    /// Applies loss, truncation and bit errors to `wire` (in place), counting them.
    pub fn apply(
        &self,
        wire: &mut Vec<u8>,
        rng: &mut impl Rng,
        counters: &mut ImpairmentCounters,
    ) -> Impaired {
        counters.transmissions += 1;
        if self.loss > 0.0 && rng.gen_bool(self.loss) {
            counters.lost += 1;
            return Impaired::Lost;
        }
        if self.truncate > 0.0 && !wire.is_empty() && rng.gen_bool(self.truncate) {
            let keep = rng.gen_range(0..wire.len());
            wire.truncate(keep);
            counters.truncated += 1;
        }
        if self.ber > 0.0 {
            let flipped = flip_bits(wire, self.ber, rng);
            if flipped > 0 {
                counters.corrupted += 1;
                counters.bits_flipped += flipped;
            }
        }
        Impaired::Delivered
    }
}

/// Flips each bit of `buf` independently with probability `p` (geometric skips, so the
/// cost is per flipped bit, not per bit). Returns the number of flipped bits.
pub fn flip_bits(buf: &mut [u8], p: f64, rng: &mut impl Rng) -> u64 {
    if p <= 0.0 {
        return 0;
    }
    let bits = buf.len() as u64 * 8;
    let ln_q = (1.0 - p.min(0.5)).ln();
    let mut pos: u64 = 0;
    let mut flipped = 0;
    loop {
        // Number of clean bits before the next error: floor(ln U / ln(1 - p)).
        let u: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
        let skip = (u.ln() / ln_q).floor();
        if !skip.is_finite() || skip >= (bits - pos) as f64 {
            return flipped;
        }
        pos += skip as u64;
        if let Some(b) = buf.get_mut((pos / 8) as usize) {
            *b ^= 1 << (pos % 8);
        }
        flipped += 1;
        pos += 1;
        if pos >= bits {
            return flipped;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn names_round_trip() {
        for r in Rate::ALL {
            assert_eq!(r.to_string().parse::<Rate>(), Ok(r));
        }
        for d in Duplex::ALL {
            assert_eq!(d.to_string().parse::<Duplex>(), Ok(d));
        }
        let e = "5M".parse::<Rate>().unwrap_err().to_string();
        assert_eq!(e, "unknown rate \"5M\" (accepted: 10M, 100M, 1G)");
        assert!("quarter".parse::<Duplex>().is_err());
    }

    #[test]
    fn ten_megabit_timing() {
        let l = LinkConfig {
            rate: Rate::M10,
            duplex: Duplex::Half,
            propagation_ns: 0,
        };
        assert_eq!(l.ipg_ns(), 9_600);
        assert_eq!(Rate::M10.bytes_ns(1526), 1_220_800);
        assert_eq!(Rate::G1.bytes_ns(1), 8);
    }

    #[test]
    fn ber_flips_about_the_expected_number_of_bits() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut buf = vec![0u8; 125_000]; // 1e6 bits
        let n = flip_bits(&mut buf, 1e-4, &mut rng);
        assert!((70..=130).contains(&n), "{n}");
        let ones: u32 = buf.iter().map(|b| b.count_ones()).sum();
        assert_eq!(ones as u64, n);
    }
}
