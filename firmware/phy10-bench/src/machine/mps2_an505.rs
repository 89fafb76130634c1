//! QEMU `mps2-an505` (Cortex-M33: thumbv8m.main, the RP2350's Arm cores), booted secure: the
//! CMSDK UART0 through its secure alias and SysTick at the 20 MHz core clock
//! (crate::cortex_m).

/// The machine, for the first line.
pub const NAME: &str = "mps2-an505";
/// Its instruction set.
pub const ISA: &str = "thumbv8m.main (ARMv8-M Mainline)";
/// Every case fits its RAM.
pub const MAX_OVERSAMPLE: u32 = 8;
/// The core clock SysTick counts (the board's 20 MHz system clock).
pub const CORE_HZ: u64 = 20_000_000;

const UART0: usize = 0x5020_0000;
const DATA: usize = UART0;
const STATE: usize = UART0 + 0x04;
const CTRL: usize = UART0 + 0x08;
const BAUDDIV: usize = UART0 + 0x10;
const STATE_TX_FULL: u32 = 1;
const CTRL_TX_EN: u32 = 1;

/// Enables the transmitter (the divider is what QEMU needs to accept it: at least 16).
pub fn init_console() {
    // SAFETY: the UART's registers.
    unsafe {
        core::ptr::write_volatile(BAUDDIV as *mut u32, 16);
        core::ptr::write_volatile(CTRL as *mut u32, CTRL_TX_EN);
    }
}

/// Writes `text`, waiting while the transmit buffer is full.
pub fn write(text: &str) {
    for &b in text.as_bytes() {
        // SAFETY: the UART's registers.
        unsafe {
            while core::ptr::read_volatile(STATE as *const u32) & STATE_TX_FULL != 0 {}
            core::ptr::write_volatile(DATA as *mut u32, u32::from(b));
        }
    }
}
