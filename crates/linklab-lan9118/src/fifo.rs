//! Moving a frame's words through the controller's data FIFO ports.
//!
//! Each port answers at eight consecutive word addresses (`RX_DATA_FIFO..=RX_DATA_FIFO_LAST`,
//! `TX_DATA_FIFO..=TX_DATA_FIFO_LAST`), so that a CPU can move eight words with one load- or
//! store-multiple. Where the registers are memory-mapped on an Arm core
//! ([`Registers::mapped_at`]) the hot loops here are that: per 32 bytes received, one `ldm`
//! from the port, one `stm` into the frame's buffer and the eight words added into the
//! frame's one's complement sum (so the checksum takes no pass of its own: `crate::verdict`);
//! per 32 bytes sent, one `ldm` from the frame and one `stm` to the port. Elsewhere (a model
//! of the controller in the tests, another CPU) the same work goes word by word through
//! [`Registers::read`] and [`Registers::write`], with the same result.

use crate::reg;
use crate::Registers;

/// Adds `word` into a 32-bit one's complement sum (end-around carry, RFC 1071).
pub(crate) fn add_ones(sum: u32, word: u32) -> u32 {
    let (s, carry) = sum.overflowing_add(word);
    s.wrapping_add(u32::from(carry))
}

/// Reads `dst.len()` words of the current frame from the RX data FIFO into `dst` and
/// returns their 32-bit one's complement sum.
pub(crate) fn read_summed<R: Registers>(regs: &R, dst: &mut [u32]) -> u32 {
    #[cfg(target_arch = "arm")]
    if let Some(base) = regs.mapped_at() {
        // SAFETY: a mapped window is the controller's (Mmio::new's contract), whose RX data
        // port and its aliases are the eight words at RX_DATA_FIFO.
        return unsafe { arm::read_summed(base + reg::RX_DATA_FIFO, dst) };
    }
    let mut sum = 0;
    for w in dst.iter_mut() {
        *w = regs.read(reg::RX_DATA_FIFO);
        sum = add_ones(sum, *w);
    }
    sum
}

/// Writes `src` to the TX data FIFO.
pub(crate) fn write<R: Registers>(regs: &R, src: &[u32]) {
    #[cfg(target_arch = "arm")]
    if let Some(base) = regs.mapped_at() {
        // SAFETY: as in `read_summed`, for the TX data port.
        return unsafe { arm::write(base + reg::TX_DATA_FIFO, src) };
    }
    for &w in src {
        regs.write(reg::TX_DATA_FIFO, w);
    }
}

/// The Arm loops (ARMv7-M and ARMv7-A: Thumb-2 or A32 `ldm`/`stm`/`adcs`).
#[cfg(target_arch = "arm")]
mod arm {
    use super::add_ones;
    use core::arch::asm;

    /// Words per burst: the ports' aliases.
    const BURST: usize = 8;

    /// [`super::read_summed`] at the port `port`.
    ///
    /// # Safety
    /// `port` is the RX data FIFO port of a mapped LAN9118, answering at its next 7 words too.
    pub(super) unsafe fn read_summed(port: usize, dst: &mut [u32]) -> u32 {
        let blocks = dst.len() / BURST;
        let mut sum = 0u32;
        let mut at = dst.as_mut_ptr();
        if blocks > 0 {
            // SAFETY: `blocks * BURST` words from `at` lie in `dst`; the loads are the
            // port's (the caller's contract). The eight data registers are named, outside
            // what the compiler keeps (r6, and the frame pointer: r7 in Thumb, r11 in A32);
            // it picks the rest.
            unsafe {
                asm!(
                    "2:",
                    "ldm {port}, {{r2, r3, r4, r5, r8, r9, r10, r12}}",
                    "stm {at}!, {{r2, r3, r4, r5, r8, r9, r10, r12}}",
                    "adds {sum}, {sum}, r2",
                    "adcs {sum}, {sum}, r3",
                    "adcs {sum}, {sum}, r4",
                    "adcs {sum}, {sum}, r5",
                    "adcs {sum}, {sum}, r8",
                    "adcs {sum}, {sum}, r9",
                    "adcs {sum}, {sum}, r10",
                    "adcs {sum}, {sum}, r12",
                    "adc {sum}, {sum}, #0",
                    "subs {n}, {n}, #1",
                    "bne 2b",
                    port = in(reg) port,
                    at = inout(reg) at,
                    sum = inout(reg) sum,
                    n = inout(reg) blocks => _,
                    out("r2") _, out("r3") _, out("r4") _, out("r5") _,
                    out("r8") _, out("r9") _, out("r10") _, out("r12") _,
                    options(nostack),
                );
            }
        }
        for _ in 0..dst.len() % BURST {
            // SAFETY: the remaining words of `dst`, read from the port.
            unsafe {
                let w = core::ptr::read_volatile(port as *const u32);
                at.write(w);
                at = at.add(1);
                sum = add_ones(sum, w);
            }
        }
        sum
    }

    /// [`super::write`] to the port `port`.
    ///
    /// # Safety
    /// `port` is the TX data FIFO port of a mapped LAN9118, answering at its next 7 words too.
    pub(super) unsafe fn write(port: usize, src: &[u32]) {
        let blocks = src.len() / BURST;
        let mut at = src.as_ptr();
        if blocks > 0 {
            // SAFETY: `blocks * BURST` words from `at` lie in `src`; the stores are the port's.
            unsafe {
                asm!(
                    "2:",
                    "ldm {at}!, {{r2, r3, r4, r5, r8, r9, r10, r12}}",
                    "stm {port}, {{r2, r3, r4, r5, r8, r9, r10, r12}}",
                    "subs {n}, {n}, #1",
                    "bne 2b",
                    port = in(reg) port,
                    at = inout(reg) at,
                    n = inout(reg) blocks => _,
                    out("r2") _, out("r3") _, out("r4") _, out("r5") _,
                    out("r8") _, out("r9") _, out("r10") _, out("r12") _,
                    options(nostack),
                );
            }
        }
        for _ in 0..src.len() % BURST {
            // SAFETY: the remaining words of `src`, written to the port.
            unsafe {
                core::ptr::write_volatile(port as *mut u32, at.read());
                at = at.add(1);
            }
        }
    }
}
