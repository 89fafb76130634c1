//! A read-only view over a bit-packed sample capture.
//!
//! Samples are packed LSB first: sample `i` is bit `i % 32` of word `i / 32`. A `1` sample means
//! the line was high (TD+ above TD-), `0` low or idle. This is the layout a 32-bit shifter
//! (SPI/I2S/PIO) fills when it shifts right.

/// Captures longer than this many samples are only looked at up to this length. It keeps all
/// fixed-point sample positions of the decoder inside `u32` (2^19 samples is 13 ms at 40 MHz,
/// far more than the 1.2 ms a maximum-length frame lasts).
pub const MAX_CAPTURE_SAMPLES: usize = 1 << 19;

/// A bit-packed capture of `len` samples.
#[derive(Clone, Copy, Debug)]
pub struct Capture<'a> {
    words: &'a [u32],
    len: usize,
}

impl<'a> Capture<'a> {
    /// A view of the first `len_samples` samples of `words`. `len_samples` is clamped to the
    /// samples `words` holds and to [`MAX_CAPTURE_SAMPLES`].
    pub fn new(words: &'a [u32], len_samples: usize) -> Capture<'a> {
        let len = len_samples
            .min(words.len().saturating_mul(32))
            .min(MAX_CAPTURE_SAMPLES);
        Capture { words, len }
    }

    /// A view of every sample in `words`.
    pub fn from_words(words: &'a [u32]) -> Capture<'a> {
        Capture::new(words, words.len().saturating_mul(32))
    }

    /// Number of samples in the capture.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the capture holds no sample.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The packed words (the last one may hold samples past `len`).
    pub fn words(&self) -> &'a [u32] {
        self.words
    }

    /// Sample `i` as 0 or 1; samples past the end read as 0 (idle).
    #[inline(always)]
    pub fn sample(&self, i: usize) -> u32 {
        if i >= self.len {
            return 0;
        }
        match self.words.get(i >> 5) {
            Some(w) => (w >> (i & 31)) & 1,
            None => 0,
        }
    }

    /// Index of the first sample after `from` whose level differs from sample `from`, if any.
    pub fn next_edge(&self, from: usize) -> Option<usize> {
        if from >= self.len {
            return None;
        }
        let level_fill = if self.sample(from) == 1 { u32::MAX } else { 0 };
        let mut i = from + 1;
        while i < self.len {
            let word = self.words.get(i >> 5).copied().unwrap_or(0) ^ level_fill;
            let bits = word >> (i & 31);
            if bits != 0 {
                let edge = i + bits.trailing_zeros() as usize;
                return if edge < self.len { Some(edge) } else { None };
            }
            i = (i | 31) + 1;
        }
        None
    }
}
