//! What the host adapter reports: connections, intervals, final figures, UDP server
//! reports and warnings, as [`Event`]s for the CLI to print.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};

use linklab_perf::iperf2::request::Protocol;

/// How a flow's lines are marked (stock iperf 2 prints "(reverse)", "(full-duplex)" on the
/// connection line and a `*` before the id of the flow that runs reversed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlowTag {
    /// A plain flow.
    #[default]
    Plain,
    /// `-R`, or a `-r`/`-d` connect-back seen from the server that sends it.
    Reverse,
    /// `--full-duplex`.
    FullDuplex,
}

/// UDP figures of a receiver (or of the server report a client relays).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct UdpFigures {
    /// RFC 1889 jitter, milliseconds.
    pub jitter_ms: f64,
    /// Datagrams lost.
    pub lost: u64,
    /// Datagrams the sender sent, as the receiver counts them (the highest id).
    pub total: u64,
    /// Datagrams out of order.
    pub out_of_order: u64,
}

/// One line of figures: an interval or a flow's whole.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FlowReport {
    /// The transfer id.
    pub id: u32,
    /// Our end of the flow.
    pub local: SocketAddr,
    /// The peer's end.
    pub peer: SocketAddr,
    /// TCP or UDP.
    pub protocol: Protocol,
    /// True if these are bytes this side sent (else received).
    pub sent: bool,
    /// Marks the flow that runs reversed (`*` before its id).
    pub reversed: bool,
    /// Interval start, seconds from the flow's start.
    pub start_s: f64,
    /// Interval end, seconds from the flow's start.
    pub end_s: f64,
    /// Bytes in the interval.
    pub bytes: u64,
    /// UDP receive figures, for a UDP receiver.
    pub udp: Option<UdpFigures>,
    /// The client's `-P` as its header said (1 if none): a server sums that many flows
    /// of one client.
    pub threads: u32,
}

impl FlowReport {
    /// Bits per second over the interval (0 for an empty one).
    pub fn bits_per_second(&self) -> f64 {
        let s = self.end_s - self.start_s;
        if s > 0.0 {
            self.bytes as f64 * 8.0 / s
        } else {
            0.0
        }
    }
}

/// Something the host reports.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A listener is up.
    Listening {
        /// TCP or UDP.
        protocol: Protocol,
        /// Its port.
        port: u16,
    },
    /// The client is about to connect.
    Connecting {
        /// TCP or UDP.
        protocol: Protocol,
        /// The server's address as the user gave it.
        host: String,
        /// Its port.
        port: u16,
        /// UDP: the datagram length.
        datagram_len: usize,
        /// UDP: the target inter-datagram gap, microseconds.
        ipg_us: f64,
    },
    /// A flow started.
    Connected {
        /// The transfer id.
        id: u32,
        /// Our end.
        local: SocketAddr,
        /// The peer's end.
        peer: SocketAddr,
        /// TCP or UDP.
        protocol: Protocol,
        /// How the connection line is marked.
        tag: FlowTag,
        /// True if this side plays the reversed role (`*` before its id).
        reversed: bool,
    },
    /// A `-i` interval of one flow.
    Interval(FlowReport),
    /// A flow's whole.
    Final(FlowReport),
    /// A UDP client's datagram count ("Sent N datagrams").
    Sent {
        /// The transfer id.
        id: u32,
        /// Datagrams sent, the FIN included.
        datagrams: u64,
    },
    /// The server's report relayed to a UDP client.
    ServerReport(FlowReport),
    /// One line to print as it is (warnings, refusals).
    Notice(String),
}

/// The next transfer id (`[  1]`, `[  2]`, ...), shared by every flow of the process as
/// iperf 2 numbers them.
pub(super) fn next_id() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
