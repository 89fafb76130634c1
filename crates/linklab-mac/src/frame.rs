//! Ethernet frame constants and the MAC address type.
//!
//! A *frame* in this crate is destination, source, EtherType and payload, without
//! preamble, SFD or FCS (what smoltcp and a Linux TAP exchange). The *wire* form adds
//! 7 × 0x55 preamble, the 0xD5 start frame delimiter, zero padding to 60 bytes and the
//! 4-byte FCS.

use core::fmt;

/// Preamble byte (alternating bits, LSB first on the wire: 1,0,1,0,...).
pub const PREAMBLE_BYTE: u8 = 0x55;
/// Number of preamble bytes before the SFD.
pub const PREAMBLE_LEN: usize = 7;
/// Start frame delimiter (bits 1,0,1,0,1,0,1,1 on the wire).
pub const SFD: u8 = 0xD5;
/// Preamble plus SFD.
pub const PREAMBLE_SFD_LEN: usize = PREAMBLE_LEN + 1;
/// Destination + source + EtherType.
pub const HEADER_LEN: usize = 14;
/// Length of the frame check sequence.
pub const FCS_LEN: usize = 4;
/// Smallest frame without FCS: shorter frames are zero-padded on transmit.
pub const MIN_FRAME_LEN: usize = 60;
/// Smallest valid frame including FCS.
pub const MIN_FRAME_LEN_FCS: usize = MIN_FRAME_LEN + FCS_LEN;
/// Largest untagged frame without FCS (the smoltcp Ethernet MTU).
pub const MAX_FRAME_LEN: usize = 1514;
/// Largest untagged frame including FCS.
pub const MAX_FRAME_LEN_FCS: usize = MAX_FRAME_LEN + FCS_LEN;
/// Extra bytes allowed for one 802.1Q tag.
pub const VLAN_TAG_LEN: usize = 4;
/// Largest 802.1Q-tagged frame without FCS.
pub const MAX_VLAN_FRAME_LEN: usize = MAX_FRAME_LEN + VLAN_TAG_LEN;
/// Largest 802.1Q-tagged frame including FCS.
pub const MAX_VLAN_FRAME_LEN_FCS: usize = MAX_VLAN_FRAME_LEN + FCS_LEN;
/// Largest transmission in wire form: preamble, SFD, tagged frame, FCS.
pub const MAX_WIRE_LEN: usize = PREAMBLE_SFD_LEN + MAX_VLAN_FRAME_LEN_FCS;
/// The IP MTU of Ethernet (payload bytes after the 14-byte header).
pub const ETHERNET_MTU: usize = 1500;

/// EtherType of an 802.1Q VLAN tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// EtherType of MAC Control frames (802.3x PAUSE).
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;

/// A 48-bit IEEE MAC address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xFF; 6]);

    /// True for the broadcast address.
    pub fn is_broadcast(&self) -> bool {
        *self == Self::BROADCAST
    }

    /// True for group addresses (the I/G bit, including broadcast).
    pub fn is_multicast(&self) -> bool {
        self.0[0] & 1 != 0
    }

    /// True for individual (unicast) addresses.
    pub fn is_unicast(&self) -> bool {
        !self.is_multicast()
    }
}

impl fmt::Debug for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let a = &self.0;
        write!(
            f,
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            a[0], a[1], a[2], a[3], a[4], a[5]
        )
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for MacAddr {
    fn format(&self, f: defmt::Formatter<'_>) {
        let a = &self.0;
        defmt::write!(
            f,
            "{=u8:02x}:{=u8:02x}:{=u8:02x}:{=u8:02x}:{=u8:02x}:{=u8:02x}",
            a[0],
            a[1],
            a[2],
            a[3],
            a[4],
            a[5]
        )
    }
}

/// Destination address of a frame (None if shorter than 6 bytes).
pub fn destination(frame: &[u8]) -> Option<MacAddr> {
    let d: [u8; 6] = frame.get(0..6)?.try_into().ok()?;
    Some(MacAddr(d))
}

/// Source address of a frame (None if shorter than 12 bytes).
pub fn source(frame: &[u8]) -> Option<MacAddr> {
    let s: [u8; 6] = frame.get(6..12)?.try_into().ok()?;
    Some(MacAddr(s))
}

/// The EtherType field (bytes 12..14) of a frame (None if shorter than 14 bytes).
pub fn ethertype(frame: &[u8]) -> Option<u16> {
    let t = frame.get(12..14)?;
    Some(u16::from_be_bytes([t[0], t[1]]))
}

/// Largest allowed frame without FCS for this frame: 1518 if it carries an 802.1Q tag, else 1514.
pub fn max_len_for(frame: &[u8]) -> usize {
    if ethertype(frame) == Some(ETHERTYPE_VLAN) {
        MAX_VLAN_FRAME_LEN
    } else {
        MAX_FRAME_LEN
    }
}
