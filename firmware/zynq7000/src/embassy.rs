//! The board's part of the embassy image (feature `embassy`); the rest — embassy-executor's
//! loop and its work figures, defmt on the console, the time driver's queue, the apps and
//! `/stats` — is linklab-firmware's embassy module, as for the linklab-mac images (here the
//! driver is zynq7000-hal's). This module gives it the global timer (embassy-time's driver:
//! its nanoseconds, its comparator for the alarm) and the way the CPU waits ([`idle`]).

use zynq7000_hal::eth::EthernetId;

use crate::mpcore::{GIC, TIMER};

linklab_firmware::board_time_driver!(TIME, const TIMER);

/// The executor's wait: WFI unless `ready()` or the GIC already signals an interrupt, then
/// the HAL's GEM handler and embassy-time's alarm ([`clear`]), counted as interrupt work. No
/// interrupt is ever taken (IRQs stay masked).
pub fn idle(ready: fn() -> bool) {
    if !ready() && !GIC.pending() {
        aarch32_cpu::asm::wfi();
    }
    let start = TIMER.now_ns();
    clear();
    linklab_firmware::add_isr_work(TIMER.now_ns() - start);
}

/// [`crate::wake::clear`] for the embassy image: the HAL's embassy-net handler (which wakes
/// the driver's wakers), embassy-time's alarm when the timer's event was what fired (the
/// timers that are due woken, the next armed), then the GIC's acknowledge.
fn clear() {
    crate::gem::note_interrupt(zynq7000_hal::eth::embassy_net::on_interrupt(
        EthernetId::Eth0,
    ));
    if TIMER.take_event() {
        TIME.on_alarm();
    }
    GIC.ack_all();
}
