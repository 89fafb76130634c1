//! The `-J` document in iperf3 3.12's schema ([`Document`]): `start` (connected streams,
//! version, system, timestamp, cookie, MSS, buffers, `test_start`), `intervals` (per stream
//! and `sum`), `end` (per stream `sender`/`receiver` or `udp`, `sum_sent`/`sum_received`,
//! `sum` for UDP, the `_bidir_reverse` sums, `cpu_utilization_percent` measured, congestion
//! control), and `title`, `extra_data`, `server_output_json`/`_text`, `error` when there are
//! any. The types write their keys in iperf3's order (an absent figure is left out, as
//! iperf3 leaves it out); the `-J` view fills one document from a test's events.

use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};

#[cfg(doc)]
use super::version::VERSION;

/// One test's `-J` document.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Document {
    /// What was set up: connections, version, system, parameters.
    pub start: Start,
    /// One entry per `-i` interval.
    pub intervals: Vec<IntervalEntry>,
    /// The test's totals (empty until the test ended).
    pub end: End,
    /// `-T`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// `--extra-data`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extra_data: Option<String>,
    /// Client with `--get-server-output`: the server's own `-J` document.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_output_json: Option<serde_json::Value>,
    /// Client with `--get-server-output`: the server's text output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_output_text: Option<String>,
    /// The error the run ended with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `start`: what was set up, in the order iperf3 writes it.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Start {
    /// The data streams.
    pub connected: Vec<Connected>,
    /// Who wrote the document ([`VERSION`]).
    pub version: String,
    /// The system line (`uname -a`).
    pub system_info: String,
    /// When the test started.
    pub timestamp: Timestamp,
    /// Client: the server it connects to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connecting_to: Option<HostPort>,
    /// Server: the client's control connection.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accepted_connection: Option<HostPort>,
    /// The test's cookie.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cookie: Option<String>,
    /// TCP: the MSS asked for (`-M`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_mss: Option<u32>,
    /// TCP: the control connection's MSS, when none was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tcp_mss_default: Option<u32>,
    /// `-b`, bit/s (0: unlimited).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_bitrate: Option<u64>,
    /// Client: the socket buffer asked for (`-w`, 0: the system's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sock_bufsize: Option<u32>,
    /// Client: the send buffer the kernel gave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sndbuf_actual: Option<u32>,
    /// Client: the receive buffer the kernel gave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rcvbuf_actual: Option<u32>,
    /// The test's parameters, once its streams are up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_start: Option<TestStart>,
}

/// One connected data stream.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Connected {
    /// The socket number iperf3 prints.
    pub socket: i32,
    /// Our address.
    pub local_host: String,
    /// Our port.
    pub local_port: u16,
    /// The peer's address.
    pub remote_host: String,
    /// The peer's port.
    pub remote_port: u16,
}

/// A host and a port.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HostPort {
    /// The host, as given or as an address.
    pub host: String,
    /// The port.
    pub port: u16,
}

/// A moment: RFC 1123 text and seconds since the epoch.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timestamp {
    /// "Tue, 02 Dec 2025 10:11:12 GMT".
    pub time: String,
    /// Seconds since the epoch.
    pub timesecs: i64,
}

/// `test_start`: the test's parameters.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TestStart {
    /// "TCP" or "UDP".
    pub protocol: String,
    /// `-P`.
    pub num_streams: u8,
    /// `-l`.
    pub blksize: u32,
    /// `-O`, seconds.
    pub omit: u32,
    /// `-t`, seconds.
    pub duration: u32,
    /// `-n`.
    pub bytes: u64,
    /// `-k`.
    pub blocks: u64,
    /// `-R`: 1, else 0.
    pub reverse: u8,
    /// `-S`.
    pub tos: u8,
    /// `-b`, bit/s.
    pub target_bitrate: u64,
}

/// One `-i` interval: each stream, then the sums (`sum`, and `sum_bidir_reverse` with
/// `--bidir`, in the order the test's role writes them).
#[derive(Clone, Debug, Default)]
pub struct IntervalEntry {
    /// Per stream.
    pub streams: Vec<IntervalFigures>,
    /// The sums, by key.
    pub sums: Vec<(String, IntervalFigures)>,
}

impl Serialize for IntervalEntry {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(1 + self.sums.len()))?;
        map.serialize_entry("streams", &self.streams)?;
        for (key, sum) in &self.sums {
            map.serialize_entry(key, sum)?;
        }
        map.end()
    }
}

/// One interval's figures, of a stream (with its `socket`) or a sum: UDP receivers have
/// jitter and loss, UDP senders packets, TCP senders the `TCP_INFO` sample (a sum, the
/// retransmits alone).
#[derive(Clone, Debug, Default, Serialize)]
pub struct IntervalFigures {
    /// The stream's socket (none in a sum).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub socket: Option<i32>,
    /// Seconds since the test started.
    pub start: f64,
    /// Seconds since the test started.
    pub end: f64,
    /// `end - start`.
    pub seconds: f64,
    /// Bytes moved.
    pub bytes: u64,
    /// Their rate.
    pub bits_per_second: f64,
    /// UDP receiver: jitter, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    /// UDP receiver: datagrams lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    /// UDP: datagrams.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    /// UDP receiver: datagrams lost, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
    /// TCP sender: retransmits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// TCP sender: congestion window, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_cwnd: Option<u64>,
    /// TCP sender: the peer's window, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snd_wnd: Option<u64>,
    /// TCP sender: smoothed RTT, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt: Option<u32>,
    /// TCP sender: RTT variance, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rttvar: Option<u32>,
    /// TCP sender: path MTU.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pmtu: Option<u32>,
    /// In the `-O` period.
    pub omitted: bool,
    /// This side sends.
    pub sender: bool,
}

/// `end`: the test's totals, empty until it ended.
#[derive(Clone, Debug, Default, Serialize)]
pub struct End {
    /// UDP: both ends' figures together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum: Option<UdpSum>,
    /// What the senders sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_sent: Option<EndSum>,
    /// What the receivers received.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_received: Option<EndSum>,
    /// `--bidir`, UDP: the reverse direction's `sum`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_bidir_reverse: Option<UdpSum>,
    /// `--bidir`: the reverse direction's `sum_sent`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_sent_bidir_reverse: Option<EndSum>,
    /// `--bidir`: the reverse direction's `sum_received`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sum_received_bidir_reverse: Option<EndSum>,
    /// Per stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streams: Option<Vec<EndStream>>,
    /// CPU use over the test, ours and (where the peer measured it) the peer's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_utilization_percent: Option<CpuUtilization>,
    /// TCP: the senders' congestion control.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_tcp_congestion: Option<String>,
    /// TCP: the receivers' congestion control.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiver_tcp_congestion: Option<String>,
}

/// `sum_sent` or `sum_received`: one direction's total.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EndSum {
    /// Always 0.
    pub start: u8,
    /// Seconds the test ran.
    pub end: f64,
    /// The same.
    pub seconds: f64,
    /// Bytes.
    pub bytes: u64,
    /// Their rate.
    pub bits_per_second: f64,
    /// Whether this side sends in this direction (UDP: true for `sum_sent`).
    pub sender: bool,
    /// TCP, where the senders report them: retransmits.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// UDP: jitter, ms.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_ms: Option<f64>,
    /// UDP: datagrams lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_packets: Option<u64>,
    /// UDP: datagrams.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub packets: Option<u64>,
    /// UDP: datagrams lost, percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost_percent: Option<f64>,
}

/// UDP `sum`: the senders' bytes with the receivers' rate and loss.
#[derive(Clone, Debug, Default, Serialize)]
pub struct UdpSum {
    /// Always 0.
    pub start: u8,
    /// Seconds the test ran.
    pub end: f64,
    /// The same.
    pub seconds: f64,
    /// Bytes sent.
    pub bytes: u64,
    /// The rate received.
    pub bits_per_second: f64,
    /// Jitter, ms.
    pub jitter_ms: f64,
    /// Datagrams lost.
    pub lost_packets: u64,
    /// Datagrams.
    pub packets: u64,
    /// Datagrams lost, percent.
    pub lost_percent: f64,
    /// Whether this side sends in this direction.
    pub sender: bool,
}

/// One stream's totals: `udp`, or TCP's `sender` and `receiver`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EndStream {
    /// UDP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpStreamEnd>,
    /// TCP: the sending end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<TcpSenderEnd>,
    /// TCP: the receiving end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub receiver: Option<TcpReceiverEnd>,
}

/// A TCP stream's sending end.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TcpSenderEnd {
    /// The socket number iperf3 prints.
    pub socket: i32,
    /// Always 0.
    pub start: u8,
    /// Seconds the sender ran.
    pub end: f64,
    /// The same.
    pub seconds: f64,
    /// Bytes sent.
    pub bytes: u64,
    /// Their rate.
    pub bits_per_second: f64,
    /// Retransmits (where the sender reports them).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// Largest congestion window, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_snd_cwnd: Option<u64>,
    /// Largest peer window, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_snd_wnd: Option<u64>,
    /// Largest RTT, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rtt: Option<u32>,
    /// Smallest RTT, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_rtt: Option<u32>,
    /// Mean RTT, µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_rtt: Option<u64>,
    /// Whether this side sends in the stream's direction.
    pub sender: bool,
}

/// A TCP stream's receiving end.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TcpReceiverEnd {
    /// The socket number iperf3 prints.
    pub socket: i32,
    /// Always 0.
    pub start: u8,
    /// Seconds the receiver ran.
    pub end: f64,
    /// The same.
    pub seconds: f64,
    /// Bytes received.
    pub bytes: u64,
    /// Their rate.
    pub bits_per_second: f64,
    /// Whether this side sends in the stream's direction.
    pub sender: bool,
}

/// A UDP stream's totals.
#[derive(Clone, Debug, Default, Serialize)]
pub struct UdpStreamEnd {
    /// The socket number iperf3 prints.
    pub socket: i32,
    /// Always 0.
    pub start: u8,
    /// Seconds the sender ran.
    pub end: f64,
    /// The same.
    pub seconds: f64,
    /// Bytes this side sent or received.
    pub bytes: u64,
    /// The rate sent.
    pub bits_per_second: f64,
    /// Jitter, ms.
    pub jitter_ms: f64,
    /// Datagrams lost.
    pub lost_packets: u64,
    /// Datagrams.
    pub packets: u64,
    /// Datagrams lost, percent.
    pub lost_percent: f64,
    /// Datagrams out of order.
    pub out_of_order: u64,
    /// Whether this side sends in the stream's direction.
    pub sender: bool,
}

/// `cpu_utilization_percent`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CpuUtilization {
    /// Ours, user and system.
    pub host_total: f64,
    /// Ours, user.
    pub host_user: f64,
    /// Ours, system.
    pub host_system: f64,
    /// The peer's, when it measured it (a device sends null: left out, not a false 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_total: Option<f64>,
    /// The peer's, user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_user: Option<f64>,
    /// The peer's, system.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_system: Option<f64>,
}
