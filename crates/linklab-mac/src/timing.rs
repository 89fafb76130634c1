//! Time on the line: the clock trait, bit times, the inter-packet gap.

/// Bit times of the minimum inter-packet gap (9.6 µs at 10 Mb/s).
pub const IPG_BITS: u64 = 96;

/// A monotonic clock in nanoseconds. The MAC uses it for the inter-packet gap and PAUSE.
///
/// On a microcontroller: a hardware timer. In a simulator: virtual time. For a TAP
/// (no line timing) use [`NoClock`]: its `TIMED` is false, so the MAC keeps no line timing
/// and a build leaves that code out (a line rate of 0 also turns the timing off, but keeps
/// the code).
pub trait Clock {
    /// False for a clock that never moves ([`NoClock`]): the MAC then keeps no line timing
    /// whatever its line rate, and a build leaves that code out.
    const TIMED: bool = true;

    /// Nanoseconds since an arbitrary fixed origin; never decreases.
    fn now_ns(&self) -> u64;
}

impl<C: Clock + ?Sized> Clock for &C {
    const TIMED: bool = C::TIMED;

    fn now_ns(&self) -> u64 {
        (**self).now_ns()
    }
}

/// A clock that is always at 0: for links without timing (line rate 0).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoClock;

impl Clock for NoClock {
    const TIMED: bool = false;

    fn now_ns(&self) -> u64 {
        0
    }
}

/// A clock read through a function, e.g. `FnClock(|| timer.now_ns())`.
pub struct FnClock<F: Fn() -> u64>(pub F);

impl<F: Fn() -> u64> Clock for FnClock<F> {
    fn now_ns(&self) -> u64 {
        (self.0)()
    }
}

/// Nanoseconds `bits` bit times take at `line_rate_bps` (rounded up; 0 if the rate is 0;
/// saturating).
///
/// In 64-bit arithmetic: 128-bit division costs a Cortex-M ~1 KB of flash. Whole seconds
/// first, then the rest of the bits, fewer than the rate, whose nanoseconds fit 64 bits at
/// every rate up to 18 Gb/s. Above that the rest is rounded up from whole Gb/s. Not inlined:
/// its 64-bit divisions are ~200 B on a Cortex-M, and the MAC calls it from three places.
#[inline(never)]
pub fn bits_ns(bits: u64, line_rate_bps: u64) -> u64 {
    const NS_PER_S: u64 = 1_000_000_000;
    if line_rate_bps == 0 {
        return 0;
    }
    let (secs, rest) = (bits / line_rate_bps, bits % line_rate_bps);
    let rest_ns = match rest.checked_mul(NS_PER_S) {
        Some(n) => n.div_ceil(line_rate_bps),
        None => rest.div_ceil(line_rate_bps / NS_PER_S),
    };
    secs.saturating_mul(NS_PER_S).saturating_add(rest_ns)
}

/// The inter-packet gap in nanoseconds at `line_rate_bps` (9600 ns at 10 Mb/s).
pub fn ipg_ns(line_rate_bps: u64) -> u64 {
    bits_ns(IPG_BITS, line_rate_bps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gap_at_standard_rates() {
        assert_eq!(ipg_ns(10_000_000), 9_600);
        assert_eq!(ipg_ns(100_000_000), 960);
        assert_eq!(ipg_ns(1_000_000_000), 96);
        assert_eq!(ipg_ns(0), 0);
        assert_eq!(bits_ns(8 * 72, 10_000_000), 57_600);
    }

    /// The exact rounded-up quotient (128-bit) at every rate up to 18 Gb/s; at or above it
    /// elsewhere, never below.
    #[test]
    fn bit_times_match_exact_arithmetic() {
        let exact = |bits: u64, rate: u64| {
            (bits as u128 * 1_000_000_000)
                .div_ceil(rate as u128)
                .min(u64::MAX as u128) as u64
        };
        let exact_rates = [
            1,
            3,
            7,
            9_600,
            10_000_000,
            100_000_000,
            999_999_937,
            1_000_000_000,
            10_000_000_000,
            18_000_000_000,
        ];
        let above = [25_000_000_000, u64::MAX];
        let bits = [
            0,
            1,
            7,
            96,
            12_144,
            33_553_920,
            1 << 40,
            u64::MAX / 3,
            u64::MAX,
        ];
        for &b in &bits {
            for &r in &exact_rates {
                assert_eq!(bits_ns(b, r), exact(b, r), "{b} bits at {r} b/s");
            }
            for &r in &above {
                assert!(bits_ns(b, r) >= exact(b, r), "{b} bits at {r} b/s");
            }
        }
    }
}
