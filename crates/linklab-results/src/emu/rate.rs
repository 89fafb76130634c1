//! A transfer's rate as the emu documents give it: in the device's clock, and the host's
//! beside it (with the line that says why) only when the emulator fell behind real time.

use serde::{Deserialize, Serialize};

/// One transfer's bytes and rate. The rate's members are named by its unit: `mbps` (and
/// `host_mbps`) for iperf3's transfers, `kB_per_s` (and `host_kB_per_s`) for curl's.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Rate {
    /// Payload bytes, as the device counted them.
    pub bytes: u64,
    /// Seconds of the device's clock, 4 decimals.
    pub device_seconds: f64,
    /// Mbit/s in the device's clock, 2 decimals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mbps: Option<f64>,
    /// kB/s in the device's clock, 1 decimal.
    #[serde(rename = "kB_per_s", default, skip_serializing_if = "Option::is_none")]
    pub kb_per_s: Option<f64>,
    /// Mbit/s in the host's clock (only when the emulator fell behind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_mbps: Option<f64>,
    /// kB/s in the host's clock (only when the emulator fell behind).
    #[serde(
        rename = "host_kB_per_s",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub host_kb_per_s: Option<f64>,
    /// Seconds of real time, 3 decimals (only when the emulator fell behind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_seconds: Option<f64>,
    /// The line that says the emulator fell behind real time, and by how much.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind: Option<String>,
}
