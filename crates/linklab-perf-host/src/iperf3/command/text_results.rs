//! The summary at the end of a test (`iperf_print_results`): each stream's sender and
//! receiver lines, the `[SUM]` lines and the CPU lines.

use linklab_perf::iperf::Protocol;

use super::summary::{Role, StreamSummary, Summary};
use super::text::{percent, self_rate};
use super::text::{TextView, SEPARATOR};
use super::units::{g, unit};
use crate::iperf3::{HostReport, ServerOutput};

impl TextView<'_> {
    /// Prints the summary (`iperf_print_results`) of `r`.
    pub fn summary(&mut self, r: &HostReport) {
        let sum = Summary::new(r, self.role);
        self.out.line(SEPARATOR);
        if self.verbose {
            self.out.line("Test Complete. Summary Results:");
        }
        let bidir = self.params.bidirectional;
        let header = match self.params.protocol {
            Protocol::Tcp if sum.any_retransmits() && bidir => {
                "[ ID][Role] Interval           Transfer     Bitrate         Retr"
            }
            Protocol::Tcp if sum.any_retransmits() => {
                "[ ID] Interval           Transfer     Bitrate         Retr"
            }
            Protocol::Tcp if bidir => "[ ID][Role] Interval           Transfer     Bitrate",
            Protocol::Tcp => "[ ID] Interval           Transfer     Bitrate",
            Protocol::Udp if bidir => {
                "[ ID][Role] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams"
            }
            Protocol::Udp => {
                "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams"
            }
        };
        self.out.line(header);
        for group in self.groups() {
            let streams: Vec<&StreamSummary> = sum
                .streams
                .iter()
                .filter(|s| group.is_none_or(|g| g == s.sender))
                .collect();
            let must_send = group.unwrap_or(self.sends_only());
            for s in &streams {
                self.stream_summary(s, sum.retransmits_for(s.sender));
            }
            if self.params.parallel > 1 {
                self.sum_summary(&sum, &streams, must_send);
            }
            if self.verbose {
                self.cpu_lines(r, must_send);
            }
        }
        if self.role == Role::Client && self.params.get_server_output {
            match &r.server_output {
                Some(ServerOutput::Json(v)) => {
                    let text = serde_json::to_string_pretty(v).unwrap_or_default();
                    self.out.print(&format!("\nServer JSON output:\n{text}\n"));
                }
                Some(ServerOutput::Text(t)) => self.out.print(&format!("\nServer output:\n{t}\n")),
                None => {}
            }
        }
    }

    fn stream_summary(&mut self, s: &StreamSummary, retrans: bool) {
        let tag = self.bidir_tag(s.sender);
        let server = self.role == Role::Server;
        let line = |bytes: u64, secs: f64| {
            format!(
                "[{:>3}]{tag} {:6.2}-{secs:<6.2} sec  {}s  {}s/sec",
                s.socket,
                0.0,
                unit(bytes as f64, 'A'),
                self_rate(self.format, bytes as f64, secs)
            )
        };
        let mut lines = Vec::new();
        // The sender line (a server does not know the client's sending figures).
        if server && !s.sender {
            if self.verbose {
                lines.push(format!(
                    "[{:>3}] (sender statistics not available)",
                    s.socket
                ));
            }
        } else {
            let head = line(s.bytes_sent, s.sender_time);
            lines.push(match self.params.protocol {
                Protocol::Tcp if retrans => {
                    format!(
                        "{head}  {:>3}             sender",
                        s.retransmits.unwrap_or(0)
                    )
                }
                Protocol::Tcp => format!("{head}                  sender"),
                Protocol::Udp => format!("{head}  0.000 ms  0/{} (0%)  sender", s.sender_packets),
            });
        }
        if self.params.protocol == Protocol::Udp && s.out_of_order > 0 && (s.sender || !server) {
            lines.push(format!(
                "[SUM]{tag} {:4.1}-{:4.1} sec  {} datagrams received out-of-order",
                0.0, s.sender_time, s.out_of_order
            ));
        }
        if server && s.sender {
            if self.verbose {
                lines.push(format!(
                    "[{:>3}] (receiver statistics not available)",
                    s.socket
                ));
            }
        } else {
            let head = line(s.bytes_received, s.receiver_time);
            lines.push(match self.params.protocol {
                Protocol::Tcp => format!("{head}                  receiver"),
                Protocol::Udp => format!(
                    "{head}  {:5.3} ms  {}/{} ({}%)  receiver",
                    s.jitter_s * 1000.0,
                    s.lost,
                    s.receiver_packets,
                    g(percent(s.lost, s.receiver_packets), 2)
                ),
            });
        }
        for l in lines {
            self.out.line(&l);
        }
    }

    fn sum_summary(&mut self, sum: &Summary, streams: &[&StreamSummary], sender: bool) {
        let tag = self.bidir_tag(sender);
        let server = self.role == Role::Server;
        let total_sent: u64 = streams.iter().map(|s| s.bytes_sent).sum();
        let total_received: u64 = streams.iter().map(|s| s.bytes_received).sum();
        let (st, rt) = streams
            .first()
            .map_or((0.0, 0.0), |s| (s.sender_time, s.receiver_time));
        let head = |bytes: u64, secs: f64| {
            format!(
                "[SUM]{tag} {:6.2}-{secs:<6.2} sec  {}s  {}s/sec",
                0.0,
                unit(bytes as f64, 'A'),
                self_rate(self.format, bytes as f64, secs)
            )
        };
        let mut lines = Vec::new();
        match self.params.protocol {
            Protocol::Tcp => {
                if sender || !server {
                    let h = head(total_sent, st);
                    lines.push(if sum.retransmits_for(sender) {
                        let r: u64 = streams.iter().map(|s| s.retransmits.unwrap_or(0)).sum();
                        format!("{h}  {r:>3}             sender")
                    } else {
                        format!("{h}                  sender")
                    });
                }
                if !(server && sender) {
                    lines.push(format!(
                        "{}                  receiver",
                        head(total_received, rt)
                    ));
                }
            }
            Protocol::Udp => {
                let sent_packets: u64 = streams.iter().map(|s| s.sender_packets).sum();
                let recv_packets: u64 = streams.iter().map(|s| s.receiver_packets).sum();
                let lost: u64 = streams.iter().map(|s| s.lost).sum();
                let jitter = streams.iter().map(|s| s.jitter_s).sum::<f64>()
                    / f64::from(self.params.parallel.max(1));
                let total = if sent_packets > 0 {
                    sent_packets
                } else {
                    recv_packets
                };
                if sender || !server {
                    lines.push(format!(
                        "{}  0.000 ms  0/{sent_packets} (0%)  sender",
                        head(total_sent, st)
                    ));
                }
                if !(server && sender) {
                    lines.push(format!(
                        "{}  {:5.3} ms  {lost}/{recv_packets} ({}%)  receiver",
                        head(total_received, rt),
                        jitter * 1000.0,
                        g(percent(lost, total), 2)
                    ));
                }
            }
        }
        for l in lines {
            self.out.line(&l);
        }
    }

    /// `-V`: CPU use of both sides (after the group of streams this side sends on) and the
    /// congestion control of the group's senders and receivers.
    fn cpu_lines(&mut self, r: &HostReport, must_send: bool) {
        let cpu = |c: Option<[f64; 3]>| match c {
            Some([t, u, s]) => format!("{t:.1}% ({u:.1}%u/{s:.1}%s)"),
            None => "unknown".into(),
        };
        let peer_cpu = r.peer.as_ref().and_then(|p| p.cpu_util);
        if must_send {
            let roles: &[(&str, &str)] = if self.params.bidirectional {
                &[("sender", "receiver"), ("receiver", "sender")]
            } else {
                &[("sender", "receiver")]
            };
            for (l, rr) in roles {
                self.out.line(&format!(
                    "CPU Utilization: local/{l} {}, remote/{rr} {}",
                    cpu(r.cpu),
                    cpu(peer_cpu)
                ));
            }
        }
        if self.params.protocol == Protocol::Tcp {
            let (snd, rcv) = r.congestion_by_role(must_send);
            if let Some(c) = snd {
                self.out.line(&format!("snd_tcp_congestion {c}"));
            }
            if let Some(c) = rcv {
                self.out.line(&format!("rcv_tcp_congestion {c}"));
            }
        }
    }
}
