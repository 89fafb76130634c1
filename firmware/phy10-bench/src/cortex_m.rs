//! What the two Arm machines share: the reset entry (cortex-m-rt), SysTick at the core clock
//! as the instruction counter (under `-icount shift=0` one instruction is one nanosecond of
//! virtual time, so ticks × 1e9 / the clock are instructions), the calibration loop, and
//! the exit through semihosting (QEMU runs them with `-semihosting-config enable=on`).

use core::arch::asm;
use core::fmt::Write;

use crate::machine;

const SYST_CSR: usize = 0xE000_E010;
const SYST_RVR: usize = 0xE000_E014;
const SYST_CVR: usize = 0xE000_E018;
/// ENABLE, and CLKSOURCE = the processor clock.
const CSR_ENABLE_CORE_CLOCK: u32 = 0b101;
/// SysTick's 24-bit counter.
const SYST_MASK: u32 = 0x00FF_FFFF;

fn write_reg(addr: usize, v: u32) {
    // SAFETY: a System Control Space register of the core.
    unsafe { core::ptr::write_volatile(addr as *mut u32, v) };
}

/// Starts SysTick counting down from 2^24 - 1 at the core clock, no interrupt.
fn start_systick() {
    write_reg(SYST_CSR, 0);
    write_reg(SYST_RVR, SYST_MASK);
    write_reg(SYST_CVR, 0);
    write_reg(SYST_CSR, CSR_ENABLE_CORE_CLOCK);
}

/// The counter's value now (SysTick's, counting down).
#[inline(always)]
pub fn counter() -> u32 {
    // SAFETY: SysTick's current value register.
    unsafe { core::ptr::read_volatile(SYST_CVR as *const u32) }
}

/// Instructions since `start` (a [`counter`] value): SysTick's ticks at the core clock,
/// in nanoseconds. A section must be shorter than one wrap (2^24 ticks: over 0.8 s, 800
/// million instructions at 20 MHz).
#[inline(always)]
pub fn instructions_since(start: u32) -> u64 {
    let ticks = start.wrapping_sub(counter()) & SYST_MASK;
    u64::from(ticks) * 1_000_000_000 / machine::CORE_HZ
}

/// A loop of two instructions per iteration, `n` times (`n` > 0).
#[inline(never)]
pub fn count_down(n: u32) {
    // SAFETY: a register count-down loop, nothing else touched.
    unsafe { asm!("2: subs r0, #1", "bne 2b", inout("r0") n => _, options(nomem, nostack)) };
}

#[cortex_m_rt::entry]
fn main() -> ! {
    machine::init_console();
    start_systick();
    exit(crate::run())
}

/// Ends QEMU through semihosting's SYS_EXIT: application exit for 0, a run-time error (QEMU
/// exits with status 1) otherwise.
pub fn exit(code: u32) -> ! {
    const SYS_EXIT: u32 = 0x18;
    const APPLICATION_EXIT: u32 = 0x2_0026;
    const RUN_TIME_ERROR: u32 = 0x2_0023;
    let reason = if code == 0 {
        APPLICATION_EXIT
    } else {
        RUN_TIME_ERROR
    };
    // SAFETY: the semihosting call; QEMU ends the run (without semihosting it is a
    // breakpoint, which faults into the handler below).
    unsafe { asm!("bkpt 0xab", in("r0") SYS_EXIT, in("r1") reason, options(nostack)) };
    loop {
        // SAFETY: a hint.
        unsafe { asm!("wfi", options(nomem, nostack)) };
    }
}

#[cortex_m_rt::exception]
unsafe fn HardFault(frame: &cortex_m_rt::ExceptionFrame) -> ! {
    let _ = writeln!(
        crate::Console,
        "phy10-bench: hard fault at pc {:#x}",
        frame.pc()
    );
    loop {
        // SAFETY: a hint.
        unsafe { asm!("wfi", options(nomem, nostack)) };
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let _ = writeln!(crate::Console, "phy10-bench: panic: {info}");
    exit(3)
}
