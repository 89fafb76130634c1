//! An `embassy_time_driver::Driver` on any board's timer ([`BoardTime`]): the board says how
//! to read its clock and arm a one-shot ([`BoardTimer`]), this module keeps the queue of
//! timers. In the image, over a module `timer` with `now_ns`, `arm_at_ns` and `disarm`
//! ([`board_time_driver!`](crate::board_time_driver)):
//!
//! ```ignore
//! linklab_firmware::board_time_driver!(TIME, timer);
//! // the timer's interrupt: TIME.on_alarm();
//! ```
//!
//! embassy-time's tick is a nanosecond (feature `tick-hz-1_000_000_000` of
//! embassy-time-driver, set by this crate): the board's clock is the driver's, with no
//! division on every read of the time (at embassy's default 1 MHz each read divided a 64-bit
//! count by 1000, a library call on these CPUs).

use core::cell::RefCell;
use core::marker::PhantomData;
use core::task::Waker;

use critical_section::Mutex;
use embassy_time_queue_utils::Queue;

/// A board's timer: a 64-bit clock in nanoseconds and a one-shot interrupt.
pub trait BoardTimer {
    /// Nanoseconds since boot.
    fn now_ns() -> u64;
    /// Raises the timer's interrupt at `ns` (soon after, if it has passed).
    fn arm_at_ns(ns: u64);
    /// No timer interrupt.
    fn disarm();
}

// The driver's ticks are the boards' nanoseconds.
const _: () = assert!(embassy_time_driver::TICK_HZ == 1_000_000_000);

/// embassy-time's driver on the board timer `T`.
pub struct BoardTime<T> {
    alarms: Alarms,
    timer: PhantomData<fn() -> T>,
}

impl<T: BoardTimer> Default for BoardTime<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: BoardTimer> BoardTime<T> {
    /// No timers yet.
    pub const fn new() -> Self {
        BoardTime {
            alarms: Alarms::new(),
            timer: PhantomData,
        }
    }

    /// Now, in embassy-time's ticks (nanoseconds).
    fn now_ticks() -> u64 {
        T::now_ns()
    }

    /// Arms the timer for tick `at` (`u64::MAX`: no alarm); false if `at` has passed.
    fn set_alarm(at: u64) -> bool {
        if at == u64::MAX {
            T::disarm();
            return true;
        }
        if at <= T::now_ns() {
            return false;
        }
        T::arm_at_ns(at);
        true
    }

    /// The timer's interrupt (after the board acknowledged it): wakes the timers that are
    /// due and arms the next.
    pub fn on_alarm(&self) {
        self.alarms.on_alarm(Self::now_ticks, Self::set_alarm);
    }
}

impl<T: BoardTimer + 'static> embassy_time_driver::Driver for BoardTime<T> {
    fn now(&self) -> u64 {
        Self::now_ticks()
    }

    fn schedule_wake(&self, at: u64, waker: &Waker) {
        self.alarms
            .schedule(at, waker, Self::now_ticks, Self::set_alarm);
    }
}

/// The timers waiting for the board's alarm.
pub struct Alarms {
    timers: Mutex<RefCell<Timers>>,
}

/// The queue and the time the board's alarm is armed for.
struct Timers {
    queue: Queue,
    /// Tick the alarm is armed for (`u64::MAX`: none).
    armed: u64,
}

impl Default for Alarms {
    fn default() -> Self {
        Self::new()
    }
}

impl Alarms {
    /// No timers.
    pub const fn new() -> Alarms {
        Alarms {
            timers: Mutex::new(RefCell::new(Timers {
                queue: Queue::new(),
                armed: u64::MAX,
            })),
        }
    }

    /// `Driver::schedule_wake`: queues `waker` for `at` and moves the alarm if `at` comes
    /// before it. `set_alarm(at)` arms the board's timer for `at` (ticks; `u64::MAX`: none)
    /// and answers false if that time has already passed.
    ///
    /// A task re-arms its timer on every poll (embassy-net's runner does, for smoltcp's next
    /// deadline), mostly for the time it had: the queue then asks for the alarm to be moved
    /// again, which walks every timer and writes the board's timer. A time at or after the
    /// armed one needs neither: that alarm's interrupt wakes what is due then and arms the
    /// next.
    pub fn schedule(&self, at: u64, waker: &Waker, now: fn() -> u64, set_alarm: fn(u64) -> bool) {
        critical_section::with(|cs| {
            let mut timers = self.timers.borrow(cs).borrow_mut();
            if timers.queue.schedule_wake(at, waker) && at < timers.armed {
                timers.arm(now, set_alarm);
            }
        })
    }

    /// The board's timer interrupt (the alarm is off): wakes the timers that are due and
    /// arms the next.
    pub fn on_alarm(&self, now: fn() -> u64, set_alarm: fn(u64) -> bool) {
        critical_section::with(|cs| self.timers.borrow(cs).borrow_mut().arm(now, set_alarm))
    }
}

impl Timers {
    /// Wakes what is due and arms the alarm for the next timer, again until the time armed
    /// is still ahead.
    fn arm(&mut self, now: fn() -> u64, set_alarm: fn(u64) -> bool) {
        let mut next = self.queue.next_expiration(now());
        while !set_alarm(next) {
            next = self.queue.next_expiration(now());
        }
        self.armed = next;
    }
}

/// embassy-time-driver, for [`board_time_driver!`](crate::board_time_driver).
#[doc(hidden)]
pub use embassy_time_driver as __driver;

/// Defines embassy-time's driver, `static $name`, on the board's timer: a module `$timer`
/// with functions `now_ns()`, `arm_at_ns(ns)` and `disarm()`, or (`const $timer`) a value
/// with those methods. One line per image in place of a [`BoardTimer`] type of its own; the
/// timer's interrupt calls `$name.on_alarm()`.
#[macro_export]
macro_rules! board_time_driver {
    ($name:ident, const $timer:path) => {
        $crate::board_time_driver!(@driver $name, $timer.now_ns(), ns => $timer.arm_at_ns(ns), $timer.disarm());
    };
    ($name:ident, $timer:ident) => {
        $crate::board_time_driver!(@driver $name, $timer::now_ns(), ns => $timer::arm_at_ns(ns), $timer::disarm());
    };
    (@driver $name:ident, $now:expr, $ns:ident => $arm:expr, $disarm:expr) => {
        /// The board's timer as embassy-time's ([`BoardTimer`](
        /// $crate::embassy::time::BoardTimer)).
        pub struct BoardClock;

        impl $crate::embassy::time::BoardTimer for BoardClock {
            fn now_ns() -> u64 {
                $now
            }

            fn arm_at_ns($ns: u64) {
                $arm
            }

            fn disarm() {
                $disarm
            }
        }

        $crate::embassy::time::__driver::time_driver_impl!(
            static $name: $crate::embassy::time::BoardTime<BoardClock> =
                $crate::embassy::time::BoardTime::new()
        );
    };
}
