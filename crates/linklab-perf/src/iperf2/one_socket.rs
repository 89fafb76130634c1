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
        if !sock.is_open() {
            // The last stream's socket closed (or was reset before it ended).
            if let Some(mut conn) = self.conn.take().filter(|c| !c.is_finished()) {
                conn.on_reset(now);
                self.ended(&conn);
            }
            if !sock.rst_pending() {
                let _ = sock.listen(self.port);
            }
            return;
        }
        if matches!(sock.state(), TcpState::Listen | TcpState::SynReceived) {
            return;
        }
        let conn = self.conn.get_or_insert_with(|| {
            self.counters.tests += 1;
            self.counters.streams += 1;
            TcpServerConn::new(self.cfg, now)
        });
        if conn.is_finished() {
            // Counted; the socket is closing.
            return;
        }
        let turn = serve_conn(conn, sock, now);
        let c = &mut self.counters;
        c.bytes_received = c.bytes_received.saturating_add(turn.received as u64);
        c.bytes_sent = c.bytes_sent.saturating_add(turn.sent as u64);
        if conn.is_finished() {
            let conn = *conn;
            self.ended(&conn);
        }
    }

    /// Counts a stream that ended, once.
    fn ended(&mut self, conn: &TcpServerConn) {
        if conn.outcome().end == Some(TcpEnd::Completed) {
            self.counters.tests_done += 1;
        } else {
            linklab_fmt::debug!("iperf2: stream ended {:?}", conn.outcome().end);
            self.counters.tests_failed += 1;
        }
    }

    /// When to call [`serve`](Self::serve) regardless of traffic: the watchdog, the end of
    /// a timed `-R`.
    pub fn poll_at(&self) -> Option<Micros> {
        self.conn.and_then(|c| c.poll_at(self.now))
    }
}
