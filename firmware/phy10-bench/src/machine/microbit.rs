//! QEMU `microbit` (nRF51822, Cortex-M0: thumbv6m, the RP2040's Cortex-M0+ ISA): its UART0
//! and SysTick at the 16 MHz core clock (crate::cortex_m).

/// The machine, for the first line.
pub const NAME: &str = "microbit";
/// Its instruction set.
pub const ISA: &str = "thumbv6m (ARMv6-M)";
/// 16 KiB of RAM hold a 4x capture (the RP2040's 40 MHz sampling), not the 5x-8x cases.
pub const MAX_OVERSAMPLE: u32 = 4;
/// The core clock SysTick counts (the nRF51's HCLK).
pub const CORE_HZ: u64 = 16_000_000;

const UART0: usize = 0x4000_2000;
const TASKS_STARTTX: usize = UART0 + 0x008;
const EVENTS_TXDRDY: usize = UART0 + 0x11C;
const ENABLE: usize = UART0 + 0x500;
const TXD: usize = UART0 + 0x51C;
/// ENABLE's value that turns the UART on.
const ENABLE_UART: u32 = 4;
/// Polls of TXDRDY before a byte is given up on (QEMU sets it at once).
const TX_POLLS: u32 = 100_000;

fn write_reg(addr: usize, v: u32) {
    // SAFETY: a register of the nRF51's UART0.
    unsafe { core::ptr::write_volatile(addr as *mut u32, v) };
}

/// Turns UART0 on and starts its transmitter.
pub fn init_console() {
    write_reg(ENABLE, ENABLE_UART);
    write_reg(TASKS_STARTTX, 1);
}

/// Writes `text`, waiting for each byte's TXDRDY.
pub fn write(text: &str) {
    for &b in text.as_bytes() {
        write_reg(EVENTS_TXDRDY, 0);
        write_reg(TXD, u32::from(b));
        for _ in 0..TX_POLLS {
            // SAFETY: the UART's event register.
            if unsafe { core::ptr::read_volatile(EVENTS_TXDRDY as *const u32) } != 0 {
                break;
            }
        }
    }
}
