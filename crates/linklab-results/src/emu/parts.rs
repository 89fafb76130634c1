//! `linklab emu parts`: one row of a counted profile's transfers (the profile's file is
//! linklab-sim's `CountedProfile`, whose `runs` are these rows).

use serde::{Deserialize, Serialize};

/// One transfer's counted totals and how well the solved parts fit them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartsRun {
    /// The transfer, in words.
    pub transfer: String,
    /// The interrupt's work.
    pub isr: f64,
    /// The main loop's work.
    pub main: f64,
    /// The loop's own work outside the stack and the apps.
    pub loop_rest: f64,
    /// Main-loop passes.
    pub passes: f64,
    /// Frames received.
    pub rx_frames: f64,
    /// Frame bytes received.
    pub rx_bytes: f64,
    /// Bytes copied off their word.
    pub misaligned_copy_bytes: f64,
    /// Frames sent.
    pub tx_frames: f64,
    /// Frame bytes sent.
    pub tx_bytes: f64,
    /// The payload iperf3's server received (null: a download, or the device sent).
    pub iperf3_bytes_received: Option<u64>,
    /// The interrupt's fit error, %.
    pub isr_fit_error_pct: f64,
    /// The main loop's fit error, %.
    pub main_fit_error_pct: f64,
}
