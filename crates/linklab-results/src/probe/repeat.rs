//! `--repeat N`: the whole probe run N times; each figure's value in every run, and its spread
//! across them — how much the device (and the host) varied from one run to the next, which one
//! run's own samples cannot tell (flent #198 asks for this as box plots across runs).

use serde::{Deserialize, Serialize};

use super::figure::Better;

/// Every figure across the runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Repeat {
    /// Runs made.
    pub runs: u32,
    /// One entry per figure any run made, in the first run's order then the others'.
    pub figures: Vec<AcrossRuns>,
}

/// One figure across the runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AcrossRuns {
    /// The figure's id.
    pub id: String,
    /// For people.
    pub label: String,
    /// Its unit.
    pub unit: String,
    /// Which way is better.
    pub better: Better,
    /// Its value in each run, in order; none where that run did not make it.
    pub values: Vec<Option<f64>>,
    /// The lowest of the runs' values.
    pub low: f64,
    /// Their median.
    pub median: f64,
    /// The highest.
    pub high: f64,
    /// `(high - low) / median`, percent (none for a median of 0).
    pub spread_pct: Option<f64>,
}
