//! A finished test as iperf3's summary sees it: per stream, from this side's point of view
//! (the socket number, who sends, both byte counts, packets, loss, jitter, retransmits),
//! shared by the text and the JSON output.

use crate::iperf3::{HostReport, TcpStats};
use linklab_perf::iperf::Protocol;

/// Which end printed the output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// `-c`.
    Client,
    /// `-s`.
    Server,
}

/// One stream in the summary.
#[derive(Clone, Debug)]
pub struct StreamSummary {
    /// The socket number iperf3 prints.
    pub socket: i32,
    /// True if this side sent on the stream.
    pub sender: bool,
    /// Bytes the sender sent (omitted period excluded).
    pub bytes_sent: u64,
    /// Bytes the receiver counted.
    pub bytes_received: u64,
    /// Seconds the sender's figures cover.
    pub sender_time: f64,
    /// Seconds the receiver's figures cover.
    pub receiver_time: f64,
    /// TCP retransmits of the sender, if known.
    pub retransmits: Option<u64>,
    /// UDP datagrams sent.
    pub sender_packets: u64,
    /// UDP datagrams the receiver expected.
    pub receiver_packets: u64,
    /// UDP datagrams lost.
    pub lost: u64,
    /// UDP jitter, seconds.
    pub jitter_s: f64,
    /// UDP datagrams out of order.
    pub out_of_order: u64,
    /// TCP_INFO of a TCP stream this side sent on.
    pub tcp: Option<TcpStats>,
}

/// All streams of a test and who reports retransmits.
pub struct Summary {
    /// In session order.
    pub streams: Vec<StreamSummary>,
    /// TCP: this side's sending streams report retransmits.
    ours_retransmits: bool,
    /// TCP: the peer's sending streams report retransmits.
    peer_retransmits: bool,
}

impl Summary {
    /// The summary of `r` as seen by `role`.
    pub fn new(r: &HostReport, role: Role) -> Self {
        let tcp = r.report.params.protocol == Protocol::Tcp;
        let secs = r.report.seconds;
        let streams = r
            .report
            .streams
            .iter()
            .enumerate()
            .map(|(i, (id, forward, d))| {
                let info = r.streams.iter().find(|s| s.id == *id);
                let sender = info.map_or((role == Role::Client) == *forward, |s| s.sender);
                StreamSummary {
                    socket: info.map_or(*id as i32, |s| s.socket),
                    sender,
                    bytes_sent: d.bytes_sent,
                    bytes_received: d.bytes_received,
                    sender_time: secs,
                    receiver_time: secs,
                    retransmits: d.retransmits,
                    sender_packets: d.packets_sent,
                    receiver_packets: d.packets,
                    lost: d.lost,
                    jitter_s: d.jitter_ms / 1000.0,
                    out_of_order: d.out_of_order.unwrap_or(0),
                    tcp: r.tcp.get(i).copied().flatten(),
                }
            })
            .collect();
        Self {
            streams,
            ours_retransmits: tcp && r.sender_has_retransmits,
            peer_retransmits: tcp
                && r.peer
                    .as_ref()
                    .is_some_and(|p| p.sender_has_retransmits == 1),
        }
    }

    /// True if the senders of streams this side sends on (`we_send`) or receives on report
    /// retransmits.
    pub fn retransmits_for(&self, we_send: bool) -> bool {
        if we_send {
            self.ours_retransmits
        } else {
            self.peer_retransmits
        }
    }

    /// True if either side's senders report retransmits.
    pub fn any_retransmits(&self) -> bool {
        self.ours_retransmits || self.peer_retransmits
    }
}
