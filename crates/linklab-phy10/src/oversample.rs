//! The oversampling factor: how many samples the shifter takes (or emits) per 100 ns bit.

/// Samples per bit time, 2..=8 (2 = 20 MHz sample clock, 4 = 40 MHz, 8 = 80 MHz).
///
/// A newtype so that every encoder/decoder entry point can rely on the range instead of
/// re-checking it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Oversample(u8);

impl Oversample {
    /// Smallest supported factor (one sample per half-bit).
    pub const MIN: u8 = 2;
    /// Largest supported factor.
    pub const MAX: u8 = 8;
    /// 2x: a 20 MHz sample clock, the cheapest rate that can carry Manchester.
    pub const X2: Oversample = Oversample(2);
    /// 4x: a 40 MHz sample clock, the rate the decoder's fast path is built for.
    pub const X4: Oversample = Oversample(4);

    /// Returns the factor if it is in `MIN..=MAX`, else `None`.
    pub const fn new(samples_per_bit: u8) -> Option<Oversample> {
        if samples_per_bit >= Self::MIN && samples_per_bit <= Self::MAX {
            Some(Oversample(samples_per_bit))
        } else {
            None
        }
    }

    /// Samples per bit time.
    pub const fn get(self) -> u8 {
        self.0
    }

    /// Samples per bit time as `usize`, for index arithmetic.
    pub const fn samples_per_bit(self) -> usize {
        self.0 as usize
    }

    /// The sample clock in Hz (10 Mbit/s times the factor).
    pub const fn sample_rate_hz(self) -> u32 {
        10_000_000 * self.0 as u32
    }

    /// Number of whole samples covering `ns` nanoseconds (rounded up).
    pub const fn samples_for_ns(self, ns: u32) -> usize {
        (ns as usize * self.0 as usize).div_ceil(100)
    }
}
