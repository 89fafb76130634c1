//! The console: the i.MX6's UART1 at 0x0202_0000, which QEMU's first `-serial` carries.
//! Transmit only, polled. On silicon the boot loader has set its clock and baud rate; the
//! image only enables it.

use linklab_cortex_a9::polled::PolledTx;

const BASE: usize = 0x0202_0000;
/// Transmitter register.
const UTXD: usize = 0x40;
/// Control 1: bit 0 enables the UART.
const UCR1: usize = 0x80;
/// Control 2: not in reset (SRST), receiver and transmitter on, 8 bits, ignore RTS.
const UCR2: usize = 0x84;
/// Test register: bit 4 is "TX FIFO full".
const UTS: usize = 0xB4;
const UCR1_UARTEN: u32 = 1 << 0;
const UCR2_SRST: u32 = 1 << 0;
const UCR2_RXEN: u32 = 1 << 1;
const UCR2_TXEN: u32 = 1 << 2;
const UCR2_WS: u32 = 1 << 5;
const UCR2_IRTS: u32 = 1 << 14;
const UTS_TXFULL: u32 = 1 << 4;

fn reg(offset: usize) -> *mut u32 {
    (BASE + offset) as *mut u32
}

/// Enables the UART, its transmitter and receiver, 8 data bits.
pub fn init() {
    // SAFETY: the UART's registers, word aligned.
    unsafe {
        reg(UCR1).write_volatile(UCR1_UARTEN);
        reg(UCR2).write_volatile(UCR2_SRST | UCR2_RXEN | UCR2_TXEN | UCR2_WS | UCR2_IRTS);
    }
}

/// The transmitter, polled.
const TX: PolledTx = PolledTx {
    data: BASE + UTXD,
    status: BASE + UTS,
    full: UTS_TXFULL,
};

/// Writes `bytes` (defmt frames), waiting for room in the FIFO.
pub fn write_bytes(bytes: &[u8]) {
    TX.write_bytes(bytes);
}

/// Writes `text`.
pub fn write(text: &str) {
    TX.write(text);
}
