//! Machine-mode CSRs of the hart: interrupts, the trap cause, the instruction counter.

use core::arch::asm;

const MSTATUS_MIE: usize = 1 << 3;
const MIE_MTIE: usize = 1 << 7;
const MIE_MEIE: usize = 1 << 11;

/// Masks interrupts (mstatus.MIE = 0).
pub fn disable_interrupts() {
    // SAFETY: clearing a bit of our own hart's mstatus.
    unsafe { asm!("csrc mstatus, {0}", in(reg) MSTATUS_MIE) };
}

/// Unmasks interrupts (mstatus.MIE = 1).
pub fn enable_interrupts() {
    // SAFETY: setting a bit of our own hart's mstatus.
    unsafe { asm!("csrs mstatus, {0}", in(reg) MSTATUS_MIE) };
}

/// Enables the machine timer and external interrupts, then unmasks interrupts.
pub fn enable_machine_interrupts() {
    // SAFETY: our own hart's mie.
    unsafe { asm!("csrs mie, {0}", in(reg) MIE_MTIE | MIE_MEIE) };
    enable_interrupts();
}

/// Masks interrupts; true if they were unmasked before.
pub fn mask_interrupts() -> bool {
    let mstatus: usize;
    // SAFETY: atomically read and clear MIE.
    unsafe { asm!("csrrc {0}, mstatus, {1}", out(reg) mstatus, in(reg) MSTATUS_MIE) };
    mstatus & MSTATUS_MIE != 0
}

/// Runs `f` with interrupts masked, restoring the previous state.
pub fn without_interrupts<R>(f: impl FnOnce() -> R) -> R {
    let was_enabled = mask_interrupts();
    let r = f();
    if was_enabled {
        enable_interrupts();
    }
    r
}

/// True when an enabled interrupt is pending (mip & mie).
pub fn interrupt_pending() -> bool {
    let (mip, mie): (usize, usize);
    // SAFETY: reading CSRs.
    unsafe {
        asm!("csrr {0}, mip", out(reg) mip);
        asm!("csrr {0}, mie", out(reg) mie);
    }
    mip & mie != 0
}

/// Waits for an interrupt.
pub fn wfi() {
    // SAFETY: a hint; returns on any pending enabled interrupt.
    unsafe { asm!("wfi") };
}

/// The trap cause.
pub fn mcause() -> usize {
    let v: usize;
    // SAFETY: reading a CSR.
    unsafe { asm!("csrr {0}, mcause", out(reg) v) };
    v
}

/// The trapping instruction's address.
pub fn mepc() -> usize {
    let v: usize;
    // SAFETY: reading a CSR.
    unsafe { asm!("csrr {0}, mepc", out(reg) v) };
    v
}

/// Instructions retired (minstret, 64 bits read consistently on rv32). Under QEMU's
/// `-icount shift=0` this counts exactly.
pub fn instret() -> u64 {
    loop {
        let (hi, lo, hi2): (u32, u32, u32);
        // SAFETY: reading counters.
        unsafe {
            asm!("csrr {0}, minstreth", out(reg) hi);
            asm!("csrr {0}, minstret", out(reg) lo);
            asm!("csrr {0}, minstreth", out(reg) hi2);
        }
        if hi == hi2 {
            return (u64::from(hi) << 32) | u64::from(lo);
        }
    }
}
