//! RX from a resynchronising sampler: the line decoded bit by bit where it is sampled (a PIO
//! state machine on the RP2040/RP2350), the CPU left with framing.
//!
//! The sampler runs at `N` cycles per bit (12 at 120 MHz, 20 at 200 MHz) and waits for each
//! mid-bit edge; the bit is the level after it. Three quarters of a bit later (past any
//! boundary edge, before the next mid-bit edge) it reads the line: that level is the first
//! half of the next cell, so it knows which way the next mid-bit edge goes and waits for that
//! one. Every bit re-synchronises on its own edge: clock drift never accumulates. A bit
//! time and a half without the edge it waits for and it emits an idle symbol instead, and
//! keeps waiting.
//!
//! What it emits is a stream of 2-bit **symbols**, packed LSB first in `u32` words as a
//! right-shifting ISR fills them (16 symbols a word, symbol `i` in bits `2i` and `2i + 1`):
//! bit `2i` is 1 when a mid-bit edge was seen and bit `2i + 1` is then the bit (the level
//! after the edge); `00` is a bit time and a half without an edge (idle line). A word whose
//! even bits are all set carries 16 bits.
//!
//! [`SamplerTiming`] is the program's timing for a given `N` (the board's PIO program is
//! assembled from it), [`sample_line`] a cycle-exact model of the program (tests and the
//! benchmark feed it encoded frames through drift and jitter), [`SymbolDecoder`] the CPU's
//! part: find the SFD after the preamble's alternating bits, then 16 bits a word into bytes.
//!
//! The program (`T` = [`SamplerTiming::timeout_polls`], `D` = [`SamplerTiming::delay`]; the
//! pin is both the `in` base and the `jmp pin`; X = 1 after the first instruction):
//!
//! ```text
//!  0          set x, 1
//!  1 high:    set y, T              ; the line is high: the next mid-bit edge falls (a 0)
//!  2 h_poll:  jmp pin h_wait
//!  3 edge:    in x, 1               ; a mid-bit edge (from 2 falling through, or from 7)
//!  4          in pins, 1 [D]        ; the bit: the level after it
//!  5          jmp pin high          ; 3/4 of a bit after the edge: the next cell's first half
//!  6 low:     set y, T              ; low: the next mid-bit edge rises (a 1)
//!  7 l_poll:  jmp pin edge
//!  8          jmp y-- l_poll
//!  9          in null, 2            ; idle
//! 10          jmp low
//! 11 h_wait:  jmp y-- h_poll
//! 12          in null, 2            ; idle
//! 13          jmp high
//! ```
//!
//! Each wait polls the pin every 2 cycles; the edge is seen 0 to 2 cycles after it happens,
//! the same whichever way it goes (the falling one by the `jmp pin` not taken at 2, the
//! rising one by the `jmp pin` taken at 7), and the line is read for the next cell `D + 3`
//! cycles after that.

use crate::capture::Capture;
use crate::decode::RxOutcome;
use crate::oversample::Oversample;

/// The flag bits of a symbol word: every symbol's "edge seen" bit.
pub const FLAGS: u32 = 0x5555_5555;
/// Symbols per 32-bit word.
pub const SYMBOLS_PER_WORD: usize = 16;
/// Alternating preamble bits needed before the SFD's closing pair (the sampler may lose or
/// invent the first few while it falls into step with the line).
pub const MIN_PREAMBLE_BITS: u32 = 8;
/// Bits searched for the SFD before the transmission counts as noise.
const SFD_HUNT_MAX_BITS: u32 = 160;
/// The longest run of edge symbols a link pulse (one 100 ns pulse) leaves: its rising and
/// its falling edge.
const PULSE_SYMBOLS: u32 = 3;

/// The sampler program's timing at `cycles_per_bit` cycles of its clock per 100 ns bit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SamplerTiming {
    /// Cycles per bit time (the state machine's clock / 10 MHz).
    pub cycles_per_bit: u32,
    /// The delay on `in pins, 1`: the line is read for the next cell `delay + 3` cycles after
    /// the edge was seen, `delay + 3` to `delay + 5` after it happened: around 3/4 of a bit.
    pub delay: u8,
    /// `set y` before each wait: `timeout_polls + 1` polls of 2 cycles, about a bit and a
    /// quarter after the read, before an idle symbol.
    pub timeout_polls: u8,
}

impl SamplerTiming {
    /// Fewest cycles per bit the program fits in (its edge-to-read path is 3 cycles plus the
    /// delay, and the next wait must start before the next mid-bit edge).
    pub const MIN_CYCLES_PER_BIT: u32 = 12;
    /// Most cycles per bit (the delay field holds up to 31, `set y` up to 31).
    pub const MAX_CYCLES_PER_BIT: u32 = 24;

    /// The timing at `cycles_per_bit`, if the program fits it.
    pub const fn new(cycles_per_bit: u32) -> Option<SamplerTiming> {
        if cycles_per_bit < Self::MIN_CYCLES_PER_BIT || cycles_per_bit > Self::MAX_CYCLES_PER_BIT {
            return None;
        }
        // Edge to read: delay + 3 cycles after it was seen, seen 1 cycle late on average.
        let delay = (3 * cycles_per_bit).div_ceil(4) - 4;
        // From the read (3/4 bit after the edge) the next edge is due a quarter bit later;
        // an idle symbol a bit and a quarter after that.
        let timeout = (5 * cycles_per_bit).div_ceil(8);
        Some(SamplerTiming {
            cycles_per_bit,
            delay: delay as u8,
            timeout_polls: timeout as u8,
        })
    }
}

/// The sampler program as a cycle-exact model: runs it over `line` (a capture of the line at
/// `os` samples per bit; past its end the line holds its last level) from its first
/// instruction, and writes its symbol stream into `out` as the ISR pushes it (whole words;
/// the last partial word too, zero-padded). Returns the symbols written. Stops when `line`
/// has been covered and the program has emitted at least two idle words, or `out` is full.
pub fn sample_line(
    line: &Capture<'_>,
    os: Oversample,
    timing: SamplerTiming,
    out: &mut [u32],
) -> usize {
    let n = timing.cycles_per_bit as u64;
    let r = os.get() as u64;
    let last = if line.is_empty() {
        0
    } else {
        line.sample(line.len() - 1)
    };
    let end_cycle = (line.len() as u64 * n).div_ceil(r);
    let pin = |cycle: u64| -> u32 {
        let i = (cycle * r / n) as usize;
        if i < line.len() {
            line.sample(i)
        } else {
            last
        }
    };
    let mut isr = Isr::new(out);
    let (mut pc, mut y, mut x, mut cycle) = (0u8, 0u32, 0u32, 0u64);
    let mut idle_run = 0usize;
    loop {
        if isr.full() || (cycle >= end_cycle && idle_run >= 2 * SYMBOLS_PER_WORD) {
            break;
        }
        let mut cycles = 1;
        pc = match pc {
            0 => {
                x = 1;
                1
            }
            1 | 6 => {
                y = timing.timeout_polls as u32;
                pc + 1
            }
            2 => {
                if pin(cycle) == 1 {
                    11
                } else {
                    3
                }
            }
            3 => {
                isr.push(x & 1, 1);
                4
            }
            4 => {
                isr.push(pin(cycle), 1);
                idle_run = 0;
                cycles += timing.delay as u64;
                5
            }
            5 => {
                if pin(cycle) == 1 {
                    1
                } else {
                    6
                }
            }
            7 => {
                if pin(cycle) == 1 {
                    3
                } else {
                    8
                }
            }
            8 | 11 => {
                let back = if pc == 8 { 7 } else { 2 };
                let taken = y != 0;
                y = y.wrapping_sub(1);
                if taken {
                    back
                } else {
                    pc + 1
                }
            }
            9 | 12 => {
                isr.push(0, 2);
                idle_run += 1;
                pc + 1
            }
            10 => 6,
            _ => 1,
        };
        cycle += cycles;
    }
    isr.finish()
}

/// The ISR as the model fills it: right shifts, a push every 32 bits.
struct Isr<'a> {
    out: &'a mut [u32],
    words: usize,
    bits: u32,
    count: u32,
    symbols: usize,
    pending: u32,
}

impl<'a> Isr<'a> {
    fn new(out: &'a mut [u32]) -> Self {
        Isr {
            out,
            words: 0,
            bits: 0,
            count: 0,
            symbols: 0,
            pending: 0,
        }
    }

    fn full(&self) -> bool {
        self.words >= self.out.len()
    }

    fn push(&mut self, value: u32, n: u32) {
        self.bits |= value << self.count;
        self.count += n;
        self.pending += n;
        if self.pending == 2 {
            self.symbols += 1;
            self.pending = 0;
        }
        if self.count == 32 {
            if let Some(slot) = self.out.get_mut(self.words) {
                *slot = self.bits;
                self.words += 1;
            }
            self.bits = 0;
            self.count = 0;
        }
    }

    fn finish(self) -> usize {
        if self.count > 0 {
            if let Some(slot) = self.out.get_mut(self.words) {
                *slot = self.bits;
            }
        }
        self.symbols.min(self.out.len() * SYMBOLS_PER_WORD)
    }
}

/// The 16 bits of a word of edge symbols (the odd bits), symbol 0 in bit 0.
#[inline(always)]
pub fn word_bits(w: u32) -> u32 {
    let mut x = (w >> 1) & 0x5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF;
    (x | (x >> 8)) & 0x0000_FFFF
}

/// A symbol stream (see the module documentation) as a [`Capture`]: its length counts bits,
/// two per symbol.
struct Symbols<'a> {
    words: &'a [u32],
    /// Symbols in the capture.
    len: usize,
}

impl Symbols<'_> {
    /// Symbol `i` (0..=3: bit 0 the edge flag, bit 1 the bit); past the end: 0 (idle).
    #[inline(always)]
    fn get(&self, i: usize) -> u32 {
        if i >= self.len {
            return 0;
        }
        self.words
            .get(i / SYMBOLS_PER_WORD)
            .map_or(0, |w| (w >> (2 * (i % SYMBOLS_PER_WORD))) & 3)
    }

    /// The first symbol at or after `from` with an edge, if any.
    fn next_edge(&self, from: usize) -> Option<usize> {
        let mut i = from;
        while i < self.len {
            let w = self.words.get(i / SYMBOLS_PER_WORD).copied().unwrap_or(0) & FLAGS;
            let flags = w >> (2 * (i % SYMBOLS_PER_WORD));
            if flags != 0 {
                let at = i + flags.trailing_zeros() as usize / 2;
                return (at < self.len).then_some(at);
            }
            i = (i / SYMBOLS_PER_WORD + 1) * SYMBOLS_PER_WORD;
        }
        None
    }

    /// Edge symbols in a row from `from`, counted up to `most`.
    fn run_at_most(&self, from: usize, most: usize) -> usize {
        let mut n = 0;
        while n < most && self.get(from + n) & 1 == 1 {
            n += 1;
        }
        n
    }
}

/// The CPU's part of a resynchronising sampler's RX: symbols to bytes (see the module
/// documentation). Keeps no per-frame state between calls but the polarity of the last frame.
#[derive(Clone, Debug, Default)]
pub struct SymbolDecoder {
    inverted: bool,
}

impl SymbolDecoder {
    /// A decoder.
    pub fn new() -> SymbolDecoder {
        SymbolDecoder { inverted: false }
    }

    /// True if the last frame arrived with swapped polarity (the SFD ended in `00`).
    pub fn inverted(&self) -> bool {
        self.inverted
    }

    /// Decodes the symbols of `capture` (its length in bits, two per symbol) and writes the
    /// frame bytes after the SFD (destination address through FCS) into `out`. A frame ends
    /// at its first idle symbol; on a byte boundary it is a [`RxOutcome::Frame`], else, or
    /// cut by the capture's or the buffer's end, [`RxOutcome::Truncated`]. Bursts of at most
    /// three edges only are link pulses; anything without a preamble and SFD is noise. Never
    /// panics and never writes past `out`.
    pub fn decode(&mut self, capture: &Capture<'_>, out: &mut [u8]) -> RxOutcome {
        let s = Symbols {
            words: capture.words(),
            len: capture.len() / 2,
        };
        let Some(start) = s.next_edge(0) else {
            return RxOutcome::Noise;
        };
        if s.run_at_most(start, PULSE_SYMBOLS as usize + 1) as u32 <= PULSE_SYMBOLS {
            return classify_short(&s, start);
        }
        let data = match self.hunt_sfd(&s, start) {
            Ok(data) => data,
            Err(outcome) => return outcome,
        };
        let (len, bits, clean) = copy_bytes(&s, data, out);
        if self.inverted {
            for byte in out.iter_mut().take(len) {
                *byte = !*byte;
            }
        }
        if clean && bits.is_multiple_of(8) {
            RxOutcome::Frame { len }
        } else {
            RxOutcome::Truncated { len }
        }
    }

    /// The symbol after the SFD in the burst from `start`: after at least
    /// [`MIN_PREAMBLE_BITS`] alternating bits, the first two equal ones (`11`, or `00` on a
    /// swapped pair: the polarity). The outcome instead if the burst ends first (a
    /// transmission cut in its preamble: nothing to commit) or runs `SFD_HUNT_MAX_BITS`
    /// without one (noise).
    fn hunt_sfd(&mut self, s: &Symbols<'_>, start: usize) -> Result<usize, RxOutcome> {
        let mut previous = s.get(start) >> 1;
        let mut alternating = 1u32;
        for i in start + 1..start + SFD_HUNT_MAX_BITS as usize {
            let symbol = s.get(i);
            if symbol & 1 == 0 {
                return Err(RxOutcome::Truncated { len: 0 });
            }
            let bit = symbol >> 1;
            if bit != previous {
                alternating += 1;
            } else if alternating > MIN_PREAMBLE_BITS {
                self.inverted = bit == 0;
                return Ok(i + 1);
            } else {
                alternating = 1;
            }
            previous = bit;
        }
        Err(RxOutcome::Noise)
    }
}

/// The capture from `start`, whose first burst of edges is at most [`PULSE_SYMBOLS`]
/// long: a link pulse if every burst is as short, else noise.
fn classify_short(s: &Symbols<'_>, start: usize) -> RxOutcome {
    let mut next = Some(start);
    while let Some(at) = next {
        let burst = s.run_at_most(at, PULSE_SYMBOLS as usize + 1);
        if burst as u32 > PULSE_SYMBOLS {
            return RxOutcome::Noise;
        }
        next = s.next_edge(at + burst);
    }
    RxOutcome::LinkPulse
}

/// Writes the bits of the edge symbols from `from` on, up to the first idle symbol, into
/// `out`, LSB first: 16 a word where whole words of them lie. Returns the whole bytes
/// written, the bits there were, and whether all of them were taken and an idle symbol
/// ended them inside the capture (rather than the capture's or the buffer's end).
fn copy_bytes(s: &Symbols<'_>, from: usize, out: &mut [u8]) -> (usize, usize, bool) {
    let mut sink = ByteSink {
        out,
        len: 0,
        acc: 0,
        count: 0,
    };
    let mut i = from;
    // Bit by bit up to a word boundary, then 16 bits a word while every symbol of it saw
    // an edge, then bit by bit to the first idle symbol.
    let mut symbol = s.get(i);
    while symbol & 1 == 1 && !i.is_multiple_of(SYMBOLS_PER_WORD) {
        if !sink.bit(symbol >> 1) {
            return (sink.len, 8 * sink.len + 8, false);
        }
        i += 1;
        symbol = s.get(i);
    }
    if symbol & 1 == 1 {
        let whole = s.len / SYMBOLS_PER_WORD;
        let words = s.words.get(i / SYMBOLS_PER_WORD..whole).unwrap_or_default();
        for &w in words {
            if w & FLAGS != FLAGS || !sink.bits16(word_bits(w)) {
                break;
            }
            i += SYMBOLS_PER_WORD;
        }
        symbol = s.get(i);
        while symbol & 1 == 1 {
            if !sink.bit(symbol >> 1) {
                return (sink.len, 8 * sink.len + 8, false);
            }
            i += 1;
            symbol = s.get(i);
        }
    }
    let bits = 8 * sink.len + sink.count as usize;
    (sink.len, bits, i < s.len)
}

/// Bits into bytes, LSB first, into a buffer that may fill up.
struct ByteSink<'a> {
    out: &'a mut [u8],
    len: usize,
    acc: u32,
    /// Bits waiting in `acc` (fewer than 8 between calls).
    count: u32,
}

impl ByteSink<'_> {
    /// Appends one bit; false if it completed a byte there was no room for.
    #[inline(always)]
    fn bit(&mut self, bit: u32) -> bool {
        self.acc |= bit << self.count;
        self.count += 1;
        if self.count < 8 {
            return true;
        }
        let Some(slot) = self.out.get_mut(self.len) else {
            return false;
        };
        *slot = self.acc as u8;
        self.len += 1;
        self.acc = 0;
        self.count = 0;
        true
    }

    /// Appends 16 bits (two whole bytes go out); false, appending nothing, if there is no
    /// room for them.
    #[inline(always)]
    fn bits16(&mut self, bits: u32) -> bool {
        let Some(pair) = self.out.get_mut(self.len..self.len + 2) else {
            return false;
        };
        let acc = self.acc | (bits << self.count);
        pair[0] = acc as u8;
        pair[1] = (acc >> 8) as u8;
        self.len += 2;
        self.acc = acc >> 16;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timing_reads_around_three_quarters_of_a_bit() {
        for n in SamplerTiming::MIN_CYCLES_PER_BIT..=SamplerTiming::MAX_CYCLES_PER_BIT {
            let t = SamplerTiming::new(n).unwrap();
            // The read lies delay + 3 .. delay + 5 cycles after the edge.
            let (early, late) = (t.delay as u32 + 3, t.delay as u32 + 5);
            assert!(2 * early > n, "{n}: read before the boundary edge");
            assert!(late < n, "{n}: read after the next mid-bit edge");
            // The next wait starts 2 cycles after the read; the timeout a bit later.
            let timeout = 2 * (t.timeout_polls as u32 + 1);
            assert!(early + 2 + timeout > 2 * n, "{n}: idle within a frame");
        }
        assert_eq!(SamplerTiming::new(11), None);
        assert_eq!(SamplerTiming::new(25), None);
    }

    #[test]
    fn word_bits_takes_the_odd_bits() {
        for v in [0u32, 1, 0x8000, 0xFFFF, 0xA5C3, 0x1234] {
            let mut w = FLAGS;
            for i in 0..16 {
                w |= ((v >> i) & 1) << (2 * i + 1);
            }
            assert_eq!(word_bits(w), v);
        }
    }
}
