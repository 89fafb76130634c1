//! Helpers shared by the phy10 integration tests: real on-wire frames and capture surgery.
#![allow(dead_code)]

/// Preamble (7 x 0x55) and SFD (0xD5) as the MAC sends them.
pub const PREAMBLE_SFD: [u8; 8] = [0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0xD5];

/// `frame` (destination address .. payload) with preamble, SFD and FCS: what the MAC's TX
/// hands the PHY. The FCS is the IEEE CRC-32, sent least significant byte first.
pub fn wire_frame(frame: &[u8]) -> Vec<u8> {
    let mut wire = PREAMBLE_SFD.to_vec();
    wire.extend_from_slice(frame);
    wire.extend_from_slice(&crc32fast::hash(frame).to_le_bytes());
    wire
}

/// The bytes the decoder should deliver for `wire`: everything after the SFD.
pub fn after_sfd(wire: &[u8]) -> &[u8] {
    &wire[PREAMBLE_SFD.len()..]
}

/// Copies `len` samples of `words` starting at sample `skip` into a new buffer, optionally
/// inverted, followed by `idle` idle samples (0, or 1 when inverted).
pub fn reshape(
    words: &[u32],
    len: usize,
    skip: usize,
    invert: bool,
    idle: usize,
) -> (Vec<u32>, usize) {
    let total = len - skip + idle;
    let mut out = vec![0u32; total.div_ceil(32) + 1];
    for i in 0..total {
        let src = skip + i;
        let mut bit = if src < len {
            (words[src >> 5] >> (src & 31)) & 1
        } else {
            0
        };
        if invert {
            bit ^= 1;
        }
        out[i >> 5] |= bit << (i & 31);
    }
    (out, total)
}
