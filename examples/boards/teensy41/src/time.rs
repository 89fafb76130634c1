//! embassy-time's driver on the Cortex-M7's SysTick, ticking at 1 kHz from the i.MX RT's
//! 100 kHz SysTick reference (so whatever the core clock the boot left): each tick counts,
//! and wakes the timers that are due (embassy-time-queue-utils' queue). A millisecond is
//! fine for TCP's timers and the apps' timeouts.

use core::cell::{Cell, RefCell};
use core::task::Waker;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use cortex_m_rt::exception;
use critical_section::Mutex;
use embassy_time_queue_utils::Queue;

/// The SysTick reference on the i.MX RT1060 (24 MHz / 240).
const REFERENCE_HZ: u32 = 100_000;

const _: () = assert!(embassy_time_driver::TICK_HZ == 1_000);

struct SysTickTime {
    ticks: Mutex<Cell<u64>>,
    queue: Mutex<RefCell<Queue>>,
}

embassy_time_driver::time_driver_impl!(static TIME: SysTickTime = SysTickTime {
    ticks: Mutex::new(Cell::new(0)),
    queue: Mutex::new(RefCell::new(Queue::new())),
});

impl embassy_time_driver::Driver for SysTickTime {
    fn now(&self) -> u64 {
        critical_section::with(|cs| self.ticks.borrow(cs).get())
    }

    fn schedule_wake(&self, at: u64, waker: &Waker) {
        critical_section::with(|cs| {
            self.queue.borrow(cs).borrow_mut().schedule_wake(at, waker);
        });
    }
}

/// Starts SysTick at 1 kHz with its interrupt.
pub fn start(mut syst: SYST) {
    syst.set_clock_source(SystClkSource::External);
    syst.set_reload(REFERENCE_HZ / 1_000 - 1);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
}

#[exception]
fn SysTick() {
    critical_section::with(|cs| {
        let now = TIME.ticks.borrow(cs).get() + 1;
        TIME.ticks.borrow(cs).set(now);
        // Wakes every timer due by now (the next expiration is read on the next tick).
        let _ = TIME.queue.borrow(cs).borrow_mut().next_expiration(now);
    });
}
