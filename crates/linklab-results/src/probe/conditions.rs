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
    /// The device's own clock against real time over the run, where probe read one
    /// (`--device-clock`; version 4 on, absent before).
    #[serde(default)]
    pub device_clock: Option<DeviceClock>,
}

/// How fast the device's own clock ran against real time over a probe run: an emulated
/// device (rp2040js runs the W5500-EVB-Pico at some 10 emulated MHz per real second) is far
/// slower than real time, so the document's real-time rates are not the device's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceClock {
    /// Where the device's clock was read (an emulator's status file).
    pub source: String,
    /// Seconds of the device's clock the run took.
    pub device_s: f64,
    /// Seconds of real time it took.
    pub real_s: f64,
    /// `device_s / real_s`.
    pub ratio: f64,
    /// The device's clock ran under [`DeviceClock::SLOWER`] of real time: every time and
    /// rate of the document is in real time; in the device's clock rates are `1 / ratio`
    /// times higher.
    pub slower_than_real_time: bool,
}

impl DeviceClock {
    /// Below this ratio the device's clock counts as slower than real time (a host's and a
    /// device's clocks that both keep time differ by far less).
    pub const SLOWER: f64 = 0.95;

    /// The clock of a run that took `device_s` of the device's and `real_s` of real time,
    /// read from `source`.
    pub fn new(source: &str, device_s: f64, real_s: f64) -> DeviceClock {
        let ratio = if real_s > 0.0 { device_s / real_s } else { 0.0 };
        DeviceClock {
            source: source.into(),
            device_s,
            real_s,
            ratio,
            slower_than_real_time: ratio < Self::SLOWER,
        }
    }

    /// One sentence for people: how the device's clock ran.
    pub fn words(&self) -> String {
        if self.slower_than_real_time {
            format!(
                "the device's clock ran slower than real time: {:.3} s of it in {:.1} s ({:.2}x); times and rates here are real time, in the device's clock rates are {:.1}x these",
                self.device_s,
                self.real_s,
                self.ratio,
                1.0 / self.ratio.max(1e-9)
            )
        } else {
            format!(
                "the device's clock kept real time: {:.1} s of it in {:.1} s",
                self.device_s, self.real_s
            )
        }
    }
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
