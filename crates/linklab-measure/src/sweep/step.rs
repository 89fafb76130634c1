//! One sweep step: a test at a fixed offered rate against an iperf server, condensed into a
//! [`Step`]. What every step shares ([`StepConfig`]), the step as a small trait
//! ([`StepRunner`], run by `iperf3.rs` and `iperf2.rs`), and the refusals of a server that ran
//! the last test a moment ago ([`Busy`], [`NotListening`]).

use std::time::Duration;

use linklab_results::sweep::Step;

/// What every step shares: the server and the test shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepConfig {
    /// iperf server host.
    pub host: String,
    /// iperf server port.
    pub port: u16,
    /// An iperf 2 server (UDP steps judged by its report) instead of iperf3.
    pub iperf2: bool,
    /// TCP instead of UDP.
    pub tcp: bool,
    /// Server sends (iperf3 -R).
    pub reverse: bool,
    /// Test length in seconds.
    pub seconds: u32,
    /// Datagram / write length (`None`: iperf3's default).
    pub length: Option<u32>,
    /// A test fails after this long without any activity (a stalled server).
    pub watchdog: Duration,
}

/// Runs one step: a test at a fixed offered rate, condensed into a [`Step`].
pub trait StepRunner {
    /// One test at `offered` bit/s against the server in `cfg`.
    fn run_step(&self, cfg: &StepConfig, offered: f64) -> anyhow::Result<Step>;
}

/// The server refused the test because it is running another one (iperf3 ACCESS_DENIED).
#[derive(Debug)]
pub struct Busy(pub String);

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Busy {}

/// Nothing listened on the server's port: a stock iperf3 server closes its listener between
/// two tests for a moment, so right after a test of ours this is a server still resetting.
#[derive(Debug)]
pub struct NotListening(pub String);

impl std::fmt::Display for NotListening {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotListening {}

/// True for the refusals a server that ran our last test a moment ago may still give: busy,
/// or not listening yet.
pub fn is_resetting(e: &anyhow::Error) -> bool {
    e.is::<Busy>() || e.is::<NotListening>()
}
