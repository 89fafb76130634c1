//! Link pulses at the transmitter's 2x (20 MHz): normal link pulses (one 100 ns pulse every
//! 16 ms of silence, 802.3 clause 14) and fast link pulse bursts (clause 28) carrying a base
//! page that advertises 10BASE-T, half and full duplex, with the acknowledge bit set, so an
//! auto-negotiating switch or PC port settles on 10BASE-T without being forced (the projects
//! in the notes, but Pico-RJ45-Sock, send NLPs only: their users force the peer).
//!
//! The policy ([`LinkPulses`]): FLP bursts for [`FLP_PHASE_MS`] after boot or after the link
//! was lost (a partner needs three identical words, then six to eight more after its own
//! acknowledge: ~20 bursts, 320 ms), then NLPs, which is how a 10BASE-T link is kept once
//! negotiated. The RX side never decodes the partner's page: both sides of 10BASE-T need
//! nothing from it (the acknowledge bit is always set), which is the design's limit.

use linklab_phy10::link_pulse::{
    encode_link_pulse, LinkCodeWord, FLP_CLOCK_PERIOD_NS, FLP_CLOCK_PULSES, LINK_PULSE_WIDTH_NS,
    NLP_INTERVAL_NOMINAL_US,
};
use linklab_phy10::Oversample;

/// The transmitter's factor: two samples per bit, 50 ns each.
pub const TX_OVERSAMPLE: Oversample = Oversample::X2;
/// Nanoseconds per transmitter sample.
const SAMPLE_NS: u32 = 50;
/// Samples of one FLP burst: from the first clock pulse to the end of the last.
pub const FLP_BURST_SAMPLES: usize = ((FLP_CLOCK_PULSES - 1) * FLP_CLOCK_PERIOD_NS / SAMPLE_NS
    + LINK_PULSE_WIDTH_NS / SAMPLE_NS) as usize;
/// Words of one FLP burst (1 251: 5 KB).
pub const FLP_BURST_WORDS: usize = FLP_BURST_SAMPLES.div_ceil(32);
/// The acknowledge bit of a base page.
const ACK: u16 = 1 << 14;
/// How long FLP bursts are sent after boot or a lost link, ms.
pub const FLP_PHASE_MS: u64 = 1_000;
/// Silence after which a pulse is due, ms (the nominal 16 ms).
pub const PULSE_INTERVAL_MS: u64 = (NLP_INTERVAL_NOMINAL_US / 1000) as u64;

/// The page this PHY advertises: 10BASE-T, full duplex too, acknowledge set.
pub const fn page(full_duplex: bool) -> LinkCodeWord {
    LinkCodeWord(LinkCodeWord::ten_base_t(full_duplex).0 | ACK)
}

/// Writes one FLP burst carrying `word` as 2x samples into `out` (zeroed first); returns its
/// samples, or None if `out` is shorter than [`FLP_BURST_WORDS`].
pub fn flp_burst(word: LinkCodeWord, out: &mut [u32]) -> Option<usize> {
    let out = out.get_mut(..FLP_BURST_WORDS)?;
    out.fill(0);
    let width = (LINK_PULSE_WIDTH_NS / SAMPLE_NS) as usize;
    for start_ns in word.flp_pulse_offsets_ns() {
        let start = (start_ns / SAMPLE_NS) as usize;
        for s in start..start + width {
            if let Some(w) = out.get_mut(s / 32) {
                *w |= 1 << (s % 32);
            }
        }
    }
    Some(FLP_BURST_SAMPLES)
}

/// Writes one normal link pulse as 2x samples into `out`; returns its samples (None if `out`
/// is empty).
pub fn nlp(out: &mut [u32]) -> Option<usize> {
    let first = out.first_mut()?;
    *first = 0;
    encode_link_pulse(TX_OVERSAMPLE, out).ok()
}

/// What is due on the line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Pulse {
    /// An FLP burst.
    Flp,
    /// A normal link pulse.
    Nlp,
}

/// When to send which pulse.
#[derive(Clone, Copy, Debug)]
pub struct LinkPulses {
    /// Start of the FLP phase, ms.
    flp_since_ms: u64,
    /// Last time the line carried something of ours, ms.
    last_sent_ms: u64,
    /// The link as last seen.
    was_up: bool,
}

impl LinkPulses {
    /// The policy from boot at `now_ms`: FLP bursts first.
    pub const fn new(now_ms: u64) -> Self {
        LinkPulses {
            flp_since_ms: now_ms,
            last_sent_ms: 0,
            was_up: false,
        }
    }

    /// Notes a frame or a pulse sent at `now_ms`.
    pub fn sent(&mut self, now_ms: u64) {
        self.last_sent_ms = now_ms;
    }

    /// What to send at `now_ms`, given whether the receiver sees the partner (`link_up`).
    pub fn due(&mut self, now_ms: u64, link_up: bool) -> Option<Pulse> {
        if self.was_up && !link_up {
            self.flp_since_ms = now_ms;
        }
        self.was_up = link_up;
        if now_ms.saturating_sub(self.last_sent_ms) < PULSE_INTERVAL_MS {
            return None;
        }
        if now_ms.saturating_sub(self.flp_since_ms) < FLP_PHASE_MS {
            Some(Pulse::Flp)
        } else {
            Some(Pulse::Nlp)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pulses(words: &[u32], samples: usize) -> Vec<usize> {
        // Rising edges, in samples.
        (0..samples)
            .filter(|&s| {
                let bit = |i: usize| words[i / 32] >> (i % 32) & 1;
                bit(s) == 1 && (s == 0 || bit(s - 1) == 0)
            })
            .collect()
    }

    #[test]
    fn a_burst_carries_its_page_pulse_by_pulse() {
        let mut out = vec![u32::MAX; FLP_BURST_WORDS];
        let word = page(true);
        let n = flp_burst(word, &mut out).unwrap();
        let starts = pulses(&out, n);
        // 17 clock pulses, one data pulse per set bit of the page.
        assert_eq!(starts.len(), 17 + word.0.count_ones() as usize);
        assert_eq!(starts[0], 0);
        assert_eq!(*starts.last().unwrap(), 16 * 2500);
        // 0x4061: selector 1, 10BASE-T, full duplex, acknowledge.
        assert_eq!(word.0, 0x4061);
        assert!(flp_burst(word, &mut out[..10]).is_none());
        let mut one = [u32::MAX; 1];
        assert_eq!(nlp(&mut one), Some(2));
        assert_eq!(one[0], 0b11);
    }

    #[test]
    fn bursts_first_then_normal_pulses_and_bursts_again_when_the_link_drops() {
        let mut p = LinkPulses::new(0);
        assert_eq!(p.due(16, false), Some(Pulse::Flp));
        p.sent(16);
        assert_eq!(p.due(20, false), None);
        assert_eq!(p.due(1_100, true), Some(Pulse::Nlp));
        p.sent(1_100);
        assert_eq!(p.due(1_200, false), Some(Pulse::Flp));
    }
}
