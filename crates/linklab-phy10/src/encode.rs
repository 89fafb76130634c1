//! TX: Manchester-encode on-wire bytes into bit-packed sample words for a shifter.
//!
//! Input is what the MAC hands the PHY: preamble, SFD, frame and FCS, sent LSB first. Output is
//! sample words (LSB first, see [`crate::capture`]) ending with TP_IDL: the line held high for
//! [`TP_IDL_BIT_TIMES`] bit times (802.3 asks for at least 250 ns), then idle (low).

use crate::oversample::Oversample;
use crate::tables::{ENCODE_X2, ENCODE_X4};

/// Length of the TP_IDL high level after the last bit, in bit times (300 ns >= 250 ns).
pub const TP_IDL_BIT_TIMES: usize = 3;

/// Why a frame could not be encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EncodeError {
    /// `out` holds fewer words than the encoding needs.
    BufferTooSmall {
        /// Words the encoding needs (see [`words_for_frame`]).
        needed_words: usize,
    },
}

/// Samples the encoding of `wire_len` bytes takes, TP_IDL included.
pub const fn samples_for_frame(wire_len: usize, os: Oversample) -> usize {
    (wire_len * 8 + TP_IDL_BIT_TIMES) * os.samples_per_bit()
}

/// 32-bit words needed to hold the encoding of `wire_len` bytes.
pub const fn words_for_frame(wire_len: usize, os: Oversample) -> usize {
    samples_for_frame(wire_len, os).div_ceil(32)
}

/// The 32 samples of one byte at 4x (LSB first), for a shifter fed byte by byte from an ISR.
#[inline(always)]
pub fn encode_byte_x4(byte: u8) -> u32 {
    ENCODE_X4[byte as usize]
}

/// The 16 samples of one byte at 2x (LSB first).
#[inline(always)]
pub fn encode_byte_x2(byte: u8) -> u16 {
    ENCODE_X2[byte as usize]
}

/// The `N` samples of one bit cell at any factor: `1` = low then high, `0` = high then low.
/// With an odd factor the first half gets the extra sample.
#[inline]
pub const fn encode_bit(bit: bool, os: Oversample) -> u32 {
    let n = os.get() as u32;
    let first = n.div_ceil(2);
    let second = n - first;
    if bit {
        ((1 << second) - 1) << first
    } else {
        (1 << first) - 1
    }
}

/// Encodes `wire` (LSB first per byte) followed by TP_IDL into `out`; returns the number of
/// samples written. Words of `out` past the encoding are left untouched; the unused tail of
/// the last word is idle (0).
pub fn encode_frame(wire: &[u8], os: Oversample, out: &mut [u32]) -> Result<usize, EncodeError> {
    let needed_words = words_for_frame(wire.len(), os);
    let Some(out) = out.get_mut(..needed_words) else {
        return Err(EncodeError::BufferTooSmall { needed_words });
    };
    let mut writer = SampleWriter::new(out);
    match os.get() {
        4 => {
            for &byte in wire {
                writer.push_word(ENCODE_X4[byte as usize]);
            }
        }
        2 => {
            // Two bytes fill one word (a TX DMA's 32-bit shift register at 20 MHz).
            let mut pairs = wire.chunks_exact(2);
            for pair in &mut pairs {
                let lo = u32::from(ENCODE_X2[pair[0] as usize]);
                let hi = u32::from(ENCODE_X2[pair[1] as usize]);
                writer.push_word(lo | hi << 16);
            }
            if let [last] = pairs.remainder() {
                writer.push(ENCODE_X2[*last as usize] as u64, 16);
            }
        }
        _ => {
            let n = os.get() as u32;
            let one = encode_bit(true, os) as u64;
            let zero = encode_bit(false, os) as u64;
            for &byte in wire {
                let mut cells = 0u64;
                for bit in 0..8 {
                    let cell = if (byte >> bit) & 1 == 1 { one } else { zero };
                    cells |= cell << (bit * n);
                }
                writer.push(cells, 8 * n);
            }
        }
    }
    let high = TP_IDL_BIT_TIMES * os.samples_per_bit();
    writer.push(u64::MAX >> (64 - high), high as u32);
    Ok(writer.pos)
}

/// Appends samples to a zeroed word buffer.
struct SampleWriter<'a> {
    out: &'a mut [u32],
    pos: usize,
}

impl<'a> SampleWriter<'a> {
    fn new(out: &'a mut [u32]) -> SampleWriter<'a> {
        out.fill(0);
        SampleWriter { out, pos: 0 }
    }

    /// Appends 32 samples; only valid while `pos` is a multiple of 32 (4x frames are, and 2x
    /// ones two bytes at a time).
    #[inline(always)]
    fn push_word(&mut self, samples: u32) {
        if let Some(word) = self.out.get_mut(self.pos >> 5) {
            *word = samples;
        }
        self.pos += 32;
    }

    /// Appends the low `count` (<= 64) bits of `samples`. Bits past the buffer are dropped
    /// (the caller sized the buffer with `words_for_frame`).
    fn push(&mut self, samples: u64, count: u32) {
        let mut remaining = count;
        let mut bits = if count < 64 {
            samples & ((1u64 << count) - 1)
        } else {
            samples
        };
        while remaining > 0 {
            let shift = (self.pos & 31) as u32;
            let take = remaining.min(32 - shift);
            if let Some(word) = self.out.get_mut(self.pos >> 5) {
                *word |= (bits as u32) << shift;
            }
            bits = if take < 64 { bits >> take } else { 0 };
            remaining -= take;
            self.pos += take as usize;
        }
    }
}
