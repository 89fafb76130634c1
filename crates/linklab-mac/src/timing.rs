//! Time on the line: the clock trait, bit times, the inter-packet gap.

/// Bit times of the minimum inter-packet gap (9.6 µs at 10 Mb/s).
pub const IPG_BITS: u64 = 96;

/// A monotonic clock in nanoseconds. The MAC uses it for the inter-packet gap and PAUSE.
///
/// On a microcontroller: a hardware timer. In a simulator: virtual time. For a TAP
/// (no line timing) use [`NoClock`] with a line rate of 0.
pub trait Clock {
    /// Nanoseconds since an arbitrary fixed origin; never decreases.
    fn now_ns(&self) -> u64;
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_ns(&self) -> u64 {
        (**self).now_ns()
    }
}

/// A clock that is always at 0: for links without timing (line rate 0).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoClock;

impl Clock for NoClock {
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

/// Nanoseconds `bits` bit times take at `line_rate_bps` (rounded up; 0 if the rate is 0).
pub fn bits_ns(bits: u64, line_rate_bps: u64) -> u64 {
    if line_rate_bps == 0 {
        return 0;
    }
    let num = bits as u128 * 1_000_000_000u128;
    let ns = num.div_ceil(line_rate_bps as u128);
    ns.min(u64::MAX as u128) as u64
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
}
