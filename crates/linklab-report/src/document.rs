//! The documents a page is drawn from, and the one place that tells them apart by their
//! `kind` when they are read from JSON.

use anyhow::{bail, Context};
use serde_json::Value;

use linklab_results::bench::BenchReport;
use linklab_results::probe::ProbeReport;
use linklab_results::rtt::RttReport;
use linklab_results::serial::SerialReport;
use linklab_results::sweep::SweepReport;

use super::bench_section;

/// One of linklab's documents, as a page draws it.
#[derive(Debug, Clone)]
pub enum Document {
    /// `linklab probe --json`: a device's figures, services and steps.
    Probe(Box<ProbeReport>),
    /// `linklab sweep --json`: an offered-rate sweep. One written before the sweep named
    /// limits is drawn with its knee recomputed, and the page says so.
    Sweep(SweepReport),
    /// `linklab rtt --json`: round trips per probe size.
    Rtt(RttReport),
    /// `linklab serial --selftest --json`: a serial link's goodput and round trips.
    Serial(SerialReport),
    /// `linklab bench --json`: the simulated experiment of Niccle's MAC write-up
    /// (`"kind": "bench"`, or an older file with downloads and counters).
    Bench(Box<BenchReport>),
}

impl Document {
    /// Reads a document from its JSON `text` (the file `name`, for the messages): which one
    /// it is by its `kind`. One clear sentence for a text that is not JSON, not one of
    /// linklab's documents, or not what its `kind` says.
    pub fn from_json(text: &str, name: &str) -> anyhow::Result<Document> {
        let v: Value =
            serde_json::from_str(text).with_context(|| format!("{name}: not valid JSON"))?;
        let typed = |what: &str| format!("{name}: malformed {what} result");
        Ok(match v.get("kind").and_then(Value::as_str) {
            Some("sweep") => Document::Sweep(serde_json::from_value(v).with_context(|| typed("sweep"))?),
            Some("serial-selftest") => Document::Serial(
                serde_json::from_value(v).with_context(|| typed("serial self-test"))?,
            ),
            Some("probe") => Document::Probe(serde_json::from_value(v).with_context(|| typed("probe"))?),
            Some("rtt") => Document::Rtt(serde_json::from_value(v).with_context(|| typed("rtt"))?),
            _ if bench_section::is_bench(&v) => Document::Bench(serde_json::from_value(v).with_context(|| typed("bench"))?),
            _ => bail!("{name}: not a linklab probe, sweep, rtt or bench result or serial self-test (no \"kind\" field, no downloads and counters)"),
        })
    }
}

/// A document and the name the page shows it by (its file).
#[derive(Debug, Clone)]
pub struct Input {
    /// Where it came from, for people: a file name.
    pub name: String,
    /// The document.
    pub document: Document,
}
