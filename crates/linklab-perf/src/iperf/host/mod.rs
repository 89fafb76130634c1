//! std::net adapter (feature `std`): an iperf3 client ([`run_client`]) and server
//! ([`Server`]) for the host, driving a [`Session`](super::Session) with non-blocking
//! sockets and `ppoll(2)`.
//!
//! ```text
//! run_client(&ClientConfig) -> Result<TestReport, Error>     one test against any iperf3 -s
//! Server::bind(addr)?.serve(&stop, |outcome| ...)             iperf3 -s compatible server
//! ```
//!
//! - `client`: [`ClientConfig`], [`run_client`], opening the data streams;
//! - `server`: [`Server`], accepting control and data connections, the shared UDP socket;
//! - `control`: the control connection of either role;
//! - `streams`: the data streams and one turn of the event loop;
//! - `sys`: the `unsafe` system calls (ppoll, socket options, TCP_INFO).

mod client;
mod control;
mod server;
mod streams;
mod sys;

use std::io;
use std::string::String;
use std::sync::OnceLock;
use std::time::Instant;

use super::session::Failure;
use super::stream::Micros;

pub use client::{run_client, run_client_with, ClientConfig};
pub use server::{Server, ServerOutcome, ServerStats};

/// Microseconds since the first call in this process (monotonic).
pub fn now_us() -> Micros {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_micros() as Micros
}

/// Why a host test failed.
#[derive(Debug)]
pub enum Error {
    /// A socket call failed.
    Io(io::Error),
    /// The test ended with an iperf3-level failure.
    Test(Failure),
    /// The configuration is not usable (explains which setting).
    Config(String),
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Test(Failure::AccessDenied) => {
                write!(f, "the server is busy running a test; try again later")
            }
            Error::Test(Failure::ServerError(a, b)) => {
                write!(f, "server error (i_errno {a}, errno {b})")
            }
            Error::Test(Failure::ControlClosed) => {
                write!(f, "the control connection closed unexpectedly")
            }
            Error::Test(Failure::Timeout) => {
                write!(f, "the peer stopped responding (watchdog expired)")
            }
            Error::Test(fail) => write!(f, "test failed: {fail:?}"),
            Error::Config(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}
