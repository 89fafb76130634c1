//! `linklab emu phy10`'s document (`"kind": "emu-phy10"`): linklab-phy10's decoder counted on
//! a board's ISA, instructions per wire bit per case. Schema: `schema/emu-phy10.schema.json`.

use serde::{Deserialize, Serialize};

use super::document::unversioned;

/// The document's kind.
pub const KIND: &str = "emu-phy10";
/// The version of the shape written now.
pub const SCHEMA_VERSION: u32 = 1;

/// The phy10 bench on one board.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phy10Report {
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
    /// How the instructions were counted.
    pub method: String,
    /// The counter's check: a loop of known length, counted.
    pub calibration: Calibration,
    /// Wire bits of one frame.
    pub wire_bits_per_frame: u64,
    /// Every case.
    pub cases: Vec<Phy10Case>,
    /// The encoder at 2x, instructions per wire bit.
    pub encode_2x_instructions_per_bit: f64,
    /// linklab-mac's FCS, instructions per byte.
    pub mac_fcs_instructions_per_byte: f64,
}

fn kind() -> String {
    KIND.into()
}

impl Phy10Report {
    /// Frames not decoded bit-exact, over every case.
    pub fn frames_not_decoded(&self) -> u64 {
        self.cases.iter().map(|c| c.frames - c.ok).sum()
    }
}

/// The counter's check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Calibration {
    /// The loop's instructions.
    pub loop_instructions: u64,
    /// What the counter counted.
    pub counted: u64,
}

/// One case: frames through a drift and jitter model, decoded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Phy10Case {
    /// The case's name (e.g. `goal-4x+`).
    pub case: String,
    /// Samples per bit.
    pub oversample: u64,
    /// Transmitter clock offset, ppm.
    pub drift_ppm: i64,
    /// Peak edge jitter, samples.
    pub jitter_samples: f64,
    /// Frames sent.
    pub frames: u64,
    /// Frames decoded bit-exact.
    pub ok: u64,
    /// Wire bits of all frames.
    pub bits: u64,
    /// Instructions inside the decoder, all frames.
    pub instructions: u64,
    /// Instructions per wire bit, 2 decimals.
    pub instructions_per_bit: f64,
    /// Fewest instructions one frame took.
    pub min_frame_instructions: u64,
    /// Most instructions one frame took.
    pub max_frame_instructions: u64,
}
