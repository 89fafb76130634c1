//! The transmit half, for the main loop: linklab-mac's `PhyTx`.

use linklab_mac::PhyTx;

use crate::{fifo, reg, wait, Registers};

/// TX command A: first and last segment of a frame in one buffer.
const TX_CMD_A_FIRST: u32 = 1 << 13;
const TX_CMD_A_LAST: u32 = 1 << 12;
/// TX command A: where the data starts in its first word (bytes), bits 20:16.
const TX_CMD_A_OFFSET_SHIFT: u32 = 16;
/// Longest frame the TX path accepts (without FCS).
const MAX_TX_FRAME: usize = 1514;

/// The transmit half, for the main loop: linklab-mac's `PhyTx`.
pub struct Lan9118Tx<R: Registers> {
    pub(crate) regs: R,
    pub(crate) dropped: u64,
}

impl<R: Registers> Lan9118Tx<R> {
    /// Frames dropped: too long, or no TX FIFO space in time.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

impl<R: Registers> PhyTx for Lan9118Tx<R> {
    /// Writes TX command A and B, then the frame's words: the controller pads and appends
    /// the FCS. The frame is written from the word that holds its first byte, command A's
    /// data start offset skipping the bytes before it, so every word after the first is an
    /// aligned word of `frame` (moved a burst at a time: `crate::fifo`).
    fn transmit(&mut self, frame: &[u8]) {
        let len = frame.len();
        let offset = frame.as_ptr() as usize % 4;
        let head = (4 - offset).min(len);
        let words = (offset + len).div_ceil(4);
        // Command A and B plus the data words must fit in the TX data FIFO.
        let need = (words as u32 + 2) * 4;
        let room = || self.regs.read(reg::TX_FIFO_INF) & 0xffff >= need;
        if len == 0 || len > MAX_TX_FRAME || wait(room).is_err() {
            self.dropped += 1;
            return;
        }
        let len32 = len as u32;
        let cmd_a =
            TX_CMD_A_FIRST | TX_CMD_A_LAST | (offset as u32) << TX_CMD_A_OFFSET_SHIFT | len32;
        self.regs.write(reg::TX_DATA_FIFO, cmd_a);
        self.regs.write(reg::TX_DATA_FIFO, len32 << 16 | len32);
        // The first word: the frame's first bytes where they sit in their word.
        let mut first = [0u8; 4];
        first[offset..offset + head].copy_from_slice(&frame[..head]);
        self.regs
            .write(reg::TX_DATA_FIFO, u32::from_le_bytes(first));
        let rest = &frame[head..];
        // SAFETY: every bit pattern is a valid u32; align_to only splits the slice.
        let (before, aligned, tail) = unsafe { rest.align_to::<u32>() };
        let tail = if before.is_empty() {
            fifo::write(&self.regs, aligned);
            tail
        } else {
            // Only an empty `rest` has no aligned start (its first byte is on a word).
            rest
        };
        for c in tail.chunks(4) {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            self.regs.write(reg::TX_DATA_FIFO, u32::from_le_bytes(w));
        }
    }

    fn dropped(&mut self) -> u64 {
        self.dropped
    }

    fn ready(&mut self) -> bool {
        // The longest frame at the worst offset, and its two command words.
        let need = ((MAX_TX_FRAME + 3).div_ceil(4) as u32 + 2) * 4;
        self.regs.read(reg::TX_FIFO_INF) & 0xffff >= need
    }
}
