//! The RP2040's USB controller registers and its DPRAM (RP2040 datasheet §4.1.4), by address:
//! what the driver reads and writes, named.

/// USBCTRL_REGS.
const REGS: usize = 0x5011_0000;
/// The USB DPRAM (4 KB).
const DPRAM: usize = 0x5010_0000;
/// The atomic set and clear aliases of a peripheral register (§2.1.2; not for the DPRAM).
const SET: usize = 0x2000;
const CLEAR: usize = 0x3000;

pub const ADDR_ENDP: usize = 0x00;
pub const MAIN_CTRL: usize = 0x40;
pub const SIE_CTRL: usize = 0x4c;
pub const SIE_STATUS: usize = 0x50;
pub const BUFF_STATUS: usize = 0x58;
pub const EP_STALL_ARM: usize = 0x68;
pub const USB_MUXING: usize = 0x74;
pub const USB_PWR: usize = 0x78;
pub const INTR: usize = 0x8c;
pub const INTE: usize = 0x90;
pub const INTS: usize = 0x98;

// MAIN_CTRL, USB_MUXING, USB_PWR.
pub const CONTROLLER_EN: u32 = 1;
pub const MUX_TO_PHY: u32 = 1 << 0;
pub const MUX_SOFTCON: u32 = 1 << 3;
pub const PWR_VBUS_DETECT: u32 = 1 << 2;
pub const PWR_VBUS_DETECT_OVERRIDE_EN: u32 = 1 << 3;

// SIE_CTRL (device mode).
pub const SIE_EP0_INT_1BUF: u32 = 1 << 29;
pub const SIE_PULLUP_EN: u32 = 1 << 16;

// SIE_STATUS.
pub const SIE_BUS_RESET: u32 = 1 << 19;
pub const SIE_SETUP_REC: u32 = 1 << 17;
pub const SIE_RESUME: u32 = 1 << 11;
pub const SIE_SUSPENDED: u32 = 1 << 4;

// INTE / INTS.
pub const INT_SETUP_REQ: u32 = 1 << 16;
pub const INT_DEV_RESUME: u32 = 1 << 15;
pub const INT_DEV_SUSPEND: u32 = 1 << 14;
pub const INT_BUS_RESET: u32 = 1 << 12;
pub const INT_BUFF_STATUS: u32 = 1 << 4;

// Endpoint control (DPRAM 0x08 + 8 × (n − 1), OUT + 4).
pub const EPC_ENABLE: u32 = 1 << 31;
pub const EPC_DOUBLE_BUFFERED: u32 = 1 << 30;
pub const EPC_INTERRUPT_PER_BUFF: u32 = 1 << 29;
pub const EPC_TYPE_SHIFT: u32 = 26;

// One half of a buffer control word (buffer 0 in bits 0-15, buffer 1 in 16-31).
pub const BUF_LEN: u16 = 0x3ff;
pub const BUF_AVAILABLE: u16 = 1 << 10;
pub const BUF_STALL: u16 = 1 << 11;
pub const BUF_RESET: u16 = 1 << 12;
pub const BUF_DATA1: u16 = 1 << 13;
pub const BUF_FULL: u16 = 1 << 15;

/// EP0's buffer (IN and OUT share it).
pub const EP0_BUFFER: usize = 0x100;
/// Where the other endpoints' buffers start.
pub const FIRST_BUFFER: usize = 0x180;
/// The DPRAM's size.
pub const DPRAM_SIZE: usize = 4096;

/// Reads the register at `offset`.
pub fn read(offset: usize) -> u32 {
    // SAFETY: a register of the USB controller, which the driver owns (`Peri<USB>`).
    unsafe { core::ptr::read_volatile((REGS + offset) as *const u32) }
}

/// Writes the register at `offset`.
pub fn write(offset: usize, value: u32) {
    // SAFETY: as `read`.
    unsafe { core::ptr::write_volatile((REGS + offset) as *mut u32, value) }
}

/// Sets `bits` in the register at `offset` (its atomic alias).
pub fn set(offset: usize, bits: u32) {
    write(offset + SET, bits);
}

/// Clears `bits` in the register at `offset` (its atomic alias).
pub fn clear(offset: usize, bits: u32) {
    write(offset + CLEAR, bits);
}

/// An endpoint's control word's DPRAM offset (endpoint 1..=15).
pub fn ep_control(ep: usize, out: bool) -> usize {
    0x08 + 8 * (ep - 1) + if out { 4 } else { 0 }
}

/// An endpoint's buffer control word's DPRAM offset; buffer `buf`'s half is 2 bytes on.
pub fn buffer_control(ep: usize, out: bool) -> usize {
    0x80 + 8 * ep + if out { 4 } else { 0 }
}

/// Reads the DPRAM word at `offset`.
pub fn dpram_read(offset: usize) -> u32 {
    // SAFETY: inside the 4 KB DPRAM the driver owns.
    unsafe { core::ptr::read_volatile((DPRAM + offset) as *const u32) }
}

/// Writes the DPRAM word at `offset`.
pub fn dpram_write(offset: usize, value: u32) {
    // SAFETY: as `dpram_read`.
    unsafe { core::ptr::write_volatile((DPRAM + offset) as *mut u32, value) }
}

/// Reads buffer `buf`'s half of the buffer control word at `offset`.
pub fn half_read(offset: usize, buf: usize) -> u16 {
    // SAFETY: as `dpram_read`; a halfword inside it.
    unsafe { core::ptr::read_volatile((DPRAM + offset + 2 * buf) as *const u16) }
}

/// Writes buffer `buf`'s half alone: a 16-bit store leaves the other half, which the
/// controller may be writing back at the same moment, alone (a 32-bit read-modify-write
/// would put its old value back).
pub fn half_write(offset: usize, buf: usize, value: u16) {
    // SAFETY: as `half_read`.
    unsafe { core::ptr::write_volatile((DPRAM + offset + 2 * buf) as *mut u16, value) }
}

/// Arms buffer `buf` with `half` (AVAILABLE added): first everything else, then AVAILABLE
/// after a few cycles, as the datasheet asks (§4.1.2.7.1: the controller may see AVAILABLE
/// before the rest of a single write when clk_sys outruns clk_usb).
pub fn arm(offset: usize, buf: usize, half: u16) {
    half_write(offset, buf, half & !BUF_AVAILABLE);
    cortex_m::asm::delay(12);
    half_write(offset, buf, half | BUF_AVAILABLE);
}

/// Copies `src` into the DPRAM at `offset` (word-aligned), a word at a time (no call to
/// memcpy for each word: a packet is 16 of them).
pub fn copy_to(offset: usize, src: &[u8]) {
    let words = src.chunks_exact(4);
    let tail = words.remainder();
    let mut at = offset;
    for w in words {
        dpram_write(at, u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        at += 4;
    }
    if !tail.is_empty() {
        let mut w = [0u8; 4];
        for (d, s) in w.iter_mut().zip(tail) {
            *d = *s;
        }
        dpram_write(at, u32::from_le_bytes(w));
    }
}

/// Copies `dst.len()` bytes from the DPRAM at `offset` (word-aligned) into `dst`, a word at
/// a time.
pub fn copy_from(offset: usize, dst: &mut [u8]) {
    let mut words = dst.chunks_exact_mut(4);
    let mut at = offset;
    for w in &mut words {
        w.copy_from_slice(&dpram_read(at).to_le_bytes());
        at += 4;
    }
    let tail = words.into_remainder();
    if !tail.is_empty() {
        let w = dpram_read(at).to_le_bytes();
        for (d, s) in tail.iter_mut().zip(w) {
            *d = s;
        }
    }
}
