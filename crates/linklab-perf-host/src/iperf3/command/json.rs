//! The `-J` view: one test's events (connections, streams, intervals, the end) written
//! into its [`Document`], as iperf3 3.12 fills its JSON.

use linklab_perf::iperf::{IntervalStream, Params, Protocol};

use super::document::{
    Connected, CpuUtilization, Document, End, EndStream, EndSum, HostPort, IntervalEntry,
    IntervalFigures, Start, TcpReceiverEnd, TcpSenderEnd, TestStart, Timestamp, UdpStreamEnd,
    UdpSum,
};
use super::summary::{Role, StreamSummary, Summary};
use super::version::VERSION;
use crate::dates;
use crate::iperf3::{
    BufferSizes, ControlInfo, HostInterval, HostReport, Observer, ServerOutput, StreamInfo,
    TestText,
};
use crate::net::plain_ip;
use crate::sys;

/// Builds the `-J` document of one test from its events.
pub(crate) struct JsonView {
    role: Role,
    params: Params,
    text: TestText,
    doc: Document,
    streams: Vec<StreamInfo>,
}

/// The rate of `bytes` over `secs` (0 for no time).
fn rate(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs
    } else {
        0.0
    }
}

impl JsonView {
    /// An empty document for `role`; `target` is the client's host and port.
    pub fn new(role: Role, params: Params, text: TestText, target: Option<(&str, u16)>) -> Self {
        let (time, timesecs) = dates::rfc1123_now();
        let start = Start {
            version: VERSION.into(),
            system_info: sys::system_info(),
            timestamp: Timestamp { time, timesecs },
            connecting_to: target.map(|(host, port)| HostPort {
                host: host.into(),
                port,
            }),
            ..Start::default()
        };
        Self {
            role,
            params,
            text,
            doc: Document {
                start,
                ..Document::default()
            },
            streams: Vec::new(),
        }
    }

    /// Records the error the run ended with.
    pub fn set_error(&mut self, msg: &str) {
        self.doc.error = Some(msg.into());
    }

    /// The document as it stands.
    pub fn document(&self) -> Document {
        Document {
            title: self.text.title.clone(),
            extra_data: self.text.extra_data.clone(),
            ..self.doc.clone()
        }
    }

    fn socket_of(&self, id: u32) -> i32 {
        self.streams
            .iter()
            .find(|s| s.id == id)
            .map_or(id as i32, |s| s.socket)
    }

    /// True when `sender`'s sums are the `_bidir_reverse` ones.
    fn is_reverse(&self, sender: bool) -> bool {
        self.params.bidirectional
            && ((self.role == Role::Client && !sender) || (self.role == Role::Server && sender))
    }

    /// Fills `end` from a finished test.
    pub fn end(&mut self, r: &HostReport) {
        let sum = Summary::new(r, self.role);
        let udp = self.params.protocol == Protocol::Udp;
        let mut end = End::default();
        let mut streams = Vec::new();
        let groups: Vec<Option<bool>> = if self.params.bidirectional {
            match self.role {
                Role::Client => vec![Some(true), Some(false)],
                Role::Server => vec![Some(false), Some(true)],
            }
        } else {
            vec![None]
        };
        for group in groups {
            let members: Vec<&StreamSummary> = sum
                .streams
                .iter()
                .filter(|s| group.is_none_or(|g| g == s.sender))
                .collect();
            let sender = group.unwrap_or_else(|| members.first().is_some_and(|s| s.sender));
            let retrans = sum.retransmits_for(sender);
            for s in &members {
                streams.push(if udp {
                    EndStream {
                        udp: Some(udp_stream(s, sender)),
                        ..EndStream::default()
                    }
                } else {
                    EndStream {
                        sender: Some(tcp_sender(s, retrans, sender)),
                        receiver: Some(tcp_receiver(s, sender)),
                        ..EndStream::default()
                    }
                });
            }
            let (udp_sum, sent, received) = self.group_sums(&members, sender, retrans);
            if self.is_reverse(sender) {
                end.sum_bidir_reverse = udp_sum;
                end.sum_sent_bidir_reverse = Some(sent);
                end.sum_received_bidir_reverse = Some(received);
            } else {
                end.sum = udp_sum;
                end.sum_sent = Some(sent);
                end.sum_received = Some(received);
            }
        }
        end.streams = Some(streams);
        let cpu = r.cpu.unwrap_or([0.0; 3]);
        // A peer that cannot know its CPU use (a device) sends null: leave its figures out
        // rather than print a false 0.
        let peer = r.peer.as_ref().and_then(|p| p.cpu_util);
        end.cpu_utilization_percent = Some(CpuUtilization {
            host_total: cpu[0],
            host_user: cpu[1],
            host_system: cpu[2],
            remote_total: peer.map(|p| p[0]),
            remote_user: peer.map(|p| p[1]),
            remote_system: peer.map(|p| p[2]),
        });
        if !udp {
            let we_send = sum.streams.iter().any(|s| s.sender);
            let (snd, rcv) = r.congestion_by_role(we_send);
            end.sender_tcp_congestion = snd;
            end.receiver_tcp_congestion = rcv;
        }
        self.doc.end = end;
        if self.role == Role::Client {
            match r.server_output.clone() {
                Some(ServerOutput::Json(v)) => self.doc.server_output_json = Some(v),
                Some(ServerOutput::Text(t)) => self.doc.server_output_text = Some(t),
                None => {}
            }
        }
    }

    /// One direction's sums over `members` (`sender`: whether this side sends them;
    /// `retrans`: whether their senders report retransmits): UDP's `sum`, then `sum_sent`
    /// and `sum_received`.
    fn group_sums(
        &self,
        members: &[&StreamSummary],
        sender: bool,
        retrans: bool,
    ) -> (Option<UdpSum>, EndSum, EndSum) {
        let udp = self.params.protocol == Protocol::Udp;
        let total_sent: u64 = members.iter().map(|s| s.bytes_sent).sum();
        let total_received: u64 = members.iter().map(|s| s.bytes_received).sum();
        let secs = members.first().map_or(0.0, |s| s.sender_time);
        let mut sent = EndSum {
            start: 0,
            end: secs,
            seconds: secs,
            bytes: total_sent,
            bits_per_second: rate(total_sent, secs),
            sender,
            ..EndSum::default()
        };
        let mut received = EndSum {
            bytes: total_received,
            bits_per_second: rate(total_received, secs),
            ..sent.clone()
        };
        let mut udp_sum = None;
        if udp {
            let sent_packets: u64 = members.iter().map(|s| s.sender_packets).sum();
            let recv_packets: u64 = members.iter().map(|s| s.receiver_packets).sum();
            let lost: u64 = members.iter().map(|s| s.lost).sum();
            let jitter = members.iter().map(|s| s.jitter_s).sum::<f64>()
                / f64::from(self.params.parallel.max(1));
            let total = if sent_packets > 0 {
                sent_packets
            } else {
                recv_packets
            };
            udp_sum = Some(UdpSum {
                start: 0,
                end: secs,
                seconds: secs,
                bytes: total_sent,
                bits_per_second: rate(total_received, secs),
                jitter_ms: jitter * 1000.0,
                lost_packets: lost,
                packets: total,
                lost_percent: percent(lost, total),
                sender,
            });
            sent.sender = true;
            sent.jitter_ms = Some(0.0);
            sent.lost_packets = Some(0);
            sent.packets = Some(sent_packets);
            sent.lost_percent = Some(0.0);
            received.sender = false;
            received.jitter_ms = Some(jitter * 1000.0);
            received.lost_packets = Some(lost);
            received.packets = Some(recv_packets);
            received.lost_percent = Some(percent(lost, recv_packets));
        } else if retrans {
            sent.retransmits = Some(members.iter().map(|s| s.retransmits.unwrap_or(0)).sum());
        }
        (udp_sum, sent, received)
    }

    /// The interval sum of the streams `members`.
    fn interval_sum(
        &self,
        hiv: &HostInterval,
        members: &[(usize, &IntervalStream)],
        sender: bool,
    ) -> IntervalFigures {
        let udp = self.params.protocol == Protocol::Udp;
        let bytes: u64 = members.iter().map(|(_, s)| s.bytes).sum();
        let mut sum = figures(hiv, None, bytes, sender);
        if udp && sender {
            sum.packets = Some(members.iter().map(|(_, s)| s.packets).sum::<u64>());
        } else if udp {
            let packets: u64 = members.iter().map(|(_, s)| s.packets).sum();
            let lost: u64 = members.iter().map(|(_, s)| s.lost).sum();
            let jitter: f64 = members.iter().map(|(_, s)| s.jitter_s).sum::<f64>()
                / f64::from(self.params.parallel.max(1));
            sum.jitter_ms = Some(jitter * 1000.0);
            sum.lost_packets = Some(lost);
            sum.packets = Some(packets);
            sum.lost_percent = Some(percent(lost, packets));
        } else {
            let tcp: Vec<u64> = members
                .iter()
                .filter_map(|(i, _)| hiv.tcp.get(*i).copied().flatten())
                .map(|t| t.retransmits)
                .collect();
            if sender && !tcp.is_empty() {
                sum.retransmits = Some(tcp.iter().sum::<u64>());
            }
        }
        sum
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        100.0 * part as f64 / whole as f64
    } else {
        0.0
    }
}

/// An interval's figures common to streams and sums: its times, `bytes` and their rate.
fn figures(hiv: &HostInterval, socket: Option<i32>, bytes: u64, sender: bool) -> IntervalFigures {
    let iv = &hiv.interval;
    let seconds = iv.end_s - iv.start_s;
    IntervalFigures {
        socket,
        start: iv.start_s,
        end: iv.end_s,
        seconds,
        bytes,
        bits_per_second: rate(bytes, seconds),
        omitted: iv.omitted,
        sender,
        ..IntervalFigures::default()
    }
}

fn tcp_sender(s: &StreamSummary, retrans: bool, group_sender: bool) -> TcpSenderEnd {
    let secs = s.sender_time;
    let t = s.tcp.unwrap_or_default();
    TcpSenderEnd {
        socket: s.socket,
        start: 0,
        end: secs,
        seconds: secs,
        bytes: s.bytes_sent,
        bits_per_second: rate(s.bytes_sent, secs),
        retransmits: retrans.then(|| s.retransmits.unwrap_or(0)),
        max_snd_cwnd: retrans.then_some(t.max_snd_cwnd),
        max_snd_wnd: retrans.then_some(t.max_snd_wnd),
        max_rtt: retrans.then_some(t.max_rtt_us),
        min_rtt: retrans.then_some(t.min_rtt_us),
        mean_rtt: retrans.then(|| t.mean_rtt_us()),
        sender: group_sender,
    }
}

fn tcp_receiver(s: &StreamSummary, group_sender: bool) -> TcpReceiverEnd {
    let secs = s.receiver_time;
    TcpReceiverEnd {
        socket: s.socket,
        start: 0,
        end: secs,
        seconds: secs,
        bytes: s.bytes_received,
        bits_per_second: rate(s.bytes_received, secs),
        sender: group_sender,
    }
}

fn udp_stream(s: &StreamSummary, group_sender: bool) -> UdpStreamEnd {
    let secs = s.sender_time;
    let packets = if s.sender_packets > 0 {
        s.sender_packets
    } else {
        s.receiver_packets
    };
    UdpStreamEnd {
        socket: s.socket,
        start: 0,
        end: secs,
        seconds: secs,
        bytes: if s.sender {
            s.bytes_sent
        } else {
            s.bytes_received
        },
        bits_per_second: rate(s.bytes_sent, secs),
        jitter_ms: s.jitter_s * 1000.0,
        lost_packets: s.lost,
        packets,
        lost_percent: percent(s.lost, packets),
        out_of_order: s.out_of_order,
        sender: group_sender,
    }
}

impl Observer for JsonView {
    fn warning(&mut self, msg: &str) {
        eprintln!("warning: {msg}");
    }

    fn connected(&mut self, c: &ControlInfo) {
        let start = &mut self.doc.start;
        if self.role == Role::Server {
            start.accepted_connection = Some(HostPort {
                host: plain_ip(&c.peer).to_string(),
                port: c.peer.port(),
            });
        }
        start.cookie = Some(c.cookie.clone());
        if self.params.protocol == Protocol::Tcp {
            if self.params.mss != 0 {
                start.tcp_mss = Some(self.params.mss);
            } else {
                start.tcp_mss_default = Some(c.mss);
            }
        }
        start.target_bitrate = Some(self.params.rate_bps);
    }

    fn params(&mut self, p: &Params, text: &TestText) {
        self.params = *p;
        self.text = text.clone();
        self.doc.start.target_bitrate = Some(p.rate_bps);
    }

    fn stream(&mut self, s: &StreamInfo) {
        self.streams.push(*s);
        self.doc.start.connected.push(Connected {
            socket: s.socket,
            local_host: plain_ip(&s.local).to_string(),
            local_port: s.local.port(),
            remote_host: plain_ip(&s.peer).to_string(),
            remote_port: s.peer.port(),
        });
    }

    fn started(&mut self, p: &Params, b: &BufferSizes) {
        let start = &mut self.doc.start;
        if self.role == Role::Client {
            start.sock_bufsize = Some(b.requested);
            start.sndbuf_actual = Some(b.sndbuf);
            start.rcvbuf_actual = Some(b.rcvbuf);
        }
        start.test_start = Some(TestStart {
            protocol: if p.protocol == Protocol::Udp {
                "UDP"
            } else {
                "TCP"
            }
            .into(),
            num_streams: p.parallel,
            blksize: p.len,
            omit: p.omit_s,
            duration: p.duration_s,
            bytes: p.bytes,
            blocks: p.blocks,
            reverse: u8::from(p.reverse),
            tos: p.tos,
            target_bitrate: p.rate_bps,
        });
    }

    fn interval(&mut self, hiv: &HostInterval) {
        let iv = &hiv.interval;
        let udp = self.params.protocol == Protocol::Udp;
        let mut streams = Vec::new();
        for (i, s) in iv.streams.iter().enumerate() {
            let mut v = figures(hiv, Some(self.socket_of(s.id)), s.bytes, s.sender);
            if udp && s.sender {
                v.packets = Some(s.packets);
            } else if udp {
                v.jitter_ms = Some(s.jitter_s * 1000.0);
                v.lost_packets = Some(s.lost);
                v.packets = Some(s.packets);
                v.lost_percent = Some(percent(s.lost, s.packets));
            } else if let Some(t) = hiv.tcp.get(i).copied().flatten() {
                v.retransmits = Some(t.retransmits);
                v.snd_cwnd = Some(t.snd_cwnd);
                v.snd_wnd = Some(t.snd_wnd);
                v.rtt = Some(t.rtt_us);
                v.rttvar = Some(t.rttvar_us);
                v.pmtu = Some(t.pmtu);
            }
            streams.push(v);
        }
        let groups: Vec<bool> = if self.params.bidirectional {
            vec![true, false]
        } else {
            vec![iv.streams.first().is_some_and(|s| s.sender)]
        };
        let mut sums = Vec::new();
        for sender in groups {
            let members: Vec<(usize, &IntervalStream)> = iv
                .streams
                .iter()
                .enumerate()
                .filter(|(_, s)| !self.params.bidirectional || s.sender == sender)
                .collect();
            let key = if self.is_reverse(sender) {
                "sum_bidir_reverse"
            } else {
                "sum"
            };
            sums.push((key.to_string(), self.interval_sum(hiv, &members, sender)));
        }
        self.doc.intervals.push(IntervalEntry { streams, sums });
    }

    fn finished(&mut self, r: &HostReport) {
        self.end(r);
    }

    fn server_output(&mut self) -> Option<ServerOutput> {
        serde_json::to_value(self.document())
            .ok()
            .map(ServerOutput::Json)
    }
}
