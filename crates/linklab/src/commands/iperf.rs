//! `linklab iperf`: an iperf3-compatible server (`-s`) and client (`-c HOST`) on the host.
//! It takes every option of iperf3 3.12's `--help`, so `alias iperf3='linklab iperf'` keeps
//! working; what it does is `linklab_perf_host::iperf3::command` (iperf3's layout, its `-J`
//! schema), over the same sans-IO core the device runs.
//!
//! - `args`: the options and their value parsers.

mod args;

use super::from_command;
pub use args::Args;

/// Runs `linklab iperf`.
pub fn run(args: Args) -> anyhow::Result<()> {
    linklab_perf_host::iperf3::command::run(args.into()).map_err(from_command)
}
