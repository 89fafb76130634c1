//! The Cortex-A9 MPCore's global timer (PERIPHBASE + 0x200): 64 bits, never wrapping in
//! practice, for time; its comparator as a sleep's deadline (PPI 27). QEMU's model counts one
//! tick per 10 ns of virtual time whatever the board ([`NS_PER_TICK`]): under `-icount
//! shift=0`, 10 instructions.

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

/// The global timer's interrupt (a private peripheral interrupt) at the GIC.
pub const IRQ: u32 = 27;

/// The global timer of the MPCore whose private region starts at a PERIPHBASE.
#[derive(Clone, Copy)]
pub struct GlobalTimer {
    base: usize,
}

impl GlobalTimer {
    /// The timer of the MPCore at `periphbase`.
    pub const fn at(periphbase: usize) -> GlobalTimer {
        GlobalTimer {
            base: periphbase + 0x200,
        }
    }

    fn reg(&self, offset: usize) -> *mut u32 {
        (self.base + offset) as *mut u32
    }

    /// Starts the counter (prescaler 0), comparator off.
    pub fn init(&self) {
        // SAFETY: the global timer's registers, word aligned.
        unsafe { self.reg(CONTROL).write_volatile(ENABLE) };
    }

    /// Ticks since [`GlobalTimer::init`].
    pub fn ticks(&self) -> u64 {
        // SAFETY: as above. The high word read twice: a carry between the reads is seen.
        unsafe {
            loop {
                let high = self.reg(COUNT_HIGH).read_volatile();
                let low = self.reg(COUNT_LOW).read_volatile();
                if self.reg(COUNT_HIGH).read_volatile() == high {
                    return (u64::from(high) << 32) | u64::from(low);
                }
            }
        }
    }

    /// Nanoseconds since [`GlobalTimer::init`].
    pub fn now_ns(&self) -> u64 {
        self.ticks() * NS_PER_TICK
    }

    /// Raises the timer's interrupt at `deadline_ns` (or at once, if it passed).
    pub fn arm_at_ns(&self, deadline_ns: u64) {
        let at = deadline_ns.div_ceil(NS_PER_TICK);
        // SAFETY: as above; the comparator is off while its two halves are written.
        unsafe {
            self.reg(CONTROL).write_volatile(ENABLE);
            self.reg(COMPARE_LOW).write_volatile(at as u32);
            self.reg(COMPARE_HIGH).write_volatile((at >> 32) as u32);
            self.reg(CONTROL)
                .write_volatile(ENABLE | COMPARE_ENABLE | IRQ_ENABLE);
        }
    }

    /// No deadline: the comparator and its interrupt off.
    pub fn disarm(&self) {
        // SAFETY: as above.
        unsafe { self.reg(CONTROL).write_volatile(ENABLE) };
    }

    /// Clears the comparator's event (its interrupt line).
    pub fn clear_event(&self) {
        // SAFETY: as above; the flag is write-1-to-clear.
        unsafe { self.reg(STATUS).write_volatile(EVENT) };
    }

    /// True (and cleared) if the comparator's event fired.
    pub fn take_event(&self) -> bool {
        // SAFETY: as above.
        unsafe {
            let fired = self.reg(STATUS).read_volatile() & EVENT != 0;
            if fired {
                self.reg(STATUS).write_volatile(EVENT);
            }
            fired
        }
    }
}
