//! `linklab iperf2`, whole: iperf 2's options as a user types them checked, a server or a
//! client run, printed as stock iperf 2.1.8 prints (text, or CSV with `-y C`). The CLI
//! parses the command line into [`Options`] and calls [`run`].
//!
//! - `options`: the options as plain values;
//! - `run`: from options to a run;
//! - `text`: iperf 2's text and CSV output;
//! - `version`: who this program says it is.

mod options;
mod run;
mod text;
mod version;

pub use options::Options;
pub use run::run;
pub use text::{byte_text, Printer};
pub use version::VERSION;
