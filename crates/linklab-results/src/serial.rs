//! The JSON of `linklab serial --selftest` (`"kind": "serial-selftest"`), read back by
//! `linklab report`.

use serde::{Deserialize, Serialize};

use crate::rtt::Distribution;

/// One self-test run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SerialReport {
    /// Always `"serial-selftest"`.
    pub kind: String,
    /// The serial port as given.
    pub device: String,
    /// Its baud rate.
    pub baud: u32,
    /// Raw byte rate of the line each way (8N1: baud / 10).
    pub line_bytes_per_s: u64,
    /// The link's window in frames.
    pub window: usize,
    /// Frames sent one at a time per size.
    pub rtt_frames: u32,
    /// Frames streamed per size.
    pub stream_frames: u32,
    /// Results per payload size, in the order measured.
    pub sizes: Vec<SizeResult>,
    /// This end's link counters at the end, by name.
    pub counters: Vec<(String, u64)>,
    /// `"ok"`, or which conservation law failed.
    pub conservation: String,
}

/// The results for one payload size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SizeResult {
    /// Payload bytes per frame.
    pub size: usize,
    /// Self-test frames sent (both phases).
    pub sent: u64,
    /// Echoes received intact.
    pub received: u64,
    /// Echoes never received (after recovery: should be 0).
    pub lost: u64,
    /// Echoes with the wrong length or content.
    pub corrupt: u64,
    /// Echoed payload bytes per second each way, stream phase.
    pub goodput_bytes_per_s: f64,
    /// `goodput / line_bytes_per_s`.
    pub efficiency: f64,
    /// DATA transmissions by this end during the stream phase (requests, first and repeated).
    pub transmissions: u64,
    /// Of which repeated.
    pub retransmissions: u64,
    /// Retransmission timer expiries.
    pub timeouts: u64,
    /// Frames this end received with a bad CRC, COBS or length (the peer's are its own).
    pub rx_errors: u64,
    /// Frames lost on the line before recovery: `retransmissions / transmissions`, percent.
    pub loss_before_recovery_pct: f64,
    /// Round trips, one frame at a time.
    pub rtt: Distribution,
    /// Times between echoes in the stream phase.
    pub interarrival: Distribution,
}
