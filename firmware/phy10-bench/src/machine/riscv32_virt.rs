//! QEMU `virt` (riscv32imac, the ESP32-C6's ISA): the riscv32-virt board's bring-up, its
//! NS16550 UART, `minstret` (exact: one count per instruction), the SiFive test finisher.

use core::arch::asm;
use core::fmt::Write;

use fw_riscv32_virt::{cpu, uart};

/// The machine, for the first line.
pub const NAME: &str = "riscv32-virt";
/// Its instruction set.
pub const ISA: &str = "riscv32imac";
/// Every case fits its RAM.
pub const MAX_OVERSAMPLE: u32 = 8;

/// The counter's value now (instructions retired).
#[inline(always)]
pub fn counter() -> u64 {
    cpu::instret()
}

/// Instructions since `start` (a [`counter`] value).
#[inline(always)]
pub fn instructions_since(start: u64) -> u64 {
    cpu::instret().wrapping_sub(start)
}

/// A loop of two instructions per iteration, `n` times.
#[inline(never)]
pub fn count_down(n: u32) {
    // SAFETY: a register count-down loop, nothing else touched.
    unsafe {
        asm!("1: addi {0}, {0}, -1", "bnez {0}, 1b", inout(reg) n => _, options(nomem, nostack))
    };
}

/// Writes to the UART.
pub fn write(text: &str) {
    uart::write(text);
}

#[no_mangle]
extern "C" fn main_entry() -> ! {
    exit(crate::run())
}

/// Ends QEMU through `virt`'s test device (SiFive test finisher at 0x10_0000): status 0 or
/// `code`.
fn exit(code: u32) -> ! {
    const FINISHER: usize = 0x0010_0000;
    let value = if code == 0 {
        0x5555
    } else {
        (code << 16) | 0x3333
    };
    // SAFETY: the test device's register on `virt`.
    unsafe { core::ptr::write_volatile(FINISHER as *mut u32, value) };
    loop {
        cpu::wfi();
    }
}

/// Any trap is unexpected here (no interrupt is enabled).
#[no_mangle]
extern "C" fn trap_handler() {
    let _ = writeln!(
        crate::Console,
        "phy10-bench: unexpected trap, mcause {:#x} mepc {:#x}",
        cpu::mcause(),
        cpu::mepc()
    );
    exit(2)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    let _ = writeln!(crate::Console, "phy10-bench: panic: {info}");
    exit(3)
}
