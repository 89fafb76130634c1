//! The `critical-section` implementation of a single hart in machine mode (embassy's
//! executor, time queue and channels take it): mask interrupts, restore what was.

use crate::cpu;

struct SingleHart;
critical_section::set_impl!(SingleHart);

// SAFETY: one hart; masking mstatus.MIE keeps every interrupt handler out until released.
unsafe impl critical_section::Impl for SingleHart {
    unsafe fn acquire() -> critical_section::RawRestoreState {
        cpu::mask_interrupts()
    }

    unsafe fn release(was_enabled: critical_section::RawRestoreState) {
        if was_enabled {
            cpu::enable_interrupts();
        }
    }
}
