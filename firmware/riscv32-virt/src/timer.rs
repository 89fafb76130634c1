//! The ACLINT machine timer of `virt`: mtime (10 MHz) for time, mtimecmp for wake-ups.

const MTIME: usize = 0x0200_BFF8;
const MTIMECMP: usize = 0x0200_4000;
/// Nanoseconds per mtime tick (10 MHz).
const NS_PER_TICK: u64 = 100;

fn mtime() -> u64 {
    loop {
        // SAFETY: the ACLINT's mtime register pair.
        let (hi, lo, hi2) = unsafe {
            (
                core::ptr::read_volatile((MTIME + 4) as *const u32),
                core::ptr::read_volatile(MTIME as *const u32),
                core::ptr::read_volatile((MTIME + 4) as *const u32),
            )
        };
        if hi == hi2 {
            return (u64::from(hi) << 32) | u64::from(lo);
        }
    }
}

fn set_mtimecmp(v: u64) {
    // SAFETY: hart 0's mtimecmp; high word first to max so no spurious interrupt on the way.
    unsafe {
        core::ptr::write_volatile((MTIMECMP + 4) as *mut u32, u32::MAX);
        core::ptr::write_volatile(MTIMECMP as *mut u32, v as u32);
        core::ptr::write_volatile((MTIMECMP + 4) as *mut u32, (v >> 32) as u32);
    }
}

/// Nanoseconds since boot.
pub fn now_ns() -> u64 {
    mtime().saturating_mul(NS_PER_TICK)
}

/// Raises the timer interrupt at `ns`.
pub fn arm_at_ns(ns: u64) {
    set_mtimecmp(ns.div_ceil(NS_PER_TICK));
}

/// No timer interrupt.
pub fn disarm() {
    set_mtimecmp(u64::MAX);
}
