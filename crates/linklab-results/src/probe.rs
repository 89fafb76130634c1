//! The document of `linklab probe` (`"kind": "probe"`): what discovery found, every step,
//! the headline figures with their ranges, the conditions, latency under load, the
//! comparison with a baseline; with the rules that make figures from samples and judge them
//! against a baseline, and the text summary.

pub mod baseline;
mod conditions;
mod document;
mod figure;
pub mod figures;
mod http;
pub mod latency;
mod repeat;
pub mod summary;

pub use conditions::{Conditions, DeviceClock, DeviceStats};
pub use document::{
    Compared, Comparison, ProbeReport, Service, ServiceState, StepRecord, StepState, TcpTest,
    OLDEST_SCHEMA_VERSION, SCHEMA_VERSION,
};
pub use figure::{range_text, Better, Figure, NotMeasured, SpreadKind, Unmeasured};
pub use http::{HttpDownload, HttpSample, PathState};
pub use latency::LatencyUnderLoad;
pub use repeat::{AcrossRuns, Repeat};
pub use summary::conditions_words;
