//! std::net adapter (feature `std`): an iperf3 client ([`run_client`]) and server
//! ([`Server`]) for the host, driving a [`Session`](super::Session) with non-blocking
//! sockets and `ppoll(2)`, with iperf3's socket options.
//!
//! ```text
//! run_client(&ClientConfig) -> Result<TestReport, Error>     one test against any iperf3 -s
//! run_client_observed(&cfg, &mut observer) -> HostReport     the same, with every event
//! Server::listen(&ServerConfig)?.serve_one_observed(..)      iperf3 -s compatible server
//! ```
//!
//! - `client`: [`ClientConfig`], [`run_client`], opening the data streams;
//! - `server`: [`Server`], accepting control and data connections, the shared UDP socket;
//! - `control`: the control connection of either role;
//! - `streams`: the data streams and one turn of the event loop;
//! - `sockets`: sockets with iperf3's options (socket2), listeners;
//! - `measure`: CPU use and TCP_INFO samples;
//! - `sys`: the `unsafe` system calls (ppoll, TCP_INFO, pacing, flow label, affinity).

mod client;
mod control;
mod diskfile;
mod measure;
mod server;
mod sockets;
mod streams;
pub(crate) mod sys;

use std::io;
use std::net::SocketAddr;
use std::string::{String, ToString};
use std::sync::OnceLock;
use std::time::Instant;
use std::vec::Vec;

use super::errors;
use super::json::Params;
use super::report::{Interval, TestReport};
use super::session::{Failure, PeerSummary};
use super::stream::Micros;

pub use client::{run_client, run_client_observed, run_client_with, ClientConfig};
pub use measure::{TcpInterval, TcpStats};
pub use server::{Server, ServerConfig, ServerOutcome, ServerStats};
pub use sockets::{plain_ip, BufferSizes, Family, ListenConfig, StreamOptions};
pub use sys::{set_cpu_affinity, TcpInfo};

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
    /// An iperf 2 client connected to this iperf3 server (its first bytes were an iperf 2
    /// test header or pattern, not a cookie); it is served as iperf 2 on its own thread.
    Iperf2Client(std::net::SocketAddr),
    /// A step iperf3 names failed: its `i_errno` and the OS `errno` (0: none).
    Iperf {
        /// iperf3's `i_errno` (see [`errors::i_errno`]).
        code: i32,
        /// The OS error number behind it, 0 if none.
        errno: i32,
    },
}

/// The system's text for `errno` ("Connection refused"), without Rust's suffix.
fn strerror(errno: i32) -> String {
    let s = io::Error::from_raw_os_error(errno).to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].into(),
        None => s,
    }
}

/// iperf3's text for `i_errno` `code`, with the system's text for `errno` where iperf3
/// adds it.
fn iperf_text(code: i32, errno: i32) -> String {
    let (text, with_errno) = errors::text(code);
    let mut s = if text.is_empty() {
        std::format!("int_errno={code}")
    } else {
        text.into()
    };
    if with_errno {
        s.push_str(": ");
        if errno != 0 {
            s.push_str(&strerror(errno));
        }
    }
    s
}

impl core::fmt::Display for Error {
    /// The text stock iperf3 prints after `iperf3: error - ` for the same failure.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Iperf { code, errno } | Error::Test(Failure::ServerError(code, errno)) => {
                f.write_str(&iperf_text(*code, *errno))
            }
            Error::Test(Failure::AccessDenied) => f.write_str(&iperf_text(121, 0)),
            Error::Test(Failure::ControlClosed) => f.write_str(&iperf_text(109, 0)),
            Error::Test(Failure::PeerTerminated) => f.write_str(&iperf_text(120, 0)),
            Error::Test(Failure::StreamFailed) => f.write_str(&iperf_text(205, 0)),
            Error::Test(Failure::Timeout) => {
                write!(f, "the peer stopped responding (watchdog expired)")
            }
            // iperf3 never sends state 0; an iperf 2.1 server's version reply starts with
            // it (the client's cookie asks for that reply: see `iperf2::detect`).
            Error::Test(Failure::UnexpectedState(0)) => f.write_str(
                "the server answered with iperf 2's version reply: it speaks iperf 2, not \
                 iperf3 (use `linklab iperf2 -c`)",
            ),
            Error::Iperf2Client(peer) => write!(
                f,
                "{} port {} is an iperf 2 client (its first bytes are an iperf 2 header, not an \
                 iperf3 cookie): serving it as iperf 2 (`linklab iperf2 -s` serves iperf 2)",
                plain_ip(peer),
                peer.port()
            ),
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

/// One data stream as iperf3 shows it: `[  5] local A port P connected to B port Q`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamInfo {
    /// The session's stream id (1, 3, 4, ...).
    pub id: u32,
    /// The socket's file descriptor: the number iperf3 prints in `[ ID]`.
    pub socket: i32,
    /// True if this side sends on the stream.
    pub sender: bool,
    /// Our address.
    pub local: SocketAddr,
    /// The peer's address.
    pub peer: SocketAddr,
}

/// The control connection.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControlInfo {
    /// Our address.
    pub local: SocketAddr,
    /// The peer's address.
    pub peer: SocketAddr,
    /// The control connection's TCP MSS (0 if unknown).
    pub mss: u32,
    /// The test's cookie (36 characters).
    pub cookie: String,
}

/// The free-text parameters of a test (`-T`, `--extra-data`, `-C`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TestText {
    /// `-T`.
    pub title: Option<String>,
    /// `--extra-data`.
    pub extra_data: Option<String>,
    /// `-C`.
    pub congestion: Option<String>,
}

impl TestText {
    /// Reads the strings of a parameter document (the session parses the numbers).
    pub fn from_params_json(json: &[u8]) -> Self {
        let v: serde_json::Value = serde_json::from_slice(json).unwrap_or_default();
        let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(String::from);
        Self {
            title: s("title"),
            extra_data: s("extra_data"),
            congestion: s("congestion"),
        }
    }
}

/// A server's output for a client that asked for it (`--get-server-output`).
#[derive(Clone, Debug, PartialEq)]
pub enum ServerOutput {
    /// The lines it printed.
    Text(String),
    /// Its `-J` document.
    Json(serde_json::Value),
}

/// One `-i` interval with the TCP figures of the sending streams.
#[derive(Clone, Debug, PartialEq)]
pub struct HostInterval {
    /// Bytes, packets, loss per stream.
    pub interval: Interval,
    /// Per stream of `interval.streams`: TCP_INFO figures if it is a TCP stream we send on.
    pub tcp: Vec<Option<TcpInterval>>,
}

/// A finished host test: the figures and everything iperf3 prints about it.
#[derive(Clone, Debug, PartialEq)]
pub struct HostReport {
    /// Bytes, rates, loss per direction and stream.
    pub report: TestReport,
    /// The control connection.
    pub control: ControlInfo,
    /// The data streams, in session order.
    pub streams: Vec<StreamInfo>,
    /// Per stream: TCP_INFO over the test (TCP streams we send on).
    pub tcp: Vec<Option<TcpStats>>,
    /// Our CPU use over the test, percent (total, user, system).
    pub cpu: Option<[f64; 3]>,
    /// What the peer's results said about the whole test.
    pub peer: Option<PeerSummary>,
    /// The congestion control our TCP streams used.
    pub congestion_used: Option<String>,
    /// True if our sending TCP streams report retransmits.
    pub sender_has_retransmits: bool,
    /// The socket buffers of the data streams.
    pub buffers: BufferSizes,
    /// Client: the server's output, if asked for and sent.
    pub server_output: Option<ServerOutput>,
}

/// What a host test reports while it runs; the CLI prints it in iperf3's layout. Every
/// method has a default that ignores the event.
pub trait Observer {
    /// Something iperf3 would print as `warning: ...`.
    fn warning(&mut self, _msg: &str) {}
    /// The control connection is up (client) or accepted with its cookie (server).
    fn connected(&mut self, _c: &ControlInfo) {}
    /// Server: the client's parameters, before streams are created.
    fn params(&mut self, _p: &Params, _text: &TestText) {}
    /// A data stream is connected.
    fn stream(&mut self, _s: &StreamInfo) {}
    /// All streams are up; the test clock starts.
    fn started(&mut self, _p: &Params, _buffers: &BufferSizes) {}
    /// A `-i` interval ended.
    fn interval(&mut self, _iv: &HostInterval) {}
    /// Server: the test ended (TEST_END), before the results exchange: our own figures.
    fn finished(&mut self, _r: &HostReport) {}
    /// Server: the client asked for our output; what to send.
    fn server_output(&mut self) -> Option<ServerOutput> {
        None
    }
}

/// An observer that ignores everything.
pub struct Quiet;

impl Observer for Quiet {}
