//! The W5500's registers and SPI frame, from the W5500 datasheet v1.0.9 (WIZnet), §2 (the SPI
//! frame) and §4 (the registers): only what a MACRAW driver on socket 0 touches.

/// The blocks an SPI frame's control byte selects (its BSB field, bits 7..3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Block {
    /// The common registers.
    Common = 0,
    /// Socket 0's registers.
    Socket0 = 1,
    /// Socket 0's TX buffer.
    TxBuffer = 2,
    /// Socket 0's RX buffer.
    RxBuffer = 3,
}

/// The three bytes that open an SPI frame: the 16-bit offset (big-endian), then the control
/// byte `BSB << 3 | RWB << 2 | OM`, OM 00 (variable-length data: the frame lasts while SCSn
/// is low, and the offset increments per data byte).
pub const fn frame_header(block: Block, offset: u16, write: bool) -> [u8; 3] {
    let [hi, lo] = offset.to_be_bytes();
    [hi, lo, (block as u8) << 3 | (write as u8) << 2]
}

/// Common registers (block 0).
pub mod common {
    /// Mode: bit 7 is the software reset (clears itself).
    pub const MR: u16 = 0x0000;
    /// The MAC address, 6 bytes.
    pub const SHAR: u16 = 0x0009;
    /// Socket interrupt mask: bit 0 lets socket 0's interrupts reach INTn.
    pub const SIMR: u16 = 0x0018;
    /// PHY configuration: bit 0 is the link.
    pub const PHYCFGR: u16 = 0x002E;
    /// The chip's version: 0x04.
    pub const VERSIONR: u16 = 0x0039;
}

/// Socket 0's registers (block 1).
pub mod socket {
    /// Mode: the protocol (MACRAW = 0100) and its options.
    pub const MR: u16 = 0x0000;
    /// Command: cleared by the chip once it accepts one.
    pub const CR: u16 = 0x0001;
    /// Interrupt: write one to clear.
    pub const IR: u16 = 0x0002;
    /// Status: 0x42 while open in MACRAW.
    pub const SR: u16 = 0x0003;
    /// The RX buffer's size in KB.
    pub const RXBUF_SIZE: u16 = 0x001E;
    /// The TX buffer's size in KB.
    pub const TXBUF_SIZE: u16 = 0x001F;
    /// Where SEND has sent up to (moves once a frame has left), 2 bytes.
    pub const TX_RD: u16 = 0x0022;
    /// Where the host has written up to, 2 bytes.
    pub const TX_WR: u16 = 0x0024;
    /// Bytes received and not yet released by RECV, 2 bytes (each frame with its 2-byte
    /// length header).
    pub const RX_RSR: u16 = 0x0026;
    /// Where the host has read up to (taken at RECV), 2 bytes.
    pub const RX_RD: u16 = 0x0028;
    /// Where the chip has stored up to, 2 bytes.
    pub const RX_WR: u16 = 0x002A;
    /// Interrupt mask: which events set Sn_IR (and so INTn).
    pub const IMR: u16 = 0x002C;
}

/// Sn_MR: MACRAW on socket 0.
pub const MR_MACRAW: u8 = 0x04;
/// Sn_MR: MAC filter: only unicast to SHAR, broadcast and multicast are received.
pub const MR_MFEN: u8 = 0x80;
/// Sn_MR: IPv4 multicast blocked (with MFEN).
pub const MR_MMB: u8 = 0x20;
/// Sn_MR: IPv6 blocked (with MFEN).
pub const MR_MIP6B: u8 = 0x10;
/// Sn_SR when open in MACRAW.
pub const SR_MACRAW: u8 = 0x42;
/// Sn_CR commands.
pub const CMD_OPEN: u8 = 0x01;
/// Sn_CR: close the socket.
pub const CMD_CLOSE: u8 = 0x10;
/// Sn_CR: send from Sn_TX_RD up to Sn_TX_WR, as one frame.
pub const CMD_SEND: u8 = 0x20;
/// Sn_CR: release the RX buffer up to Sn_RX_RD.
pub const CMD_RECV: u8 = 0x40;
/// Sn_IR and Sn_IMR: a frame was received.
pub const IR_RECV: u8 = 0x04;
/// The chip's version in VERSIONR.
pub const VERSION: u8 = 0x04;
/// Socket 0's buffers, each way: the chip's whole 16 KB (in KB, as the size registers take
/// it).
pub const BUFFER_KB: u8 = 16;
/// Socket 0's buffers in bytes.
pub const BUFFER_LEN: u16 = BUFFER_KB as u16 * 1024;

/// The longest frame MACRAW stores or sends: 1514 bytes without FCS.
pub const MAX_FRAME: usize = 1514;
/// The shortest frame the chip stores: 60 bytes without FCS (a frame on the wire is at
/// least 64 bytes with it; the chip's MAC drops shorter ones).
pub const MIN_FRAME: usize = 60;
/// The length header in front of each stored frame: 2 bytes, big-endian, counting itself.
pub const HEADER_LEN: usize = 2;

/// What a stored frame's length header says, judged before anything is trusted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Header {
    /// A frame of this many bytes (without the header) that the received bytes hold.
    Frame(usize),
    /// A length a frame can have, but more than the received bytes hold (Sn_RX_RSR was read
    /// while a frame was arriving): look again later.
    Beyond,
    /// A length no frame has (under [`MIN_FRAME`] or over [`MAX_FRAME`]): a glitch on the
    /// bus, or the read pointer out of step with the frames.
    Nonsense(u16),
}

/// Judges length header `header` with `received` bytes (Sn_RX_RSR's, less what was read
/// since) from its first byte on.
pub fn judge(header: [u8; 2], received: usize) -> Header {
    let value = u16::from_be_bytes(header);
    let stored = value as usize;
    if !(HEADER_LEN + MIN_FRAME..=HEADER_LEN + MAX_FRAME).contains(&stored) {
        return Header::Nonsense(value);
    }
    if stored > received {
        return Header::Beyond;
    }
    Header::Frame(stored - HEADER_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frame_header_is_offset_then_control() {
        assert_eq!(
            frame_header(Block::RxBuffer, 0x1234, false),
            [0x12, 0x34, 0x18]
        );
        assert_eq!(frame_header(Block::Socket0, 0x0001, true), [0, 1, 0x0C]);
    }

    #[test]
    fn headers_are_judged_before_they_are_trusted() {
        assert_eq!(judge(62u16.to_be_bytes(), 62), Header::Frame(60));
        assert_eq!(judge(1516u16.to_be_bytes(), 4000), Header::Frame(1514));
        assert_eq!(judge(1516u16.to_be_bytes(), 1000), Header::Beyond);
        assert_eq!(judge([0, 1], 100), Header::Nonsense(1));
        assert_eq!(judge([0, 61], 100), Header::Nonsense(61));
        assert_eq!(judge(1517u16.to_be_bytes(), 9000), Header::Nonsense(1517));
        assert_eq!(judge([0x45, 0xea], 16384), Header::Nonsense(0x45ea));
    }
}
