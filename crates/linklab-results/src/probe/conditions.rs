//! What a probe run was measured under, in every document: linklab's version, the host's
//! kernel, the link the device is reached through (its MTU, and its speed where the interface
//! says one), which iperf the device serves, the device's own description from `/stats`
//! (board, image, hash, window: what it offers), and probe's options. "A throughput figure
//! without its conditions isn't worth much."

use serde::{Deserialize, Serialize};

/// The conditions of one run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Conditions {
    /// The run's name in side-by-side reports (`--label`, else host and start time).
    pub label: String,
    /// linklab's version.
    pub linklab_version: String,
    /// The host's kernel release (`uname -r`).
    pub kernel: Option<String>,
    /// The interface the route to the device leaves by.
    pub interface: Option<String>,
    /// Its MTU, bytes.
    pub mtu: Option<u32>,
    /// Its speed, Mbit/s, where the interface says one (virtual ones do not).
    pub speed_mbit: Option<u64>,
    /// The iperf the device serves: `iperf3`, `iperf 2.1.9`, `iperf 2 (no version reply)`.
    pub iperf: Option<String>,
    /// The device's own description from `GET /stats`, where it serves one.
    pub device: Option<DeviceStats>,
    /// Why there is no device description (no HTTP, no `/stats`, not JSON).
    pub device_absent: Option<String>,
    /// probe's options as given on the command line.
    pub options: Vec<String>,
    /// Runs of `--repeat` (1 without it).
    #[serde(default = "one")]
    pub runs: u32,
}

fn one() -> u32 {
    1
}

/// What the device's `/stats` says of itself (the members it has; none is made up).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct DeviceStats {
    /// `board`.
    pub board: Option<String>,
    /// `image`.
    pub image: Option<String>,
    /// `hash` (or `image_hash`).
    pub hash: Option<String>,
    /// `tcp_window.bytes`, or `tcp_window` as a number.
    pub tcp_window: Option<u64>,
    /// `uptime_s`.
    pub uptime_s: Option<f64>,
}
