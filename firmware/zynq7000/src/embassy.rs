//! The board's part of the embassy image (feature `embassy`); the rest — embassy-executor's
//! loop and its work figures, defmt on the console, the time driver's queue, the apps and
//! `/stats` — is linklab-firmware's embassy module, as for the linklab-mac images (here the
//! driver is zynq7000-hal's). This module gives it the global timer (embassy-time's driver:
//! its nanoseconds, its comparator for the alarm) and the way the CPU waits ([`idle`]).

use crate::{wake, GIC, TIMER};

linklab_firmware::board_time_driver!(TIME, const TIMER);

/// The comparator fired (its event cleared): wakes the timers that are due, arms the next.
pub fn on_alarm() {
    TIME.on_alarm();
}

/// The executor's wait: WFI unless `ready()` or the GIC already signals an interrupt, then
/// the HAL's GEM handler and embassy-time's alarm ([`wake::clear_embassy`]), counted as
/// interrupt work. No interrupt is ever taken (IRQs stay masked).
pub fn idle(ready: fn() -> bool) {
    if !ready() && !GIC.pending() {
        aarch32_cpu::asm::wfi();
    }
    let start = TIMER.now_ns();
    wake::clear_embassy();
    linklab_firmware::add_isr_work(TIMER.now_ns() - start);
}
