//! The console: the Cadence UART0 at 0xE000_0000, which QEMU's `-serial stdio` carries.
//! Transmit only, polled (the reset state's reference clock is on in QEMU's SLCR).

use linklab_cortex_a9::polled::PolledTx;

const BASE: usize = 0xE000_0000;
/// Control register: TX and RX enable, resets.
const CR: usize = 0x00;
/// Mode register: 8 data bits, no parity, 1 stop bit.
const MR: usize = 0x04;
/// Channel status: bit 4 is "TX FIFO full".
const SR: usize = 0x2C;
/// TX/RX FIFO.
const FIFO: usize = 0x30;
const CR_TX_EN: u32 = 1 << 4;
const CR_RX_EN: u32 = 1 << 2;
const MR_NO_PARITY: u32 = 0b100 << 3;
const SR_TX_FULL: u32 = 1 << 4;

fn reg(offset: usize) -> *mut u32 {
    (BASE + offset) as *mut u32
}

/// Enables the transmitter and receiver, 8N1.
pub fn init() {
    // SAFETY: the UART's registers, word aligned.
    unsafe {
        reg(MR).write_volatile(MR_NO_PARITY);
        reg(CR).write_volatile(CR_TX_EN | CR_RX_EN);
    }
}

/// The transmitter, polled.
const TX: PolledTx = PolledTx {
    data: BASE + FIFO,
    status: BASE + SR,
    full: SR_TX_FULL,
};

/// Writes `text`, waiting for room in the FIFO.
pub fn write(text: &str) {
    TX.write(text);
}

/// Writes `bytes` (defmt frames), waiting for room in the FIFO.
pub fn write_bytes(bytes: &[u8]) {
    TX.write_bytes(bytes);
}
