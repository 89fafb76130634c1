//! How the server listens and what it allows ([`ServerConfig`]), what it counts
//! ([`ServerStats`]) and what a test gives ([`ServerOutcome`]).

use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use linklab_perf::iperf::TestReport;

use super::super::error::Error;
use super::super::sockets::ListenConfig;

/// Counters a [`Server`](crate::iperf3::Server) keeps, shared so a test or a UI can watch it.
#[derive(Debug, Default)]
pub struct ServerStats {
    /// Tests that completed normally.
    pub tests_done: AtomicUsize,
    /// Tests that ended with a failure (peer vanished, bad input, ...).
    pub tests_failed: AtomicUsize,
    /// Connections answered with ACCESS_DENIED (busy, or wrong cookie).
    pub denied: AtomicUsize,
    /// Data streams open right now.
    pub open_streams: AtomicUsize,
    /// Control connections open right now (0 or 1).
    pub open_controls: AtomicUsize,
}

/// The result of one test the server ran.
pub type ServerOutcome = Result<TestReport, Error>;

/// How the server listens and what it allows (iperf3's server options).
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Address, family, device and port.
    pub listen: ListenConfig,
    /// `-i`: the server's reporting interval (iperf3: 1 s), zero for none.
    pub interval: Duration,
    /// Frees the server from a client that went quiet.
    pub watchdog: Duration,
    /// `--rcv-timeout`: a receiving test ends after this long without data (120 s).
    pub rcv_timeout: Duration,
    /// `--snd-timeout`: TCP_USER_TIMEOUT on the control and data connections.
    pub snd_timeout: Option<Duration>,
    /// `--idle-timeout`: give up waiting for a client after this long.
    pub idle_timeout: Option<Duration>,
    /// `--server-bitrate-limit RATE[/SECONDS]`: end a test whose total rate, averaged over
    /// that many seconds (whole intervals), exceeds RATE bit/s.
    pub bitrate_limit: Option<(f64, f64)>,
    /// `-F`: a sending stream sends this file's contents, a receiving one writes what
    /// arrives into it.
    pub file: Option<std::path::PathBuf>,
}

impl ServerConfig {
    /// Listens on `port` on every address, IPv4 and IPv6.
    pub fn new(port: u16) -> Self {
        Self {
            listen: ListenConfig {
                port,
                ..ListenConfig::default()
            },
            interval: Duration::ZERO,
            watchdog: Duration::from_secs(10),
            rcv_timeout: Duration::from_secs(120),
            snd_timeout: None,
            idle_timeout: None,
            bitrate_limit: None,
            file: None,
        }
    }
}
