//! Time from the Cortex-A9's global timer (64 bits, never wrapping in practice) and its
//! comparator as a sleep's deadline. QEMU's model counts one tick per 10 ns of virtual time
//! whatever the CPU clock ([`NS_PER_TICK`]): under `-icount shift=0`, 10 instructions.

const BASE: usize = 0xF8F0_0200;
const COUNT_LOW: usize = 0x00;
const COUNT_HIGH: usize = 0x04;
const CONTROL: usize = 0x08;
const STATUS: usize = 0x0C;
const COMPARE_LOW: usize = 0x10;
const COMPARE_HIGH: usize = 0x14;
const ENABLE: u32 = 1 << 0;
const COMPARE_ENABLE: u32 = 1 << 1;
const IRQ_ENABLE: u32 = 1 << 2;
const EVENT: u32 = 1 << 0;

/// Nanoseconds per tick of QEMU's global timer at prescaler 0 (checked by `linklab emu
/// --cost`'s figures: the firmware's work under `-icount shift=0` in these nanoseconds
/// equals the instructions QEMU retired).
pub const NS_PER_TICK: u64 = 10;

fn reg(offset: usize) -> *mut u32 {
    (BASE + offset) as *mut u32
}

/// Starts the counter (prescaler 0), comparator off.
pub fn init() {
    // SAFETY: the global timer's registers, word aligned.
    unsafe { reg(CONTROL).write_volatile(ENABLE) };
}

/// Ticks since [`init`].
pub fn ticks() -> u64 {
    // SAFETY: as above. The high word read twice: a carry between the reads is seen.
    unsafe {
        loop {
            let high = reg(COUNT_HIGH).read_volatile();
            let low = reg(COUNT_LOW).read_volatile();
            if reg(COUNT_HIGH).read_volatile() == high {
                return (u64::from(high) << 32) | u64::from(low);
            }
        }
    }
}

/// Nanoseconds since [`init`].
pub fn now_ns() -> u64 {
    ticks() * NS_PER_TICK
}

/// Raises the timer's interrupt at `deadline_ns` (or at once, if it passed).
pub fn arm_at_ns(deadline_ns: u64) {
    let at = deadline_ns.div_ceil(NS_PER_TICK);
    // SAFETY: as above; the comparator is off while its two halves are written.
    unsafe {
        reg(CONTROL).write_volatile(ENABLE);
        reg(COMPARE_LOW).write_volatile(at as u32);
        reg(COMPARE_HIGH).write_volatile((at >> 32) as u32);
        reg(CONTROL).write_volatile(ENABLE | COMPARE_ENABLE | IRQ_ENABLE);
    }
}

/// No deadline: the comparator and its interrupt off.
pub fn disarm() {
    // SAFETY: as above.
    unsafe { reg(CONTROL).write_volatile(ENABLE) };
}

/// Clears the comparator's event (its interrupt line).
pub fn clear_event() {
    // SAFETY: as above; the flag is write-1-to-clear.
    unsafe { reg(STATUS).write_volatile(EVENT) };
}

/// True (and cleared) if the comparator's event fired.
pub fn take_event() -> bool {
    // SAFETY: as above.
    unsafe {
        let fired = reg(STATUS).read_volatile() & EVENT != 0;
        if fired {
            reg(STATUS).write_volatile(EVENT);
        }
        fired
    }
}
