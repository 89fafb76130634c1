//! The NS16550 UART of `virt` (0x1000_0000), polled transmit only.

const BASE: usize = 0x1000_0000;
const LSR: usize = BASE + 5;
const LSR_THR_EMPTY: u8 = 1 << 5;

/// Writes `text`, waiting for room byte by byte.
pub fn write(text: &str) {
    write_bytes(text.as_bytes());
}

/// Writes `bytes` (e.g. defmt frames), waiting for room byte by byte.
pub fn write_bytes(bytes: &[u8]) {
    for &b in bytes {
        // SAFETY: the UART's line status and transmit holding registers.
        unsafe {
            while core::ptr::read_volatile(LSR as *const u8) & LSR_THR_EMPTY == 0 {}
            core::ptr::write_volatile(BASE as *mut u8, b);
        }
    }
}

/// Writes `v` as 0x-prefixed hexadecimal.
pub fn write_hex(v: u32) {
    let mut buf = [0u8; 10];
    buf[0] = b'0';
    buf[1] = b'x';
    for i in 0..8 {
        let nibble = (v >> (28 - 4 * i)) & 0xf;
        buf[2 + i] = b"0123456789abcdef"[nibble as usize];
    }
    write(core::str::from_utf8(&buf).unwrap_or("0x?"));
}
