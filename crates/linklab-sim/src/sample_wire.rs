//! The sample-level wire: frames go through the real 10BASE-T line code, sample by sample.
//!
//! [`SampleWire::capture`] Manchester-encodes the on-wire bytes with `linklab_phy10` (the
//! transmitter's sample clock), moves every edge as a real wire and a free-running receiver
//! clock would (frequency offset, random sampling phase, edge jitter), re-samples the line at
//! the receiver's clock from the sample the receiver starts at (a late interrupt has lost the
//! samples before), flips samples at random (noise), and hands out the receiver's capture
//! for a decoder (the simulated device's receive interrupt decodes it straight into its MAC
//! grant). [`SampleWire::transfer`] does the same from the first sample and decodes into the
//! caller's buffer with its own decoder.
//!
//! Impairment model, per frame:
//! - the receiver's first sample falls at a uniformly random phase in [0, 1) sample;
//! - an edge at transmitter sample `p` reaches the receiver at `p * 1e6 / (1e6 + drift_ppm)`
//!   receiver samples (a positive drift is a transmitter clock running fast);
//! - each edge then moves by an independent uniform offset in [-jitter, +jitter] samples
//!   (edges never pass each other);
//! - the receiver's sample `s` shows the level after every edge at time <= `s`;
//! - each sample is then flipped with probability `noise`.

use linklab_phy10::{encode_frame, encode_link_pulse, Capture, Decoder, Oversample};

/// Largest accepted |drift|: 2 % (200x the 802.3 tolerance), the decoder's tracking range.
pub const MAX_DRIFT_PPM: i32 = 20_000;

/// Idle bit times the receiver keeps sampling after the transmission, so it can see the end.
const IDLE_TAIL_BITS: usize = 16;

/// A [`SampleWireConfig`] value out of range (each names the parameter and what it accepts).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SampleWireError {
    /// The oversampling factor is outside 2..=8.
    Oversample(u8),
    /// The drift is outside ±[`MAX_DRIFT_PPM`].
    Drift(i32),
    /// The peak jitter is above the oversampling factor (samples).
    Jitter {
        /// The jitter asked for.
        samples: f64,
        /// The oversampling factor, its upper bound.
        oversample: u8,
    },
    /// The noise probability is outside 0..=1 (or not a number).
    Noise(f64),
}

impl std::fmt::Display for SampleWireError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            SampleWireError::Oversample(n) => write!(
                f,
                "oversample {n} out of range (accepted: {}..={})",
                Oversample::MIN,
                Oversample::MAX
            ),
            SampleWireError::Drift(ppm) => write!(
                f,
                "drift {ppm} ppm out of range (accepted: -{MAX_DRIFT_PPM}..={MAX_DRIFT_PPM})"
            ),
            SampleWireError::Jitter {
                samples,
                oversample,
            } => write!(
                f,
                "jitter {samples} samples out of range (accepted: 0..={oversample}, the oversampling factor)"
            ),
            SampleWireError::Noise(p) => write!(
                f,
                "noise {p} out of range (accepted: 0.0..=1.0, probability per sample)"
            ),
        }
    }
}

impl std::error::Error for SampleWireError {}

/// How the sample-level wire distorts the line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleWireConfig {
    /// Receiver samples per 100 ns bit time, 2..=8 (4 = a 40 MHz sampler). The transmitter
    /// uses the same factor.
    pub oversample: u8,
    /// Transmitter clock offset relative to the receiver, parts per million,
    /// -20_000..=20_000. +5000 means the transmitter runs 0.5 % fast.
    pub drift_ppm: i32,
    /// Peak edge jitter in receiver sample periods, 0..=oversample: every edge moves by a
    /// uniform random amount in [-jitter, +jitter] samples.
    pub jitter_samples: u8,
    /// Probability, per receiver sample, that the sample is flipped (0.0..=1.0).
    pub noise: f64,
}

/// What the receiving PHY reported for one transfer: linklab-phy10's own outcome.
pub use linklab_phy10::RxOutcome as SampleOutcome;

/// Encoder, impaired line and decoder, with scratch buffers reused across transfers.
#[derive(Debug)]
pub struct SampleWire {
    cfg: SampleWireConfig,
    os: Oversample,
    /// The transmitter's factor (the receiver's unless [`SampleWire::with_transmitter`]).
    tx_os: Oversample,
    jitter: f64,
    decoder: Decoder,
    /// Transmitter samples.
    tx: Vec<u32>,
    /// Receiver samples.
    rx: Vec<u32>,
    /// Number of valid samples in `rx`.
    rx_len: usize,
}

impl SampleWire {
    /// A wire with `cfg`, or the parameter out of range.
    pub fn new(cfg: SampleWireConfig) -> Result<SampleWire, SampleWireError> {
        let os =
            Oversample::new(cfg.oversample).ok_or(SampleWireError::Oversample(cfg.oversample))?;
        if !(-MAX_DRIFT_PPM..=MAX_DRIFT_PPM).contains(&cfg.drift_ppm) {
            return Err(SampleWireError::Drift(cfg.drift_ppm));
        }
        if cfg.jitter_samples > cfg.oversample {
            return Err(SampleWireError::Jitter {
                samples: cfg.jitter_samples as f64,
                oversample: cfg.oversample,
            });
        }
        if !(0.0..=1.0).contains(&cfg.noise) {
            return Err(SampleWireError::Noise(cfg.noise));
        }
        Ok(SampleWire {
            cfg,
            os,
            tx_os: os,
            jitter: cfg.jitter_samples as f64,
            decoder: Decoder::new(os),
            tx: Vec::new(),
            rx: Vec::new(),
            rx_len: 0,
        })
    }

    /// The configuration the wire was built with.
    pub fn config(&self) -> SampleWireConfig {
        self.cfg
    }

    /// Sets a fractional peak jitter (samples, 0.0..=oversample) for sweeps finer than the
    /// whole samples `SampleWireConfig::jitter_samples` takes.
    pub fn set_jitter(&mut self, jitter_samples: f64) -> Result<(), SampleWireError> {
        if !(0.0..=self.cfg.oversample as f64).contains(&jitter_samples) {
            return Err(SampleWireError::Jitter {
                samples: jitter_samples,
                oversample: self.cfg.oversample,
            });
        }
        self.jitter = jitter_samples;
        Ok(())
    }

    /// The oversampling factor of the receiver (and of the transmitter, unless
    /// [`SampleWire::with_transmitter`] set another).
    pub fn oversample(&self) -> Oversample {
        self.os
    }

    /// The same wire with the transmitter encoding at `tx` instead of the receiver's factor.
    /// A real 10BASE-T transmitter puts its edges exactly on half-bit boundaries (a 20 MHz
    /// clock): [`Oversample::X2`] models it, and spares an odd receiving factor the half
    /// sample of skew a transmitter at the same factor puts on every mid-bit edge.
    pub fn with_transmitter(mut self, tx: Oversample) -> SampleWire {
        self.tx_os = tx;
        self
    }

    /// Encodes `wire` (preamble, SFD, frame, FCS) to samples, applies drift, jitter and noise
    /// with `rng`, and decodes into `out` (bytes after the SFD).
    pub fn transfer(
        &mut self,
        wire: &[u8],
        rng: &mut dyn rand::RngCore,
        out: &mut [u8],
    ) -> SampleOutcome {
        if !self.encode(wire) {
            return SampleOutcome::Noise;
        }
        self.impair_and_decode(self.tx.len() * 32, rng, out)
    }

    /// Encodes `wire` to samples, applies drift, jitter and noise with `rng`, and returns what
    /// a receiver that starts sampling at its sample `first_sample` records (sample 0 sees
    /// the transmission's first edge, give or take the random sampling phase): the samples
    /// before are lost, as to a receive interrupt that entered late.
    pub fn capture(
        &mut self,
        wire: &[u8],
        first_sample: usize,
        rng: &mut dyn rand::RngCore,
    ) -> Capture<'_> {
        if !self.encode(wire) {
            self.rx_len = 0;
            return Capture::new(&self.rx, 0);
        }
        self.rx_len = self.impair(self.tx.len() * 32, first_sample, rng);
        Capture::new(&self.rx, self.rx_len)
    }

    /// Encodes `wire` into `self.tx`, with one extra word of idle after TP_IDL so that its
    /// falling edge is on the line. False only if the encoder refused (it cannot: the buffer
    /// is sized with `words_for_frame`).
    fn encode(&mut self, wire: &[u8]) -> bool {
        let words = linklab_phy10::words_for_frame(wire.len(), self.tx_os) + 1;
        self.tx.clear();
        self.tx.resize(words, 0);
        encode_frame(wire, self.tx_os, &mut self.tx).is_ok()
    }

    /// Sends one normal link pulse through the same impaired line and decodes it.
    pub fn link_pulse(&mut self, rng: &mut dyn rand::RngCore) -> SampleOutcome {
        if !self.encode_pulse() {
            return SampleOutcome::Noise;
        }
        // The pulse and the idle rest of its word.
        self.impair_and_decode(32, rng, &mut [])
    }

    /// One normal link pulse through the same impaired line: what the receiver records
    /// from the pulse's start (give or take the sampling phase) until the line has idled.
    pub fn pulse_capture(&mut self, rng: &mut dyn rand::RngCore) -> Capture<'_> {
        self.rx_len = if self.encode_pulse() {
            self.impair(32, 0, rng)
        } else {
            0
        };
        Capture::new(&self.rx, self.rx_len)
    }

    /// Encodes one link pulse into `self.tx` (one word). False only if the encoder refused.
    fn encode_pulse(&mut self) -> bool {
        self.tx.clear();
        self.tx.resize(1, 0);
        encode_link_pulse(self.tx_os, &mut self.tx).is_ok()
    }

    /// The receiver's samples of the last transfer and how many there are: what the decoder
    /// saw, for diagnostics and for saving failing cases.
    pub fn last_capture(&self) -> (&[u32], usize) {
        (&self.rx, self.rx_len)
    }

    fn impair_and_decode(
        &mut self,
        tx_samples: usize,
        rng: &mut dyn rand::RngCore,
        out: &mut [u8],
    ) -> SampleOutcome {
        let rx_samples = self.impair(tx_samples, 0, rng);
        self.rx_len = rx_samples;
        let capture = Capture::new(&self.rx, rx_samples);
        self.decoder.decode(&capture, out)
    }

    /// Renders the receiver's samples from `self.tx`, dropping the first `first` of them
    /// (the rest start at sample 0 of `self.rx`); returns how many there are.
    fn impair(&mut self, tx_samples: usize, first: usize, rng: &mut dyn rand::RngCore) -> usize {
        let n = self.os.samples_per_bit();
        // Transmitter samples to receiver samples: the factors' ratio and the clock offset.
        let scale = n as f64 / self.tx_os.samples_per_bit() as f64 * 1e6
            / (1e6 + self.cfg.drift_ppm as f64);
        let phase = unit(rng);
        let all_samples =
            (phase + tx_samples as f64 * scale).ceil() as usize + IDLE_TAIL_BITS * n + 1;
        let rx_samples = all_samples.saturating_sub(first);
        self.rx.clear();
        self.rx.resize(rx_samples.div_ceil(32), 0);

        let tx = Capture::new(&self.tx, tx_samples);
        let mut level = tx.sample(0);
        let mut run_start = 0usize; // first receiver sample of the current level
        let mut last_time = f64::MIN;
        let mut pos = 0usize;
        while let Some(edge) = tx.next_edge(pos) {
            pos = edge;
            let jitter = self.jitter * (2.0 * unit(rng) - 1.0);
            let time = (phase + edge as f64 * scale + jitter).max(last_time);
            last_time = time;
            let first_new = (time.ceil().max(0.0) as usize).clamp(run_start, all_samples);
            if level == 1 {
                set_range(
                    &mut self.rx,
                    run_start.saturating_sub(first),
                    first_new.saturating_sub(first),
                );
            }
            run_start = first_new;
            level ^= 1;
        }
        if level == 1 {
            set_range(&mut self.rx, run_start.saturating_sub(first), rx_samples);
        }
        if self.cfg.noise > 0.0 {
            flip_random(&mut self.rx, rx_samples, self.cfg.noise, rng);
        }
        rx_samples
    }
}

/// A uniform random number in [0, 1).
fn unit(rng: &mut dyn rand::RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Sets samples `start..end` to 1.
fn set_range(words: &mut [u32], start: usize, end: usize) {
    let mut i = start;
    while i < end {
        let shift = i & 31;
        let take = (32 - shift).min(end - i);
        let mask = if take == 32 {
            u32::MAX
        } else {
            ((1u32 << take) - 1) << shift
        };
        if let Some(word) = words.get_mut(i >> 5) {
            *word |= mask;
        }
        i += take;
    }
}

/// Flips each of the first `len` samples with probability `p`, skipping geometrically
/// distributed gaps between flips so the cost follows the number of flips.
fn flip_random(words: &mut [u32], len: usize, p: f64, rng: &mut dyn rand::RngCore) {
    if p >= 1.0 {
        for i in 0..len {
            words[i >> 5] ^= 1 << (i & 31);
        }
        return;
    }
    let log_keep = (1.0 - p).ln();
    let mut i = 0usize;
    loop {
        let u = 1.0 - unit(rng); // (0, 1]
        let gap = (u.ln() / log_keep).floor();
        if !gap.is_finite() || gap >= (len - i) as f64 {
            return;
        }
        i += gap as usize;
        words[i >> 5] ^= 1 << (i & 31);
        i += 1;
        if i >= len {
            return;
        }
    }
}
