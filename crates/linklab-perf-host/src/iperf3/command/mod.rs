//! `linklab iperf`, whole: iperf3 3.12's options checked as iperf3 checks them, one test
//! run as client or server, printed in iperf3's text layout or as its `-J` document. The
//! CLI parses the command line into [`Options`] and calls [`run`].
//!
//! - `options`: the options as plain values;
//! - `run`, `client`, `server`: the roles, from options to a run;
//! - `text`, `text_results`: iperf3's human output; `json` fills its `-J` [`document`];
//! - `summary`: a finished test per stream, as both outputs see it;
//! - `output`: where lines go (`--logfile`, `-T`, `--timestamps`, `--forceflush`);
//! - `units`: iperf3's number formats;
//! - `pidfile`, `version`: `-I`, and who this program says it is.

mod client;
pub mod document;
mod json;
mod options;
mod output;
mod pidfile;
mod run;
mod server;
mod summary;
mod text;
mod text_results;
mod units;
mod version;

pub use options::Options;
pub use run::run;
pub use version::VERSION;
