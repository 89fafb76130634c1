//! Framing on the byte stream: COBS between 0x00 delimiters (the `cobs` crate's encoding,
//! byte for byte, a run at a time).
//!
//! Why COBS and not HDLC-style flag/escape stuffing: COBS costs one byte per 254 whatever the
//! payload (at most 7 bytes on a 1528-byte frame), while HDLC escaping doubles a payload of
//! flag bytes — the goodput of a link that carries arbitrary Ethernet frames must not depend
//! on their contents. Both resynchronise the same way: 0x00 never occurs inside an encoded
//! frame, so after any garbage the receiver discards up to the next 0x00 and is in step again.
//!
//! A frame after an idle line is sent as `0x00 frame 0x00`: the leading delimiter closes
//! whatever noise the line picked up while idle, so the noise does not corrupt the frame.

use crate::wire::{MAX_ENCODED, MAX_FRAME, MAX_WIRE};

/// Why a delimited chunk of bytes is not a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// Longer than the longest encoded frame (garbage, or two frames whose delimiter was lost).
    TooLong,
    /// Not a valid COBS encoding.
    Cobs,
}

/// Splits the received byte stream at 0x00 and decodes each chunk in place.
pub struct Deframer {
    buf: [u8; MAX_ENCODED],
    len: usize,
    overflow: bool,
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
            buf: [0; MAX_ENCODED],
            len: 0,
            overflow: false,
        }
    }

    /// Bytes of the chunk being collected (not yet delimited).
    pub fn pending(&self) -> usize {
        self.len
    }

    /// Feeds received bytes; calls `on_chunk` with each non-empty delimited chunk, decoded
    /// (header, payload, CRC still to be checked) or refused. Empty chunks (back-to-back
    /// delimiters) are the idle line and not reported.
    pub fn push(&mut self, mut bytes: &[u8], mut on_chunk: impl FnMut(Result<&[u8], FrameError>)) {
        while !bytes.is_empty() {
            let end = bytes.iter().position(|&b| b == 0);
            let part = &bytes[..end.unwrap_or(bytes.len())];
            if !self.overflow {
                match self.buf.get_mut(self.len..self.len + part.len()) {
                    Some(dst) => {
                        dst.copy_from_slice(part);
                        self.len += part.len();
                    }
                    None => self.overflow = true,
                }
            }
            let Some(end) = end else { return };
            bytes = &bytes[end + 1..];
            if self.overflow {
                on_chunk(Err(FrameError::TooLong));
            } else if self.len > 0 {
                let chunk = &mut self.buf[..self.len];
                match decode_in_place(chunk) {
                    Ok(n) if n <= MAX_FRAME => on_chunk(Ok(&chunk[..n])),
                    Ok(_) => on_chunk(Err(FrameError::TooLong)),
                    Err(_) => on_chunk(Err(FrameError::Cobs)),
                }
            }
            self.len = 0;
            self.overflow = false;
        }
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

/// COBS-encodes `src` into `dst` (at least `src.len() + src.len() / 254 + 1` bytes), byte
/// for byte as `cobs::encode` 0.5 does, a run at a time: the run's end found by a scan and
/// its bytes moved by one copy, where the `cobs` crate steps a state machine per byte (a
/// quarter of the RP2040's time on the SPI link's echo in emulation, docs/spi.md).
fn cobs_encode(src: &[u8], dst: &mut [u8]) -> usize {
    let (mut code_at, mut w, mut i) = (0, 1, 0);
    loop {
        let rest = &src[i..];
        let lim = rest.len().min(254);
        match rest[..lim].iter().position(|&b| b == 0) {
            Some(k) => {
                dst[w..w + k].copy_from_slice(&rest[..k]);
                dst[code_at] = k as u8 + 1;
                code_at = w + k;
                w = code_at + 1;
                i += k + 1;
            }
            None if lim == 254 => {
                dst[w..w + 254].copy_from_slice(&rest[..254]);
                dst[code_at] = 0xFF;
                w += 254;
                i += 254;
                if i == src.len() {
                    return w; // a full run ends the frame: no empty group after it
                }
                code_at = w;
                w += 1;
            }
            None => {
                dst[w..w + lim].copy_from_slice(rest);
                dst[code_at] = lim as u8 + 1;
                return w + lim;
            }
        }
    }
}

/// Decodes a COBS chunk (no 0x00 in it) in place, as `cobs::decode_in_place` 0.5 does (the
/// same bytes, the same refusals), a group at a time with one move per group.
fn decode_in_place(buf: &mut [u8]) -> Result<usize, ()> {
    if buf.is_empty() {
        return Err(());
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let (mut s, mut d) = (0, 0);
    while s < end {
        let code = usize::from(buf[s]);
        if s + code > end && code != 1 {
            return Err(());
        }
        s += 1;
        let n = code.saturating_sub(1);
        buf.copy_within(s..s + n, d);
        s += n;
        d += n;
        if code != 0xFF && s < end {
            buf[d] = 0;
            d += 1;
        }
    }
    Ok(d)
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

    /// Bytes from a seeded generator, with zeros and long runs where `shape` says.
    fn sample(len: usize, seed: u32, shape: u32) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                match shape {
                    0 => x as u8,
                    1 => (x as u8).max(1),
                    2 => u8::from(i % 300 != 299),
                    _ => (x % 4) as u8,
                }
            })
            .collect()
    }

    #[test]
    fn the_run_at_a_time_cobs_is_the_cobs_crates_byte_for_byte() {
        let mut cases: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0, 0], vec![1]];
        for n in [1, 2, 253, 254, 255, 256, 507, 508, 509, 1528] {
            for shape in 0..4 {
                cases.push(sample(n, n as u32 * 7 + shape, shape));
            }
            let mut run = vec![0x55u8; n];
            cases.push(run.clone());
            run.push(0);
            cases.push(run);
        }
        for src in &cases {
            let mut ours = vec![0u8; src.len() + src.len() / 254 + 2];
            let mut theirs = ours.clone();
            let n = cobs_encode(src, &mut ours);
            let m = cobs::encode(src, &mut theirs);
            assert_eq!(&ours[..n], &theirs[..m], "encode {} bytes", src.len());
            let mut a = ours[..n].to_vec();
            let mut b = a.clone();
            let d = decode_in_place(&mut a).unwrap();
            let e = cobs::decode_in_place(&mut b).unwrap();
            assert_eq!((d, &a[..d]), (e, &b[..e]));
            assert_eq!(&a[..d], &src[..]);
        }
        // Garbage: the same verdicts and the same bytes as the crate.
        for seed in 0..2000u32 {
            let g: Vec<u8> = sample((seed % 700) as usize + 1, seed, 1);
            let (mut a, mut b) = (g.clone(), g.clone());
            let ours = decode_in_place(&mut a);
            let theirs = cobs::decode_in_place(&mut b);
            assert_eq!(ours.is_ok(), theirs.is_ok(), "seed {seed}");
            if let (Ok(d), Ok(e)) = (ours, theirs) {
                assert_eq!(&a[..d], &b[..e], "seed {seed}");
            }
        }
    }
}
