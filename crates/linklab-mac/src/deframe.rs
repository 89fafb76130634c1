//! RX deframing: from what a PHY captured to a checked frame, in place.
//!
//! # Raw captures and bit order
//!
//! A sampling PHY ([`RxFormat::Raw`]) writes the bits it sees in wire order, least
//! significant bit first within each byte: the first bit received is bit 0 of byte 0,
//! exactly as Ethernet serialises bytes. The capture may start anywhere inside the
//! preamble, so the frame can sit at any bit offset 0..=7, and the line may be inverted
//! (swapped pair). [`deframe`] finds the SFD (bits 1,0,1,0,1,0,1,1, or its inverse) at
//! any bit position within the first [`SFD_SEARCH_LEN`] bytes, shifts the frame down in
//! place so it starts byte-aligned (inverting it when needed), checks the length and the
//! FCS and returns where the frame (without FCS) now lies. Trailing bits that do not make
//! a whole byte are ignored.
//!
//! Every error is one of the [`RxError`] buckets, and nothing here can panic on any input.

use core::ops::Range;

use crate::fcs;
use crate::frame::{max_len_for, FCS_LEN, HEADER_LEN, MIN_FRAME_LEN};

/// How the PHY delivers received transmissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RxFormat {
    /// Raw samples: part of the preamble, SFD at any bit offset, either polarity, FCS
    /// (feature `soft-framing`).
    #[cfg(feature = "soft-framing")]
    Raw,
    /// Byte-aligned frames that start at the destination address: what an Ethernet
    /// controller, a PHY that decodes the line itself (linklab-phy10's decoder writes the
    /// bytes after the SFD) or a Linux TAP hands over.
    Aligned {
        /// True if the last four bytes are the FCS (checked and stripped): a controller that
        /// passes it on, a decoding PHY; false for a Linux TAP, which delivers neither
        /// preamble nor FCS.
        fcs: bool,
    },
    /// Byte-aligned frames without FCS, each followed by padding and the driver's
    /// [`RX_TAG_LEN`]-byte [`RxTag`] (written by [`crate::RxGrant::commit_tagged`] and
    /// [`crate::RxRun::commit_first_tagged`]): a
    /// NIC that tells the MAC what it knows of each frame's IPv4/TCP/UDP checksums, so that
    /// the MAC's checksum offload does not verify what the NIC already did (virtio-net with
    /// `VIRTIO_NET_F_GUEST_CSUM`).
    Tagged,
}

/// Bytes of the [`RxTag`] after every frame of [`RxFormat::Tagged`] (with the padding
/// before it).
pub const RX_TAG_LEN: usize = 4;

/// What a NIC's driver knows of a received frame's IPv4, TCP and UDP checksums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RxChecksums {
    /// Nothing: the MAC verifies them (with checksum offload on), as for an untagged frame.
    Unchecked,
    /// The NIC (or the host behind it) vouches for them: validated, or left for the
    /// device to complete because the frame never crossed a wire (virtio-net's
    /// `DATA_VALID` and `NEEDS_CSUM`). The MAC does not look.
    Valid,
}

/// The trailer after a frame of [`RxFormat::Tagged`]: what the driver knows of its
/// checksums and how many padding bytes lie between the frame and the tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RxTag {
    /// The frame's checksums as the driver knows them.
    pub checksums: RxChecksums,
    /// Padding bytes between the frame and the tag: 0–3 to keep the next frame on its
    /// word, or the rest of a buffer of an [`crate::RxRun`] with buffers posted behind it.
    pub padding: u16,
}

impl RxTag {
    /// The tag's bytes.
    pub const fn to_bytes(self) -> [u8; RX_TAG_LEN] {
        let c = match self.checksums {
            RxChecksums::Unchecked => 0,
            RxChecksums::Valid => 1,
        };
        let [lo, hi] = self.padding.to_le_bytes();
        [c, lo, hi, 0]
    }

    /// The tag at the end of `buf` (a committed transmission), None if it is too short, its
    /// padding is longer than what precedes it or its last byte is not 0. An unknown
    /// checksum byte reads as
    /// [`RxChecksums::Unchecked`]: the MAC then verifies.
    pub fn of(buf: &[u8]) -> Option<RxTag> {
        let t = buf.len().checked_sub(RX_TAG_LEN)?;
        let (c, padding) = (buf[t], u16::from_le_bytes([buf[t + 1], buf[t + 2]]));
        if buf[t + 3] != 0 || usize::from(padding) > t {
            return None;
        }
        let checksums = if c == 1 {
            RxChecksums::Valid
        } else {
            RxChecksums::Unchecked
        };
        Some(RxTag { checksums, padding })
    }
}

/// Why a received transmission was rejected (each maps to one counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RxError {
    /// No start frame delimiter found (`rx_frame_errors`).
    NoSfd,
    /// Shorter than the minimum frame, e.g. truncated (`rx_short_length_errors`).
    TooShort,
    /// Longer than 1518 bytes (1522 with an 802.1Q tag) (`rx_long_length_errors`).
    TooLong,
    /// FCS mismatch (`rx_crc_errors`).
    Crc,
}

#[cfg(feature = "soft-framing")]
/// Bytes at the start of a raw capture searched for the SFD.
///
/// A capture that starts inside the preamble has the SFD within its first 8 bytes; the
/// margin allows some idle noise before it, and the bound keeps a random 0xD5 deep in
/// garbage from being taken for an SFD after a long scan.
pub const SFD_SEARCH_LEN: usize = 32;

#[cfg(feature = "soft-framing")]
/// Where an SFD was found in a raw capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SfdPosition {
    /// Bit index (in the LSB-first bit stream) of the first bit after the SFD.
    pub frame_bit: usize,
    /// True if the line is inverted.
    pub inverted: bool,
}

#[cfg(feature = "soft-framing")]
/// Finds the first SFD (either polarity) in the first [`SFD_SEARCH_LEN`] bytes of `raw`.
pub fn find_sfd(raw: &[u8]) -> Option<SfdPosition> {
    let limit = raw.len().min(SFD_SEARCH_LEN);
    for i in 0..limit {
        let lo = raw[i] as u16;
        let hi = raw.get(i + 1).copied();
        // Bit offsets 1..=7 need the next byte; offset 0 does not.
        let (w, offsets) = match hi {
            Some(h) => (lo | (h as u16) << 8, 8),
            None => (lo, 1),
        };
        // Sixteen alternating bits (preamble in either polarity and bit phase): no window
        // starting in this byte can be an SFD.
        if offsets == 8 && (w == 0x5555 || w == 0xAAAA) {
            continue;
        }
        for k in 0..offsets {
            let b = (w >> k) as u8;
            if b == crate::frame::SFD || b == !crate::frame::SFD {
                return Some(SfdPosition {
                    frame_bit: 8 * i + k + 8,
                    inverted: b != crate::frame::SFD,
                });
            }
        }
    }
    None
}

#[cfg(feature = "soft-framing")]
/// Shifts the bit stream starting at bit `start` down to byte 0 of `buf`, inverting it if
/// asked; returns the number of whole bytes now at the front.
pub fn realign(buf: &mut [u8], start_bit: usize, invert: bool) -> usize {
    let first = start_bit / 8;
    let k = (start_bit % 8) as u32;
    let total_bits = buf.len() * 8;
    let n = total_bits.saturating_sub(start_bit) / 8;
    let mask: u8 = if invert { 0xFF } else { 0 };
    if k == 0 {
        if first > 0 || invert {
            for j in 0..n {
                // j + first < buf.len() because n = len - first.
                let b = buf.get(j + first).copied().unwrap_or(0);
                if let Some(o) = buf.get_mut(j) {
                    *o = b ^ mask;
                }
            }
        }
        return n;
    }
    let mask64 = u64::from_le_bytes([mask; 8]);
    let mut j = 0;
    // Eight output bytes per step: read 9 input bytes, then write 8 (the writes land at
    // or below the reads, and the next reads start above these writes).
    while j + 8 < n + 1 && first + j + 9 <= buf.len() {
        let src: [u8; 9] = match buf.get(first + j..first + j + 9) {
            Some(s) => match s.try_into() {
                Ok(a) => a,
                Err(_) => break,
            },
            None => break,
        };
        let lo = u64::from_le_bytes([
            src[0], src[1], src[2], src[3], src[4], src[5], src[6], src[7],
        ]);
        let v = ((lo >> k) | ((src[8] as u64) << (64 - k))) ^ mask64;
        if let Some(dst) = buf.get_mut(j..j + 8) {
            dst.copy_from_slice(&v.to_le_bytes());
        }
        j += 8;
    }
    while j < n {
        let a = buf.get(first + j).copied().unwrap_or(0) as u16;
        let b = buf.get(first + j + 1).copied().unwrap_or(0) as u16;
        let v = (((a | (b << 8)) >> k) as u8) ^ mask;
        if let Some(o) = buf.get_mut(j) {
            *o = v;
        }
        j += 1;
    }
    n
}

/// Checks a byte-aligned frame of `n` bytes that ends with its FCS.
fn check_with_fcs(frame: &[u8]) -> Result<usize, RxError> {
    let n = frame.len();
    if n < MIN_FRAME_LEN + FCS_LEN {
        return Err(RxError::TooShort);
    }
    let body = n - FCS_LEN;
    if body > max_len_for(frame) {
        return Err(RxError::TooLong);
    }
    if !fcs::check(frame) {
        return Err(RxError::Crc);
    }
    Ok(body)
}

/// Deframes one received transmission in place.
///
/// On success the frame (destination..payload, without FCS) is `buf[range]`. Raw
/// captures are realigned to start at byte 0; aligned frames are not moved.
pub fn deframe(buf: &mut [u8], format: RxFormat) -> Result<Range<usize>, RxError> {
    match format {
        #[cfg(feature = "soft-framing")]
        RxFormat::Raw => {
            let sfd = find_sfd(buf).ok_or(RxError::NoSfd)?;
            let (start, n) = if sfd.frame_bit % 8 == 0 && !sfd.inverted {
                let s = sfd.frame_bit / 8;
                (s, buf.len().saturating_sub(s))
            } else {
                (0, realign(buf, sfd.frame_bit, sfd.inverted))
            };
            let frame = buf.get(start..start + n).ok_or(RxError::TooShort)?;
            let body = check_with_fcs(frame)?;
            Ok(start..start + body)
        }
        RxFormat::Aligned { fcs: true } => {
            let body = check_with_fcs(buf)?;
            Ok(0..body)
        }
        RxFormat::Aligned { fcs: false } => check_plain(buf),
        RxFormat::Tagged => {
            let tag = RxTag::of(buf).ok_or(RxError::TooShort)?;
            let n = buf.len() - RX_TAG_LEN - usize::from(tag.padding);
            check_plain(&buf[..n])
        }
    }
}

/// The length checks of a frame without FCS: its range.
fn check_plain(frame: &[u8]) -> Result<Range<usize>, RxError> {
    let n = frame.len();
    if n < HEADER_LEN {
        return Err(RxError::TooShort);
    }
    if n > max_len_for(frame) {
        return Err(RxError::TooLong);
    }
    Ok(0..n)
}

// Frames to deframe are built in the wire and FCS formats.
#[cfg(all(test, feature = "soft-framing"))]
mod tests {
    use super::*;
    use crate::tx::{build, TxFormat};

    /// Shifts a wire image right by `k` bits (k garbage bits first) and optionally inverts.
    fn impair(wire: &[u8], k: usize, invert: bool) -> [u8; 200] {
        let mut out = [0u8; 200];
        for (i, &b) in wire.iter().enumerate() {
            for bit in 0..8 {
                let v = (b >> bit) & 1;
                let p = 8 * i + bit + k;
                out[p / 8] |= v << (p % 8);
            }
        }
        if invert {
            for b in out.iter_mut() {
                *b = !*b;
            }
        }
        out
    }

    #[test]
    fn every_offset_and_polarity() {
        let mut wire = [0u8; 100];
        let (n, ()) = build(&mut wire, TxFormat::Wire, 70, |f| {
            for (i, b) in f.iter_mut().enumerate() {
                *b = i as u8 ^ 0x5A;
            }
        })
        .unwrap();
        for skip in 0..7 {
            for k in 0..8 {
                for inv in [false, true] {
                    let raw = impair(&wire[skip..n], k, inv);
                    let len = (8 * (n - skip) + k).div_ceil(8);
                    let mut buf = raw;
                    let r = deframe(&mut buf[..len], RxFormat::Raw)
                        .unwrap_or_else(|e| panic!("skip {skip} k {k} inv {inv}: {e:?}"));
                    assert_eq!(r.len(), 70);
                    assert_eq!(&buf[r], &wire[8..78]);
                }
            }
        }
    }

    #[test]
    fn aligned_modes() {
        let mut wire = [0u8; 100];
        let (n, ()) = build(&mut wire, TxFormat::Fcs, 60, |f| f.fill(1)).unwrap();
        assert_eq!(
            deframe(&mut wire[..n], RxFormat::Aligned { fcs: true }),
            Ok(0..60)
        );
        wire[5] ^= 1;
        assert_eq!(
            deframe(&mut wire[..n], RxFormat::Aligned { fcs: true }),
            Err(RxError::Crc)
        );
        assert_eq!(
            deframe(&mut wire[..42], RxFormat::Aligned { fcs: false }),
            Ok(0..42)
        );
        assert_eq!(
            deframe(&mut wire[..13], RxFormat::Aligned { fcs: false }),
            Err(RxError::TooShort)
        );
    }

    #[test]
    fn tagged_frames_lose_their_padding_and_tag() {
        let mut buf = [7u8; 80];
        let tag = RxTag {
            checksums: RxChecksums::Valid,
            padding: 2,
        };
        buf[62..66].copy_from_slice(&tag.to_bytes());
        assert_eq!(deframe(&mut buf[..66], RxFormat::Tagged), Ok(0..60));
        assert_eq!(RxTag::of(&buf[..66]), Some(tag));
        // A run's buffer: the frame, then padding to the buffer's end, then the tag.
        let mut long = [7u8; 1534];
        let tag = RxTag {
            checksums: RxChecksums::Valid,
            padding: 1534 - 4 - 60,
        };
        long[1530..].copy_from_slice(&tag.to_bytes());
        assert_eq!(deframe(&mut long, RxFormat::Tagged), Ok(0..60));
        // A tag with padding longer than what precedes it, a last byte other than 0, or no
        // room for one, is a short frame.
        buf[62..66].copy_from_slice(&[1, 63, 0, 0]);
        assert_eq!(
            deframe(&mut buf[..66], RxFormat::Tagged),
            Err(RxError::TooShort)
        );
        buf[62..66].copy_from_slice(&[1, 2, 0, 1]);
        assert_eq!(
            deframe(&mut buf[..66], RxFormat::Tagged),
            Err(RxError::TooShort)
        );
        assert_eq!(
            deframe(&mut buf[..3], RxFormat::Tagged),
            Err(RxError::TooShort)
        );
        // An unknown checksum byte is verified by the MAC.
        buf[62..66].copy_from_slice(&[9, 0, 0, 0]);
        assert_eq!(
            RxTag::of(&buf[..66]).map(|t| t.checksums),
            Some(RxChecksums::Unchecked)
        );
    }

    #[test]
    fn no_sfd_in_garbage() {
        let mut g = [0u8; 64];
        assert_eq!(deframe(&mut g, RxFormat::Raw), Err(RxError::NoSfd));
        assert_eq!(deframe(&mut [], RxFormat::Raw), Err(RxError::NoSfd));
    }
}
