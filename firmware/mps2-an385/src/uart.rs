//! The CMSDK UART0 of mps2-an385 (0x4000_4000), polled transmit only.

const BASE: usize = 0x4000_4000;
const DATA: usize = BASE;
const STATE: usize = BASE + 0x04;
const CTRL: usize = BASE + 0x08;
const BAUDDIV: usize = BASE + 0x10;
const STATE_TX_FULL: u32 = 1;
const CTRL_TX_EN: u32 = 1;

/// Enables the transmitter (the divider is what QEMU needs to accept it: at least 16).
pub fn init() {
    // SAFETY: the UART's registers.
    unsafe {
        core::ptr::write_volatile(BAUDDIV as *mut u32, 16);
        core::ptr::write_volatile(CTRL as *mut u32, CTRL_TX_EN);
    }
}

/// Writes `text`, waiting while the transmit buffer is full.
pub fn write(text: &str) {
    write_bytes(text.as_bytes());
}

/// Writes `bytes` (e.g. defmt frames), waiting while the transmit buffer is full.
pub fn write_bytes(bytes: &[u8]) {
    for &b in bytes {
        // SAFETY: the UART's registers.
        unsafe {
            while core::ptr::read_volatile(STATE as *const u32) & STATE_TX_FULL != 0 {}
            core::ptr::write_volatile(DATA as *mut u32, u32::from(b));
        }
    }
}
