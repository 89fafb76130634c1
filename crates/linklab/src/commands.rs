//! One module per command: its clap arguments and the one call into the library that runs it.

pub mod bench;
pub mod emu;
pub mod iperf;
pub mod iperf2;
pub mod probe;
pub mod report;
pub mod rtt;
pub mod serial;
pub mod serve;
pub mod sweep;
pub mod track;

/// A library command's error as the CLI's: a refused command line is a usage error (exit
/// code 2), a failure while running exits 1.
fn from_command(e: linklab_perf_host::CommandError) -> anyhow::Error {
    match e {
        linklab_perf_host::CommandError::Usage(m) => linklab_results::usage::usage(m),
        linklab_perf_host::CommandError::Failed(m) => anyhow::anyhow!(m),
    }
}
