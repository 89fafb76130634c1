//! iperf 2's UDP server, sans-IO: one [`UdpServerSession`] per client flow, and
//! [`UdpServer`], a fixed table of them keyed by the peer's address, for a host with one
//! UDP socket on port 5001.
//!
//! A flow starts with a datagram whose id is not negative (2.1.8 drops negative ids at
//! accept: stale FINs); its client header (16 bytes in) says which test. Every datagram is
//! counted as 2.1.8 counts it ([`UdpReceiveStats`]). The FIN (a negative id) ends the flow:
//! the server queues its 128-byte report; each further FIN from the client (it repeats
//! every 10 ms until a report arrives) queues the report again, built fresh — 2.1.8
//! re-sends its read buffer instead, so after a client repeat its "report" is the echoed
//! FIN. At most [`UdpServerConfig::max_reports`] per flow answer a FIN flood. The
//! finished flow stays [`UdpServerConfig::linger_us`] to answer repeats, then frees its
//! slot.
//!
//! # Hosting it
//! ```text
//! datagram from PEER  -> server.on_datagram(PEER, bytes, now)
//! loop { match server.next_output(now, &mut buf) { Some((peer, n)) => send buf[..n] to peer, None => break } }
//! server.take_connect_back() -> Some((peer, cb))   -r/-d: a UdpSender to peer's address at cb.port
//! server.poll(now); sleep until server.poll_at(now)
//! server.take_finished() -> Some((peer, outcome))  log the flow's figures
//! ```
//! `buf` must hold the longest datagram the server sends: the report (128 bytes) and, for
//! UDP `-R`, the client's `-l` (up to 65507; the session clamps the `-l` it sends to
//! [`UdpServerConfig::max_send_len`]).

use super::request::{Mode, TestRequest};
use super::tcp_server::ConnectBack;
use super::udp_sender::{FinMode, UdpSendPhase, UdpSender, UdpSenderConfig};
use super::udp_stats::{FirstTransit, UdpReceiveStats};
use super::wire::datagram::DatagramFormat;
use super::wire::report::{ReportInfo, DATAGRAM_LEN as REPORT_LEN};
use super::wire::{ServerReport, UdpDatagram, DEFAULT_UDP_LEN, DEFAULT_UDP_RATE};
use crate::time::Micros;

/// How the UDP server runs; [`Default`] is 2.1.8's arithmetic with a 10 s watchdog.
#[derive(Clone, Copy, Debug)]
pub struct UdpServerConfig {
    /// The datagram header the clients use (16 bytes; 12 for iperf 2.0.9 and older).
    pub format: DatagramFormat,
    /// The jitter's first datagram (see [`FirstTransit`]).
    pub first_transit: FirstTransit,
    /// Added to `now` to get the wall time the client stamps with (the host's `UNIX time −
    /// now`; 0 if `now` is wall time).
    pub wall_offset_us: i64,
    /// A flow that receives nothing for this long ends (a client without a FIN, a lost
    /// FIN); its report is then not sent.
    pub idle_timeout_us: Micros,
    /// How long a finished flow answers FIN repeats.
    pub linger_us: Micros,
    /// Most reports sent per flow.
    pub max_reports: u8,
    /// Send transit statistics in the report (2.1.8's server does with `-e`).
    pub extended_report: bool,
    /// Serve UDP `-R` and `--full-duplex` (else such a flow is only received).
    pub serve_reverse: bool,
    /// Ask the host to connect back for `-r`/`-d`.
    pub serve_connect_back: bool,
    /// Longest the server sends (`-R`, connect-back), whatever the header asks.
    pub max_send_us: Micros,
    /// Longest datagram the server sends for `-R` (the client's `-l` is clamped to it).
    pub max_send_len: usize,
}

impl Default for UdpServerConfig {
    fn default() -> Self {
        Self {
            format: DatagramFormat::Current,
            first_transit: FirstTransit::AsIperf218,
            wall_offset_us: 0,
            idle_timeout_us: 10_000_000,
            linger_us: 2_500_000,
            max_reports: 16,
            extended_report: false,
            serve_reverse: true,
            serve_connect_back: true,
            max_send_us: 3_600_000_000,
            max_send_len: super::udp_sender::MAX_UDP_LEN,
        }
    }
}

/// Where a flow is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum UdpPhase {
    /// No flow yet.
    Idle,
    /// Receiving (and, for `-R`/`--full-duplex`, sending).
    Running,
    /// The FIN came: answering it and its repeats with the report.
    Reporting,
    /// Over; the slot is free.
    Done,
}

/// What a flow did.
#[derive(Clone, Copy, Debug)]
pub struct UdpOutcome {
    /// The client header of the flow's first datagram.
    pub request: TestRequest,
    /// The receive counters.
    pub stats: UdpReceiveStats,
    /// The report (what was or would be sent).
    pub report: ReportInfo,
    /// Datagrams and bytes the server sent (`-R`; the FIN included, as the client counts
    /// it).
    pub sent: (u64, u64),
    /// Reports sent.
    pub reports_sent: u8,
    /// The flow ended by the watchdog, not by a FIN.
    pub timed_out: bool,
    /// `-r`/`-d` asked for a connect-back that was refused.
    pub connect_back_refused: bool,
}

/// One client flow on the UDP server.
#[derive(Clone, Copy, Debug)]
pub struct UdpServerSession {
    cfg: UdpServerConfig,
    phase: UdpPhase,
    request: TestRequest,
    stats: UdpReceiveStats,
    start_us: Micros,
    end_us: Micros,
    last_rx_us: Micros,
    reports_due: u8,
    reports_sent: u8,
    sender: Option<UdpSender>,
    connect_back: Option<ConnectBack>,
    connect_back_refused: bool,
    timed_out: bool,
}

impl UdpServerSession {
    /// An idle session.
    pub fn new(cfg: UdpServerConfig) -> Self {
        Self {
            cfg,
            phase: UdpPhase::Idle,
            request: TestRequest::plain(super::request::Protocol::Udp),
            stats: UdpReceiveStats::new(cfg.first_transit),
            start_us: 0,
            end_us: 0,
            last_rx_us: 0,
            reports_due: 0,
            reports_sent: 0,
            sender: None,
            connect_back: None,
            connect_back_refused: false,
            timed_out: false,
        }
    }

    /// Where the flow is.
    pub fn phase(&self) -> UdpPhase {
        self.phase
    }

    /// The flow's request (from its first datagram).
    pub fn request(&self) -> &TestRequest {
        &self.request
    }

    /// The receive counters so far.
    pub fn stats(&self) -> &UdpReceiveStats {
        &self.stats
    }

    /// True while the session holds a flow (its slot is taken).
    pub fn is_busy(&self) -> bool {
        matches!(self.phase, UdpPhase::Running | UdpPhase::Reporting)
    }

    fn arrival(&self, now: Micros) -> u64 {
        (now as i64).saturating_add(self.cfg.wall_offset_us).max(0) as u64
    }

    /// The report of the flow as it stands.
    pub fn report(&self) -> ReportInfo {
        let end = if self.phase == UdpPhase::Running {
            self.last_rx_us
        } else {
            self.end_us
        };
        let secs = end.saturating_sub(self.start_us) as f64 / 1e6;
        self.stats.report(secs, self.cfg.extended_report)
    }

    /// What the flow did.
    pub fn outcome(&self) -> UdpOutcome {
        UdpOutcome {
            request: self.request,
            stats: self.stats,
            report: self.report(),
            sent: self.sender.map_or((0, 0), |s| {
                (
                    s.datagrams() + u64::from(s.fins_sent().min(1)),
                    s.bytes_with_fin(),
                )
            }),
            reports_sent: self.reports_sent,
            timed_out: self.timed_out,
            connect_back_refused: self.connect_back_refused,
        }
    }

    /// A datagram from this flow's peer. Returns false if it was not taken (a negative id
    /// with no flow, or a datagram too short for a header before a flow started).
    pub fn on_datagram(&mut self, data: &[u8], now: Micros) -> bool {
        match self.phase {
            UdpPhase::Idle | UdpPhase::Done => {
                let Ok(d) = UdpDatagram::new_checked(data) else {
                    return false;
                };
                let request = TestRequest::from_udp_datagram(data, self.cfg.format);
                if d.seq(request.seqno_64) < 0 {
                    return false;
                }
                self.start(request, now);
                self.count(data, now);
                true
            }
            UdpPhase::Running => {
                self.count(data, now);
                true
            }
            UdpPhase::Reporting => {
                let Ok(d) = UdpDatagram::new_checked(data) else {
                    return false;
                };
                if d.seq(self.request.seqno_64) < 0 && !self.request.no_udp_fin {
                    self.last_rx_us = now;
                    if self.reports_sent.saturating_add(self.reports_due) < self.cfg.max_reports {
                        self.reports_due += 1;
                    }
                }
                true
            }
        }
    }

    fn start(&mut self, request: TestRequest, now: Micros) {
        *self = Self::new(self.cfg);
        self.request = request;
        self.phase = UdpPhase::Running;
        self.start_us = now;
        self.last_rx_us = now;
    }

    fn count(&mut self, data: &[u8], now: Micros) {
        let arrival = self.arrival(now);
        let first = self.stats.received == 0 && self.sender.is_none();
        let Some(seq) = self
            .stats
            .on_datagram_bytes(data, self.request.seqno_64, arrival)
        else {
            return;
        };
        self.last_rx_us = now;
        if first {
            self.begin_test(now);
        }
        if seq < 0 {
            self.end_us = now;
            self.phase = UdpPhase::Reporting;
            if !self.request.no_udp_fin && self.cfg.max_reports > 0 {
                self.reports_due = 1;
            }
        }
    }

    /// The first datagram is in: start what the request asks of the server.
    fn begin_test(&mut self, now: Micros) {
        let r = self.request;
        if r.mode.server_sends_inline() && self.cfg.serve_reverse {
            let len = match r.buf_len {
                0 => DEFAULT_UDP_LEN,
                n => n as usize,
            };
            let mut s = UdpSender::new(UdpSenderConfig {
                len: len.min(self.cfg.max_send_len),
                rate_bps: if r.rate_bps == 0 {
                    DEFAULT_UDP_RATE
                } else {
                    r.rate_bps
                },
                amount: r.amount,
                max_us: self.cfg.max_send_us,
                header: None,
                format: self.cfg.format,
                fin: FinMode::Once,
                wall_offset_us: self.cfg.wall_offset_us,
            });
            s.poll(now);
            self.sender = Some(s);
        }
        if r.mode.connects_back() {
            self.connect_back = if self.cfg.serve_connect_back {
                ConnectBack::for_request(&r, self.cfg.max_send_us)
            } else {
                None
            };
            self.connect_back_refused = self.connect_back.is_none();
        }
    }

    /// Writes the next datagram to send to the peer into `buf`: a report when one is due,
    /// else (`-R`) the next paced data datagram. Returns its length.
    pub fn next_output(&mut self, now: Micros, buf: &mut [u8]) -> Option<usize> {
        if self.reports_due > 0 {
            let out = buf.get_mut(..REPORT_LEN)?;
            out.fill(0);
            let info = self.report();
            let mut view = ServerReport::new_checked(out.get_mut(16..)?).ok()?;
            view.emit(&info);
            self.reports_due -= 1;
            self.reports_sent = self.reports_sent.saturating_add(1);
            return Some(REPORT_LEN);
        }
        if !matches!(self.phase, UdpPhase::Running | UdpPhase::Reporting) {
            return None;
        }
        self.sender.as_mut()?.next_datagram(now, buf)
    }

    /// The connect-back to make, once: at once for `-d`, after the FIN for `-r`.
    pub fn take_connect_back(&mut self) -> Option<ConnectBack> {
        let cb = self.connect_back?;
        if cb.dual || self.phase == UdpPhase::Reporting {
            self.connect_back = None;
            return Some(cb);
        }
        None
    }

    /// Checks the clocks: the watchdog, the linger after the FIN, the `-R` sender.
    pub fn poll(&mut self, now: Micros) {
        if let Some(s) = self.sender.as_mut() {
            s.poll(now);
        }
        let sending = self.sender.is_some_and(|s| s.phase() != UdpSendPhase::Done);
        if self.request.mode == Mode::Reverse && self.sender.is_some() && !sending {
            // A -R flow is over once our FIN is out (2.1.8 runs it without a report).
            if self.phase == UdpPhase::Running {
                self.end_us = now;
            }
            self.phase = UdpPhase::Done;
            return;
        }
        match self.phase {
            UdpPhase::Running => {
                let quiet = now.saturating_sub(self.last_rx_us);
                // A -R flow's client sends only its header datagrams: the flow lasts while
                // we send; the watchdog counts once we are done.
                if quiet >= self.cfg.idle_timeout_us && !sending {
                    self.timed_out = true;
                    self.end_us = self.last_rx_us;
                    self.phase = UdpPhase::Done;
                }
            }
            UdpPhase::Reporting => {
                let quiet = now.saturating_sub(self.last_rx_us);
                if quiet >= self.cfg.linger_us && self.reports_due == 0 && !sending {
                    self.phase = UdpPhase::Done;
                }
            }
            UdpPhase::Idle | UdpPhase::Done => {}
        }
    }

    /// When to poll next.
    pub fn poll_at(&self, now: Micros) -> Option<Micros> {
        if self.reports_due > 0 {
            return Some(now);
        }
        let send = self.sender.and_then(|s| s.poll_at(now));
        let timer = match self.phase {
            UdpPhase::Running => Some(self.last_rx_us.saturating_add(self.cfg.idle_timeout_us)),
            UdpPhase::Reporting => Some(self.last_rx_us.saturating_add(self.cfg.linger_us)),
            UdpPhase::Idle | UdpPhase::Done => None,
        };
        match (send, timer) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// Up to `N` UDP flows on one socket, keyed by the peer's address `P` (any `Copy + Eq`:
/// `smoltcp::wire::IpEndpoint`, `std::net::SocketAddr`).
pub struct UdpServer<P: Copy + Eq, const N: usize> {
    cfg: UdpServerConfig,
    slots: [(Option<P>, UdpServerSession); N],
    finished: [bool; N],
    refused: u32,
}

impl<P: Copy + Eq, const N: usize> UdpServer<P, N> {
    /// A server with room for `N` flows at once.
    pub fn new(cfg: UdpServerConfig) -> Self {
        Self {
            cfg,
            slots: core::array::from_fn(|_| (None, UdpServerSession::new(cfg))),
            finished: [false; N],
            refused: 0,
        }
    }

    /// Datagrams that would have started a flow while every slot was busy (dropped).
    pub fn refused(&self) -> u32 {
        self.refused
    }

    /// The sessions, with their peers (busy or finished).
    pub fn sessions(&self) -> impl Iterator<Item = (P, &UdpServerSession)> {
        self.slots.iter().filter_map(|(p, s)| p.map(|p| (p, s)))
    }

    /// True if any flow is running or reporting.
    pub fn is_busy(&self) -> bool {
        self.slots.iter().any(|(_, s)| s.is_busy())
    }

    /// A datagram from `peer`: to its flow, or a new flow in a free slot. Returns false if
    /// dropped (a stale FIN, a runt, no free slot).
    pub fn on_datagram(&mut self, peer: P, data: &[u8], now: Micros) -> bool {
        if let Some(i) = self
            .slots
            .iter()
            .position(|(p, s)| *p == Some(peer) && s.is_busy())
        {
            return self.slots[i].1.on_datagram(data, now);
        }
        let Some(i) = self.slots.iter().position(|(_, s)| !s.is_busy()) else {
            self.refused = self.refused.saturating_add(1);
            return false;
        };
        let mut s = UdpServerSession::new(self.cfg);
        if !s.on_datagram(data, now) {
            return false;
        }
        self.slots[i] = (Some(peer), s);
        self.finished[i] = false;
        true
    }

    /// The next datagram to send: the peer and its length in `buf`.
    pub fn next_output(&mut self, now: Micros, buf: &mut [u8]) -> Option<(P, usize)> {
        for (p, s) in self.slots.iter_mut() {
            if let Some(peer) = *p {
                if let Some(n) = s.next_output(now, buf) {
                    return Some((peer, n));
                }
            }
        }
        None
    }

    /// A connect-back due (`-r`/`-d`): to the peer's address, at the port it names.
    pub fn take_connect_back(&mut self) -> Option<(P, ConnectBack)> {
        self.slots
            .iter_mut()
            .find_map(|(p, s)| Some(((*p)?, s.take_connect_back()?)))
    }

    /// Checks every flow's clocks.
    pub fn poll(&mut self, now: Micros) {
        for (_, s) in self.slots.iter_mut() {
            s.poll(now);
        }
    }

    /// When to poll next.
    pub fn poll_at(&self, now: Micros) -> Option<Micros> {
        self.slots.iter().filter_map(|(_, s)| s.poll_at(now)).min()
    }

    /// A flow that ended since the last call (its figures, for the host to log); each is
    /// given once.
    pub fn take_finished(&mut self) -> Option<(P, UdpOutcome)> {
        for (i, (p, s)) in self.slots.iter().enumerate() {
            if s.phase() == UdpPhase::Done && !self.finished[i] {
                if let Some(peer) = *p {
                    self.finished[i] = true;
                    return Some((peer, s.outcome()));
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests;
