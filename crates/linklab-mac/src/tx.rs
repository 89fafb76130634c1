//! TX framing in place: the caller writes the frame straight into the final buffer.
//!
//! [`build`] reserves room for the preamble and SFD, hands the caller a slice of exactly
//! the frame length (the shape of smoltcp's `TxToken::consume`), then pads and appends the
//! FCS behind it. No second copy is made.

use crate::frame::MAX_VLAN_FRAME_LEN;
#[cfg(feature = "soft-framing")]
use crate::{
    fcs,
    frame::{FCS_LEN, MIN_FRAME_LEN, PREAMBLE_BYTE, PREAMBLE_LEN, PREAMBLE_SFD_LEN, SFD},
};

/// What the PHY expects to be handed on transmit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TxFormat {
    /// Preamble, SFD, frame zero-padded to 60 bytes, FCS: what a PHY puts on the wire
    /// (feature `soft-framing`).
    #[cfg(feature = "soft-framing")]
    Wire,
    /// Frame padded to 60 bytes and FCS, no preamble (a PHY that adds the preamble itself;
    /// feature `soft-framing`).
    #[cfg(feature = "soft-framing")]
    Fcs,
    /// The frame as given, no preamble, no padding, no FCS (a Linux TAP).
    Plain,
}

impl TxFormat {
    /// Bytes in front of the frame in this format.
    pub fn head_len(self) -> usize {
        match self {
            #[cfg(feature = "soft-framing")]
            TxFormat::Wire => PREAMBLE_SFD_LEN,
            #[cfg(feature = "soft-framing")]
            TxFormat::Fcs => 0,
            TxFormat::Plain => 0,
        }
    }

    /// Total bytes handed to the PHY for a frame of `frame_len` bytes.
    pub fn wire_len(self, frame_len: usize) -> usize {
        match self {
            TxFormat::Plain => frame_len,
            #[cfg(feature = "soft-framing")]
            TxFormat::Wire | TxFormat::Fcs => {
                self.head_len() + frame_len.max(MIN_FRAME_LEN) + FCS_LEN
            }
        }
    }
}

/// Why a frame could not be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TxError {
    /// The frame is longer than 1518 bytes (tagged maximum without FCS).
    TooLong,
    /// The output buffer cannot hold the frame in the requested format.
    BufferTooSmall,
    /// Inter-packet gap or a received PAUSE still running: retry at this time (ns).
    NotReady {
        /// Clock time (ns) from which transmission is allowed.
        ready_at_ns: u64,
    },
}

impl core::fmt::Display for TxError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            TxError::TooLong => write!(f, "frame longer than {MAX_VLAN_FRAME_LEN} bytes"),
            TxError::BufferTooSmall => write!(f, "TX buffer too small"),
            TxError::NotReady { ready_at_ns } => write!(f, "TX not ready until {ready_at_ns} ns"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for TxError {}

/// Builds one transmission of a `frame_len`-byte frame into `out`.
///
/// `fill` receives `&mut out[head..head + frame_len]` and writes destination, source,
/// EtherType and payload. Returns the number of bytes of `out` to hand to the PHY and
/// `fill`'s result. Padding bytes are zeroed whatever `out` held before.
pub fn build<R>(
    out: &mut [u8],
    format: TxFormat,
    frame_len: usize,
    fill: impl FnOnce(&mut [u8]) -> R,
) -> Result<(usize, R), TxError> {
    if frame_len > MAX_VLAN_FRAME_LEN {
        return Err(TxError::TooLong);
    }
    let total = format.wire_len(frame_len);
    let out = out.get_mut(..total).ok_or(TxError::BufferTooSmall)?;
    let head = format.head_len();
    #[cfg(feature = "soft-framing")]
    if format == TxFormat::Wire {
        out[..PREAMBLE_LEN].fill(PREAMBLE_BYTE);
        out[PREAMBLE_LEN] = SFD;
    }
    let r = fill(&mut out[head..head + frame_len]);
    #[cfg(feature = "soft-framing")]
    if format != TxFormat::Plain {
        let padded = frame_len.max(MIN_FRAME_LEN);
        out[head + frame_len..head + padded].fill(0);
        let c = fcs::fcs_bytes(&out[head..head + padded]);
        out[head + padded..head + padded + FCS_LEN].copy_from_slice(&c);
    }
    Ok((total, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "soft-framing")]
    #[test]
    fn wire_format_layout() {
        let mut buf = [0xEEu8; 100];
        let (n, ()) = build(&mut buf, TxFormat::Wire, 20, |f| f.fill(0xAB)).unwrap();
        assert_eq!(n, 8 + 60 + 4);
        assert_eq!(&buf[..7], &[0x55; 7]);
        assert_eq!(buf[7], 0xD5);
        assert!(buf[8..28].iter().all(|&b| b == 0xAB));
        assert!(buf[28..68].iter().all(|&b| b == 0));
        assert!(fcs::check(&buf[8..72]));
    }

    #[test]
    fn plain_format_is_just_the_frame() {
        let mut buf = [0u8; 100];
        let (n, v) = build(&mut buf, TxFormat::Plain, 42, |f| {
            f.fill(7);
            f.len()
        })
        .unwrap();
        assert_eq!((n, v), (42, 42));
    }

    #[cfg(feature = "soft-framing")]
    #[test]
    fn errors() {
        let mut small = [0u8; 50];
        assert_eq!(
            build(&mut small, TxFormat::Fcs, 20, |_| ()).unwrap_err(),
            TxError::BufferTooSmall
        );
        let mut big = [0u8; 2000];
        assert_eq!(
            build(&mut big, TxFormat::Plain, 1519, |_| ()).unwrap_err(),
            TxError::TooLong
        );
    }
}
