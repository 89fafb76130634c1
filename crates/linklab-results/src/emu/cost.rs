//! `linklab emu cost`'s document (`"kind": "emu-cost"`): what the image costs, counted on
//! its own ISA: instructions per payload byte each way, whole and per layer, flash, RAM and
//! the stack's peak. Schema: `schema/emu-cost.schema.json`.

use serde::{Deserialize, Serialize};

use super::document::unversioned;

/// The document's kind.
pub const KIND: &str = "emu-cost";
/// The version of the shape written now.
pub const SCHEMA_VERSION: u32 = 1;

/// What one image costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostReport {
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
    /// What the firmware's work counters count (`instructions`, or the Cortex-M3's
    /// nanoseconds awake, one instruction each at `-icount shift=0`).
    pub unit: Option<String>,
    /// Instructions per payload byte the device received.
    pub rx_instr_per_byte: f64,
    /// Instructions per payload byte the device sent.
    pub tx_instr_per_byte: f64,
    /// `rx_instr_per_byte` per layer.
    pub rx_layers: Layers,
    /// `tx_instr_per_byte` per layer.
    pub tx_layers: Layers,
    /// Payload bytes the device received (as it counted them).
    pub rx_bytes: u64,
    /// What the client says it wrote of them.
    pub rx_bytes_client_wrote: u64,
    /// Payload bytes the device sent.
    pub tx_bytes: u64,
    /// Frames and passes while receiving.
    pub rx_counts: Counts,
    /// Frames and passes while sending.
    pub tx_counts: Counts,
    /// The work counted while receiving.
    pub rx_work: u64,
    /// The work counted while sending.
    pub tx_work: u64,
    /// What one `/stats` fetch costs (taken off the figures).
    pub stats_fetch_work: u64,
    /// Flash: allocated sections with contents.
    pub flash_bytes: u64,
    /// Static RAM: allocated writable sections.
    pub static_ram_bytes: u64,
    /// The deepest stack the image used.
    pub stack_peak_bytes: u64,
    /// `static_ram_bytes + stack_peak_bytes`.
    pub ram_bytes: u64,
    /// The MAC's conservation law held after the transfers (null: not reported).
    pub conservation_holds: Option<bool>,
    /// Where the work counters were read: `/stats` or `console`.
    pub work_source: String,
    /// The stock tool that moved the bytes: `iperf3` or `iperf2`.
    pub tool: String,
}

fn kind() -> String {
    KIND.into()
}

/// Instructions per payload byte, per layer.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Layers {
    /// The driver's interrupt handler.
    pub driver_isr: f64,
    /// The MAC, smoltcp and the driver's transmit path.
    pub mac_smoltcp_driver_tx: f64,
    /// The apps.
    pub apps: f64,
    /// The rest of the main loop.
    pub main_loop_rest: f64,
}

/// What one transfer took in frames and main-loop passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Frames the MAC received.
    pub frames_received: u64,
    /// Frames it sent.
    pub frames_sent: u64,
    /// Frames it missed.
    pub frames_missed: u64,
    /// Passes of the main loop.
    pub main_loop_passes: u64,
}
