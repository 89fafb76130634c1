//! The half of an `embassy_time_driver::Driver` every board shares: the queue of timers and
//! the alarm. A board implements the driver on its own timer in a few lines:
//! `now()` reads it (µs, embassy-time's tick), `schedule_wake` is [`Alarms::schedule`] with
//! the board's `set_alarm`, and its timer interrupt calls [`Alarms::on_alarm`].

use core::cell::RefCell;
use core::task::Waker;

use critical_section::Mutex;
use embassy_time_queue_utils::Queue;

/// The timers waiting for the board's alarm.
pub struct Alarms {
    queue: Mutex<RefCell<Queue>>,
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
            queue: Mutex::new(RefCell::new(Queue::new())),
        }
    }

    /// `Driver::schedule_wake`: queues `waker` for `at` and moves the alarm if it must.
    /// `set_alarm(at)` arms the board's timer for `at` (µs; `u64::MAX`: none) and answers
    /// false if that time has already passed.
    pub fn schedule(&self, at: u64, waker: &Waker, now: fn() -> u64, set_alarm: fn(u64) -> bool) {
        critical_section::with(|cs| {
            let mut queue = self.queue.borrow(cs).borrow_mut();
            if queue.schedule_wake(at, waker) {
                arm(&mut queue, now, set_alarm);
            }
        })
    }

    /// The board's timer interrupt: wakes the timers that are due and arms the next.
    pub fn on_alarm(&self, now: fn() -> u64, set_alarm: fn(u64) -> bool) {
        critical_section::with(|cs| arm(&mut self.queue.borrow(cs).borrow_mut(), now, set_alarm))
    }
}

/// Wakes what is due and arms the alarm for the next timer, again until the time armed is
/// still ahead.
fn arm(queue: &mut Queue, now: fn() -> u64, set_alarm: fn(u64) -> bool) {
    let mut next = queue.next_expiration(now());
    while !set_alarm(next) {
        next = queue.next_expiration(now());
    }
}
