//! Framing on the byte stream: COBS between 0x00 delimiters (encoded here, decoded by the
//! `cobs` crate).
//!
//! Why COBS and not HDLC-style flag/escape stuffing: COBS costs one byte per 254 whatever the
//! payload (at most 7 bytes on a 1528-byte frame), while HDLC escaping doubles a payload of
//! flag bytes — the goodput of a link that carries arbitrary Ethernet frames must not depend
//! on their contents. Both resynchronise the same way: 0x00 never occurs inside an encoded
//! frame, so after any garbage the receiver discards up to the next 0x00 and is in step again.
//!
//! A frame after an idle line is sent as `0x00 frame 0x00`: the leading delimiter closes
//! whatever noise the line picked up while idle, so the noise does not corrupt the frame.

use crate::wire::{MAX_FRAME, MAX_WIRE};

/// Why a delimited chunk of bytes is not a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Longer than the longest encoded frame (garbage, or two frames whose delimiter was lost).
    TooLong,
    /// Not a valid COBS encoding.
    Cobs,
}

/// Splits the received byte stream at 0x00 and decodes each chunk as it arrives, run by
/// run: a code byte, then the bytes of its group copied at once (one pass, no second pass
/// over the chunk to decode it, which cost an RP2040 ~30 cycles a byte: docs/usb.md).
pub struct Deframer {
    /// The chunk decoded so far.
    buf: [u8; MAX_FRAME],
    len: usize,
    /// The chunk has decoded to more than [`MAX_FRAME`] bytes.
    overflow: bool,
    /// Bytes of the current group still to come (0: the next byte is a code, or a delimiter).
    left: u8,
    /// The last code byte seen in this chunk (0: none yet): below 0xFF, its group ends with a
    /// zero, written when another group follows.
    code: u8,
    /// A delimiter came inside a group: the chunk is not a valid encoding.
    broken: bool,
}

impl Default for Deframer {
    fn default() -> Self {
        Self::new()
    }
}

impl Deframer {
    /// An empty deframer, waiting for the first delimiter-terminated chunk.
    pub const fn new() -> Deframer {
        Deframer {
            buf: [0; MAX_FRAME],
            len: 0,
            overflow: false,
            left: 0,
            code: 0,
            broken: false,
        }
    }

    /// Decoded bytes of the chunk being collected (not yet delimited).
    pub fn pending(&self) -> usize {
        self.len
    }

    /// Appends decoded bytes (or marks the chunk too long).
    fn put(&mut self, bytes: &[u8]) {
        if self.overflow {
            return;
        }
        match self.buf.get_mut(self.len..self.len + bytes.len()) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                self.len += bytes.len();
            }
            None => self.overflow = true,
        }
    }

    /// Feeds received bytes; calls `on_chunk` with each non-empty delimited chunk, decoded
    /// (header, payload, CRC still to be checked) or refused. Empty chunks (back-to-back
    /// delimiters) are the idle line and not reported.
    pub fn push(&mut self, mut bytes: &[u8], mut on_chunk: impl FnMut(Result<&[u8], FrameError>)) {
        while let Some((&first, rest)) = bytes.split_first() {
            if self.left == 0 {
                bytes = rest;
                if first == 0 {
                    self.delimited(&mut on_chunk);
                    continue;
                }
                // A new group: the one before it ended with a zero unless it was full.
                if self.code != 0 && self.code != 0xff {
                    self.put(&[0]);
                }
                self.code = first;
                self.left = first - 1;
                continue;
            }
            let run = &bytes[..bytes.len().min(usize::from(self.left))];
            match run.iter().position(|&b| b == 0) {
                Some(z) => {
                    // A delimiter inside the group: what came is not a whole encoding.
                    self.put(&run[..z]);
                    self.broken = true;
                    self.left = 0;
                    bytes = &bytes[z..];
                }
                None => {
                    self.put(run);
                    self.left -= run.len() as u8;
                    bytes = &bytes[run.len()..];
                }
            }
        }
    }

    /// A delimiter: the chunk so far is reported (unless empty) and a new one begins.
    fn delimited(&mut self, on_chunk: &mut impl FnMut(Result<&[u8], FrameError>)) {
        if self.code != 0 {
            if self.overflow {
                on_chunk(Err(FrameError::TooLong));
            } else if self.broken {
                on_chunk(Err(FrameError::Cobs));
            } else {
                on_chunk(Ok(&self.buf[..self.len]));
            }
        }
        self.len = 0;
        self.overflow = false;
        self.code = 0;
        self.broken = false;
    }
}

/// Encodes `frame` (at most [`MAX_FRAME`] bytes) for the wire into `out`: an optional leading
/// delimiter, the COBS encoding, the trailing delimiter. Returns the bytes written.
pub fn encode(frame: &[u8], lead: bool, out: &mut [u8; MAX_WIRE]) -> usize {
    let start = usize::from(lead);
    out[0] = 0;
    let n = cobs_encode(frame, &mut out[start..MAX_WIRE - 1]);
    out[start + n] = 0;
    start + n + 1
}

/// COBS-encodes `src` into `dst` (room for `src.len() + src.len() / 254 + 1` bytes), the same
/// bytes as the `cobs` crate's `encode` (a run of 254 non-zero bytes that ends the data gets no
/// empty group after it); returns the bytes written.
///
/// Written here, group by group (find the group's end, copy its run; a zero after a zero is a
/// one-byte group, written at once), because the crate's byte-at-a-time state machine costs
/// ~40 cycles a byte on a Cortex-M0+: 29 % of an RP2040's cycles while it sent iperf3 over USB
/// (docs/usb.md). The crate still decodes.
fn cobs_encode(src: &[u8], dst: &mut [u8]) -> usize {
    let (mut i, mut o) = (0, 0);
    loop {
        // Zeros at a group's start are empty groups, one code byte each.
        while i < src.len() && src[i] == 0 {
            dst[o] = 1;
            o += 1;
            i += 1;
        }
        let rest = &src[i..];
        let limit = rest.len().min(254);
        let run = &rest[..limit];
        let k = run.iter().position(|&b| b == 0).unwrap_or(limit);
        dst[o] = (k + 1) as u8;
        dst[o + 1..o + 1 + k].copy_from_slice(&run[..k]);
        o += 1 + k;
        i += k;
        if k < limit {
            i += 1; // the zero that ends the group
        } else if k < 254 || i == src.len() {
            // The data ended (after a full group: no empty group after it).
            return o;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    fn collect(d: &mut Deframer, bytes: &[u8]) -> Vec<Result<Vec<u8>, FrameError>> {
        let mut v = Vec::new();
        d.push(bytes, |c| v.push(c.map(<[u8]>::to_vec)));
        v
    }

    #[test]
    fn the_encoder_writes_the_cobs_crates_bytes() {
        // Lengths around the 254-byte groups, zeros from none to all, a fixed pseudo-random
        // sequence (xorshift).
        let mut x = 0x2545_f491_u32;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for len in (0..600).chain([762, 763, 1016, 1270, 1514, 1528]) {
            for zeros_in_256 in [0u32, 1, 16, 128, 256] {
                let src: Vec<u8> = (0..len)
                    .map(|_| {
                        let r = next();
                        if r % 256 < zeros_in_256 {
                            0
                        } else {
                            (r >> 8) as u8 | 1
                        }
                    })
                    .collect();
                let mut ours = vec![0u8; len + len / 254 + 2];
                let mut theirs = vec![0u8; len + len / 254 + 2];
                let n = cobs_encode(&src, &mut ours);
                let m = cobs::encode(&src, &mut theirs);
                assert_eq!(
                    &ours[..n],
                    &theirs[..m],
                    "len {len}, zeros {zeros_in_256}/256"
                );
            }
        }
    }

    #[test]
    fn frames_survive_any_split_and_garbage_between_them() {
        let frames: [&[u8]; 3] = [b"\x00\x01\x00", &[0x55; 600], &[0u8; 300]];
        let mut stream = vec![0x13, 0x37, 0x99]; // garbage before the first delimiter
        let mut out = [0u8; MAX_WIRE];
        for f in frames {
            let n = encode(f, true, &mut out);
            assert!(!out[1..n - 1].contains(&0));
            stream.extend_from_slice(&out[..n]);
        }
        for split in [1, 2, 7, 254, 1000, stream.len()] {
            let mut d = Deframer::new();
            let mut got = Vec::new();
            for part in stream.chunks(split) {
                got.extend(collect(&mut d, part));
            }
            // The garbage is one refused (or undecodable) chunk, then the three frames.
            assert_eq!(got.len(), 4, "split {split}");
            let good: Vec<_> = got[1..].iter().map(|c| c.clone().unwrap()).collect();
            assert_eq!(good, frames.map(<[u8]>::to_vec));
        }
    }

    #[test]
    fn an_endless_chunk_is_refused_once_and_the_next_frame_gets_through() {
        let mut d = Deframer::new();
        let garbage = vec![0x42u8; 3 * MAX_WIRE];
        let mut got = collect(&mut d, &garbage);
        assert!(got.is_empty());
        let mut out = [0u8; MAX_WIRE];
        let n = encode(b"after", false, &mut out);
        got.extend(collect(&mut d, &[0]));
        got.extend(collect(&mut d, &out[..n]));
        assert_eq!(got, vec![Err(FrameError::TooLong), Ok(b"after".to_vec())]);
    }

    #[test]
    fn largest_frame_fits_the_wire_buffer() {
        let mut out = [0u8; MAX_WIRE];
        let frame = [0xFFu8; MAX_FRAME];
        let n = encode(&frame, true, &mut out);
        assert_eq!(n, MAX_WIRE);
        let mut d = Deframer::new();
        assert_eq!(collect(&mut d, &out[..n]), vec![Ok(frame.to_vec())]);
    }
}
