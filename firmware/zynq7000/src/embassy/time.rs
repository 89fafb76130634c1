//! embassy-time's driver on the global timer: its ticks are the timer's nanoseconds
//! (`tick-hz-1_000_000_000`), its alarm the timer's comparator. The queue of timers is
//! embassy-time-queue-utils'; the board's wake-up ([`crate::wake`]) calls [`on_alarm`] after
//! the comparator fired. The alarm is moved only for a time before the one armed.

use core::cell::RefCell;
use core::task::Waker;

use critical_section::Mutex;
use embassy_time_queue_utils::Queue;

use crate::TIMER;

const _: () = assert!(embassy_time_driver::TICK_HZ == 1_000_000_000);

/// The queue and the tick the comparator is armed for (`u64::MAX`: none).
struct Timers {
    queue: Queue,
    armed: u64,
}

/// embassy-time's driver.
pub struct GlobalTimer {
    timers: Mutex<RefCell<Timers>>,
}

embassy_time_driver::time_driver_impl!(static TIME: GlobalTimer = GlobalTimer {
    timers: Mutex::new(RefCell::new(Timers { queue: Queue::new(), armed: u64::MAX })),
});

/// Arms the comparator for `at` (`u64::MAX`: none); false if `at` has passed.
fn set_alarm(at: u64) -> bool {
    if at == u64::MAX {
        TIMER.disarm();
        return true;
    }
    if at <= TIMER.now_ns() {
        return false;
    }
    TIMER.arm_at_ns(at);
    true
}

impl Timers {
    /// Wakes what is due and arms the comparator for the next timer.
    fn arm(&mut self) {
        let mut next = self.queue.next_expiration(TIMER.now_ns());
        while !set_alarm(next) {
            next = self.queue.next_expiration(TIMER.now_ns());
        }
        self.armed = next;
    }
}

impl embassy_time_driver::Driver for GlobalTimer {
    fn now(&self) -> u64 {
        TIMER.now_ns()
    }

    fn schedule_wake(&self, at: u64, waker: &Waker) {
        critical_section::with(|cs| {
            let mut t = self.timers.borrow(cs).borrow_mut();
            if t.queue.schedule_wake(at, waker) && at < t.armed {
                t.arm();
            }
        })
    }
}

/// The comparator fired (its event cleared): wakes the timers that are due, arms the next.
pub fn on_alarm() {
    critical_section::with(|cs| TIME.timers.borrow(cs).borrow_mut().arm());
}
