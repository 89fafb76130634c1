//! Link integrity: normal link pulses (NLP) with a timer, and fast link pulse (FLP) bursts.
//!
//! 802.3 clause 14: while no frame is sent, a 10BASE-T transmitter emits a single 100 ns
//! positive pulse every 16 ms (8 to 24 ms). An auto-negotiating link partner instead expects
//! FLP bursts: 17 clock pulses 125 us apart with a data pulse 62.5 us after each clock pulse
//! whose bit of the 16-bit link code word is 1 (clause 28).

use crate::encode::EncodeError;
use crate::oversample::Oversample;

/// Width of a link pulse in nanoseconds (one bit time).
pub const LINK_PULSE_WIDTH_NS: u32 = 100;
/// Shortest allowed interval between normal link pulses, microseconds.
pub const NLP_INTERVAL_MIN_US: u32 = 8_000;
/// Nominal interval between normal link pulses, microseconds.
pub const NLP_INTERVAL_NOMINAL_US: u32 = 16_000;
/// Longest allowed interval between normal link pulses, microseconds.
pub const NLP_INTERVAL_MAX_US: u32 = 24_000;
/// Time from a FLP clock pulse to the next data pulse slot, nanoseconds.
pub const FLP_DATA_OFFSET_NS: u32 = 62_500;
/// Time between two FLP clock pulses, nanoseconds.
pub const FLP_CLOCK_PERIOD_NS: u32 = 125_000;
/// Number of clock pulses in one FLP burst.
pub const FLP_CLOCK_PULSES: u32 = 17;

/// Encodes one link pulse (100 ns high, then idle) at the start of `out`; returns the number of
/// pulse samples. The rest of the first word is idle; later words are left untouched.
pub fn encode_link_pulse(os: Oversample, out: &mut [u32]) -> Result<usize, EncodeError> {
    let width = os.samples_for_ns(LINK_PULSE_WIDTH_NS);
    let Some(first) = out.first_mut() else {
        return Err(EncodeError::BufferTooSmall { needed_words: 1 });
    };
    *first = (1u32 << width) - 1;
    Ok(width)
}

/// The interval asked of [`LinkPulseTimer::new`] is outside 8..=24 ms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct IntervalOutOfRange {
    /// The rejected interval, microseconds.
    pub interval_us: u32,
}

/// Decides when the next normal link pulse is due, from a free-running microsecond clock.
///
/// The clock is a wrapping `u32` of microseconds (it wraps every 71 minutes; intervals are
/// computed with wrapping subtraction). Any transmitted frame also proves link integrity, so
/// [`LinkPulseTimer::note_transmission`] restarts the interval. Call [`LinkPulseTimer::poll`] at
/// least every `NLP_INTERVAL_MAX_US - interval` microseconds to stay inside 24 ms.
#[derive(Clone, Copy, Debug)]
pub struct LinkPulseTimer {
    interval_us: u32,
    last_activity_us: u32,
}

impl LinkPulseTimer {
    /// A timer sending a pulse every `interval_us` (8_000..=24_000) after the last activity;
    /// `now_us` counts as the last activity.
    pub fn new(interval_us: u32, now_us: u32) -> Result<LinkPulseTimer, IntervalOutOfRange> {
        if !(NLP_INTERVAL_MIN_US..=NLP_INTERVAL_MAX_US).contains(&interval_us) {
            return Err(IntervalOutOfRange { interval_us });
        }
        Ok(LinkPulseTimer {
            interval_us,
            last_activity_us: now_us,
        })
    }

    /// True when a link pulse must be sent now; the pulse counts as activity.
    pub fn poll(&mut self, now_us: u32) -> bool {
        if now_us.wrapping_sub(self.last_activity_us) >= self.interval_us {
            self.last_activity_us = now_us;
            true
        } else {
            false
        }
    }

    /// Records a frame transmission at `now_us`: the next pulse is due one interval later.
    pub fn note_transmission(&mut self, now_us: u32) {
        self.last_activity_us = now_us;
    }

    /// Microseconds until the next pulse is due (0 if it is due now), for a one-shot timer.
    pub fn due_in_us(&self, now_us: u32) -> u32 {
        self.interval_us
            .saturating_sub(now_us.wrapping_sub(self.last_activity_us))
    }
}

/// A 16-bit auto-negotiation base page (link code word), clause 28.2.1.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LinkCodeWord(pub u16);

impl LinkCodeWord {
    /// Selector field value for IEEE 802.3 (bits 0..=4).
    pub const SELECTOR_802_3: u16 = 0x0001;
    /// Technology ability bit A0: 10BASE-T half duplex.
    pub const TEN_BASE_T: u16 = 1 << 5;
    /// Technology ability bit A1: 10BASE-T full duplex.
    pub const TEN_BASE_T_FULL: u16 = 1 << 6;

    /// The base page advertising 10BASE-T half duplex, plus full duplex if `full_duplex`.
    pub const fn ten_base_t(full_duplex: bool) -> LinkCodeWord {
        let mut word = Self::SELECTOR_802_3 | Self::TEN_BASE_T;
        if full_duplex {
            word |= Self::TEN_BASE_T_FULL;
        }
        LinkCodeWord(word)
    }

    /// Pulse start times of the FLP burst carrying this word, in ns from the first pulse.
    pub fn flp_pulse_offsets_ns(self) -> FlpPulses {
        FlpPulses {
            word: self.0,
            slot: 0,
        }
    }
}

/// Iterator over the pulse times of one FLP burst, in increasing order (see
/// [`LinkCodeWord::flp_pulse_offsets_ns`]). Each pulse is [`LINK_PULSE_WIDTH_NS`] wide.
#[derive(Clone, Debug)]
pub struct FlpPulses {
    word: u16,
    /// Next slot: even slots are clock pulses, odd slot `2k + 1` is data bit `k`.
    slot: u32,
}

impl Iterator for FlpPulses {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        while self.slot < 2 * FLP_CLOCK_PULSES - 1 {
            let slot = self.slot;
            self.slot += 1;
            let clock = slot / 2;
            if slot.is_multiple_of(2) {
                return Some(clock * FLP_CLOCK_PERIOD_NS);
            }
            if (self.word >> clock) & 1 == 1 {
                return Some(clock * FLP_CLOCK_PERIOD_NS + FLP_DATA_OFFSET_NS);
            }
        }
        None
    }
}
