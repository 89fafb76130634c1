//! CMSDK UART1 of mps2-an385 (0x4000_5000, receive interrupt NVIC 2) carrying the serial link:
//! the receive interrupt moves each byte into linklab-firmware's ring; the main loop writes.

use linklab_firmware::serial::{SerialTx, SERIAL_RX};

const BASE: usize = 0x4000_5000;
const DATA: usize = BASE;
const STATE: usize = BASE + 0x04;
const CTRL: usize = BASE + 0x08;
const INTCLEAR: usize = BASE + 0x0C;
const BAUDDIV: usize = BASE + 0x10;
const STATE_TX_FULL: u32 = 1;
const STATE_RX_FULL: u32 = 1 << 1;
const CTRL_TX_EN: u32 = 1;
const CTRL_RX_EN: u32 = 1 << 1;
const CTRL_RX_INT_EN: u32 = 1 << 3;
const INT_RX: u32 = 1 << 1;
/// NVIC number of UART1's receive interrupt.
pub const IRQ_RX: u16 = 2;

fn read(reg: usize) -> u32 {
    // SAFETY: a UART1 register.
    unsafe { core::ptr::read_volatile(reg as *const u32) }
}

fn write(reg: usize, v: u32) {
    // SAFETY: a UART1 register.
    unsafe { core::ptr::write_volatile(reg as *mut u32, v) }
}

/// Enables transmitter, receiver and the receive interrupt.
pub fn init() {
    write(BAUDDIV, 16);
    write(CTRL, CTRL_TX_EN | CTRL_RX_EN | CTRL_RX_INT_EN);
}

/// The receive interrupt: acknowledge, then take every byte the UART holds (QEMU hands it
/// the next one as soon as the data register is read).
pub fn on_rx_interrupt() {
    write(INTCLEAR, INT_RX);
    while read(STATE) & STATE_RX_FULL != 0 {
        SERIAL_RX.push(read(DATA) as u8);
    }
}

/// UART1's transmitter.
pub struct Tx;

impl SerialTx for Tx {
    fn try_write(&mut self, byte: u8) -> bool {
        if read(STATE) & STATE_TX_FULL != 0 {
            return false;
        }
        write(DATA, u32::from(byte));
        true
    }
}
