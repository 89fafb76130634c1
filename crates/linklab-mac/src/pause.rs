//! IEEE 802.3x PAUSE: MAC Control frames (EtherType 0x8808, opcode 0x0001) that ask the
//! peer to stop transmitting for `quanta` × 512 bit times (0 = resume).

use crate::frame::{self, MacAddr, ETHERTYPE_MAC_CONTROL, HEADER_LEN, MIN_FRAME_LEN};

/// The reserved multicast destination of PAUSE frames, 01-80-C2-00-00-01.
pub const PAUSE_DESTINATION: MacAddr = MacAddr([0x01, 0x80, 0xC2, 0x00, 0x00, 0x01]);
/// MAC Control opcode of PAUSE.
pub const OPCODE_PAUSE: u16 = 0x0001;
/// Bit times in one pause quantum.
pub const QUANTUM_BITS: u64 = 512;
/// A PAUSE frame is a minimum-size frame (60 bytes without FCS).
pub const PAUSE_FRAME_LEN: usize = MIN_FRAME_LEN;

/// A parsed MAC Control frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MacControl {
    /// PAUSE for this many quanta (0 = resume now).
    Pause {
        /// Pause time in units of 512 bit times.
        quanta: u16,
    },
    /// Another MAC Control opcode (e.g. PFC 0x0101), not supported here.
    Other {
        /// The opcode.
        opcode: u16,
    },
}

/// Writes a PAUSE frame (60 bytes, without FCS) into `frame`, which must be at least
/// [`PAUSE_FRAME_LEN`] long; returns the length written or None if too small.
pub fn build_pause(frame: &mut [u8], source: MacAddr, quanta: u16) -> Option<usize> {
    let f = frame.get_mut(..PAUSE_FRAME_LEN)?;
    f.fill(0);
    f[0..6].copy_from_slice(&PAUSE_DESTINATION.0);
    f[6..12].copy_from_slice(&source.0);
    f[12..14].copy_from_slice(&ETHERTYPE_MAC_CONTROL.to_be_bytes());
    f[14..16].copy_from_slice(&OPCODE_PAUSE.to_be_bytes());
    f[16..18].copy_from_slice(&quanta.to_be_bytes());
    Some(PAUSE_FRAME_LEN)
}

/// Parses a frame (without FCS) as MAC Control; None if it is not one or is too short.
pub fn parse(frame: &[u8]) -> Option<MacControl> {
    if frame::ethertype(frame)? != ETHERTYPE_MAC_CONTROL {
        return None;
    }
    let body = frame.get(HEADER_LEN..HEADER_LEN + 4)?;
    let opcode = u16::from_be_bytes([body[0], body[1]]);
    if opcode == OPCODE_PAUSE {
        Some(MacControl::Pause {
            quanta: u16::from_be_bytes([body[2], body[3]]),
        })
    } else {
        Some(MacControl::Other { opcode })
    }
}

/// Duration of `quanta` pause quanta at `line_rate_bps`, in nanoseconds (0 if the rate is 0).
pub fn quanta_ns(quanta: u16, line_rate_bps: u64) -> u64 {
    crate::timing::bits_ns(quanta as u64 * QUANTUM_BITS, line_rate_bps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_then_parse() {
        let mut f = [0xEEu8; 64];
        let me = MacAddr([2, 0, 0, 0, 0, 9]);
        assert_eq!(build_pause(&mut f, me, 0x1234), Some(60));
        assert_eq!(parse(&f[..60]), Some(MacControl::Pause { quanta: 0x1234 }));
        assert_eq!(&f[0..6], &PAUSE_DESTINATION.0);
        assert!(f[18..60].iter().all(|&b| b == 0));
        f[15] = 2;
        assert_eq!(parse(&f[..60]), Some(MacControl::Other { opcode: 2 }));
        assert_eq!(parse(&f[..15]), None);
        f[12] = 8;
        f[13] = 0;
        assert_eq!(parse(&f[..60]), None);
        assert_eq!(build_pause(&mut f[..59], me, 1), None);
    }

    #[test]
    fn quanta_at_10_and_100_mbps() {
        // 512 bit times = 51.2 µs at 10 Mb/s, 5.12 µs at 100 Mb/s.
        assert_eq!(quanta_ns(1, 10_000_000), 51_200);
        assert_eq!(quanta_ns(0xFFFF, 100_000_000), 0xFFFF * 5_120);
        assert_eq!(quanta_ns(5, 0), 0);
    }
}
