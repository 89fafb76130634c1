//! Time on mps2-an385 from two CMSDK 32-bit timers at the 25 MHz system clock (1 tick =
//! 40 ns): timer 0 (IRQ 8) runs free and its wrap interrupt extends it to 64 bits; timer 1
//! (IRQ 9) is a one-shot for `sleep_until`'s deadline.

use core::sync::atomic::{AtomicU32, Ordering};

const TIMER0: usize = 0x4000_0000;
const TIMER1: usize = 0x4000_1000;
const CTRL: usize = 0x00;
const VALUE: usize = 0x04;
const RELOAD: usize = 0x08;
const INTCLEAR: usize = 0x0C;
const CTRL_EN: u32 = 1;
const CTRL_IRQ_EN: u32 = 1 << 3;
/// Nanoseconds per tick at 25 MHz.
pub const NS_PER_TICK: u64 = 40;

/// Wraps of timer 0 seen by its interrupt.
static WRAPS: AtomicU32 = AtomicU32::new(0);

fn write(timer: usize, reg: usize, v: u32) {
    // SAFETY: a CMSDK timer register.
    unsafe { core::ptr::write_volatile((timer + reg) as *mut u32, v) };
}

fn read(timer: usize, reg: usize) -> u32 {
    // SAFETY: a CMSDK timer register.
    unsafe { core::ptr::read_volatile((timer + reg) as *const u32) }
}

/// Starts timer 0 free-running from 0xFFFF_FFFF with its wrap interrupt.
pub fn init() {
    write(TIMER0, CTRL, 0);
    write(TIMER0, RELOAD, u32::MAX);
    write(TIMER0, VALUE, u32::MAX);
    write(TIMER0, INTCLEAR, 1);
    write(TIMER0, CTRL, CTRL_EN | CTRL_IRQ_EN);
    write(TIMER1, CTRL, 0);
    write(TIMER1, INTCLEAR, 1);
}

/// Timer 0's interrupt: one more wrap.
pub fn on_wrap() {
    write(TIMER0, INTCLEAR, 1);
    WRAPS.fetch_add(1, Ordering::AcqRel);
}

/// Timer 1's interrupt: the deadline passed (the wake-up is all it is for).
pub fn on_deadline() {
    write(TIMER1, CTRL, 0);
    write(TIMER1, INTCLEAR, 1);
}

/// Ticks since `init`, 64 bits. A wrap whose interrupt has not run yet (interrupts masked)
/// is seen in the timer's raw interrupt status.
pub fn ticks() -> u64 {
    loop {
        let w1 = WRAPS.load(Ordering::Acquire);
        let v = read(TIMER0, VALUE);
        let pending = read(TIMER0, INTCLEAR) & 1;
        let w2 = WRAPS.load(Ordering::Acquire);
        if w1 != w2 {
            continue;
        }
        // A pending wrap counts only if the value read is from after it (counting down from
        // the top again).
        let wraps = u64::from(w1) + u64::from(pending != 0 && v > u32::MAX / 2);
        return (wraps << 32) + u64::from(u32::MAX - v);
    }
}

/// Nanoseconds since `init`. Not inlined: the main loop and the interrupts read it in a
/// dozen places, and one copy saves 664 bytes of the minimal image's flash for a call's few
/// cycles.
#[inline(never)]
pub fn now_ns() -> u64 {
    ticks().saturating_mul(NS_PER_TICK)
}

/// Raises timer 1's interrupt at `ns` (at once if it has passed).
pub fn arm_at_ns(ns: u64) {
    let left = ns
        .saturating_sub(now_ns())
        .div_ceil(NS_PER_TICK)
        .clamp(1, u64::from(u32::MAX));
    write(TIMER1, CTRL, 0);
    write(TIMER1, INTCLEAR, 1);
    write(TIMER1, RELOAD, left as u32);
    write(TIMER1, VALUE, left as u32);
    write(TIMER1, CTRL, CTRL_EN | CTRL_IRQ_EN);
}

/// No deadline.
pub fn disarm() {
    write(TIMER1, CTRL, 0);
    write(TIMER1, INTCLEAR, 1);
}
