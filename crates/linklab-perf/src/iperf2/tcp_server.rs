//! One TCP connection to an iperf 2 server, sans-IO ([`TcpServerConn`]): the header read
//! (or its absence), the version reply, the bytes counted, the server's own sending for
//! `-R` and `--full-duplex`, the `-r`/`-d` connect-back request, and the end.
//!
//! # Hosting it
//! One `TcpServerConn` per accepted connection (a `-P 3` client opens three); no heap, 120
//! bytes or so. Per turn of the socket loop:
//! 1. received bytes → [`on_received`](TcpServerConn::on_received) (all are consumed and
//!    counted; drop them in place), the peer's FIN → [`on_peer_closed`](TcpServerConn::on_peer_closed),
//!    a reset → [`on_reset`](TcpServerConn::on_reset);
//! 2. [`control_output`](TcpServerConn::control_output) (the 28-byte version reply) is
//!    written first, then [`control_sent`](TcpServerConn::control_sent);
//! 3. [`send_allowance`](TcpServerConn::send_allowance) pattern bytes may be written
//!    (fill them with [`fill`](TcpServerConn::fill)), then [`on_sent`](TcpServerConn::on_sent);
//! 4. [`wants_close_write`](TcpServerConn::wants_close_write): shut the write side
//!    (smoltcp `close()`, std `shutdown(Write)`);
//! 5. [`take_connect_back`](TcpServerConn::take_connect_back): open a connection to the
//!    **peer's own address** at [`ConnectBack::port`] and run a
//!    [`TcpSender`] of [`ConnectBack::amount`] on it, sending no header;
//! 6. [`poll`](TcpServerConn::poll) with the time; sleep until
//!    [`poll_at`](TcpServerConn::poll_at); when [`is_finished`](TcpServerConn::is_finished),
//!    read [`outcome`](TcpServerConn::outcome) and close (abort if it ended by the watchdog
//!    or a refusal).
//!
//! Deadlines: the idle watchdog ([`TcpServerConfig::idle_timeout_us`], nothing received or
//! sent), the end of a timed `-R`/`--full-duplex` send.

use super::request::{Amount, Mode, Protocol, TestRequest};
use super::tcp_sender::TcpSender;
use super::wire::ack::{ACK, LEN as ACK_LEN};
use super::wire::get_u32;
use super::wire::header::{header_len, HeaderLen, TCP_LEN};
use crate::time::Micros;

/// What a server serves and how long it waits; [`Default`] is iperf 2.1.8's behaviour with
/// a 10 s watchdog and a 1-hour cap on what it sends.
#[derive(Clone, Copy, Debug)]
pub struct TcpServerConfig {
    /// Write the version reply when the header asks for one (2.1.8 does; `-X` clients hang
    /// without it).
    pub send_ack: bool,
    /// Serve `-R` (else refuse the connection).
    pub serve_reverse: bool,
    /// Serve `--full-duplex` (else refuse).
    pub serve_full_duplex: bool,
    /// Ask the host to connect back for `-r`/`-d` (else only the forward test runs).
    pub serve_connect_back: bool,
    /// The watchdog: the connection ends after this long without bytes either way.
    pub idle_timeout_us: Micros,
    /// Longest the server sends for `-R`, `--full-duplex` or a connect-back, whatever the
    /// header asks (a hostile `-t` of 2^31 × 10 ms is 248 days).
    pub max_send_us: Micros,
}

impl Default for TcpServerConfig {
    fn default() -> Self {
        Self {
            send_ack: true,
            serve_reverse: true,
            serve_full_duplex: true,
            serve_connect_back: true,
            idle_timeout_us: 10_000_000,
            max_send_us: 3_600_000_000,
        }
    }
}

/// A request to connect back to the client (`-r`, `-d`): to the peer's own address (the
/// host knows it; the header never names an address) at `port`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ConnectBack {
    /// TCP or UDP (as the test).
    pub protocol: Protocol,
    /// The client's listening port (1..=65535; port 0 is refused before this exists).
    pub port: u16,
    /// What to send (a time is already cut to the server's cap).
    pub amount: Amount,
    /// The client's `-l`, 0 for the default (128 KiB TCP, 1470 UDP).
    pub buf_len: u32,
    /// The client's `-b` in bit/s (0: none; UDP uses 1 Mbit/s then).
    pub rate_bps: u64,
    /// `-d`: start at once (else `-r`: after the client's test ended).
    pub dual: bool,
}

impl ConnectBack {
    /// The connect-back a request asks for, `None` if it asks for none or names no usable
    /// port.
    pub fn for_request(r: &TestRequest, max_send_us: Micros) -> Option<Self> {
        if !r.mode.connects_back() {
            return None;
        }
        let amount = match r.amount {
            Amount::Time(_) => Amount::from_us(r.amount.time_us()?.min(max_send_us)),
            b => b,
        };
        Some(Self {
            protocol: r.protocol,
            port: r.connect_back_port()?,
            amount,
            buf_len: r.buf_len,
            rate_bps: r.rate_bps,
            dual: r.mode == Mode::Dual,
        })
    }
}

/// Why a connection ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TcpEnd {
    /// The test ran to its end (the client closed; our sending, if any, finished).
    Completed,
    /// The peer reset the connection (or the host saw it fail).
    Reset,
    /// Nothing moved for the watchdog's time.
    IdleTimeout,
    /// The header asked for something not served (the reason names it).
    Refused(&'static str),
}

/// Where a connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TcpPhase {
    /// Reading the first word or the header.
    Header,
    /// The test runs.
    Running,
    /// Over (see [`TcpEnd`]).
    Finished(TcpEnd),
}

/// What a finished (or running) connection did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TcpOutcome {
    /// The header's request; `None` for a header-less client (a plain test).
    pub request: Option<TestRequest>,
    /// Bytes received, the header's included (as iperf 2 counts them).
    pub bytes_received: u64,
    /// Pattern bytes sent (`-R`, `--full-duplex`).
    pub bytes_sent: u64,
    /// When the connection was accepted.
    pub start_us: Micros,
    /// When the last byte arrived (the receiver's end of the test).
    pub last_rx_us: Micros,
    /// When our last byte went out.
    pub last_tx_us: Option<Micros>,
    /// How it ended, if it has.
    pub end: Option<TcpEnd>,
    /// `-r`/`-d` asked for a connect-back that was refused (port 0 or above 65535, or not
    /// served).
    pub connect_back_refused: bool,
}

/// The sans-IO state of one server-side TCP connection (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct TcpServerConn {
    cfg: TcpServerConfig,
    phase: TcpPhase,
    head: [u8; TCP_LEN],
    head_filled: usize,
    head_want: usize,
    request: Option<TestRequest>,
    received: u64,
    start_us: Micros,
    last_rx_us: Micros,
    last_activity: Micros,
    ack_left: usize,
    sender: Option<TcpSender>,
    write_closed: bool,
    peer_closed: bool,
    connect_back: Option<ConnectBack>,
    connect_back_refused: bool,
}

impl TcpServerConn {
    /// A connection accepted at `now`.
    pub fn new(cfg: TcpServerConfig, now: Micros) -> Self {
        Self {
            cfg,
            phase: TcpPhase::Header,
            head: [0; TCP_LEN],
            head_filled: 0,
            head_want: 4,
            request: None,
            received: 0,
            start_us: now,
            last_rx_us: now,
            last_activity: now,
            ack_left: 0,
            sender: None,
            write_closed: false,
            peer_closed: false,
            connect_back: None,
            connect_back_refused: false,
        }
    }

    /// Where the connection is.
    pub fn phase(&self) -> TcpPhase {
        self.phase
    }

    /// The header's request, once read.
    pub fn request(&self) -> Option<&TestRequest> {
        self.request.as_ref()
    }

    /// True once the connection is over (and any reply still due is written): close it.
    pub fn is_finished(&self) -> bool {
        self.is_over() && self.ack_left == 0
    }

    fn is_over(&self) -> bool {
        matches!(self.phase, TcpPhase::Finished(_))
    }

    /// When bytes last moved either way (for a host choosing which idle test to evict).
    pub fn last_activity(&self) -> Micros {
        self.last_activity
    }

    /// What the connection did so far.
    pub fn outcome(&self) -> TcpOutcome {
        TcpOutcome {
            request: self.request,
            bytes_received: self.received,
            bytes_sent: self.sender.map_or(0, |s| s.sent()),
            start_us: self.start_us,
            last_rx_us: self.last_rx_us,
            last_tx_us: self.sender.and_then(|s| s.last_send()),
            end: match self.phase {
                TcpPhase::Finished(e) => Some(e),
                _ => None,
            },
            connect_back_refused: self.connect_back_refused,
        }
    }

    fn finish(&mut self, end: TcpEnd) {
        if !self.is_over() {
            self.phase = TcpPhase::Finished(end);
            self.ack_left = 0;
        }
    }

    /// Counts received bytes and reads the header from the first of them. All of `data` is
    /// consumed.
    pub fn on_received(&mut self, data: &[u8], now: Micros) {
        if data.is_empty() || self.is_over() {
            return;
        }
        let before = self.received;
        let mut iperf3 = false;
        self.received = self.received.saturating_add(data.len() as u64);
        // Keep the connection's first bytes (the header reader below keeps the same ones)
        // to recognise an iperf3 cookie whether or not they read as a header.
        if let Ok(at) = usize::try_from(before) {
            if at < COOKIE_LEN {
                let n = (COOKIE_LEN - at).min(data.len());
                if let (Some(dst), Some(src)) = (self.head.get_mut(at..at + n), data.get(..n)) {
                    dst.copy_from_slice(src);
                }
                iperf3 = before + n as u64 == COOKIE_LEN as u64
                    && super::detect::is_iperf3_cookie(&self.head);
            }
        }
        self.last_rx_us = now;
        self.last_activity = now;
        let mut rest = data;
        while self.phase == TcpPhase::Header && !rest.is_empty() {
            let take = (self.head_want - self.head_filled).min(rest.len());
            let keep = TCP_LEN.saturating_sub(self.head_filled).min(take);
            if let (Some(dst), Some(src)) = (
                self.head.get_mut(self.head_filled..self.head_filled + keep),
                rest.get(..keep),
            ) {
                dst.copy_from_slice(src);
            }
            self.head_filled += take;
            rest = rest.get(take..).unwrap_or(&[]);
            if self.head_filled == self.head_want {
                self.header_step(now);
            }
        }
        if iperf3 {
            // Refused, but a version reply its first bytes asked for still goes out (an
            // iperf3 client then learns at once that this is an iperf 2 server).
            let ack = self.ack_left;
            self.finish(TcpEnd::Refused(
                "an iperf3 client (its cookie) on the iperf 2 port",
            ));
            self.ack_left = ack;
        }
    }

    /// The first word is in (decide the header's length) or the whole header is.
    fn header_step(&mut self, now: Micros) {
        if self.head_want == 4 {
            match header_len(get_u32(&self.head, 0)) {
                HeaderLen::Bytes(n) if n > 4 => {
                    self.head_want = n;
                    return;
                }
                HeaderLen::TooShort(_) | HeaderLen::Bytes(_) => {
                    return self.finish(TcpEnd::Refused("bad header length"));
                }
                HeaderLen::None => {
                    // No header: these bytes were test data.
                    self.phase = TcpPhase::Running;
                    return;
                }
            }
        }
        let kept = self.head_filled.min(TCP_LEN);
        let Some(mut r) = self
            .head
            .get(..kept)
            .and_then(TestRequest::from_tcp_header_prefix)
        else {
            return self.finish(TcpEnd::Refused("bad header"));
        };
        r.header_len = self.head_want;
        self.start_request(r, now);
    }

    fn start_request(&mut self, r: TestRequest, now: Micros) {
        self.request = Some(r);
        self.phase = TcpPhase::Running;
        if let Some(why) = r.unsupported {
            return self.finish(TcpEnd::Refused(why));
        }
        match r.mode {
            Mode::Reverse if !self.cfg.serve_reverse => {
                return self.finish(TcpEnd::Refused("-R is not served"))
            }
            Mode::FullDuplex if !self.cfg.serve_full_duplex => {
                return self.finish(TcpEnd::Refused("--full-duplex is not served"))
            }
            _ => {}
        }
        if r.wants_ack && self.cfg.send_ack {
            self.ack_left = ACK_LEN;
        }
        if r.mode.server_sends_inline() {
            let mut s = TcpSender::new(r.amount, r.rate_bps, self.cfg.max_send_us);
            s.start(now);
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

    /// The peer sent its FIN: the client's test is over. A plain test ends here; `-R` and
    /// `--full-duplex` end once our sending is done too.
    pub fn on_peer_closed(&mut self, now: Micros) {
        if self.peer_closed {
            return;
        }
        self.peer_closed = true;
        self.last_activity = now;
        if self.phase == TcpPhase::Header && self.head_filled > 0 && self.head_want > 4 {
            // Cut short inside the header: what came is data of a header-less test.
            self.phase = TcpPhase::Running;
        }
        self.check_done();
    }

    /// The connection was reset or failed.
    pub fn on_reset(&mut self, _now: Micros) {
        if let Some(s) = self.sender.as_mut() {
            s.stop();
        }
        self.finish(TcpEnd::Reset);
        self.ack_left = 0;
    }

    fn check_done(&mut self) {
        // With a sender, the end waits for the host to have shut the write side.
        let sending = self.sender.is_some() && !self.write_closed;
        if self.peer_closed && !sending && self.ack_left == 0 {
            self.finish(TcpEnd::Completed);
        }
    }

    /// Control bytes to write before any pattern: the version reply, if due.
    pub fn control_output(&self) -> &[u8] {
        ACK.get(ACK_LEN - self.ack_left..).unwrap_or(&[])
    }

    /// `n` bytes of [`control_output`](Self::control_output) were written.
    pub fn control_sent(&mut self, n: usize, now: Micros) {
        self.ack_left = self.ack_left.saturating_sub(n);
        if n > 0 {
            self.last_activity = now;
        }
        self.check_done();
    }

    /// Pattern bytes that may be written now (`-R`, `--full-duplex`); 0 while the reply is
    /// pending, when there is nothing to send, or while paced.
    pub fn send_allowance(&mut self, now: Micros) -> usize {
        if self.ack_left > 0 || self.is_over() || self.write_closed {
            return 0;
        }
        self.sender.as_mut().map_or(0, |s| s.allowance(now))
    }

    /// Fills `buf` with the pattern bytes that come next.
    pub fn fill(&self, buf: &mut [u8]) {
        if let Some(s) = &self.sender {
            s.fill(buf);
        }
    }

    /// `n` pattern bytes were written.
    pub fn on_sent(&mut self, n: usize, now: Micros) {
        if let Some(s) = self.sender.as_mut() {
            s.on_sent(n, now);
            if n > 0 {
                self.last_activity = now;
            }
        }
    }

    /// True when our sending is done and the write side should be shut (then call
    /// [`write_closed`](Self::write_closed)).
    pub fn wants_close_write(&self) -> bool {
        !self.write_closed && !self.is_over() && self.sender.is_some_and(|s| s.is_done())
    }

    /// The host shut the write side.
    pub fn write_closed(&mut self) {
        self.write_closed = true;
        self.check_done();
    }

    /// The connect-back to make, once: at once for `-d`, after the client's test for `-r`.
    pub fn take_connect_back(&mut self) -> Option<ConnectBack> {
        let cb = self.connect_back?;
        let due = cb.dual || matches!(self.phase, TcpPhase::Finished(TcpEnd::Completed));
        if due {
            self.connect_back = None;
            return Some(cb);
        }
        None
    }

    /// Checks the clocks: the end of a timed send, the watchdog.
    pub fn poll(&mut self, now: Micros) {
        if self.is_over() {
            return;
        }
        if let Some(s) = self.sender.as_mut() {
            s.poll(now);
        }
        if now.saturating_sub(self.last_activity) >= self.cfg.idle_timeout_us {
            if let Some(s) = self.sender.as_mut() {
                s.stop();
            }
            return self.finish(TcpEnd::IdleTimeout);
        }
        self.check_done();
    }

    /// When to poll next: the watchdog, or the sender's next step.
    pub fn poll_at(&self, now: Micros) -> Option<Micros> {
        if self.is_over() {
            return None;
        }
        let dog = self.last_activity.saturating_add(self.cfg.idle_timeout_us);
        let send = self
            .sender
            .filter(|_| !self.write_closed)
            .and_then(|s| s.poll_at(now));
        Some(send.map_or(dog, |s| s.min(dog)))
    }
}

/// Length of an iperf3 control cookie: 36 characters of its alphabet and a NUL.
const COOKIE_LEN: usize = crate::iperf::wire::COOKIE_SIZE;

#[cfg(test)]
mod tests;
