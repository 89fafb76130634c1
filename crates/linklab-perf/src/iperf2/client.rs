//! The client's side of one iperf 2 TCP connection, sans-IO ([`TcpClientFlow`]): the test
//! header (2.1's 60 bytes, 2.0's 24, or none for `-C`), `-X`'s wait for the version reply,
//! the data for `-t`/`-n` (the header's bytes count against `-n`, as 2.1.8 counts them),
//! `-R` (receive on the one connection) and `--full-duplex` (both), then the write side
//! shut and the connection drained to the server's close.
//!
//! The bytes are stock 2.1.8's: the header as its own write ([`TcpFlow::control_output`]),
//! then `-l` blocks that each begin with the header's bytes, zeros to the end of 2.1.8's
//! header structure (244 bytes), and the digits of their index after that
//! ([`pattern::fill_blocks`]; lwIP's lwiperf checks those header bytes on a `-r`/`-d` test
//! and ends the test when they are not there). A host gives the header a write of its own
//! before any data, as 2.1.8 does: lwiperf also takes the first segment to be the header
//! alone.
//!
//! The first bytes a client receives tell it what answered: a 2.1 server's version reply
//! (`CLIENTHDRACK`), data (`-R`), or — a single iperf3 state byte (PARAM_EXCHANGE) — an
//! iperf3 server, which ends the flow at once with [`ClientEnd::Iperf3Server`].

use super::flow::TcpFlow;
use super::pattern;
use super::request::{Amount, HeaderStyle, Mode, TestRequest};
use super::tcp_sender::TcpSender;
use super::wire::ack::{HeaderAck, LEN as ACK_LEN};
use super::wire::header::TCP_LEN;
use super::wire::DEFAULT_TCP_LEN;
use crate::iperf::wire::state;
use crate::time::Micros;

/// The room 2.1.8 clears for its TCP header at the start of its write buffer before it
/// writes the 60 bytes it sends: `sizeof(struct client_tcp_testhdr)` — the header (24),
/// its extension (36), start time and fq rate (20), isochronous settings (32) and a permit
/// key (2 + 128), 242 bytes padded to 244 (include/payloads.h; Settings.cpp
/// `Settings_GenerateClientHdr`).
pub const V21_HEADER_ROOM: usize = 244;

/// How a client flow runs.
#[derive(Clone, Copy, Debug)]
pub struct TcpClientConfig {
    /// The test (mode, amount, ports, rate) written into the header.
    pub request: TestRequest,
    /// Which header to send.
    pub style: HeaderStyle,
    /// Nothing received or sent for this long ends the flow ([`ClientEnd::Timeout`]).
    pub idle_timeout_us: Micros,
    /// How long to wait for the server's close after ours (2.1.8: max(test time, 2 s)).
    pub drain_us: Micros,
    /// `-l`: the length of the write buffer whose blocks the data is made of (each begins
    /// with the header's bytes); 2.1.8's default is 128 KiB.
    pub block_len: usize,
}

impl TcpClientConfig {
    /// The configuration 2.1.8 uses for `request`: a 2.1 header, a 10 s watchdog, a drain
    /// of the test time but at least 2 s.
    pub fn new(request: TestRequest) -> Self {
        Self {
            request,
            style: HeaderStyle::V21,
            idle_timeout_us: 10_000_000,
            drain_us: request.amount.time_us().unwrap_or(0).max(2_000_000),
            block_len: DEFAULT_TCP_LEN,
        }
    }
}

/// Why a client flow ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ClientEnd {
    /// The test ran to its end.
    Completed,
    /// The server closed before our data was sent (a forward test cut short).
    ServerClosed,
    /// The connection was reset or failed.
    Reset,
    /// Nothing moved for the watchdog's time (`-X` against a server that never replies
    /// ends here too).
    Timeout,
    /// The first bytes were an iperf3 server's, not an iperf 2 server's.
    Iperf3Server,
}

/// One client TCP connection, sans-IO (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct TcpClientFlow {
    cfg: TcpClientConfig,
    head: [u8; TCP_LEN],
    head_len: usize,
    head_sent: usize,
    sender: Option<TcpSender>,
    expect_ack: bool,
    ack: [u8; ACK_LEN],
    ack_filled: usize,
    peer_version: Option<(u32, u32)>,
    received: u64,
    rx_first: Option<Micros>,
    rx_last: Option<Micros>,
    start: Micros,
    last_activity: Micros,
    write_closed_at: Option<Micros>,
    peer_closed: bool,
    end: Option<ClientEnd>,
}

impl TcpClientFlow {
    /// A flow on a connection established at `now`.
    pub fn new(cfg: TcpClientConfig, now: Micros) -> Self {
        let r = cfg.request;
        let mut head = [0u8; TCP_LEN];
        let head_len = r.write(cfg.style, &mut head);
        let sender = (r.mode != Mode::Reverse).then(|| {
            let amount = match r.amount {
                Amount::Bytes(n) => Amount::Bytes(n.saturating_sub(head_len as u64)),
                t => t,
            };
            TcpSender::new(amount, r.rate_bps, u64::MAX)
        });
        Self {
            cfg,
            head,
            head_len,
            head_sent: 0,
            sender,
            // A 2.1 server replies to EXTEND without VERSION2, or to -X.
            expect_ack: cfg.style == HeaderStyle::V21
                && (!r.mode.server_sends_inline() || r.peer_detect),
            ack: [0; ACK_LEN],
            ack_filled: 0,
            peer_version: None,
            received: 0,
            rx_first: None,
            rx_last: None,
            start: now,
            last_activity: now,
            write_closed_at: None,
            peer_closed: false,
            end: None,
        }
    }

    /// How it ended, once it has.
    pub fn end(&self) -> Option<ClientEnd> {
        self.end
    }

    /// The server's version, from its reply.
    pub fn peer_version(&self) -> Option<(u32, u32)> {
        self.peer_version
    }

    /// Data bytes received (`-R`, `--full-duplex`; the reply not counted).
    pub fn received(&self) -> u64 {
        self.received
    }

    /// First and last arrival of data bytes.
    pub fn rx_span(&self) -> Option<(Micros, Micros)> {
        Some((self.rx_first?, self.rx_last?))
    }

    /// Bytes sent, the header's included (as 2.1.8 counts them).
    pub fn sent(&self) -> u64 {
        self.head_sent as u64 + self.sender.map_or(0, |s| s.sent())
    }

    /// The header this flow sends first (and that begins every block of its data).
    pub fn header(&self) -> &[u8] {
        self.head.get(..self.head_len).unwrap_or(&[])
    }

    /// Fills `buf` with the data bytes at `offset` bytes after the header: the stream
    /// [`TcpFlow::fill`] writes, from any point (a host may build its write buffer once).
    pub fn fill_at(&self, offset: u64, buf: &mut [u8]) {
        let room = match self.cfg.style {
            HeaderStyle::V21 => V21_HEADER_ROOM,
            HeaderStyle::V20 | HeaderStyle::None => self.head_len,
        };
        let head = pattern::BlockHead {
            header: self.header(),
            room,
        };
        pattern::fill_blocks(buf, offset, self.cfg.block_len, head);
    }

    /// When the connection was made, and when our last byte went out.
    pub fn tx_span(&self) -> (Micros, Option<Micros>) {
        (self.start, self.sender.and_then(|s| s.last_send()))
    }

    fn finish(&mut self, end: ClientEnd) {
        if self.end.is_none() {
            self.end = Some(end);
            if let Some(s) = self.sender.as_mut() {
                s.stop();
            }
        }
    }

    fn sending(&self) -> bool {
        self.sender.is_some() && self.write_closed_at.is_none()
    }

    fn check_done(&mut self) {
        if self.end.is_some() || !self.peer_closed {
            return;
        }
        let full_duplex = self.cfg.request.mode == Mode::FullDuplex;
        if full_duplex && self.sending() {
            // The server's FIN ends only its direction: ours runs to its end.
            return;
        }
        if self.sending() && !self.sender.is_some_and(|s| s.is_done()) {
            self.finish(ClientEnd::ServerClosed);
        } else if !self.sending() || self.cfg.request.mode == Mode::Reverse {
            self.finish(ClientEnd::Completed);
        }
    }
}

/// True if `b` is a byte an iperf3 server sends first on a connection: PARAM_EXCHANGE,
/// ACCESS_DENIED or SERVER_ERROR.
fn is_iperf3_state(b: u8) -> bool {
    let s = b as i8;
    s == state::PARAM_EXCHANGE || s == state::ACCESS_DENIED || s == state::SERVER_ERROR
}

impl TcpFlow for TcpClientFlow {
    fn on_received(&mut self, data: &[u8], now: Micros) {
        if self.end.is_some() || data.is_empty() {
            return;
        }
        self.last_activity = now;
        let mut rest = data;
        if self.expect_ack && self.ack_filled < ACK_LEN {
            if self.ack_filled == 0 && rest.first().is_some_and(|b| is_iperf3_state(*b)) {
                return self.finish(ClientEnd::Iperf3Server);
            }
            let n = (ACK_LEN - self.ack_filled).min(rest.len());
            if let (Some(dst), Some(src)) = (
                self.ack.get_mut(self.ack_filled..self.ack_filled + n),
                rest.get(..n),
            ) {
                dst.copy_from_slice(src);
            }
            self.ack_filled += n;
            rest = rest.get(n..).unwrap_or(&[]);
            if self.ack_filled == ACK_LEN {
                match HeaderAck::new_checked(&self.ack[..]) {
                    Ok(a) if a.is_valid() => self.peer_version = Some(a.version()),
                    _ => {
                        // Not a reply: data after all (a server that sends at once).
                        self.expect_ack = false;
                        self.received += ACK_LEN as u64;
                        self.rx_first.get_or_insert(now);
                        self.rx_last = Some(now);
                    }
                }
            }
        } else if self.received == 0
            && self.cfg.request.mode != Mode::Reverse
            && self.cfg.request.mode != Mode::FullDuplex
            && rest.first().is_some_and(|b| is_iperf3_state(*b))
        {
            return self.finish(ClientEnd::Iperf3Server);
        }
        if !rest.is_empty() {
            self.received = self.received.saturating_add(rest.len() as u64);
            self.rx_first.get_or_insert(now);
            self.rx_last = Some(now);
        }
    }

    fn on_peer_closed(&mut self, now: Micros) {
        self.peer_closed = true;
        self.last_activity = now;
        self.check_done();
    }

    fn on_reset(&mut self, _now: Micros) {
        let clean = self.write_closed_at.is_some() || self.sender.is_none();
        self.finish(if clean && self.peer_closed {
            ClientEnd::Completed
        } else {
            ClientEnd::Reset
        });
    }

    fn control_output(&self) -> &[u8] {
        if self.end.is_some() {
            return &[];
        }
        self.head.get(self.head_sent..self.head_len).unwrap_or(&[])
    }

    fn control_sent(&mut self, n: usize, now: Micros) {
        self.head_sent = (self.head_sent + n).min(self.head_len);
        if n > 0 {
            self.last_activity = now;
        }
    }

    fn send_allowance(&mut self, now: Micros) -> usize {
        if self.end.is_some() || self.head_sent < self.head_len || self.write_closed_at.is_some() {
            return 0;
        }
        if self.cfg.request.peer_detect && self.expect_ack && self.ack_filled < ACK_LEN {
            return 0;
        }
        self.sender.as_mut().map_or(0, |s| s.allowance(now))
    }

    fn fill(&self, buf: &mut [u8]) {
        if let Some(s) = &self.sender {
            self.fill_at(s.sent(), buf);
        }
    }

    fn on_sent(&mut self, n: usize, now: Micros) {
        if let Some(s) = self.sender.as_mut() {
            s.on_sent(n, now);
        }
        if n > 0 {
            self.last_activity = now;
        }
    }

    fn wants_close_write(&self) -> bool {
        self.end.is_none()
            && self.write_closed_at.is_none()
            && self.head_sent == self.head_len
            && self.sender.is_some_and(|s| s.is_done())
    }

    fn write_closed(&mut self, now: Micros) {
        self.write_closed_at = Some(now);
        self.last_activity = now;
        self.check_done();
    }

    fn poll(&mut self, now: Micros) {
        if self.end.is_some() {
            return;
        }
        if let Some(s) = self.sender.as_mut() {
            s.poll(now);
        }
        if let Some(t) = self.write_closed_at {
            if now >= t.saturating_add(self.cfg.drain_us) {
                // The server kept its side open past the drain: the test is still done.
                return self.finish(ClientEnd::Completed);
            }
        }
        if now.saturating_sub(self.last_activity) >= self.cfg.idle_timeout_us {
            self.finish(ClientEnd::Timeout);
        }
    }

    fn poll_at(&self, now: Micros) -> Option<Micros> {
        if self.end.is_some() {
            return None;
        }
        let mut at = self.last_activity.saturating_add(self.cfg.idle_timeout_us);
        if let Some(t) = self.write_closed_at {
            at = at.min(t.saturating_add(self.cfg.drain_us));
        } else if let Some(s) = self.sender.as_ref().and_then(|s| s.poll_at(now)) {
            at = at.min(s);
        }
        Some(at)
    }

    fn is_finished(&self) -> bool {
        self.end.is_some()
    }

    fn byte_counts(&self) -> (u64, u64) {
        (self.received, self.sent())
    }
}

#[cfg(test)]
mod tests;
