//! The PLIC of `virt`, hart 0 machine-mode context: enable a source, claim and complete.

const BASE: usize = 0x0C00_0000;
const ENABLE_CTX0: usize = BASE + 0x2000;
const THRESHOLD_CTX0: usize = BASE + 0x20_0000;
const CLAIM_CTX0: usize = BASE + 0x20_0004;

fn write(addr: usize, v: u32) {
    // SAFETY: a PLIC register of `virt`.
    unsafe { core::ptr::write_volatile(addr as *mut u32, v) };
}

fn read(addr: usize) -> u32 {
    // SAFETY: a PLIC register of `virt`.
    unsafe { core::ptr::read_volatile(addr as *const u32) }
}

/// Enables interrupt source `irq` (1..=31) at priority 1 for hart 0 in machine mode.
pub fn enable(irq: u32) {
    write(BASE + 4 * irq as usize, 1);
    let word = ENABLE_CTX0 + 4 * (irq as usize / 32);
    write(word, read(word) | 1 << (irq % 32));
    write(THRESHOLD_CTX0, 0);
}

/// The highest-priority pending source, if any.
pub fn claim() -> Option<u32> {
    match read(CLAIM_CTX0) {
        0 => None,
        irq => Some(irq),
    }
}

/// Ends the handling of `irq`.
pub fn complete(irq: u32) {
    write(CLAIM_CTX0, irq);
}

/// Claims every pending source, hands each to `on_source`, and completes it (the machine
/// external interrupt's work).
pub fn serve(on_source: &mut impl FnMut(u32)) {
    while let Some(irq) = claim() {
        on_source(irq);
        complete(irq);
    }
}
