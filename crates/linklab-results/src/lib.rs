//! The documents linklab's commands write and read, typed: `linklab probe`'s, `sweep`'s,
//! `rtt`'s, `bench`'s, the serial link's self-test and a `linklab track` run, each a
//! `#[derive(Serialize, Deserialize)]` type with its kind and schema version; the rules that
//! are part of a document's meaning (a sweep's knee, a probe figure's range, a baseline's
//! verdict); and their words for people.
//!
//! No I/O: a document is read from and written to text by its caller. A program that wants a
//! figure of `linklab probe --json probe.json` reads it so:
//!
//! ```
//! use linklab_results::probe::ProbeReport;
//! # let text = include_str!("../tests/data/probe-minimal.json");
//! let report: ProbeReport = serde_json::from_str(text)?;
//! if let Some(tcp) = report.figure("tcp.to_device") {
//!     println!("{} {}", tcp.value, tcp.unit);
//! }
//! # Ok::<(), serde_json::Error>(())
//! ```
//!
//! Where this crate sits among the others: the repository's ARCHITECTURE.md.

pub mod bench;
pub mod emu;
pub mod probe;
pub mod quantity;
pub mod rtt;
pub mod serial;
pub mod sweep;
pub mod time;
pub mod track;
pub mod units;
pub mod usage;
pub mod values;

/// The README's examples, compiled as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;

pub use quantity::Quantity;
pub use usage::Usage;
