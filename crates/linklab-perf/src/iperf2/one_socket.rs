//! iperf 2's TCP server on one socket of any stack ([`TcpOps`]), feature `iperf2-tcp`: what
//! lwIP's lwiperf serves, for an image with lwIP's feature set. One stream at a time — the
//! client's test received and dropped in place, `-R` and `--full-duplex` sent back on it,
//! the version reply — over one socket that listens again when the stream is over.
//!
//! What it leaves to the full server ([`super::pool`], feature `iperf2`): a client's further
//! `-P` streams, and any client while a stream runs, find nothing listening and get the
//! stack's RST (`connect failed: Connection refused`); `-r`/`-d` run their forward half
//! only (no connect-back: the client waits for it and then reports it missing); no UDP.

use super::pool::Iperf2Counters;
use super::tcp_socket::serve_conn;
use super::{TcpEnd, TcpServerConfig, TcpServerConn};
use crate::iperf::stream::Micros;
use crate::socket::{TcpOps, TcpState};

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
    /// Call whenever the socket may have changed, and at [`poll_at`](Self::poll_at).
    pub fn serve(&mut self, sock: &mut impl TcpOps, now: Micros) {
        self.now = now;
        // The stream's turn first, whatever the socket's state: a stream whose socket went
        // from FIN-WAIT-1 to TIME-WAIT between two calls (both FINs crossed) ends completed,
        // one whose socket was reset ends failed.
        if self.conn.is_some_and(|c| !c.is_finished()) {
            self.turn(sock, now);
        }
        if !sock.is_open() {
            // The last stream's socket closed (or was reset): listen for the next.
            self.conn = None;
            if !sock.rst_pending() {
                let _ = sock.listen(self.port);
            }
            return;
        }
        if self.conn.is_none() && !matches!(sock.state(), TcpState::Listen | TcpState::SynReceived)
        {
            // A connection arrived: a test's stream.
            self.counters.tests += 1;
            self.counters.streams += 1;
            self.conn = Some(TcpServerConn::new(self.cfg, now));
            self.turn(sock, now);
        }
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
            let end = conn.outcome().end;
            self.ended(end);
        }
    }

    /// Counts a stream that ended (called once per stream: at its end, a stream gets no
    /// more turns).
    fn ended(&mut self, end: Option<TcpEnd>) {
        if end == Some(TcpEnd::Completed) {
            self.counters.tests_done += 1;
        } else {
            linklab_fmt::debug!("iperf2: stream ended {:?}", end);
            self.counters.tests_failed += 1;
        }
    }

    /// When to call [`serve`](Self::serve) regardless of traffic: the watchdog, the end of
    /// a timed `-R`.
    pub fn poll_at(&self) -> Option<Micros> {
        self.conn.and_then(|c| c.poll_at(self.now))
    }
}
