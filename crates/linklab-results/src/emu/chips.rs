//! `linklab emu chips`'s document (`"kind": "emu-chips"`): the soft PHY's costs counted on
//! each ISA, and each chip's prediction at its clocks. Schema:
//! `schema/emu-chips.schema.json`.

use serde::{Deserialize, Serialize};

use super::document::unversioned;
use super::phy10::Phy10Report;

/// The document's kind.
pub const KIND: &str = "emu-chips";
/// The version of the shape written now.
pub const SCHEMA_VERSION: u32 = 1;

/// The counts and the predictions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChipsReport {
    /// [`KIND`].
    #[serde(default = "kind")]
    pub kind: String,
    /// [`SCHEMA_VERSION`] of the writer (0: written before documents carried one).
    #[serde(default = "unversioned")]
    pub schema_version: u32,
    /// Cycles per instruction the predictions assume.
    pub cpi: f64,
    /// The traffic model's constants.
    pub model: Model,
    /// The costs counted on each ISA.
    pub isas: Vec<IsaCosts>,
    /// Each chip at each clock.
    pub predictions: Vec<ChipPrediction>,
}

fn kind() -> String {
    KIND.into()
}

/// The traffic model: 10BASE-T, full-length frames, an ACK every second segment.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Bits per microsecond.
    pub line_mbit: f64,
    /// A frame's bytes the FCS covers.
    pub frame_bytes: f64,
    /// A frame's wire bits.
    pub frame_wire_bits: f64,
    /// One frame slot (the frame and the gap), bits.
    pub slot_bits: f64,
    /// An ACK's wire bits.
    pub ack_wire_bits: f64,
    /// An ACK's bytes the FCS covers.
    pub ack_bytes: f64,
}

/// The soft PHY counted on one ISA.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IsaCosts {
    /// The board counted on.
    pub board: String,
    /// Its ISA.
    pub isa: String,
    /// The decoder at 4x under the goal's conditions, instructions per wire bit.
    pub decode_4x_goal_per_bit: f64,
    /// The encoder at 2x, instructions per wire bit.
    pub encode_2x_per_bit: f64,
    /// The MAC's FCS, instructions per byte.
    pub fcs_per_byte: f64,
    /// With PIO decoding the line: the symbol decoder, instructions per wire bit (a document
    /// from before the PIO cases has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pio_symbols_per_bit: Option<f64>,
    /// With PIO encoding the line: the copy of the wire bytes, instructions per wire bit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pio_tx_copy_per_bit: Option<f64>,
    /// The bench's own document.
    pub bench: Phy10Report,
}

/// The stack's counted main-loop parts a prediction used (a counted profile's `parts`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StackParts {
    /// RX interrupt per received frame.
    pub isr_per_rx_frame: f64,
    /// RX interrupt per received byte.
    pub isr_per_rx_byte: f64,
    /// Interrupt work per transmitted frame.
    pub isr_per_tx_frame: f64,
    /// One pass of the main loop.
    pub main_per_pass: f64,
    /// Main loop per received frame.
    pub main_per_rx_frame: f64,
    /// Main loop per received byte.
    pub main_per_rx_byte: f64,
    /// What a byte copied off its word costs on top.
    pub main_per_misaligned_byte: f64,
    /// Main loop per transmitted frame.
    pub main_per_tx_frame: f64,
    /// Main loop per transmitted byte.
    pub main_per_tx_byte: f64,
    /// The HTTP server's own cost per byte it sends.
    pub http_per_tx_byte: f64,
}

/// One chip at one clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChipPrediction {
    /// The chip and its cores.
    pub chip: String,
    /// The board whose ISA its cores run.
    pub isa_board: String,
    /// The clock, MHz.
    pub mhz: f64,
    /// The stack runs on the other core.
    pub dual_core: bool,
    /// PIO decodes and encodes the line: the PHY's core runs the symbol decoder and copies
    /// wire bytes (written only when true).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pio: bool,
    /// The counted profile whose parts stand for the stack.
    pub stack_profile: String,
    /// Those parts.
    pub stack_parts: StackParts,
    /// Receive, send, full duplex.
    pub directions: Vec<DirectionPrediction>,
}

/// One direction of one chip at one clock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DirectionPrediction {
    /// `receive`, `send` or `full-duplex`.
    pub direction: String,
    /// MIPS the PHY's core needs at line rate.
    pub phy_core_mips: f64,
    /// MIPS the other core needs for the stack.
    pub stack_core_mips: f64,
    /// Share of line rate the busier core sustains.
    pub line_rate_share: f64,
    /// The CPI up to which both cores keep line rate.
    pub break_even_cpi: f64,
    /// The clock at which the busier core keeps line rate, MHz.
    pub mhz_for_line_rate: f64,
}
