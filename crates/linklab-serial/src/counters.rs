//! Link counters and their conservation laws.
//!
//! Names follow Linux netdev where one exists (`rx_crc_errors`, `rx_frame_errors`,
//! `rx_length_errors`, `tx_packets`...); the others are linklab's.
//!
//! # Receive side
//!
//! Every non-empty chunk of bytes between two delimiters ends in exactly one bucket:
//!
//! ```text
//! rx_chunks = rx_data + rx_control + rx_duplicates + rx_window_errors + rx_stale
//!           + rx_frame_errors + rx_length_errors + rx_crc_errors + rx_header_errors
//! ```
//!
//! and every accepted DATA frame ends in exactly one of:
//!
//! ```text
//! rx_data = rx_delivered + rx_echoed + rx_reset_dropped + rx_held
//! ```
//!
//! # Transmit side
//!
//! Every frame put in the transmit store (by the app, or an echo the link answers itself):
//!
//! ```text
//! tx_requests + tx_echoes = tx_acked + tx_aborted + tx_pending
//! ```

/// A snapshot of the link's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Bytes received from the line.
    pub rx_bytes: u64,
    /// Non-empty delimited chunks received.
    pub rx_chunks: u64,
    /// New DATA frames accepted in sequence or held out of order.
    pub rx_data: u64,
    /// Good SYN, SYN-ACK and ACK frames.
    pub rx_control: u64,
    /// DATA frames received again (already held or delivered); the sender missed our ACK.
    pub rx_duplicates: u64,
    /// DATA frames beyond the credits we granted (a misbehaving sender).
    pub rx_window_errors: u64,
    /// Good frames of another session (an earlier incarnation of either end, or before the
    /// handshake).
    pub rx_stale: u64,
    /// Chunks that are not valid COBS.
    pub rx_frame_errors: u64,
    /// Chunks too long for a frame, or decoded frames too short or too long.
    pub rx_length_errors: u64,
    /// Frames whose CRC-32 does not match.
    pub rx_crc_errors: u64,
    /// Frames with a good CRC but an invalid header.
    pub rx_header_errors: u64,
    /// DATA frames handed to the application.
    pub rx_delivered: u64,
    /// Payload bytes handed to the application.
    pub rx_delivered_bytes: u64,
    /// Self-test frames the link sent back itself.
    pub rx_echoed: u64,
    /// Accepted frames discarded because the peer restarted (a new session began).
    pub rx_reset_dropped: u64,
    /// Accepted frames held now: in order but not yet taken, or out of order.
    pub rx_held: u64,
    /// Frames the application queued for sending.
    pub tx_requests: u64,
    /// Echoes of self-test frames queued by the link.
    pub tx_echoes: u64,
    /// Queued frames the peer acknowledged.
    pub tx_acked: u64,
    /// Payload bytes of acknowledged frames.
    pub tx_acked_bytes: u64,
    /// Queued frames dropped because the peer restarted before acknowledging them.
    pub tx_aborted: u64,
    /// Queued frames not yet acknowledged (unsent or in flight).
    pub tx_pending: u64,
    /// Frames the smoltcp device built when no transmit slot was free (a reply to a received
    /// frame taken while both stores were full); never entered the store, so outside the law.
    pub tx_dropped: u64,
    /// DATA transmissions, first and repeated.
    pub tx_packets: u64,
    /// DATA transmissions that repeated an earlier one.
    pub tx_retransmissions: u64,
    /// Retransmissions because a later frame arrived first (the line is a FIFO: the earlier
    /// one was lost).
    pub tx_fast_retransmissions: u64,
    /// Retransmission timer expiries.
    pub tx_timeouts: u64,
    /// SYN, SYN-ACK and ACK frames sent.
    pub tx_control: u64,
    /// Bytes handed to the line (delimiters and COBS included).
    pub tx_bytes: u64,
    /// Zero-window probes sent (ACK with POLL while the peer granted no credits).
    pub tx_window_probes: u64,
    /// Sessions begun with a peer after the first (the peer restarted).
    pub resets: u64,
}

/// A conservation law that does not hold: its name and both sides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConservationError {
    /// Which law.
    pub law: &'static str,
    /// The left-hand side.
    pub total: u64,
    /// The sum of its buckets.
    pub accounted: u64,
}

impl core::fmt::Display for ConservationError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{}: {} != accounted {}",
            self.law, self.total, self.accounted
        )
    }
}

impl Counters {
    /// Checks the three laws of the module documentation.
    pub fn check_conservation(&self) -> Result<(), ConservationError> {
        let laws = [
            (
                "rx_chunks",
                self.rx_chunks,
                self.rx_data
                    + self.rx_control
                    + self.rx_duplicates
                    + self.rx_window_errors
                    + self.rx_stale
                    + self.rx_frame_errors
                    + self.rx_length_errors
                    + self.rx_crc_errors
                    + self.rx_header_errors,
            ),
            (
                "rx_data",
                self.rx_data,
                self.rx_delivered + self.rx_echoed + self.rx_reset_dropped + self.rx_held,
            ),
            (
                "tx_requests + tx_echoes",
                self.tx_requests + self.tx_echoes,
                self.tx_acked + self.tx_aborted + self.tx_pending,
            ),
        ];
        for (law, total, accounted) in laws {
            if total != accounted {
                return Err(ConservationError {
                    law,
                    total,
                    accounted,
                });
            }
        }
        Ok(())
    }

    /// Every counter by name, in a fixed order: one list for JSON and logs.
    pub fn fields(&self) -> [(&'static str, u64); 31] {
        [
            ("rx_bytes", self.rx_bytes),
            ("rx_chunks", self.rx_chunks),
            ("rx_data", self.rx_data),
            ("rx_control", self.rx_control),
            ("rx_duplicates", self.rx_duplicates),
            ("rx_window_errors", self.rx_window_errors),
            ("rx_stale", self.rx_stale),
            ("rx_frame_errors", self.rx_frame_errors),
            ("rx_length_errors", self.rx_length_errors),
            ("rx_crc_errors", self.rx_crc_errors),
            ("rx_header_errors", self.rx_header_errors),
            ("rx_delivered", self.rx_delivered),
            ("rx_delivered_bytes", self.rx_delivered_bytes),
            ("rx_echoed", self.rx_echoed),
            ("rx_reset_dropped", self.rx_reset_dropped),
            ("rx_held", self.rx_held),
            ("tx_requests", self.tx_requests),
            ("tx_echoes", self.tx_echoes),
            ("tx_acked", self.tx_acked),
            ("tx_acked_bytes", self.tx_acked_bytes),
            ("tx_aborted", self.tx_aborted),
            ("tx_pending", self.tx_pending),
            ("tx_dropped", self.tx_dropped),
            ("tx_packets", self.tx_packets),
            ("tx_retransmissions", self.tx_retransmissions),
            ("tx_fast_retransmissions", self.tx_fast_retransmissions),
            ("tx_timeouts", self.tx_timeouts),
            ("tx_control", self.tx_control),
            ("tx_bytes", self.tx_bytes),
            ("tx_window_probes", self.tx_window_probes),
            ("resets", self.resets),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_law_catches_a_frame_counted_twice_or_not_at_all() {
        let mut c = Counters {
            rx_chunks: 5,
            rx_data: 2,
            rx_control: 1,
            rx_crc_errors: 2,
            rx_delivered: 1,
            rx_held: 1,
            tx_requests: 3,
            tx_acked: 2,
            tx_pending: 1,
            ..Default::default()
        };
        assert_eq!(c.check_conservation(), Ok(()));
        c.rx_crc_errors = 3;
        assert_eq!(c.check_conservation().unwrap_err().law, "rx_chunks");
        c.rx_crc_errors = 2;
        c.rx_echoed = 1;
        assert_eq!(c.check_conservation().unwrap_err().law, "rx_data");
        c.rx_echoed = 0;
        c.tx_echoes = 1;
        assert_eq!(
            c.check_conservation().unwrap_err().law,
            "tx_requests + tx_echoes"
        );
    }
}
