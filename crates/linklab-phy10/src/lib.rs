//! linklab-phy10: the software 10BASE-T PHY line code, `no_std` and without `alloc`.
//!
//! - [`encode`]: on-wire bytes -> Manchester samples for a GPIO/PIO/SPI/I2S shifter at 2x..8x
//!   oversampling (fast table paths for 2x = 20 MHz and 4x = 40 MHz), ending with TP_IDL.
//! - [`link_pulse`]: normal link pulses with a timer, fast link pulse bursts (10BASE-T
//!   half/full duplex advertisement).
//! - [`decode`]: oversampled capture -> bytes written straight into the caller's buffer (a MAC
//!   RX grant), with DPLL clock recovery, polarity detection and one [`RxOutcome`] per capture.
//! - [`symbols`]: RX from a resynchronising sampler (a PIO state machine that decodes each bit
//!   on its mid-bit edge): its 2-bit symbols to bytes, the sampler's timing and a model of it.
//! - [`rx_interrupt`]: the seam a board's receive interrupt calls: decode straight into the
//!   MAC's RX grant and say what to commit ([`RxInterrupt`]).
//!
//! Samples are bit-packed LSB first in `u32` words, `1` = line high. Bits are sent LSB first;
//! a `1` bit is low then high (rising mid-bit edge), as in 802.3 clause 14.
//!
//! # Features
#![doc = document_features::document_features!()]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![forbid(unsafe_code)]

// The logging macros (trace!, debug!, ...) for every module below; see linklab-fmt.
#[macro_use]
extern crate linklab_fmt;
linklab_fmt::exclusive_features!();

pub mod capture;
pub mod decode;
pub mod encode;
pub mod link_pulse;
pub mod oversample;
pub mod rx_interrupt;
pub mod symbols;
mod tables;

pub use capture::{Capture, MAX_CAPTURE_SAMPLES};
pub use decode::{Decoder, RxOutcome};
pub use encode::{encode_frame, samples_for_frame, words_for_frame, EncodeError};
pub use link_pulse::{encode_link_pulse, LinkCodeWord, LinkPulseTimer};
pub use oversample::Oversample;
pub use rx_interrupt::{RxCounters, RxInterrupt};
pub use symbols::{SamplerTiming, SymbolDecoder};
