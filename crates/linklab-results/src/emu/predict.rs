//! `linklab emu predict`'s document (`"kind": "emu-predict"`): the simulator against the
//! emulated firmware at a fixed instruction rate, run by run and summed up. Schema:
//! `schema/emu-predict.schema.json`.

use serde::{Deserialize, Serialize};

use super::document::{unversioned, Spread};

/// The document's kind.
pub const KIND: &str = "emu-predict";
/// The version of the shape written now.
pub const SCHEMA_VERSION: u32 = 1;

/// The comparison over every run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PredictReport {
    /// [`KIND`].
    #[serde(default = "kind")]
    pub kind: String,
    /// [`SCHEMA_VERSION`] of the writer (0: written before documents carried one).
    #[serde(default = "unversioned")]
    pub schema_version: u32,
    /// The board.
    pub board: String,
    /// The image's name.
    pub image: String,
    /// The simulator profile counted from it.
    pub profile: String,
    /// QEMU's `-icount` options.
    pub icount: String,
    /// The fixed rate, MIPS.
    pub mips: f64,
    /// The host's TCP tail-loss probe (off: read back before the transfers).
    pub host_tail_loss_probe: bool,
    /// Each boot's figures.
    pub runs: Vec<PredictRun>,
    /// Each transfer's figures over the runs.
    pub summary: Vec<Summary>,
}

fn kind() -> String {
    KIND.into()
}

/// One boot: the way to the device, then the three transfers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PredictRun {
    /// The way between host and device (a diagnostic).
    pub latency: Latency,
    /// iperf3 to the device.
    pub receive: TestFigures,
    /// iperf3 -R.
    pub send: TestFigures,
    /// curl of /3MB.txt.
    pub curl: TestFigures,
}

impl PredictRun {
    /// The transfers in order, each with its key (`receive`, `send`, `curl`).
    pub fn tests(&self) -> [(&'static str, &TestFigures); 3] {
        [
            ("receive", &self.receive),
            ("send", &self.send),
            ("curl", &self.curl),
        ]
    }

    /// The progress line of run `run` of `runs`:
    /// `run N/M: receive E -> P kB/s, send ..., curl ...` (with the device's clock against
    /// real time where it ran off it by more than 10 %).
    pub fn progress_line(&self, run: u32, runs: u32) -> String {
        let tests: Vec<String> = self
            .tests()
            .iter()
            .map(|(key, t)| {
                format!(
                    "{key} {} -> {} kB/s{}",
                    number(t.emulated_kb_per_s),
                    number(t.predicted_kb_per_s),
                    clock_note(t.device_seconds_per_real_second)
                )
            })
            .collect();
        format!("run {run}/{runs}: {}", tests.join(", "))
    }
}

/// A figure as JSON writes it (`12.0`, `null` for NaN).
fn number(x: f64) -> String {
    serde_json::to_string(&x).unwrap_or_else(|_| "null".into())
}

/// How far the device's clock may run from real time before a run says so.
pub const CLOCK_SLACK: f64 = 0.1;

/// A note for a transfer whose device clock ran off real time: the simulator's host and
/// device share one clock, and here QEMU's guest and the host did not, so the host's waits
/// (and a soft PHY's line, paced in real time) took a different share of the device's time.
pub fn clock_note(device_s_per_real_s: f64) -> String {
    if (device_s_per_real_s - 1.0).abs() > CLOCK_SLACK {
        format!(" (device clock {device_s_per_real_s:.2}x real time)")
    } else {
        String::new()
    }
}

/// The way between the host and the device, in µs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Stock ping's mean round trip (real time).
    pub ping_rtt_mean_us: f64,
    /// The device's own time per echo.
    pub device_us_per_echo: f64,
    /// What is left one way: the emulator's host.
    pub one_way_us: f64,
}

/// One transfer of one run: emulated and predicted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TestFigures {
    /// Payload bytes the device counted.
    pub emulated_bytes: f64,
    /// Seconds of the device's clock.
    pub emulated_device_seconds: f64,
    /// kB/s in the device's clock.
    #[serde(rename = "emulated_kB_per_s")]
    pub emulated_kb_per_s: f64,
    /// The device's clock against real time over the transfer.
    pub device_seconds_per_real_second: f64,
    /// The device's busy share of its time.
    pub device_busy_share: f64,
    /// Instructions per payload byte the device ran.
    pub instructions_per_byte: f64,
    /// Share of the frame bytes copied off their word.
    pub misaligned_copy_share: f64,
    /// Frames the device received.
    pub frames_received: f64,
    /// Frames it sent.
    pub frames_sent: f64,
    /// Its main-loop (or executor) passes.
    pub passes: f64,
    /// The simulator's kB/s.
    #[serde(rename = "predicted_kB_per_s")]
    pub predicted_kb_per_s: f64,
    /// The simulator's instructions per payload byte.
    pub predicted_instructions_per_byte: f64,
    /// The simulated device's busy share.
    pub predicted_busy_share: f64,
    /// The prediction's error, %.
    pub error_pct: f64,
    /// The `linklab bench` command that predicted it.
    pub bench: String,
    /// What the device moved per second it was busy, kB/s.
    #[serde(rename = "emulated_device_bound_kB_per_s")]
    pub emulated_device_bound_kb_per_s: f64,
    /// The same, simulated.
    #[serde(rename = "predicted_device_bound_kB_per_s")]
    pub predicted_device_bound_kb_per_s: f64,
    /// Seconds of real time (only when the emulator fell behind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub real_seconds: Option<f64>,
    /// kB/s in real time (only when the emulator fell behind).
    #[serde(
        rename = "real_kB_per_s",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub real_kb_per_s: Option<f64>,
    /// The line that says the emulator fell behind real time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind: Option<String>,
}

/// One transfer's figures over every run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The transfer, in words.
    pub test: String,
    /// Emulated kB/s.
    #[serde(rename = "emulated_kB_per_s")]
    pub emulated_kb_per_s: Spread,
    /// Predicted kB/s.
    #[serde(rename = "predicted_kB_per_s")]
    pub predicted_kb_per_s: Spread,
    /// The mean prediction's error, %.
    pub error_of_mean_pct: f64,
    /// Emulated instructions per payload byte.
    pub instructions_per_byte: Spread,
    /// Simulated instructions per payload byte (mean).
    pub predicted_instructions_per_byte: f64,
    /// Its error, %.
    pub instructions_per_byte_error_pct: f64,
    /// The worst run's error, %.
    pub worst_run_error_pct: f64,
    /// The emulated device's busy share.
    pub device_busy_share: Spread,
    /// The simulated device's (mean).
    pub predicted_busy_share: f64,
    /// What the emulated device moved per second it was busy, kB/s.
    #[serde(rename = "emulated_device_bound_kB_per_s")]
    pub emulated_device_bound_kb_per_s: Spread,
    /// The same, simulated (mean).
    #[serde(rename = "predicted_device_bound_kB_per_s")]
    pub predicted_device_bound_kb_per_s: f64,
    /// Its error, %.
    pub device_bound_error_of_mean_pct: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_off_real_time_is_noted() {
        assert_eq!(clock_note(1.05), "");
        assert_eq!(clock_note(0.95), "");
        assert_eq!(clock_note(1.41), " (device clock 1.41x real time)");
        assert_eq!(clock_note(0.48), " (device clock 0.48x real time)");
    }
}
