//! What the soft-PHY board examples (`esp32-c6-soft-phy`, `rp2040-soft-phy`,
//! `rp2350-soft-phy`) share: a chip's peripheral samples the RX line at 4x (40 MHz) into
//! memory and shifts the TX line out at 2x (20 MHz); this crate turns the sample stream into
//! frames in linklab-mac's RX queue and the MAC's frames into samples, and keeps the link.
//!
//! - [`framer`]: cuts the continuous sample stream into one capture per transmission.
//! - [`rx`]: each capture decoded by linklab-phy10 straight into the MAC's RX queue, and the
//!   link monitor (frames or link pulses seen lately) embassy-net's driver reads.
//! - [`link_pulses`]: normal link pulses and fast link pulse bursts advertising 10BASE-T.
//! - [`mac`]: the RX queue, the MAC and its embassy-net driver over a board's transmitter.
//! - [`counters`]: the PHY's and the MAC's counters published for the board's `/stats`.
//! - `rp` (feature `rp`): the RP2040/RP2350 line on PIO and DMA.
//!
//! Nothing here has run on hardware: it builds, and the framer's and link pulses' tests run
//! on the host (`cargo test -p soft-phy-board --target x86_64-unknown-linux-gnu`).
#![cfg_attr(not(test), no_std)]

pub mod counters;
pub mod framer;
pub mod link_pulses;
pub mod mac;
#[cfg(feature = "rp")]
pub mod rp;
pub mod rx;
