//! MAC counters and their conservation law.
//!
//! Names follow Linux netdev (`struct rtnl_link_stats64`) and ethtool (`e1000e`/`igb`
//! statistics) where one exists. Fields without a Linux twin are marked *(linklab)*.
//!
//! # The conservation law (RX)
//!
//! Every transmission the PHY hands over is either committed to the RX queue or, when the
//! queue has no room for a maximum-size grant, reported as missed. Every committed
//! transmission is later dequeued and classified into exactly one outcome:
//!
//! ```text
//! rx_transmissions = rx_packets + rx_pause_frames + rx_filtered
//!                  + rx_frame_errors + rx_crc_errors
//!                  + rx_short_length_errors + rx_long_length_errors
//!                  + rx_missed_errors + rx_pending
//! ```
//!
//! `rx_transmissions` and `rx_missed_errors` are counted by the producer (the PHY's
//! interrupt), the outcomes by the consumer when it classifies a frame, and `rx_pending`
//! is `rx_committed − rx_dequeued` (frames still in the queue), counted at yet another
//! place; a frame counted twice or not at all breaks the equation.
//!
//! Cancelled grants (`rx_cancelled`: link test pulses, noise that never became a frame)
//! are *not* transmissions and stay outside the law.
//!
//! # The conservation law (TX)
//!
//! ```text
//! tx_requests = tx_packets + tx_dropped + tx_deferred
//! ```
//!
//! where `tx_deferred` is 1 while a built frame waits for the inter-packet gap or a PAUSE
//! to end. PAUSE frames the MAC sends by itself are counted in `tx_pause_frames` only.

use crate::atomic::{AtomicU32, Ordering};

/// A snapshot of all MAC counters (see the module documentation for the law).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Counters {
    /// Transmissions handed over by the PHY: committed plus missed *(linklab)*.
    pub rx_transmissions: u64,
    /// Transmissions committed into the RX queue *(linklab)*.
    pub rx_committed: u64,
    /// Committed transmissions taken out of the queue and classified *(linklab)*.
    pub rx_dequeued: u64,
    /// Grants cancelled by the PHY (link pulses, noise); not transmissions *(linklab)*.
    pub rx_cancelled: u64,
    /// Good frames delivered to the stack.
    pub rx_packets: u64,
    /// Bytes of delivered frames, header included, FCS excluded.
    pub rx_bytes: u64,
    /// Good 802.3x MAC Control frames consumed by the MAC (PAUSE).
    pub rx_pause_frames: u64,
    /// Good frames dropped by the destination address filter, or MAC Control frames
    /// with an opcode other than PAUSE *(linklab)*.
    pub rx_filtered: u64,
    /// No start frame delimiter found (frame alignment error).
    pub rx_frame_errors: u64,
    /// FCS mismatch.
    pub rx_crc_errors: u64,
    /// Shorter than 64 bytes with FCS (runts, truncated transmissions).
    pub rx_short_length_errors: u64,
    /// Longer than 1518 bytes with FCS (1522 with an 802.1Q tag).
    pub rx_long_length_errors: u64,
    /// Transmissions lost because the RX queue had no room (receiver overrun).
    pub rx_missed_errors: u64,
    /// Good frames dropped for a wrong IPv4 header, TCP or UDP checksum, with checksum
    /// offload on (`Mac::set_checksum_offload`; else the stack drops them) *(linklab)*.
    pub rx_checksum_errors: u64,
    /// Frames the stack asked to send *(linklab)*.
    pub tx_requests: u64,
    /// Frames handed to the PHY (PAUSE frames not included).
    pub tx_packets: u64,
    /// Bytes of transmitted frames, header included, padding and FCS excluded.
    pub tx_bytes: u64,
    /// Frames that could not be sent (longer than 1518 bytes). A request refused with
    /// `TxError::NotReady` is not counted: the caller still holds the frame.
    pub tx_dropped: u64,
    /// 1 while a built frame waits for the gap or a PAUSE to end *(linklab)*.
    pub tx_deferred: u64,
    /// PAUSE frames sent by the MAC (flow control on RX watermarks).
    pub tx_pause_frames: u64,
}

/// Which side of a conservation law failed, with both sides of the equation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ConservationError {
    /// More frames dequeued than committed.
    RxPendingNegative {
        /// Frames committed by the producer.
        committed: u64,
        /// Frames dequeued by the consumer.
        dequeued: u64,
    },
    /// The RX equation does not hold.
    Rx {
        /// `rx_transmissions`.
        transmissions: u64,
        /// The sum of all outcome buckets plus pending.
        accounted: u64,
    },
    /// The TX equation does not hold.
    Tx {
        /// `tx_requests`.
        requests: u64,
        /// `tx_packets + tx_dropped + tx_deferred`.
        accounted: u64,
    },
}

impl Counters {
    /// `rx_short_length_errors + rx_long_length_errors` (the netdev `rx_length_errors`).
    pub fn rx_length_errors(&self) -> u64 {
        self.rx_short_length_errors + self.rx_long_length_errors
    }

    /// All receive errors (the netdev `rx_errors`).
    pub fn rx_errors(&self) -> u64 {
        self.rx_frame_errors + self.rx_crc_errors + self.rx_length_errors() + self.rx_missed_errors
    }

    /// Committed transmissions still waiting in the RX queue.
    pub fn rx_pending(&self) -> u64 {
        self.rx_committed.saturating_sub(self.rx_dequeued)
    }

    /// Every counter by its netdev/ethtool name (or linklab's, where Linux has none), the
    /// derived sums included, in a fixed order: one list for JSON, logs and `/stats`.
    pub fn fields(&self) -> [(&'static str, u64); 23] {
        [
            ("rx_transmissions", self.rx_transmissions),
            ("rx_committed", self.rx_committed),
            ("rx_dequeued", self.rx_dequeued),
            ("rx_pending", self.rx_pending()),
            ("rx_cancelled", self.rx_cancelled),
            ("rx_packets", self.rx_packets),
            ("rx_bytes", self.rx_bytes),
            ("rx_pause_frames", self.rx_pause_frames),
            ("rx_filtered", self.rx_filtered),
            ("rx_frame_errors", self.rx_frame_errors),
            ("rx_crc_errors", self.rx_crc_errors),
            ("rx_length_errors", self.rx_length_errors()),
            ("rx_short_length_errors", self.rx_short_length_errors),
            ("rx_long_length_errors", self.rx_long_length_errors),
            ("rx_missed_errors", self.rx_missed_errors),
            ("rx_errors", self.rx_errors()),
            ("rx_checksum_errors", self.rx_checksum_errors),
            ("tx_requests", self.tx_requests),
            ("tx_packets", self.tx_packets),
            ("tx_bytes", self.tx_bytes),
            ("tx_dropped", self.tx_dropped),
            ("tx_deferred", self.tx_deferred),
            ("tx_pause_frames", self.tx_pause_frames),
        ]
    }

    /// Checks both conservation laws (module documentation).
    pub fn check_conservation(&self) -> Result<(), ConservationError> {
        if self.rx_dequeued > self.rx_committed {
            return Err(ConservationError::RxPendingNegative {
                committed: self.rx_committed,
                dequeued: self.rx_dequeued,
            });
        }
        let accounted = self.rx_packets
            + self.rx_pause_frames
            + self.rx_filtered
            + self.rx_frame_errors
            + self.rx_crc_errors
            + self.rx_short_length_errors
            + self.rx_long_length_errors
            + self.rx_missed_errors
            + self.rx_checksum_errors
            + self.rx_pending();
        if accounted != self.rx_transmissions {
            return Err(ConservationError::Rx {
                transmissions: self.rx_transmissions,
                accounted,
            });
        }
        let tx = self.tx_packets + self.tx_dropped + self.tx_deferred;
        if tx != self.tx_requests {
            return Err(ConservationError::Tx {
                requests: self.tx_requests,
                accounted: tx,
            });
        }
        Ok(())
    }
}

#[cfg(feature = "std")]
impl core::fmt::Display for Counters {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        writeln!(
            f,
            "rx: transmissions {} packets {} bytes {} pause {} filtered {} pending {} cancelled {}",
            self.rx_transmissions,
            self.rx_packets,
            self.rx_bytes,
            self.rx_pause_frames,
            self.rx_filtered,
            self.rx_pending(),
            self.rx_cancelled
        )?;
        writeln!(
            f,
            "rx errors: frame {} crc {} short {} long {} missed {}",
            self.rx_frame_errors,
            self.rx_crc_errors,
            self.rx_short_length_errors,
            self.rx_long_length_errors,
            self.rx_missed_errors
        )?;
        write!(
            f,
            "tx: requests {} packets {} bytes {} dropped {} deferred {} pause {}",
            self.tx_requests,
            self.tx_packets,
            self.tx_bytes,
            self.tx_dropped,
            self.tx_deferred,
            self.tx_pause_frames
        )
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ConservationError {}

impl core::fmt::Display for ConservationError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ConservationError::RxPendingNegative {
                committed,
                dequeued,
            } => write!(f, "dequeued {dequeued} > committed {committed}"),
            ConservationError::Rx {
                transmissions,
                accounted,
            } => write!(
                f,
                "rx transmissions {transmissions} != accounted {accounted}"
            ),
            ConservationError::Tx {
                requests,
                accounted,
            } => write!(f, "tx requests {requests} != accounted {accounted}"),
        }
    }
}

/// Counters written by the producer (the PHY's interrupt) and read by the consumer.
///
/// 32-bit atomics work on every target with atomics; [`Widen`] extends them to 64 bits on
/// the consumer side.
#[derive(Default)]
pub(crate) struct ProducerCounters {
    pub committed: AtomicU32,
    pub committed_bytes: AtomicU32,
    pub missed: AtomicU32,
    pub cancelled: AtomicU32,
}

impl ProducerCounters {
    pub const fn new() -> Self {
        ProducerCounters {
            committed: AtomicU32::new(0),
            committed_bytes: AtomicU32::new(0),
            missed: AtomicU32::new(0),
            cancelled: AtomicU32::new(0),
        }
    }

    pub fn bump(c: &AtomicU32, by: u32) {
        c.fetch_add(by, Ordering::Release);
    }
}

/// Extends a wrapping 32-bit counter to 64 bits, given it is sampled at least once per
/// 2^32 increments.
#[derive(Default, Clone, Copy, Debug)]
pub(crate) struct Widen {
    last: u32,
    total: u64,
}

impl Widen {
    pub fn sample(&mut self, now: &AtomicU32) -> u64 {
        let v = now.load(Ordering::Acquire);
        self.total += v.wrapping_sub(self.last) as u64;
        self.last = v;
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn law_detects_a_missing_and_a_double_count() {
        let mut c = Counters {
            rx_transmissions: 5,
            rx_committed: 4,
            rx_dequeued: 3,
            rx_packets: 2,
            rx_crc_errors: 1,
            rx_missed_errors: 1,
            ..Default::default()
        };
        assert_eq!(c.check_conservation(), Ok(()));
        c.rx_packets = 3;
        assert!(c.check_conservation().is_err());
        c.rx_packets = 1;
        assert!(c.check_conservation().is_err());
        c.rx_packets = 2;
        c.rx_dequeued = 5;
        assert!(matches!(
            c.check_conservation(),
            Err(ConservationError::RxPendingNegative { .. })
        ));
        c.rx_dequeued = 3;
        c.tx_requests = 1;
        assert!(c.check_conservation().is_err());
        c.tx_deferred = 1;
        assert_eq!(c.check_conservation(), Ok(()));
    }

    #[test]
    fn widen_survives_wrap() {
        let a = AtomicU32::new(u32::MAX - 1);
        let mut w = Widen::default();
        assert_eq!(w.sample(&a), (u32::MAX - 1) as u64);
        a.fetch_add(3, Ordering::Relaxed);
        assert_eq!(w.sample(&a), u32::MAX as u64 + 2);
    }
}
