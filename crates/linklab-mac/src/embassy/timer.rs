//! How the embassy driver gets woken at a time: the [`WakeAt`] half of a clock, and
//! [`EmbassyTimeClock`] (feature `embassy-time`), which takes both halves from embassy's time
//! driver.

use core::task::Waker;

#[cfg(feature = "embassy-time")]
use crate::timing::Clock;
use crate::timing::NoClock;

/// A timer on the MAC's [`Clock`]: wakes a task once the clock has reached a time.
///
/// The embassy driver needs it for work that only time makes possible: a frame deferred by
/// the inter-packet gap or a received PAUSE, a PAUSE refresh, a polled link. Implement it
/// next to `Clock` on the same type, on the same time base; on embassy,
/// [`EmbassyTimeClock`] (feature `embassy-time`) does both.
pub trait WakeAt {
    /// Arranges for `waker` to be woken once the clock reads at least `at_ns` (at once if it
    /// already does). When called again before it fired, waking at the earliest of the
    /// times is enough: the driver asks again after every wake-up.
    fn wake_at(&self, at_ns: u64, waker: &Waker);
}

impl<W: WakeAt + ?Sized> WakeAt for &W {
    fn wake_at(&self, at_ns: u64, waker: &Waker) {
        (**self).wake_at(at_ns, waker)
    }
}

/// Without timing (line rate 0) the MAC never defers a frame; should it still be asked, it
/// wakes at once (correct, if not frugal). A polled link needs a real clock.
impl WakeAt for NoClock {
    fn wake_at(&self, _at_ns: u64, waker: &Waker) {
        waker.wake_by_ref();
    }
}

/// The MAC's clock and timer from embassy's time driver (`embassy-time-driver` 0.2, whatever
/// driver the application links: a board's, or embassy-time's `std` one on a host).
#[cfg(feature = "embassy-time")]
#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EmbassyTimeClock;

/// Nanoseconds per tick of embassy's time driver when a tick is a whole number of them, else 0.
#[cfg(feature = "embassy-time")]
const NS_PER_TICK: u64 = if 1_000_000_000 % embassy_time_driver::TICK_HZ == 0 {
    1_000_000_000 / embassy_time_driver::TICK_HZ
} else {
    0
};

#[cfg(feature = "embassy-time")]
impl EmbassyTimeClock {
    /// Ticks of embassy's time driver to nanoseconds (saturating). A tick rate that divides
    /// 1 GHz (1 MHz, embassy's default; 1 GHz, ticks that are nanoseconds) takes one multiply,
    /// any other a 128-bit division.
    pub const fn ticks_to_ns(ticks: u64) -> u64 {
        if NS_PER_TICK != 0 {
            return ticks.saturating_mul(NS_PER_TICK);
        }
        let ns = ticks as u128 * 1_000_000_000 / embassy_time_driver::TICK_HZ as u128;
        if ns > u64::MAX as u128 {
            u64::MAX
        } else {
            ns as u64
        }
    }

    /// Nanoseconds to ticks of embassy's time driver, rounded up (never early; saturating).
    pub const fn ns_to_ticks(ns: u64) -> u64 {
        if NS_PER_TICK != 0 {
            return ns.div_ceil(NS_PER_TICK);
        }
        let ticks = (ns as u128 * embassy_time_driver::TICK_HZ as u128).div_ceil(1_000_000_000);
        if ticks > u64::MAX as u128 {
            u64::MAX
        } else {
            ticks as u64
        }
    }
}

#[cfg(feature = "embassy-time")]
impl Clock for EmbassyTimeClock {
    fn now_ns(&self) -> u64 {
        Self::ticks_to_ns(embassy_time_driver::now())
    }
}

#[cfg(feature = "embassy-time")]
impl WakeAt for EmbassyTimeClock {
    fn wake_at(&self, at_ns: u64, waker: &Waker) {
        let at = Self::ns_to_ticks(at_ns);
        if at <= embassy_time_driver::now() {
            // A driver "might" wake at once for a past time; do it for sure.
            waker.wake_by_ref();
        } else {
            embassy_time_driver::schedule_wake(at, waker);
        }
    }
}
