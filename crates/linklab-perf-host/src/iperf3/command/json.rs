//! The `-J` document in iperf3 3.12's schema: `start` (connected streams, version, system,
//! timestamp, cookie, MSS, buffers, `test_start`), `intervals` (per stream and `sum`), `end`
//! (per stream `sender`/`receiver` or `udp`, `sum_sent`/`sum_received`, `sum` for UDP, the
//! `_bidir_reverse` sums, `cpu_utilization_percent` measured, congestion control), and
//! `title`, `extra_data`, `server_output_json`/`_text`, `error` when there are any.

use linklab_perf::iperf::{Params, Protocol};
use serde_json::{json, Map, Value};

use super::summary::{Role, StreamSummary, Summary};
use super::version::VERSION;
use crate::dates;
use crate::iperf3::{
    BufferSizes, ControlInfo, HostInterval, HostReport, Observer, ServerOutput, StreamInfo,
    TestText,
};
use crate::net::plain_ip;
use crate::sys;

/// Builds the `-J` document of one test.
pub struct JsonView {
    role: Role,
    params: Params,
    text: TestText,
    start: Map<String, Value>,
    connected: Vec<Value>,
    intervals: Vec<Value>,
    end: Map<String, Value>,
    server_output: Option<ServerOutput>,
    error: Option<String>,
    streams: Vec<StreamInfo>,
}

fn num(v: f64) -> Value {
    json!(v)
}

impl JsonView {
    /// An empty document for `role`; `target` is the client's host and port.
    pub fn new(role: Role, params: Params, text: TestText, target: Option<(&str, u16)>) -> Self {
        let mut start = Map::new();
        start.insert("version".into(), json!(VERSION));
        start.insert("system_info".into(), json!(sys::system_info()));
        let (time, secs) = dates::rfc1123_now();
        start.insert(
            "timestamp".into(),
            json!({ "time": time, "timesecs": secs }),
        );
        if let Some((host, port)) = target {
            start.insert(
                "connecting_to".into(),
                json!({ "host": host, "port": port }),
            );
        }
        Self {
            role,
            params,
            text,
            start,
            connected: Vec::new(),
            intervals: Vec::new(),
            end: Map::new(),
            server_output: None,
            error: None,
            streams: Vec::new(),
        }
    }

    /// Records the error the run ended with.
    pub fn set_error(&mut self, msg: &str) {
        self.error = Some(msg.into());
    }

    /// The document as it stands.
    pub fn document(&self) -> Value {
        let mut start = Map::new();
        start.insert("connected".into(), Value::Array(self.connected.clone()));
        start.extend(self.start.clone());
        let mut top = Map::new();
        top.insert("start".into(), Value::Object(start));
        top.insert("intervals".into(), Value::Array(self.intervals.clone()));
        top.insert("end".into(), Value::Object(self.end.clone()));
        if let Some(t) = &self.text.title {
            top.insert("title".into(), json!(t));
        }
        if let Some(x) = &self.text.extra_data {
            top.insert("extra_data".into(), json!(x));
        }
        match &self.server_output {
            Some(ServerOutput::Json(v)) => {
                top.insert("server_output_json".into(), v.clone());
            }
            Some(ServerOutput::Text(t)) => {
                top.insert("server_output_text".into(), json!(t));
            }
            None => {}
        }
        if let Some(e) = &self.error {
            top.insert("error".into(), json!(e));
        }
        Value::Object(top)
    }

    fn socket_of(&self, id: u32) -> i32 {
        self.streams
            .iter()
            .find(|s| s.id == id)
            .map_or(id as i32, |s| s.socket)
    }

    fn sum_name(&self, sender: bool, base: &str) -> String {
        let reverse = self.params.bidirectional
            && ((self.role == Role::Client && !sender) || (self.role == Role::Server && sender));
        if reverse {
            format!("{base}_bidir_reverse")
        } else {
            base.to_string()
        }
    }

    /// Fills `end` from a finished test.
    pub fn end(&mut self, r: &HostReport) {
        let sum = Summary::new(r, self.role);
        let udp = self.params.protocol == Protocol::Udp;
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
                    json!({ "udp": udp_stream(s, sender) })
                } else {
                    json!({ "sender": tcp_sender(s, retrans, sender), "receiver": tcp_receiver(s, sender) })
                });
            }
            let total_sent: u64 = members.iter().map(|s| s.bytes_sent).sum();
            let total_received: u64 = members.iter().map(|s| s.bytes_received).sum();
            let secs = members.first().map_or(0.0, |s| s.sender_time);
            let rate = |b: u64| {
                if secs > 0.0 {
                    b as f64 * 8.0 / secs
                } else {
                    0.0
                }
            };
            let mut sent = json!({ "start": 0, "end": secs, "seconds": secs, "bytes": total_sent,
                                   "bits_per_second": rate(total_sent), "sender": sender });
            let mut received = json!({ "start": 0, "end": secs, "seconds": secs, "bytes": total_received,
                                       "bits_per_second": rate(total_received), "sender": sender });
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
                let pct = percent(lost, total);
                self.end.insert(
                    self.sum_name(sender, "sum"),
                    json!({ "start": 0, "end": secs, "seconds": secs, "bytes": total_sent,
                            "bits_per_second": rate(total_received), "jitter_ms": jitter * 1000.0,
                            "lost_packets": lost, "packets": total, "lost_percent": pct, "sender": sender }),
                );
                sent["jitter_ms"] = num(0.0);
                sent["lost_packets"] = json!(0);
                sent["packets"] = json!(sent_packets);
                sent["lost_percent"] = num(0.0);
                sent["sender"] = json!(true);
                received["jitter_ms"] = num(jitter * 1000.0);
                received["lost_packets"] = json!(lost);
                received["packets"] = json!(recv_packets);
                received["lost_percent"] = num(percent(lost, recv_packets));
                received["sender"] = json!(false);
            } else if retrans {
                let r: u64 = members.iter().map(|s| s.retransmits.unwrap_or(0)).sum();
                sent["retransmits"] = json!(r);
            }
            self.end.insert(self.sum_name(sender, "sum_sent"), sent);
            self.end
                .insert(self.sum_name(sender, "sum_received"), received);
        }
        self.end.insert("streams".into(), Value::Array(streams));
        let cpu = r.cpu.unwrap_or([0.0; 3]);
        let mut util = json!({ "host_total": cpu[0], "host_user": cpu[1], "host_system": cpu[2] });
        // A peer that cannot know its CPU use (a device) sends null: leave its figures out
        // rather than print a false 0.
        if let Some(p) = r.peer.as_ref().and_then(|p| p.cpu_util) {
            util["remote_total"] = num(p[0]);
            util["remote_user"] = num(p[1]);
            util["remote_system"] = num(p[2]);
        }
        self.end.insert("cpu_utilization_percent".into(), util);
        if !udp {
            let we_send = sum.streams.iter().any(|s| s.sender);
            let ours = r.congestion_used.clone();
            let theirs = r
                .peer
                .as_ref()
                .and_then(|p| p.congestion_used.as_ref().map(|c| c.to_string()));
            let (snd, rcv) = if we_send {
                (ours, theirs)
            } else {
                (theirs, ours)
            };
            if let Some(c) = snd {
                self.end.insert("sender_tcp_congestion".into(), json!(c));
            }
            if let Some(c) = rcv {
                self.end.insert("receiver_tcp_congestion".into(), json!(c));
            }
        }
        if self.role == Role::Client {
            self.server_output = r.server_output.clone();
        }
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        100.0 * part as f64 / whole as f64
    } else {
        0.0
    }
}

fn tcp_sender(s: &StreamSummary, retrans: bool, group_sender: bool) -> Value {
    let secs = s.sender_time;
    let bps = if secs > 0.0 {
        s.bytes_sent as f64 * 8.0 / secs
    } else {
        0.0
    };
    let mut v = json!({ "socket": s.socket, "start": 0, "end": secs, "seconds": secs,
                        "bytes": s.bytes_sent, "bits_per_second": bps });
    if retrans {
        let t = s.tcp.unwrap_or_default();
        v["retransmits"] = json!(s.retransmits.unwrap_or(0));
        v["max_snd_cwnd"] = json!(t.max_snd_cwnd);
        v["max_snd_wnd"] = json!(t.max_snd_wnd);
        v["max_rtt"] = json!(t.max_rtt_us);
        v["min_rtt"] = json!(t.min_rtt_us);
        v["mean_rtt"] = json!(t.mean_rtt_us());
    }
    v["sender"] = json!(group_sender);
    v
}

fn tcp_receiver(s: &StreamSummary, group_sender: bool) -> Value {
    let secs = s.receiver_time;
    let bps = if secs > 0.0 {
        s.bytes_received as f64 * 8.0 / secs
    } else {
        0.0
    };
    json!({ "socket": s.socket, "start": 0, "end": secs, "seconds": secs,
            "bytes": s.bytes_received, "bits_per_second": bps, "sender": group_sender })
}

fn udp_stream(s: &StreamSummary, group_sender: bool) -> Value {
    let secs = s.sender_time;
    let bytes = if s.sender {
        s.bytes_sent
    } else {
        s.bytes_received
    };
    let packets = if s.sender_packets > 0 {
        s.sender_packets
    } else {
        s.receiver_packets
    };
    json!({ "socket": s.socket, "start": 0, "end": secs, "seconds": secs, "bytes": bytes,
            "bits_per_second": if secs > 0.0 { s.bytes_sent as f64 * 8.0 / secs } else { 0.0 },
            "jitter_ms": s.jitter_s * 1000.0, "lost_packets": s.lost, "packets": packets,
            "lost_percent": percent(s.lost, packets), "out_of_order": s.out_of_order,
            "sender": group_sender })
}

impl Observer for JsonView {
    fn warning(&mut self, msg: &str) {
        eprintln!("warning: {msg}");
    }

    fn connected(&mut self, c: &ControlInfo) {
        if self.role == Role::Server {
            self.start.insert(
                "accepted_connection".into(),
                json!({ "host": plain_ip(&c.peer).to_string(), "port": c.peer.port() }),
            );
        }
        self.start.insert("cookie".into(), json!(c.cookie));
        if self.params.protocol == Protocol::Tcp {
            if self.params.mss != 0 {
                self.start.insert("tcp_mss".into(), json!(self.params.mss));
            } else {
                self.start.insert("tcp_mss_default".into(), json!(c.mss));
            }
        }
        self.start
            .insert("target_bitrate".into(), json!(self.params.rate_bps));
    }

    fn params(&mut self, p: &Params, text: &TestText) {
        self.params = *p;
        self.text = text.clone();
        self.start
            .insert("target_bitrate".into(), json!(p.rate_bps));
    }

    fn stream(&mut self, s: &StreamInfo) {
        self.streams.push(*s);
        self.connected.push(json!({
            "socket": s.socket,
            "local_host": plain_ip(&s.local).to_string(), "local_port": s.local.port(),
            "remote_host": plain_ip(&s.peer).to_string(), "remote_port": s.peer.port(),
        }));
    }

    fn started(&mut self, p: &Params, b: &BufferSizes) {
        if self.role == Role::Client {
            self.start.insert("sock_bufsize".into(), json!(b.requested));
            self.start.insert("sndbuf_actual".into(), json!(b.sndbuf));
            self.start.insert("rcvbuf_actual".into(), json!(b.rcvbuf));
        }
        self.start.insert(
            "test_start".into(),
            json!({
                "protocol": if p.protocol == Protocol::Udp { "UDP" } else { "TCP" },
                "num_streams": p.parallel, "blksize": p.len, "omit": p.omit_s,
                "duration": p.duration_s, "bytes": p.bytes, "blocks": p.blocks,
                "reverse": u8::from(p.reverse), "tos": p.tos, "target_bitrate": p.rate_bps,
            }),
        );
    }

    fn interval(&mut self, hiv: &HostInterval) {
        let iv = &hiv.interval;
        let seconds = iv.end_s - iv.start_s;
        let bps = |b: u64| {
            if seconds > 0.0 {
                b as f64 * 8.0 / seconds
            } else {
                0.0
            }
        };
        let udp = self.params.protocol == Protocol::Udp;
        let mut streams = Vec::new();
        for (i, s) in iv.streams.iter().enumerate() {
            let mut v = json!({ "socket": self.socket_of(s.id), "start": iv.start_s, "end": iv.end_s,
                                "seconds": seconds, "bytes": s.bytes, "bits_per_second": bps(s.bytes) });
            if udp && s.sender {
                v["packets"] = json!(s.packets);
            } else if udp {
                v["jitter_ms"] = num(s.jitter_s * 1000.0);
                v["lost_packets"] = json!(s.lost);
                v["packets"] = json!(s.packets);
                v["lost_percent"] = num(percent(s.lost, s.packets));
            } else if let Some(t) = hiv.tcp.get(i).copied().flatten() {
                v["retransmits"] = json!(t.retransmits);
                v["snd_cwnd"] = json!(t.snd_cwnd);
                v["snd_wnd"] = json!(t.snd_wnd);
                v["rtt"] = json!(t.rtt_us);
                v["rttvar"] = json!(t.rttvar_us);
                v["pmtu"] = json!(t.pmtu);
            }
            v["omitted"] = json!(iv.omitted);
            v["sender"] = json!(s.sender);
            streams.push(v);
        }
        let mut entry = json!({ "streams": streams });
        let groups: Vec<bool> = if self.params.bidirectional {
            vec![true, false]
        } else {
            vec![iv.streams.first().is_some_and(|s| s.sender)]
        };
        for sender in groups {
            let members: Vec<(usize, &linklab_perf::iperf::IntervalStream)> = iv
                .streams
                .iter()
                .enumerate()
                .filter(|(_, s)| !self.params.bidirectional || s.sender == sender)
                .collect();
            let bytes: u64 = members.iter().map(|(_, s)| s.bytes).sum();
            let mut sum = json!({ "start": iv.start_s, "end": iv.end_s, "seconds": seconds,
                                  "bytes": bytes, "bits_per_second": bps(bytes) });
            if udp && sender {
                sum["packets"] = json!(members.iter().map(|(_, s)| s.packets).sum::<u64>());
            } else if udp {
                let packets: u64 = members.iter().map(|(_, s)| s.packets).sum();
                let lost: u64 = members.iter().map(|(_, s)| s.lost).sum();
                let jitter: f64 = members.iter().map(|(_, s)| s.jitter_s).sum::<f64>()
                    / f64::from(self.params.parallel.max(1));
                sum["jitter_ms"] = num(jitter * 1000.0);
                sum["lost_packets"] = json!(lost);
                sum["packets"] = json!(packets);
                sum["lost_percent"] = num(percent(lost, packets));
            } else {
                let tcp: Vec<u64> = members
                    .iter()
                    .filter_map(|(i, _)| hiv.tcp.get(*i).copied().flatten())
                    .map(|t| t.retransmits)
                    .collect();
                if sender && !tcp.is_empty() {
                    sum["retransmits"] = json!(tcp.iter().sum::<u64>());
                }
            }
            sum["omitted"] = json!(iv.omitted);
            sum["sender"] = json!(sender);
            entry[self.sum_name(sender, "sum")] = sum;
        }
        self.intervals.push(entry);
    }

    fn finished(&mut self, r: &HostReport) {
        self.end(r);
    }

    fn server_output(&mut self) -> Option<ServerOutput> {
        Some(ServerOutput::Json(self.document()))
    }
}
