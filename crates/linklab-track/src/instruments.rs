//! What measures a suite's `[[device]]` and `[[sim]]` entries. Their options are written in
//! `linklab probe`'s and `linklab bench`'s own words, so whoever turns those words into the
//! commands' options (the `linklab` CLI, with its argument parser) measures them: in its own
//! process, through linklab-measure's functions, handing back the documents.

use linklab_results::probe::ProbeReport;

use crate::suite::{DeviceEntry, SimEntry};

/// Measures the entries a suite gives in another command's words.
pub trait Instruments {
    /// `linklab probe ADDRESS ARGS` of `entry`, with `--repeat REPEAT` when `repeat` is more
    /// than 1: its document. An error when the probe could not run (options it refuses, a
    /// device that answered nothing); a document listing failures is taken as the entry
    /// failed. Its HTML page is written only where ARGS ask (`-o`).
    fn probe(&mut self, entry: &DeviceEntry, repeat: u32) -> anyhow::Result<ProbeReport>;

    /// `linklab bench ARGS` of `entry`: its document, as `linklab bench --json` writes it. An
    /// error when the run failed (options it refuses, a watchdog, a wrong download).
    fn bench(&mut self, entry: &SimEntry) -> anyhow::Result<serde_json::Value>;
}
