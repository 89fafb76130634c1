//! The pool's TCP sockets: a listener taking a client's stream, the stream itself, a
//! connect-back, and closing.

use super::{
    Back, Handshake, Iperf2Pool, Iperf2Sockets, Role, BACK_RETRY_US, CLOSE_LINGER_US,
    CONNECT_TIMEOUT_US,
};
use crate::data_memory::{Share, MIN_RX};
use crate::iperf2::request::Protocol;
use crate::iperf2::tcp_socket::serve_conn;
use crate::iperf2::{TcpEnd, TcpSender, TcpServerConn};
use crate::rules::{Peer, RST_GRACE_MS};
use crate::socket::{TcpOps, TcpState};
use crate::time::Micros;

/// [`RST_GRACE_MS`] in microseconds.
const RST_GRACE_US: Micros = RST_GRACE_MS * 1000;

impl<E: Copy + Eq, const M: usize> Iperf2Pool<E, M> {
    /// Services TCP socket `i` in its role.
    pub(super) fn service_tcp<P: Iperf2Sockets<Endpoint = E>>(
        &mut self,
        s: &mut P,
        i: usize,
        now: Micros,
    ) {
        match self.roles[i] {
            Role::Parked => {}
            Role::Listening(h) => self.service_listener(s, i, h, now),
            Role::Stream(_) => self.service_stream(s, i, now),
            Role::Back(b) => self.service_back(s, i, b, now),
            Role::Closing { since } => self.service_closing(s, i, since, now),
        }
    }

    /// A listening socket: a connection on it starts a test, or joins the test of the same
    /// client (its next `-P` stream); one from anyone else while a test runs is reset.
    fn service_listener<P: Iperf2Sockets<Endpoint = E>>(
        &mut self,
        s: &mut P,
        i: usize,
        mut h: Handshake,
        now: Micros,
    ) {
        let peer = {
            let mut sock = s.tcp(i);
            if !sock.is_open() {
                if !sock.rst_pending() {
                    let _ = sock.listen(self.port);
                }
                self.roles[i] = Role::Listening(Handshake::default());
                return;
            }
            match sock.state() {
                TcpState::Listen => {
                    self.roles[i] = Role::Listening(Handshake::default());
                    return;
                }
                TcpState::SynReceived => {
                    h.seen.get_or_insert(now);
                    self.roles[i] = Role::Listening(h);
                    return;
                }
                _ => {}
            }
            sock.peer()
        };
        let client = peer.map(|p| p.addr);
        let joins = self.test.is_some_and(|t| {
            t.protocol == Protocol::Tcp && t.client.is_some() && t.client == client
        });
        if !joins && self.test.is_some() && self.test_evictable(now) {
            // Another client while the test's own went idle: its test gives way.
            self.evict_test(s, now);
            self.counters.tests += 1;
            self.test = self.test_record(Protocol::Tcp, client, now);
        }
        let accepted = joins
            || self
                .test
                .is_some_and(|t| t.accepted == 0 && t.client == client)
            || (self.test.is_none() && self.start_test(s, Protocol::Tcp, client, now));
        if !accepted {
            linklab_fmt::debug!("iperf2: busy, a connection reset");
            s.tcp(i).abort();
            self.counters.refused += 1;
            self.roles[i] = Role::Closing { since: now };
            return;
        }
        s.set_busy(i);
        if let Some(t) = self.test.as_mut() {
            t.accepted += 1;
            t.last_progress = now;
        }
        self.counters.streams += 1;
        self.roles[i] = Role::Stream(TcpServerConn::new(self.tcp_cfg, now));
        self.service_stream(s, i, now);
    }

    /// A client's stream: counts what arrives (dropped in place), writes the version reply
    /// and what `-R`/`--full-duplex` send, asks for the connect-back, closes at the end.
    fn service_stream<P: Iperf2Sockets<Endpoint = E>>(&mut self, s: &mut P, i: usize, now: Micros) {
        let Role::Stream(mut conn) = self.roles[i] else {
            return;
        };
        let mut sock = s.tcp(i);
        // Before the turn, which may close the socket (and forget the peer).
        let peer = sock.peer();
        let turn = serve_conn(&mut conn, &mut sock, now);
        let outcome = conn.outcome();
        drop(sock);
        self.count_bytes(turn.received, turn.sent, now);
        if let (Some(r), Some(t)) = (conn.request(), self.test.as_mut()) {
            let announced = usize::try_from(r.threads).unwrap_or(M).clamp(1, M);
            t.threads = Some(t.threads.unwrap_or(0).max(announced));
        }
        if let Some(cb) = turn.connect_back {
            // To the address this connection came from, at the port its header named.
            let queued = match (cb.protocol, peer) {
                (Protocol::Tcp, Some(p)) => self
                    .pending
                    .push((
                        Peer {
                            addr: p.addr,
                            port: cb.port,
                        },
                        cb,
                        now,
                    ))
                    .is_ok(),
                _ => false,
            };
            if !queued {
                self.fail();
            }
        }
        if conn.is_finished() {
            if outcome.end != Some(TcpEnd::Completed) || outcome.connect_back_refused {
                linklab_fmt::debug!("iperf2: stream ended {:?}", outcome.end);
                self.fail();
            }
            self.roles[i] = Role::Closing { since: now };
        } else {
            self.roles[i] = Role::Stream(conn);
        }
    }

    /// A connect-back: waits for its handshake, sends its amount, closes.
    fn service_back<P: Iperf2Sockets<Endpoint = E>>(
        &mut self,
        s: &mut P,
        i: usize,
        mut b: Back,
        now: Micros,
    ) {
        let mut sent = 0;
        let mut sock = s.tcp(i);
        let role = match sock.state() {
            TcpState::SynSent | TcpState::SynReceived
                if now.saturating_sub(b.since) < CONNECT_TIMEOUT_US =>
            {
                Role::Back(b)
            }
            TcpState::Established | TcpState::CloseWait => {
                if !b.connected {
                    b.connected = true;
                    b.sender.start(now);
                }
                while sock.can_send() {
                    let allowed = b.sender.allowance(now);
                    if allowed == 0 {
                        break;
                    }
                    match sock.send(|buf| buf.len().min(allowed)) {
                        0 => break,
                        n => {
                            b.sender.on_sent(n, now);
                            sent += n;
                        }
                    }
                }
                b.sender.poll(now);
                if b.sender.is_done() {
                    sock.close();
                    Role::Closing { since: now }
                } else {
                    Role::Back(b)
                }
            }
            // Refused before it connected, with time left: try again a little later (the
            // socket keeps its slice; a new local port).
            TcpState::Closed
                if !b.connected && now.saturating_sub(b.since) < CONNECT_TIMEOUT_US =>
            {
                match b.retry_at {
                    None => b.retry_at = Some(now + BACK_RETRY_US),
                    Some(at) if now >= at => {
                        b.retry_at = None;
                        drop(sock);
                        let port = self.take_local_port();
                        if !s.connect(i, b.to, port) {
                            s.release(i);
                            self.roles[i] = Role::Parked;
                            self.fail();
                            return;
                        }
                        self.roles[i] = Role::Back(b);
                        return;
                    }
                    Some(_) => {}
                }
                Role::Back(b)
            }
            // Reset after it connected, or never answered.
            _ => {
                linklab_fmt::debug!("iperf2: connect-back failed");
                sock.abort();
                self.roles[i] = Role::Closing { since: now };
                drop(sock);
                self.fail();
                return;
            }
        };
        drop(sock);
        self.roles[i] = role;
        self.count_bytes(0, sent, now);
    }

    /// A closing socket: its slice goes back once it is closed (a RST of it sent, or after
    /// the grace), or once its peer did not close within the linger.
    fn service_closing<P: Iperf2Sockets<Endpoint = E>>(
        &mut self,
        s: &mut P,
        i: usize,
        since: Micros,
        now: Micros,
    ) {
        let waited = now.saturating_sub(since);
        let mut sock = s.tcp(i);
        match sock.state() {
            TcpState::Closed if sock.rst_pending() && waited < RST_GRACE_US => {}
            TcpState::Closed | TcpState::TimeWait | TcpState::Listen => {
                drop(sock);
                s.release(i);
                self.roles[i] = Role::Parked;
            }
            TcpState::CloseWait => sock.close(),
            // The peer did not close: reset it, and wait for the RST to leave.
            _ if waited >= CLOSE_LINGER_US => {
                sock.abort();
                self.roles[i] = Role::Closing { since: now };
            }
            _ => {}
        }
    }

    /// Opens the connect-backs asked for, each over a parked socket and a slice with a send
    /// buffer; one that finds neither for [`CONNECT_TIMEOUT_US`] fails its test.
    pub(super) fn open_connect_backs<P: Iperf2Sockets<Endpoint = E>>(
        &mut self,
        s: &mut P,
        n: usize,
        now: Micros,
    ) {
        while let Some(&(to, cb, since)) = self.pending.first() {
            if now.saturating_sub(since) >= CONNECT_TIMEOUT_US {
                self.pending.remove(0);
                self.fail();
                continue;
            }
            let Some(i) = (0..n).find(|&i| matches!(self.roles[i], Role::Parked)) else {
                return;
            };
            let share = Share {
                rx: MIN_RX,
                tx: self.sizes.tx,
            };
            if !s.prepare(i, share, false) {
                return;
            }
            let port = self.take_local_port();
            self.pending.remove(0);
            if !s.connect(i, to, port) {
                s.release(i);
                self.fail();
                continue;
            }
            linklab_fmt::debug!("iperf2: connecting back to port {}", to.port);
            self.counters.connect_backs += 1;
            self.roles[i] = Role::Back(Back {
                sender: TcpSender::new(cb.amount, cb.rate_bps, self.tcp_cfg.max_send_us),
                since: now,
                connected: false,
                to,
                retry_at: None,
            });
        }
    }

    /// The local port of the next connect-back (ephemeral ports from 49 152, wrapping).
    fn take_local_port(&mut self) -> u16 {
        let port = self.next_port;
        self.next_port = port.checked_add(1).unwrap_or(49_152);
        port
    }

    /// Counts bytes moved at `now`.
    fn count_bytes(&mut self, received: usize, sent: usize, now: Micros) {
        self.counters.bytes_received += received as u64;
        self.counters.bytes_sent += sent as u64;
        if received + sent > 0 {
            self.progress(now);
        }
    }
}
