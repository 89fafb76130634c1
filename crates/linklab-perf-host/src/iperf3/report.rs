//! What a finished host test reports, and the pieces iperf3 prints on the way: the
//! control connection, each data stream, the free-text parameters, each `-i` interval.

use std::net::SocketAddr;

use linklab_perf::iperf::{Interval, PeerSummary, TestReport};

use super::measure::{TcpInterval, TcpStats};
use super::sockets::BufferSizes;

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

impl HostReport {
    /// The congestion control of the senders and of the receivers, ours and the peer's in the
    /// order `we_send` gives (iperf3's `snd_tcp_congestion` and `rcv_tcp_congestion`).
    pub fn congestion_by_role(&self, we_send: bool) -> (Option<String>, Option<String>) {
        let ours = self.congestion_used.clone();
        let theirs = self
            .peer
            .as_ref()
            .and_then(|p| p.congestion_used.as_ref().map(|c| c.to_string()));
        if we_send {
            (ours, theirs)
        } else {
            (theirs, ours)
        }
    }
}
