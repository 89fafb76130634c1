//! iperf3's human output, line for line where scripts look (`iperf_on_connect`,
//! `print_interval_results`, `iperf_print_intermediate`, `iperf_print_results` of iperf3
//! 3.12): the connect lines, `-V` headers, interval and summary lines ending in `sender` /
//! `receiver`, `[SUM]` lines, `[TX-C]`/`[RX-C]` roles with `--bidir`, `-T` prefixes.

use linklab_perf::iperf::{IntervalStream, Params, Protocol};

use super::output::Printer;
use super::summary::Role;
use super::units::{g, unit};
use super::version::VERSION;
use crate::dates;
use crate::iperf3::{
    BufferSizes, ControlInfo, HostInterval, HostReport, Observer, ServerOutput, StreamInfo,
    TestText,
};
use crate::net::plain_ip;
use crate::sys;

/// The line between the intervals and the summary.
pub(super) const SEPARATOR: &str = "- - - - - - - - - - - - - - - - - - - - - - - - -";

/// Prints a test as iperf3 does, for either role.
pub struct TextView<'p> {
    /// Where lines go.
    pub out: &'p mut Printer,
    /// Client or server.
    pub role: Role,
    /// `-V`.
    pub verbose: bool,
    /// `-f` (default `a`: adaptive bits).
    pub format: char,
    /// The host and port the client connects to.
    pub target: (String, u16),
    /// The test's parameters (the client's own; the server learns them).
    pub params: Params,
    streams: Vec<StreamInfo>,
    /// True after the first interval line of the current (omitted or counted) period.
    headed: Option<bool>,
    /// The server's output kept for `--get-server-output`.
    capture: bool,
    /// Server: the control connection, announced once the parameters are in.
    control: Option<ControlInfo>,
}

impl<'p> TextView<'p> {
    /// A view for `role`.
    pub fn new(out: &'p mut Printer, role: Role, verbose: bool, format: char) -> Self {
        Self {
            out,
            role,
            verbose,
            format,
            target: (String::new(), 0),
            params: Params::default(),
            streams: Vec::new(),
            headed: None,
            capture: false,
            control: None,
        }
    }

    /// `iperf 3.12` and the system line, printed first with `-V`.
    pub fn preamble(&mut self) {
        if self.verbose {
            self.out.line(VERSION);
            self.out.line(&sys::system_info());
        }
    }

    pub(super) fn bidir_tag(&self, sender: bool) -> &'static str {
        match (self.params.bidirectional, sender, self.role) {
            (false, _, _) => "",
            (true, true, Role::Client) => "[TX-C]",
            (true, false, Role::Client) => "[RX-C]",
            (true, true, Role::Server) => "[TX-S]",
            (true, false, Role::Server) => "[RX-S]",
        }
    }

    fn socket_of(&self, id: u32) -> i32 {
        self.streams
            .iter()
            .find(|s| s.id == id)
            .map_or(id as i32, |s| s.socket)
    }

    fn rate(&self, bytes: f64, seconds: f64) -> String {
        let per_s = if seconds > 0.0 { bytes / seconds } else { 0.0 };
        unit(per_s, self.format)
    }

    /// One stream's interval line (`print_interval_results`).
    fn interval_line(
        &self,
        s: &IntervalStream,
        tcp: Option<(u64, u64)>,
        iv: (f64, f64, bool),
    ) -> String {
        let (st, et, omitted) = iv;
        let tag = self.bidir_tag(s.sender);
        let om = if omitted { "(omitted)" } else { "" };
        let head = format!(
            "[{:>3}]{tag} {st:6.2}-{et:<6.2} sec  {}s  {}s/sec",
            self.socket_of(s.id),
            unit(s.bytes as f64, 'A'),
            self.rate(s.bytes as f64, et - st)
        );
        match (self.params.protocol, s.sender, tcp) {
            (Protocol::Tcp, true, Some((retr, cwnd))) => {
                format!("{head}  {retr:>3}   {}s       {om}", unit(cwnd as f64, 'A'))
            }
            (Protocol::Tcp, _, _) => format!("{head}                  {om}"),
            (Protocol::Udp, true, _) => {
                let z = if self.params.bidirectional {
                    "          "
                } else {
                    ""
                };
                format!("{head} {z} {}  {om}", s.packets)
            }
            (Protocol::Udp, false, _) => format!(
                "{head}  {:5.3} ms  {}/{} ({}%)  {om}",
                s.jitter_s * 1000.0,
                s.lost,
                s.packets,
                g(percent(s.lost, s.packets), 2)
            ),
        }
    }

    /// The header over interval lines.
    fn interval_header(&self, retrans: bool) -> &'static str {
        let bidir = self.params.bidirectional;
        match self.params.protocol {
            Protocol::Tcp if retrans && bidir => {
                "[ ID][Role] Interval           Transfer     Bitrate         Retr  Cwnd"
            }
            Protocol::Tcp if retrans => {
                "[ ID] Interval           Transfer     Bitrate         Retr  Cwnd"
            }
            Protocol::Tcp if bidir => "[ ID][Role] Interval           Transfer     Bitrate",
            Protocol::Tcp => "[ ID] Interval           Transfer     Bitrate",
            Protocol::Udp if bidir => {
                "[ ID][Role] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams"
            }
            Protocol::Udp if self.sends_only() => {
                "[ ID] Interval           Transfer     Bitrate         Total Datagrams"
            }
            Protocol::Udp => {
                "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams"
            }
        }
    }

    /// True if this side only sends.
    pub(super) fn sends_only(&self) -> bool {
        let p = &self.params;
        !p.bidirectional && (p.reverse == (self.role == Role::Server))
    }

    /// The stream groups in iperf3's order: with `--bidir` the client's sending streams
    /// first, the server's receiving ones first.
    pub(super) fn groups(&self) -> Vec<Option<bool>> {
        match (self.params.bidirectional, self.role) {
            (false, _) => vec![None],
            (true, Role::Client) => vec![Some(true), Some(false)],
            (true, Role::Server) => vec![Some(false), Some(true)],
        }
    }

    /// The end of a client run.
    pub fn done(&mut self) {
        self.out.print("\n");
        self.out.line("iperf Done.");
    }

    /// The server's banner before each test.
    pub fn listening(&mut self, port: u16, test: u32) {
        self.out
            .line("-----------------------------------------------------------");
        self.out
            .line(&format!("Server listening on {port} (test #{test})"));
        self.out
            .line("-----------------------------------------------------------");
    }
}

pub(super) fn self_rate(format: char, bytes: f64, seconds: f64) -> String {
    let per_s = if seconds > 0.0 { bytes / seconds } else { 0.0 };
    unit(per_s, format)
}

pub(super) fn percent(part: u64, whole: u64) -> f64 {
    if whole > 0 {
        100.0 * part as f64 / whole as f64
    } else {
        0.0
    }
}

impl Observer for TextView<'_> {
    fn warning(&mut self, msg: &str) {
        eprintln!("warning: {msg}");
    }

    fn connected(&mut self, c: &ControlInfo) {
        if self.role == Role::Client {
            if self.verbose {
                self.out.raw(&format!("Control connection MSS {}\n", c.mss));
                let (time, _) = dates::rfc1123_now();
                self.out.line(&format!("Time: {time}"));
            }
            let (host, port) = self.target.clone();
            self.out
                .line(&format!("Connecting to host {host}, port {port}"));
            if self.params.reverse {
                self.out
                    .line(&format!("Reverse mode, remote host {host} is sending"));
            }
            if self.verbose {
                self.out.line(&format!("      Cookie: {}", c.cookie));
                if self.params.protocol == Protocol::Tcp {
                    if self.params.mss != 0 {
                        self.out
                            .line(&format!("      TCP MSS: {}", self.params.mss));
                    } else {
                        self.out
                            .line(&format!("      TCP MSS: {} (default)", c.mss));
                    }
                }
                if self.params.rate_bps != 0 {
                    self.out
                        .line(&format!("      Target Bitrate: {}", self.params.rate_bps));
                }
            }
        } else {
            // iperf3's server says so once the parameters are exchanged.
            self.control = Some(c.clone());
        }
    }

    fn params(&mut self, p: &Params, _text: &TestText) {
        self.params = *p;
        self.streams.clear();
        self.headed = None;
        self.capture = p.get_server_output;
        self.out.capture(p.get_server_output);
        if let Some(c) = self.control.take() {
            if self.verbose {
                let (time, _) = dates::rfc1123_now();
                self.out.line(&format!("Time: {time}"));
            }
            self.out.line(&format!(
                "Accepted connection from {}, port {}",
                plain_ip(&c.peer),
                c.peer.port()
            ));
            if self.verbose {
                self.out.line(&format!("      Cookie: {}", c.cookie));
            }
        }
    }

    fn stream(&mut self, s: &StreamInfo) {
        self.streams.push(*s);
        self.out.line(&format!(
            "[{:>3}] local {} port {} connected to {} port {}",
            s.socket,
            plain_ip(&s.local),
            s.local.port(),
            plain_ip(&s.peer),
            s.peer.port()
        ));
    }

    fn started(&mut self, p: &Params, _buffers: &BufferSizes) {
        self.params = *p;
        if !self.verbose {
            return;
        }
        let proto = match p.protocol {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
        };
        let what = if p.bytes != 0 {
            format!("{} bytes to send", p.bytes)
        } else if p.blocks != 0 {
            format!("{} blocks to send", p.blocks)
        } else {
            format!("{} second test", p.duration_s)
        };
        self.out.line(&format!(
            "Starting Test: protocol: {proto}, {} streams, {} byte blocks, omitting {} seconds, {what}, tos {}",
            p.parallel, p.len, p.omit_s, p.tos
        ));
    }

    fn interval(&mut self, hiv: &HostInterval) {
        let iv = &hiv.interval;
        let retrans_of = |i: usize| hiv.tcp.get(i).copied().flatten();
        let we_retrans = hiv.tcp.iter().any(Option::is_some);
        let first = self.headed != Some(iv.omitted);
        let mut lines = Vec::new();
        let groups = self.groups();
        for group in &groups {
            let idx: Vec<usize> = (0..iv.streams.len())
                .filter(|i| group.is_none_or(|g| g == iv.streams[*i].sender))
                .collect();
            for &i in &idx {
                let s = &iv.streams[i];
                if i == 0 {
                    if first {
                        lines.push(self.interval_header(we_retrans).to_string());
                    } else if self.params.parallel > 1 {
                        lines.push(SEPARATOR.to_string());
                    }
                }
                let tcp = retrans_of(i).map(|t| (t.retransmits, t.snd_cwnd));
                lines.push(self.interval_line(s, tcp, (iv.start_s, iv.end_s, iv.omitted)));
            }
            if self.params.parallel > 1 && !idx.is_empty() {
                lines.push(self.interval_sum(
                    hiv,
                    &idx,
                    group.unwrap_or(iv.streams[idx[0]].sender),
                ));
            }
        }
        self.headed = Some(iv.omitted);
        for l in lines {
            self.out.line(&l);
        }
    }

    fn finished(&mut self, r: &HostReport) {
        self.summary(r);
    }

    fn server_output(&mut self) -> Option<ServerOutput> {
        let text = self.out.captured().map(str::to_string);
        self.out.capture(false);
        text.map(ServerOutput::Text)
    }
}

impl TextView<'_> {
    /// The `[SUM]` line of an interval.
    fn interval_sum(&self, hiv: &HostInterval, idx: &[usize], sender: bool) -> String {
        let iv = &hiv.interval;
        let tag = self.bidir_tag(sender);
        let bytes: u64 = idx.iter().map(|i| iv.streams[*i].bytes).sum();
        let secs = iv.end_s - iv.start_s;
        let om = if iv.omitted { "(omitted)" } else { "" };
        let head = format!(
            "[SUM]{tag} {:6.2}-{:<6.2} sec  {}s  {}s/sec",
            iv.start_s,
            iv.end_s,
            unit(bytes as f64, 'A'),
            self.rate(bytes as f64, secs)
        );
        match self.params.protocol {
            Protocol::Tcp => {
                let retr: Vec<u64> = idx
                    .iter()
                    .filter_map(|i| hiv.tcp.get(*i).copied().flatten())
                    .map(|t| t.retransmits)
                    .collect();
                if sender && !retr.is_empty() {
                    format!("{head}  {:>3}             {om}", retr.iter().sum::<u64>())
                } else {
                    format!("{head}                  {om}")
                }
            }
            Protocol::Udp if sender => {
                let z = if self.params.bidirectional {
                    "          "
                } else {
                    ""
                };
                let packets: u64 = idx.iter().map(|i| iv.streams[*i].packets).sum();
                format!("{head} {z} {packets}  {om}")
            }
            Protocol::Udp => {
                let packets: u64 = idx.iter().map(|i| iv.streams[*i].packets).sum();
                let lost: u64 = idx.iter().map(|i| iv.streams[*i].lost).sum();
                let jitter: f64 = idx.iter().map(|i| iv.streams[*i].jitter_s).sum::<f64>()
                    / f64::from(self.params.parallel.max(1));
                format!(
                    "{head}  {:5.3} ms  {lost}/{packets} ({}%)  {om}",
                    jitter * 1000.0,
                    g(percent(lost, packets), 2)
                )
            }
        }
    }
}
