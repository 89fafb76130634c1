//! The version reply (`client_hdr_ack`, type `CLIENTHDRACK`) that an iperf 2.0.10+ server
//! writes on a TCP test connection right after the header, when the header has
//! [`flags::EXTEND`](super::flags::EXTEND) without
//! [`flags::VERSION2`](super::flags::VERSION2) (every plain 2.1 client test) or
//! [`flags::V2PEERDETECT`](super::flags::V2PEERDETECT) (`-X`). A `-X` client blocks
//! reading it before it sends; a plain one drains it at the end.
//!
//! ```text
//!  0 type (2)  4 length (28)  8 flags (0)  12 version_u  16 version_l  20 reserved ×2
//! ```
//! (52 bytes with `--trip-times`' six timestamp words; never sent by us.)

use super::{get_u32, WireError, VERSION_L, VERSION_U};

/// Length of the reply without trip times.
pub const LEN: usize = 28;
/// Length of the reply with trip-times timestamps.
pub const LEN_TRIP_TIMES: usize = 52;
/// The message type of a header ack (`CLIENTHDRACK` in iperf 2's `enum MsgType`).
pub const CLIENTHDRACK: u32 = 2;

/// A read/write view of a header ack.
#[derive(Clone, Copy, Debug)]
pub struct HeaderAck<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> HeaderAck<T> {
    /// A view over at least [`LEN`] bytes.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < LEN {
            return Err(WireError::Truncated);
        }
        Ok(Self { buffer })
    }

    /// The message type ([`CLIENTHDRACK`] for an ack).
    pub fn msg_type(&self) -> u32 {
        get_u32(self.buffer.as_ref(), 0)
    }

    /// The length the ack announces (28, or 52 with trip times).
    pub fn length(&self) -> u32 {
        get_u32(self.buffer.as_ref(), 4)
    }

    /// The peer's version words (major, minor), as in the client header's extension.
    pub fn version(&self) -> (u32, u32) {
        (
            get_u32(self.buffer.as_ref(), 12),
            get_u32(self.buffer.as_ref(), 16),
        )
    }

    /// True if this is a well-formed ack: type [`CLIENTHDRACK`], length 28 or 52.
    pub fn is_valid(&self) -> bool {
        self.msg_type() == CLIENTHDRACK && matches!(self.length() as usize, LEN | LEN_TRIP_TIMES)
    }
}

/// The 28-byte ack iperf 2.1.8 sends, announcing 2.1.8.
pub const fn ack_bytes() -> [u8; LEN] {
    let mut b = [0u8; LEN];
    let words = [CLIENTHDRACK, LEN as u32, 0, VERSION_U, VERSION_L, 0, 0];
    let mut i = 0;
    while i < words.len() {
        let w = words[i].to_be_bytes();
        b[4 * i] = w[0];
        b[4 * i + 1] = w[1];
        b[4 * i + 2] = w[2];
        b[4 * i + 3] = w[3];
        i += 1;
    }
    b
}

/// The ack's bytes, for a host to write from.
pub static ACK: [u8; LEN] = ack_bytes();

/// Formats iperf 2's version words as it prints a peer's ("2.1.8"), with a suffix for
/// anything but a final release ("-dev", "-rc", ...). Writes into `out`; returns the text.
pub fn version_text(version: (u32, u32), out: &mut [u8; 24]) -> &str {
    let (u, l) = version;
    let mut w = crate::slice_writer::SliceWriter::new(&mut out[..]);
    let suffix = match l & 0xF {
        0 => "-dev",
        1 => "-rc",
        2 => "-rc2",
        3 => "",
        4 => "-private",
        5 => "-master",
        _ => "-other",
    };
    let _ = core::fmt::write(
        &mut w,
        format_args!("{}.{}.{}{}", u >> 16, u & 0xFFFF, l >> 16, suffix),
    );
    let n = w.len();
    core::str::from_utf8(out.get(..n).unwrap_or(&[])).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ack_as_2_1_8_sends_it() {
        let b = ack_bytes();
        let a = HeaderAck::new_checked(&b[..]).unwrap();
        assert!(a.is_valid());
        assert_eq!(a.version(), (0x0002_0001, 0x0008_0003));
        let mut t = [0u8; 24];
        assert_eq!(version_text(a.version(), &mut t), "2.1.8");
        assert_eq!(
            version_text((0x0002_0002, 0x0000_0000), &mut t),
            "2.2.0-dev"
        );
        assert!(HeaderAck::new_checked(&b[..27]).is_err());
    }
}
