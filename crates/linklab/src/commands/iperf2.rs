//! `linklab iperf2`: an iperf 2 server (`-s`, `-s -u`) and client (`-c HOST`) on the host,
//! taking iperf 2's options as a user types them; what it does is
//! `linklab_perf_host::iperf2::command` (stock iperf 2.1.8's output), over the sans-IO core
//! the device serves.
//!
//! - `args`: the options and iperf 2's number suffixes.

mod args;

use super::from_command;
pub use args::Args;

/// Runs `linklab iperf2`.
pub fn run(a: Args) -> anyhow::Result<()> {
    linklab_perf_host::iperf2::command::run(a.into()).map_err(from_command)
}
