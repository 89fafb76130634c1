//! `--phy samples`: the sample-level line between the two PHYs, and the PHYs that decode it.
//! The device's is a soft PHY whose receive interrupt decodes straight into its MAC's grant
//! (linklab-phy10's [`RxInterrupt`], the seam a board's firmware would call); the host's is a
//! PC's NIC, decoding into its own buffer.

use linklab_mac::RX_GRANT_LEN;
use linklab_phy10::{Decoder, RxInterrupt};

use crate::sample_wire::{SampleWire, SampleWireConfig, SampleWireError};

/// The line and its two receivers.
pub(super) struct SampleLine {
    /// Encoder, drift, jitter, noise and the receiver's sampler.
    pub(super) wire: SampleWire,
    /// The device's receive interrupt.
    pub(super) device: RxInterrupt,
    /// The host NIC's decoder.
    pub(super) host: Decoder,
    /// The host NIC's receive buffer.
    pub(super) host_buf: Vec<u8>,
}

impl SampleLine {
    /// A line with `cfg`, or the parameter out of range.
    pub(super) fn new(cfg: SampleWireConfig) -> Result<SampleLine, SampleWireError> {
        let wire = SampleWire::new(cfg)?;
        let os = wire.oversample();
        Ok(SampleLine {
            wire,
            device: RxInterrupt::new(os),
            host: Decoder::new(os),
            host_buf: vec![0; RX_GRANT_LEN],
        })
    }

    /// Receiver samples per bit time.
    pub(super) fn samples_per_bit(&self) -> usize {
        self.wire.oversample().samples_per_bit()
    }
}
