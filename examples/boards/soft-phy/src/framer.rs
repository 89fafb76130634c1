//! Cuts a continuous stream of line samples (a peripheral sampling the RX pin into a DMA
//! ring, read a slice at a time) into one capture per transmission, for linklab-phy10's
//! decoder, which takes a whole transmission at once.
//!
//! A word (32 samples, LSB first) is *active* when the line changes inside it or between it
//! and the word before; a transmission is the run of active words, with the idle word before
//! it (the decoder finds the first edge) and [`END_IDLE_WORDS`] idle words after it (it sees
//! the line come to rest after TP_IDL). A line that stays high or low carries nothing.
//! A stream of a resynchronising sampler's symbols ([`Framer::for_symbols`], linklab-phy10's
//! `symbols`: 16 bit times a word) is cut the same way, a word being active when any of its
//! symbols saw an edge.
//! Between transmissions the cost is one comparison per word (8 bit times at 4x); inside one,
//! a copy of each word into the linear capture buffer (the ring may wrap mid-frame).
//!
//! Bad input never wins: a run of activity longer than the buffer (noise, a babbling line)
//! is handed over cut at the buffer's end (the decoder counts it as noise or a truncated
//! frame) and the rest of it is skipped until the line idles; nothing here can panic on what
//! the line carries.

use linklab_phy10::Capture;

/// Idle words that end a transmission: 64 samples, 16 bit times at 4x (TP_IDL's high is
/// 2-3 bit times, an inter-frame gap 96).
pub const END_IDLE_WORDS: usize = 2;

/// What the framer saw, for the device's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FramerCounters {
    /// Transmissions handed to the decoder.
    pub captures: u32,
    /// Transmissions longer than the buffer, handed over cut.
    pub overlong: u32,
}

/// Where the framer is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Between transmissions.
    Idle,
    /// Inside one: `idle_run` idle words seen since its last active word.
    Active { idle_run: usize },
    /// Skipping the rest of an overlong one until the line idles.
    Skipping { idle_run: usize },
}

/// The framer over a capture buffer of `N` words (a full-length frame at 4x is 1 534 words:
/// 1 600 leaves room for drift and the idle words around it).
pub struct Framer<const N: usize> {
    words: [u32; N],
    len: usize,
    state: State,
    /// The last word seen (for edges between words), and the last idle word (the lead-in).
    last: u32,
    /// The words are symbols, not samples.
    symbols: bool,
    counters: FramerCounters,
}

impl<const N: usize> Default for Framer<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Framer<N> {
    /// An idle framer of line samples.
    pub const fn new() -> Self {
        Framer {
            words: [0; N],
            len: 0,
            state: State::Idle,
            last: 0,
            symbols: false,
            counters: FramerCounters {
                captures: 0,
                overlong: 0,
            },
        }
    }

    /// An idle framer of a resynchronising sampler's symbols.
    pub const fn for_symbols() -> Self {
        let mut f = Self::new();
        f.symbols = true;
        f
    }

    /// Drops the transmission under way (the samples after it are not the ones before).
    pub fn reset(&mut self) {
        self.len = 0;
        self.state = State::Idle;
    }

    /// Its counters.
    pub fn counters(&self) -> FramerCounters {
        self.counters
    }

    /// True if the line changes inside `word` or between the word before and it.
    fn active(&self, word: u32) -> bool {
        if self.symbols {
            return word & linklab_phy10::symbols::FLAGS != 0;
        }
        let carried = (self.last >> 31) & 1;
        let first = word & 1;
        word != 0 && word != u32::MAX || first != carried
    }

    /// Feeds the next samples; calls `on_capture` with each transmission they complete.
    pub fn push(&mut self, words: &[u32], mut on_capture: impl FnMut(Capture<'_>)) {
        for &w in words {
            let active = self.active(w);
            self.state = match self.state {
                State::Idle if active => {
                    // The idle word before it leads in.
                    self.words[0] = self.last;
                    self.len = 1;
                    self.store(w, &mut on_capture)
                }
                State::Idle => State::Idle,
                State::Active { idle_run } => {
                    let run = if active { 0 } else { idle_run + 1 };
                    match self.store(w, &mut on_capture) {
                        State::Active { .. } if run >= END_IDLE_WORDS => {
                            self.emit(&mut on_capture);
                            State::Idle
                        }
                        State::Active { .. } => State::Active { idle_run: run },
                        other => other,
                    }
                }
                State::Skipping { idle_run } => {
                    let run = if active { 0 } else { idle_run + 1 };
                    if run >= END_IDLE_WORDS {
                        State::Idle
                    } else {
                        State::Skipping { idle_run: run }
                    }
                }
            };
            self.last = w;
        }
    }

    /// Appends `w`; a full buffer is handed over cut and the rest skipped.
    fn store(&mut self, w: u32, on_capture: &mut impl FnMut(Capture<'_>)) -> State {
        if let Some(slot) = self.words.get_mut(self.len) {
            *slot = w;
            self.len += 1;
        }
        if self.len >= N {
            self.counters.overlong = self.counters.overlong.wrapping_add(1);
            self.emit(on_capture);
            State::Skipping { idle_run: 0 }
        } else {
            State::Active { idle_run: 0 }
        }
    }

    fn emit(&mut self, on_capture: &mut impl FnMut(Capture<'_>)) {
        let words = &self.words[..self.len.min(N)];
        self.counters.captures = self.counters.captures.wrapping_add(1);
        on_capture(Capture::new(words, words.len() * 32));
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linklab_phy10::{encode_frame, words_for_frame, Oversample, RxInterrupt};

    const N: usize = 1600;

    fn wire(len: usize, seed: u8) -> Vec<u8> {
        let mut w = vec![0x55; 7];
        w.push(0xD5);
        w.extend((0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)));
        w
    }

    fn line(frames: &[Vec<u8>], idle_words: usize) -> Vec<u32> {
        let mut out = vec![0u32; idle_words];
        for f in frames {
            let mut words = vec![0u32; words_for_frame(f.len(), Oversample::X4) + 1];
            encode_frame(f, Oversample::X4, &mut words).unwrap();
            out.extend(words);
            out.extend(std::iter::repeat_n(0, idle_words));
        }
        out
    }

    fn decode_all(samples: &[u32], chunk: usize) -> (Vec<Vec<u8>>, FramerCounters) {
        let mut framer = Box::new(Framer::<N>::new());
        let mut rx = RxInterrupt::new(Oversample::X4);
        let mut frames = Vec::new();
        for part in samples.chunks(chunk.max(1)) {
            framer.push(part, |capture| {
                let mut grant = vec![0u8; 1600];
                let n = rx.receive(&capture, &mut grant);
                if n > 0 {
                    frames.push(grant[..n].to_vec());
                }
            });
        }
        (frames, framer.counters())
    }

    #[test]
    fn frames_come_out_whole_however_the_ring_is_read() {
        let sent = [wire(1514 + 4, 1), wire(60 + 4, 2), wire(700, 3)];
        let samples = line(&sent, 20);
        for chunk in [1, 7, 64, 1000, samples.len()] {
            let (got, c) = decode_all(&samples, chunk);
            assert_eq!(got.len(), 3, "chunk {chunk}");
            for (g, s) in got.iter().zip(&sent) {
                assert_eq!(g[..], s[8..], "chunk {chunk}");
            }
            assert_eq!((c.captures, c.overlong), (3, 0));
        }
    }

    #[test]
    fn a_stuck_line_carries_nothing_and_babble_is_cut() {
        let (got, c) = decode_all(&vec![u32::MAX; 5000], 100);
        assert!(got.is_empty());
        // One capture: the step from low to high at the start.
        assert!(c.captures <= 1);
        let babble: Vec<u32> = (0..5000u32).map(|i| i.wrapping_mul(0x9E37_79B9)).collect();
        let (_, c) = decode_all(&babble, 333);
        assert!(c.overlong >= 1);
        // The line recovers: a frame after the babble is received.
        let mut samples = babble;
        samples.extend(line(&[wire(200, 9)], 8));
        let (got, _) = decode_all(&samples, 50);
        assert_eq!(got.last().map(|f| f.len()), Some(200));
    }
}
