//! What a finished test measured, per direction, and the per-interval figures of `-i`.
//! Plain `Copy` data without heap so device and host report the same way.

use super::json::{Params, Protocol};
use super::stream::Stream;
use super::wire::MAX_STREAMS;

/// Figures for one direction of a test (all streams that carry data that way summed).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DirectionReport {
    /// Streams in this direction.
    pub streams: u32,
    /// Bytes the sender sent (omitted period excluded).
    pub bytes_sent: u64,
    /// Bytes the receiver counted.
    pub bytes_received: u64,
    /// Test seconds the rates are computed over (our clock).
    pub seconds: f64,
    /// `bytes_sent * 8 / seconds`.
    pub bits_per_second_sent: f64,
    /// `bytes_received * 8 / seconds`.
    pub bits_per_second_received: f64,
    /// UDP: packets the receiver expected (highest sequence number seen), omitted excluded.
    pub packets: u64,
    /// UDP: packets the sender sent, omitted period excluded (as far as known).
    pub packets_sent: u64,
    /// UDP: packets lost.
    pub lost: u64,
    /// UDP: `100 * lost / packets`.
    pub lost_percent: f64,
    /// UDP: RFC 1889 jitter in milliseconds (mean over streams, as iperf3 prints).
    pub jitter_ms: f64,
    /// UDP: out-of-order packets, if the receiver is this side (iperf3 does not send them).
    pub out_of_order: Option<u64>,
    /// TCP: sender retransmits, if the sender reported them.
    pub retransmits: Option<u64>,
}

impl DirectionReport {
    /// The figures of one stream, combining our counters and the peer's results.
    pub fn from_stream(s: &Stream, protocol: Protocol) -> Self {
        let peer = s.peer;
        let mut d = DirectionReport {
            streams: 1,
            ..Default::default()
        };
        if s.sender {
            d.bytes_sent = s.bytes();
            d.bytes_received = peer.map_or(0, |p| p.bytes);
            d.packets_sent = s.packet_count.saturating_sub(s.omitted_packet_count);
            if let Some(p) = peer {
                d.packets = p.packets.saturating_sub(p.omitted_packets);
                d.lost = p.errors.saturating_sub(p.omitted_errors);
                d.jitter_ms = p.jitter * 1000.0;
            }
            d.retransmits = s.retransmits;
        } else {
            d.bytes_received = s.bytes();
            d.bytes_sent = peer.map_or(0, |p| p.bytes);
            d.packets = s.packet_count.saturating_sub(s.omitted_packet_count);
            // iperf3 subtracts the receiver's omitted count from the sender's too.
            d.packets_sent = peer.map_or(0, |p| p.packets.saturating_sub(s.omitted_packet_count));
            d.lost = s.cnt_error.saturating_sub(s.omitted_cnt_error);
            d.jitter_ms = s.jitter * 1000.0;
            d.out_of_order = Some(s.outoforder.saturating_sub(s.omitted_outoforder));
            d.retransmits = peer.and_then(|p| u64::try_from(p.retransmits).ok());
        }
        if protocol == Protocol::Udp {
            d.retransmits = None;
        }
        if protocol == Protocol::Tcp {
            d.packets = 0;
            d.packets_sent = 0;
            d.lost = 0;
            d.jitter_ms = 0.0;
            d.out_of_order = None;
        }
        d
    }

    /// Adds another stream of the same direction.
    pub fn add(&mut self, o: &DirectionReport) {
        // Peer-reported figures can be anything: saturate instead of overflowing.
        self.streams = self.streams.saturating_add(o.streams);
        self.bytes_sent = self.bytes_sent.saturating_add(o.bytes_sent);
        self.bytes_received = self.bytes_received.saturating_add(o.bytes_received);
        self.packets = self.packets.saturating_add(o.packets);
        self.packets_sent = self.packets_sent.saturating_add(o.packets_sent);
        self.lost = self.lost.saturating_add(o.lost);
        self.jitter_ms += o.jitter_ms;
        self.out_of_order = match (self.out_of_order, o.out_of_order) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
        self.retransmits = match (self.retransmits, o.retransmits) {
            (Some(a), Some(b)) => Some(a.saturating_add(b)),
            _ => None,
        };
    }

    /// Computes rates and means once all streams are added.
    pub fn finish(&mut self, seconds: f64) {
        self.seconds = seconds;
        if seconds > 0.0 {
            self.bits_per_second_sent = self.bytes_sent as f64 * 8.0 / seconds;
            self.bits_per_second_received = self.bytes_received as f64 * 8.0 / seconds;
        }
        if self.streams > 0 {
            self.jitter_ms /= f64::from(self.streams);
        }
        self.lost_percent = if self.packets > 0 {
            100.0 * self.lost as f64 / self.packets as f64
        } else {
            0.0
        };
    }
}

/// The outcome of a test, from the client's point of view: `forward` is client to server,
/// `reverse` server to client (`-R`); `--bidir` fills both. `S` bounds the per-stream list
/// (the session's stream capacity).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TestReport<const S: usize = MAX_STREAMS> {
    /// The parameters the test ran with.
    pub params: Params,
    /// Test seconds on our clock (omitted period excluded).
    pub seconds: f64,
    /// Client to server figures.
    pub forward: Option<DirectionReport>,
    /// Server to client figures.
    pub reverse: Option<DirectionReport>,
    /// Per stream: (iperf3 id, true if client to server, figures).
    pub streams: heapless::Vec<(u32, bool, DirectionReport), S>,
}

/// One stream's figures for one reporting interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IntervalStream {
    /// iperf3 stream id.
    pub id: u32,
    /// True if this side sends on the stream.
    pub sender: bool,
    /// Bytes sent or received in the interval.
    pub bytes: u64,
    /// UDP receiver: packets (sequence advance) in the interval.
    pub packets: u64,
    /// UDP receiver: packets lost in the interval.
    pub lost: u64,
    /// UDP receiver: out-of-order packets in the interval.
    pub outoforder: u64,
    /// UDP receiver: jitter at the end of the interval, seconds.
    pub jitter_s: f64,
}

/// One reporting interval (`-i`); `S` bounds the per-stream list (the session's stream
/// capacity).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Interval<const S: usize = MAX_STREAMS> {
    /// Interval start, seconds since the test start.
    pub start_s: f64,
    /// Interval end, seconds since the test start.
    pub end_s: f64,
    /// True if inside the omitted period (`-O`).
    pub omitted: bool,
    /// Per-stream figures.
    pub streams: heapless::Vec<IntervalStream, S>,
}
