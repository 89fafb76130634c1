//! The receive interrupt of a soft PHY: the seam between this crate and a MAC's RX queue.
//!
//! linklab-phy10 and linklab-mac are siblings (neither depends on the other), so they meet
//! where a board joins them: in its receive interrupt handler (linklab-sim's simulated one
//! calls exactly these functions). The handler owns the MAC's queue producer and an
//! [`RxInterrupt`], and does three things:
//!
//! 1. **Entry** (activity on the line): take the MAC's RX grant *before* anything is known
//!    about what is coming: `let grant = producer.grant().ok();`.
//! 2. **Capture**: the sampler (SPI, I2S, PIO with DMA) records the line from now until it
//!    idles. An interrupt that entered late has lost the samples before its entry; the
//!    decoder then finds the SFD late, or not at all.
//! 3. **Exit**: decode straight into the grant and commit what the PHY says; the MAC checks
//!    the FCS later, on the consumer side (linklab-mac's `RxFormat::Aligned { fcs: true }`,
//!    `MacConfig::decoding_phy`). Nothing is copied after the decoder's own writes.
//!
//! ```text
//! match grant {
//!     // A frame (or one cut short) is committed, FCS included; 0 cancels the grant (a link
//!     // pulse, noise, a preamble with no byte after it).
//!     Some(mut g) => {
//!         let n = rx.receive(&capture, g.buf());
//!         g.commit(n);
//!     }
//!     // The queue had no room: a transmission on the line is lost and counted as such.
//!     None => {
//!         if rx.receive_without_grant(&capture) {
//!             producer.record_missed();
//!         }
//!     }
//! }
//! ```
//!
//! Why a function pair taking `&mut [u8]` and not a trait over the grant: the grant type is
//! linklab-mac's, and neither crate may name the other's types; a pair of plain calls keeps
//! the policy (what is committed, what is cancelled, what is a lost transmission) here, in
//! one place, and leaves the handler three obvious lines.

use crate::capture::Capture;
use crate::decode::{Decoder, RxOutcome};
use crate::oversample::Oversample;
use crate::symbols::SymbolDecoder;

/// What the receive interrupt saw, one bucket per wake-up.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RxCounters {
    /// Frames that ended cleanly, committed.
    pub frames: u64,
    /// Frames cut short (the capture started late, ended early or the grant filled up),
    /// committed: the MAC's FCS or length check counts them.
    pub truncated: u64,
    /// Preambles that locked without a whole byte after the SFD (or without an SFD):
    /// transmissions with nothing to commit, grant cancelled.
    pub empty: u64,
    /// Wake-ups by link pulses, grant cancelled.
    pub link_pulses: u64,
    /// Wake-ups by activity that is neither a frame nor link pulses, grant cancelled.
    pub noise: u64,
    /// Transmissions lost because the MAC had no grant to decode into.
    pub missed: u64,
}

/// What the captures hold: line samples, or a resynchronising sampler's symbols.
#[derive(Clone, Debug)]
enum Line {
    Samples(Decoder),
    Symbols(SymbolDecoder),
}

impl Line {
    fn decode(&mut self, capture: &Capture<'_>, out: &mut [u8]) -> RxOutcome {
        match self {
            Line::Samples(d) => d.decode(capture, out),
            Line::Symbols(d) => d.decode(capture, out),
        }
    }
}

/// The PHY half of a soft PHY's receive interrupt: the decoder, what it last saw, and its
/// counters.
#[derive(Clone, Debug)]
pub struct RxInterrupt {
    decoder: Line,
    last: RxOutcome,
    counters: RxCounters,
}

impl RxInterrupt {
    /// A receive interrupt for captures of line samples taken at `os`.
    pub fn new(os: Oversample) -> RxInterrupt {
        RxInterrupt {
            decoder: Line::Samples(Decoder::new(os)),
            last: RxOutcome::Noise,
            counters: RxCounters::default(),
        }
    }

    /// A receive interrupt for captures of a resynchronising sampler's symbols
    /// ([`crate::symbols`]; a capture's length counts bits, two per symbol).
    pub fn for_symbols() -> RxInterrupt {
        RxInterrupt {
            decoder: Line::Symbols(SymbolDecoder::new()),
            last: RxOutcome::Noise,
            counters: RxCounters::default(),
        }
    }

    /// Interrupt exit with an open grant: decodes `capture` straight into `grant` (the MAC's
    /// RX grant) and returns how many bytes to commit: the bytes after the SFD, FCS
    /// included, of a frame or of one cut short; 0 (cancel the grant) for a link pulse,
    /// noise, or a preamble with no whole byte after it. Never panics, never writes past
    /// `grant`.
    pub fn receive(&mut self, capture: &Capture<'_>, grant: &mut [u8]) -> usize {
        self.last = self.decoder.decode(capture, grant);
        trace!("phy10: {:?}", self.last);
        match self.last {
            // An SFD followed at once by the end of the transmission: nothing to commit.
            RxOutcome::Frame { len: 0 } | RxOutcome::Truncated { len: 0 } => {
                self.counters.empty += 1;
                0
            }
            RxOutcome::Frame { len } => {
                self.counters.frames += 1;
                len
            }
            RxOutcome::Truncated { len } => {
                self.counters.truncated += 1;
                len
            }
            RxOutcome::LinkPulse => {
                self.counters.link_pulses += 1;
                0
            }
            RxOutcome::Noise => {
                self.counters.noise += 1;
                0
            }
        }
    }

    /// Interrupt exit when the MAC had no room for a grant: looks at `capture` only as far
    /// as needed (the preamble and SFD) and returns true if it held a transmission, which is
    /// then lost (count it with the MAC's `record_missed`); false for a link pulse or noise.
    pub fn receive_without_grant(&mut self, capture: &Capture<'_>) -> bool {
        self.last = self.decoder.decode(capture, &mut []);
        match self.last {
            RxOutcome::Frame { .. } | RxOutcome::Truncated { .. } => {
                self.counters.missed += 1;
                true
            }
            RxOutcome::LinkPulse => {
                self.counters.link_pulses += 1;
                false
            }
            RxOutcome::Noise => {
                self.counters.noise += 1;
                false
            }
        }
    }

    /// The decoder's outcome for the last capture.
    pub fn last_outcome(&self) -> RxOutcome {
        self.last
    }

    /// True if the last frame arrived with swapped polarity.
    pub fn inverted(&self) -> bool {
        match &self.decoder {
            Line::Samples(d) => d.inverted(),
            Line::Symbols(d) => d.inverted(),
        }
    }

    /// The counters since [`RxInterrupt::new`].
    pub fn counters(&self) -> RxCounters {
        self.counters
    }

    /// The oversampling factor the captures must have (None: they hold symbols).
    pub fn oversample(&self) -> Option<Oversample> {
        match &self.decoder {
            Line::Samples(d) => Some(d.oversample()),
            Line::Symbols(_) => None,
        }
    }
}
