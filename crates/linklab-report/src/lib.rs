//! One self-contained HTML page with inline SVG charts from linklab's documents: `probe`,
//! `sweep`, `rtt`, `serial --selftest` and `bench` results (no scripts, styles or fonts
//! fetched from anywhere).
//!
//! The page is written with [maud](https://docs.rs/maud), which escapes every value it is
//! given; the charts are drawn by [`svg`] through the same templates. Each chart is an
//! `<svg data-chart="ID" data-points="N">` whose data elements carry `class="data"`, and the
//! page's script writes into `data-drawn` how many of them the browser drew, so a headless
//! browser can check that every chart shows its data.
//!
//! ```
//! use linklab_report::{page, Document, Input};
//!
//! let text = r#"{"kind": "rtt", "host": "198.18.0.2", "port": 7, "protocol": "udp",
//!                "count": 0, "interval_us": 0, "sizes": []}"#;
//! let document = Document::from_json(text, "rtt.json")?;
//! let html = page(&[Input { name: "rtt.json".into(), document }], 0);
//! assert!(html.contains("Round trips per probe size"));
//! # anyhow::Ok(())
//! ```

mod bench_section;
mod document;
pub mod layout;
mod probe_compare;
mod probe_latency;
mod probe_section;
mod probe_tables;
mod rtt_section;
mod serial_section;
pub mod svg;
mod sweep_section;

use maud::{html, Markup};

use linklab_results::probe::ProbeReport;
use linklab_results::time::utc_time;

pub use document::{Document, Input};

/// The page of `inputs`, in their order (two or more probe runs: side by side first), stamped
/// as generated at `generated_unix_s` (seconds since 1970, UTC).
pub fn page(inputs: &[Input], generated_unix_s: u64) -> String {
    let probes: Vec<(&ProbeReport, &str)> = inputs
        .iter()
        .filter_map(|x| match &x.document {
            Document::Probe(r) => Some((&**r, x.name.as_str())),
            _ => None,
        })
        .collect();
    let body = html! {
        @if probes.len() >= 2 {
            (probe_compare::render(&probes)) "\n"
        }
        @for (i, x) in inputs.iter().enumerate() {
            (section(&x.document, &x.name, i)) "\n"
        }
    };
    let sources: Vec<String> = inputs.iter().map(|x| x.name.clone()).collect();
    layout::frame(body, &sources, &utc_time(generated_unix_s))
}

/// The whole page of one probe run, stamped now (what `linklab probe -o` writes;
/// `linklab report` on its JSON draws the same sections).
pub fn probe_page(r: &ProbeReport, source: &str) -> String {
    let body = html! { (probe_section::render(r, source, 0)) "\n" };
    layout::frame(body, &[source.to_string()], &utc_time(now()))
}

/// One document's sections; `index` keeps its charts' ids apart from the other inputs'.
fn section(document: &Document, name: &str, index: usize) -> Markup {
    match document {
        Document::Probe(r) => probe_section::render(r, name, index),
        Document::Sweep(r) => {
            // Files written before the sweep named limits get their knee recomputed, and say so.
            let mut r = r.clone();
            let note = r.upgrade();
            sweep_section::render(&r, note.as_deref(), name, index)
        }
        Document::Rtt(r) => rtt_section::render(r, name, index),
        Document::Serial(r) => serial_section::render(r, name, index),
        Document::Bench(r) => bench_section::render(r, name, index),
    }
}

/// Seconds since 1970, UTC.
fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
