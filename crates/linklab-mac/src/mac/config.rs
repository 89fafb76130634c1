//! A MAC's configuration: what its PHY hands over and expects, its line timing and its
//! optional PAUSE flow control.

#[cfg(doc)]
use super::Mac;
use crate::deframe::RxFormat;
use crate::frame::MacAddr;
use crate::tx::TxFormat;

/// Optional RX flow control: send PAUSE when the RX queue fills (off by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PauseWatermarks {
    /// Send PAUSE(`quanta`) when the queue holds at least this many bytes.
    pub high_bytes: usize,
    /// Send PAUSE(0) (resume) when it has drained to at most this many bytes.
    pub low_bytes: usize,
    /// Pause time requested, in units of 512 bit times; refreshed at half time while the
    /// queue stays above `low_bytes` (with a line rate; at rate 0 the time is unknown and
    /// PAUSE is sent only when the queue crosses `high_bytes`).
    pub quanta: u16,
}

/// Configuration of a [`Mac`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MacConfig {
    /// Our unicast address (filter and PAUSE source).
    pub address: MacAddr,
    /// What the PHY puts into the RX queue.
    pub rx_format: RxFormat,
    /// What the PHY expects on transmit.
    pub tx_format: TxFormat,
    /// Line rate in bit/s for the inter-packet gap and PAUSE timing; 0 = no timing (as is
    /// any rate under a clock that never moves, `Clock::TIMED` false).
    pub line_rate_bps: u64,
    /// Send PAUSE on RX queue watermarks (None = off, the default).
    pub flow_control: Option<PauseWatermarks>,
}

impl MacConfig {
    /// A sampling PHY: raw RX captures, wire-format TX, timing at `line_rate_bps` (feature
    /// `soft-framing`).
    #[cfg(feature = "soft-framing")]
    pub const fn raw_phy(address: MacAddr, line_rate_bps: u64) -> Self {
        MacConfig {
            address,
            rx_format: RxFormat::Raw,
            tx_format: TxFormat::Wire,
            line_rate_bps,
            flow_control: None,
        }
    }

    /// A soft PHY that decodes the line itself (linklab-phy10): its interrupt writes the bytes
    /// after the SFD, FCS included, straight into the grant, and the MAC checks the FCS on
    /// the consumer side; wire-format TX (the PHY encodes what it gets), timing at
    /// `line_rate_bps` (feature `soft-framing`).
    #[cfg(feature = "soft-framing")]
    pub const fn decoding_phy(address: MacAddr, line_rate_bps: u64) -> Self {
        MacConfig {
            address,
            rx_format: RxFormat::Aligned { fcs: true },
            tx_format: TxFormat::Wire,
            line_rate_bps,
            flow_control: None,
        }
    }

    /// An Ethernet controller that hands over aligned frames with their FCS (the MAC checks
    /// it on the consumer side) and transmits plain frames, adding preamble and FCS itself
    /// (e.g. a LAN9118). Line timing is the controller's, so none here.
    pub const fn aligned_fcs(address: MacAddr) -> Self {
        MacConfig {
            address,
            rx_format: RxFormat::Aligned { fcs: true },
            tx_format: TxFormat::Plain,
            line_rate_bps: 0,
            flow_control: None,
        }
    }

    /// A Linux TAP: aligned frames without FCS both ways, no line timing.
    pub const fn tap(address: MacAddr) -> Self {
        MacConfig {
            address,
            rx_format: RxFormat::Aligned { fcs: false },
            tx_format: TxFormat::Plain,
            line_rate_bps: 0,
            flow_control: None,
        }
    }
}
