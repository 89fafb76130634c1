//! The JSON document of one `linklab rtt` run (`"kind": "rtt"`): per probe size, what was
//! sent and answered, the round-trip and inter-arrival distributions.

use serde::{Deserialize, Serialize};

use super::distribution::Distribution;

/// The JSON of one `linklab rtt` run (`"kind": "rtt"`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RttReport {
    /// Always `"rtt"`: tells `linklab report` what this file is.
    pub kind: String,
    /// The echo endpoint as given.
    pub host: String,
    /// Its port.
    pub port: u16,
    /// `"udp"` or `"tcp"`.
    pub protocol: String,
    /// Probes per size.
    pub count: u32,
    /// Send spacing in microseconds (0 = back to back).
    pub interval_us: u64,
    /// One entry per probe size, in the order measured.
    pub sizes: Vec<SizeReport>,
}

/// The results for one probe size.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SizeReport {
    /// Probe size in bytes.
    pub size: usize,
    /// Probes sent.
    pub sent: u64,
    /// Distinct valid replies.
    pub received: u64,
    /// Probes without a reply.
    pub lost: u64,
    /// `lost / sent` in percent.
    pub loss_pct: f64,
    /// Extra copies of replies already received.
    pub duplicates: u64,
    /// Replies with wrong length or altered payload.
    pub corrupt: u64,
    /// Rate the client offered (`size * 8 / interval`), bit/s; `None` when sent back to back.
    pub offered_bps: Option<f64>,
    /// Payload bit rate of the returning stream: `(received - 1) * size * 8` over the time
    /// from the first to the last reply, bit/s.
    pub realized_bps: f64,
    /// Round-trip times.
    pub rtt: Distribution,
    /// Times between successive replies.
    pub interarrival: Distribution,
}
