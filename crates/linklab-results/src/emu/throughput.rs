//! `linklab emu throughput`'s document (`"kind": "emu-throughput"`): stock iperf3 both ways
//! and curl, QEMU free-running and at a fixed instruction rate, in the device's clock.
//! Schema: `schema/emu-throughput.schema.json`.

use serde::{Deserialize, Serialize};

use super::document::unversioned;
use super::rate::Rate;

/// The document's kind.
pub const KIND: &str = "emu-throughput";
/// The version of the shape written now.
pub const SCHEMA_VERSION: u32 = 1;

/// An image's throughput, free-running and at a fixed rate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThroughputReport {
    /// [`KIND`].
    #[serde(default = "kind")]
    pub kind: String,
    /// [`SCHEMA_VERSION`] of the writer (0: written before documents carried one).
    #[serde(default = "unversioned")]
    pub schema_version: u32,
    /// The board.
    pub board: String,
    /// Its instruction set.
    pub isa: String,
    /// The image's name.
    pub image: String,
    /// Free-running, then at the fixed rate.
    pub runs: Vec<ThroughputRun>,
}

fn kind() -> String {
    KIND.into()
}

/// One boot's transfers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ThroughputRun {
    /// QEMU's `-icount` options (null: free-running).
    pub icount: Option<String>,
    /// The fixed rate's MIPS (null: free-running).
    pub mips: Option<f64>,
    /// Whose clock the rates are in.
    pub clock: String,
    /// iperf3 to the device.
    pub device_receives: Rate,
    /// iperf3 -R: from the device.
    pub device_sends: Rate,
    /// curl of /1MB.txt (an image with the HTTP server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_1mb: Option<Rate>,
}

impl ThroughputReport {
    /// The lines that say where the emulator fell behind real time: `WHAT at CLOCK: NOTE`
    /// for each transfer that did.
    pub fn behind_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        for run in &self.runs {
            let at = run.icount.as_deref().unwrap_or("free-running");
            for (what, rate) in [
                ("receiving", Some(&run.device_receives)),
                ("sending", Some(&run.device_sends)),
                ("curl", run.http_1mb.as_ref()),
            ] {
                if let Some(note) = rate.and_then(|r| r.behind.as_deref()) {
                    notes.push(format!("{} at {at}: {what}: {note}", self.board));
                }
            }
        }
        notes
    }
}
