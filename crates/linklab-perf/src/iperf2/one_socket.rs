//! iperf 2's TCP server on one socket of any stack ([`TcpOps`]), feature `iperf2-tcp`: what
//! lwIP's lwiperf serves, for an image with lwIP's feature set. One stream at a time — the
//! client's test received and dropped in place, `-R` and `--full-duplex` sent back on it,
//! the version reply — over one socket that listens again when the stream is over.
//!
//! What it leaves to the full server ([`super::pool`], feature `iperf2`): a client's further
//! `-P` streams, and any client while a stream runs, find nothing listening and get the
//! stack's RST (`connect failed: Connection refused`); `-r`/`-d` run their forward half
//! only (no connect-back: the client waits for it and then reports it missing, and the test
//! counts as failed); no UDP.
//!
//! The socket listens again as soon as its last connection is closed and its RST (if any) is
//! out: [`OneSocketServer::poll_at`] asks for the pass after the one that reset it, gives a
//! RST that cannot leave (to a peer that never answers ARP) [`RST_GRACE_MS`], and looks
//! every second at a socket the stack may close on its own timer (a handshake given up, a
//! closing connection whose peer went).

use super::pool::Iperf2Counters;
use super::tcp_socket::serve_conn;
use super::{TcpEnd, TcpServerConfig, TcpServerConn};
use crate::rules::RST_GRACE_MS;
use crate::socket::{TcpOps, TcpState};
use crate::time::Micros;

/// How long a closed socket waits for its RST to leave before it listens anyway (a RST to a
/// peer that never answers ARP, a spoofed SYN's, never leaves).
const RST_GRACE_US: Micros = RST_GRACE_MS * 1000;

/// How often a socket that neither listens nor carries a stream (a handshake, a closing
/// connection) is looked at: the stack may close it on its own timer, with no frame to wake
/// the host.
const RECHECK_US: Micros = 1_000_000;

/// iperf 2's TCP server on one socket (see the module docs).
#[derive(Clone, Copy, Debug)]
pub struct OneSocketServer {
    port: u16,
    cfg: TcpServerConfig,
    /// The stream on the socket, while one is carried; kept until the socket closes.
    conn: Option<TcpServerConn>,
    counters: Iperf2Counters,
    /// The time of the last [`serve`](Self::serve).
    now: Micros,
    /// Since when the socket is closed and not listening yet (its RST to leave first).
    closed_since: Option<Micros>,
    /// The socket listened at the end of the last [`serve`](Self::serve).
    listening: bool,
}

impl OneSocketServer {
    /// A server on `port` (iperf 2's is [`super::DEFAULT_PORT`]).
    pub fn new(port: u16) -> Self {
        Self {
            port,
            cfg: TcpServerConfig {
                serve_connect_back: false,
                idle_timeout_us: crate::rules::IDLE_TIMEOUT_MS * 1000,
                ..TcpServerConfig::default()
            },
            conn: None,
            counters: Iperf2Counters::default(),
            now: 0,
            closed_since: None,
            listening: false,
        }
    }

    /// The server's counters (of [`Iperf2Counters`], those of a one-stream server: tests,
    /// done, failed, streams, bytes).
    pub fn counters(&self) -> Iperf2Counters {
        self.counters
    }

    /// Streams carried now: 0 or 1.
    pub fn open_streams(&self) -> usize {
        usize::from(self.conn.is_some_and(|c| !c.is_finished()))
    }

    /// Runs the server over `sock` at `now`: listens (again) when the socket is closed,
    /// takes a connection that arrived as a test's stream, serves it, closes it at its end.
    /// Call whenever the socket may have changed, and by [`poll_at`](Self::poll_at).
    pub fn serve(&mut self, sock: &mut impl TcpOps, now: Micros) {
        self.now = now;
        // The stream's turn first, whatever the socket's state: a stream whose socket went
        // from FIN-WAIT-1 to TIME-WAIT between two calls (both FINs crossed) ends completed,
        // one whose socket was reset ends failed.
        if self.conn.is_some_and(|c| !c.is_finished()) {
            self.turn(sock, now);
        }
        if !sock.is_open() {
            self.listen_if_closed(sock, now);
            return;
        }
        self.closed_since = None;
        self.listening = sock.state() == TcpState::Listen;
        if self.conn.is_none() && !matches!(sock.state(), TcpState::Listen | TcpState::SynReceived)
        {
            // A connection arrived: a test's stream.
            self.counters.tests += 1;
            self.counters.streams += 1;
            self.conn = Some(TcpServerConn::new(self.cfg, now));
            self.turn(sock, now);
        }
    }

    /// Listens again if the socket is closed — its last stream over or reset, or a handshake
    /// the stack gave up — once its RST is out, or after the grace. [`serve`](Self::serve)
    /// does this too; call it also before the stack takes in frames, so that a client's SYN
    /// that came right after a reset finds the socket listening rather than closed (a RST:
    /// the host was busy and the pass that listens came after the SYN).
    pub fn listen_if_closed(&mut self, sock: &mut impl TcpOps, now: Micros) {
        if sock.is_open() {
            return;
        }
        self.now = now;
        if self.conn.take().is_some_and(|c| !c.is_finished()) {
            self.ended(false);
        }
        let since = *self.closed_since.get_or_insert(now);
        let rst_out = !sock.rst_pending() || now.saturating_sub(since) >= RST_GRACE_US;
        if rst_out && sock.listen(self.port) {
            self.closed_since = None;
        }
        self.listening = self.closed_since.is_none();
    }

    /// The stream's turn over the socket; counts its bytes, and its end once.
    fn turn(&mut self, sock: &mut impl TcpOps, now: Micros) {
        let Some(conn) = self.conn.as_mut() else {
            return;
        };
        let turn = serve_conn(conn, sock, now);
        let c = &mut self.counters;
        c.bytes_received = c.bytes_received.saturating_add(turn.received as u64);
        c.bytes_sent = c.bytes_sent.saturating_add(turn.sent as u64);
        if conn.is_finished() {
            let o = conn.outcome();
            // A `-r`/`-d` test's client waits for a connect-back this server does not make:
            // the test failed for it.
            let done = o.end == Some(TcpEnd::Completed) && !o.connect_back_refused;
            if !done {
                linklab_fmt::debug!("iperf2: stream ended {:?}", o.end);
            }
            self.ended(done);
        }
    }

    /// Counts a stream that ended (once per stream: an ended stream gets no more turns).
    fn ended(&mut self, done: bool) {
        if done {
            self.counters.tests_done += 1;
        } else {
            self.counters.tests_failed += 1;
        }
    }

    /// When to call [`serve`](Self::serve) regardless of traffic: the watchdog, the end of
    /// a timed `-R`; right after the call that closed the socket (its RST leaves with the
    /// stack's next egress, then the socket may listen), else at the end of the grace; every
    /// second while the socket neither listens nor carries a stream.
    pub fn poll_at(&self) -> Option<Micros> {
        match (self.closed_since, self.conn) {
            (Some(since), _) if since == self.now => Some(self.now),
            (Some(since), _) => Some(since.saturating_add(RST_GRACE_US)),
            (None, Some(c)) if !c.is_finished() => c.poll_at(self.now),
            (None, None) if self.listening => None,
            _ => Some(self.now.saturating_add(RECHECK_US)),
        }
    }
}
