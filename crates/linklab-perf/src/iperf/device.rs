//! smoltcp adapter (feature `smoltcp`): an iperf3 server for a device, over sockets the
//! caller owns in a `smoltcp::iface::SocketSet`. No heap; data moves zero-copy through the
//! sockets' own buffers (received TCP bytes are counted and dropped in place, sent TCP
//! bytes are claimed in the transmit ring without copying).
//!
//! # What it needs
//! - `N >= 3` TCP sockets (handles in `tcp`), all of which the server makes listen on the
//!   port: one carries the control connection, one stays listening so a second client can
//!   be answered ACCESS_DENIED, the rest carry TCP data streams. A test with `-P p` needs
//!   `p` data sockets (`2p` with `--bidir`), so `N = 2 + 2p` covers everything up to `p`.
//!   At most [`MAX_TCP_SOCKETS`]. Give data sockets large buffers (the TCP window is the
//!   receive buffer), control sockets can be small (1 KiB rx / 1 KiB tx is plenty... but the
//!   sockets are interchangeable, so size all alike).
//! - One UDP socket (handle `udp`), bound by the server to the port: UDP streams are told
//!   apart by the peer's address. Its packet buffers bound the UDP burst it absorbs.
//! - Two JSON buffers for the [`Session`] (`rx` >= 8 KiB accepts any parameter document;
//!   `tx` >= 4 KiB holds results for 16 streams).
//!
//! # Main loop
//! ```ignore
//! let mut server = SmoltcpIperfServer::new(&tcp_handles, udp_handle, 5201, &mut rx, &mut tx);
//! loop {
//!     iface.poll(now, &mut device, &mut sockets);
//!     server.poll(&mut sockets, now);
//!     let wake = [iface.poll_at(now, &sockets), server.poll_at()].into_iter().flatten().min();
//!     // sleep until `wake` or the next packet
//! }
//! ```

use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{IpAddress, IpEndpoint};

use crate::evict::{idlest, Candidate, Kind};
use crate::lifetime::{candidate, evict, reclaims, relisten, EVICT_GRACE};

use super::errors::{errno, i_errno};
use super::json::{Params, Protocol};
use super::report::TestReport;
use super::session::{Failure, Phase, Session};
use super::stream::Micros;
use super::wire::{self, COOKIE_SIZE, MAX_STREAMS};

/// Most TCP sockets the server can manage.
pub const MAX_TCP_SOCKETS: usize = 2 + MAX_STREAMS;
/// How long a new connection may take to present its cookie.
const COOKIE_TIMEOUT_US: Micros = 5_000_000;

/// What a TCP socket of the pool is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Listening (or about to).
    Listening,
    /// Connected, reading the 37-byte cookie of a would-be data stream.
    Pending { got: usize, since: Micros },
    /// The control connection of the current test.
    Control,
    /// Data stream `idx` of the current test.
    Data(usize),
    /// Being answered ACCESS_DENIED.
    Denying,
    /// Closing (since then); re-listens once closed.
    Closing { since: Micros },
}

/// Counters of a device server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ServerCounters {
    /// Tests that completed normally.
    pub tests_done: u32,
    /// Tests that ended with a failure.
    pub tests_failed: u32,
    /// Connections answered with ACCESS_DENIED.
    pub denied: u32,
    /// Half-open or closing sockets reset to make room for a new connection.
    pub reclaimed: u32,
    /// Idle connections reset for a new client: a test that had not started (or had ended)
    /// and made no progress for the grace, or a would-be stream that sent no cookie.
    pub evicted: u32,
}

/// An iperf3 server over smoltcp sockets (see the module docs for what it needs).
pub struct SmoltcpIperfServer<'a> {
    session: Session<'a>,
    tcp: heapless::Vec<SocketHandle, MAX_TCP_SOCKETS>,
    udp: SocketHandle,
    port: u16,
    slots: [Slot; MAX_TCP_SOCKETS],
    cookies: [[u8; COOKIE_SIZE]; MAX_TCP_SOCKETS],
    udp_peers: [Option<IpEndpoint>; MAX_STREAMS],
    counters: ServerCounters,
    last: Option<Result<TestReport, Failure>>,
    now: Micros,
}

fn micros(t: Instant) -> Micros {
    t.total_micros().max(0) as Micros
}

fn instant(t: Micros) -> Instant {
    Instant::from_micros(t.min(i64::MAX as u64) as i64)
}

impl<'a> SmoltcpIperfServer<'a> {
    /// A server on `port` over the TCP sockets `tcp` (3..=[`MAX_TCP_SOCKETS`]; extra
    /// handles are ignored) and the UDP socket `udp`, with JSON buffers `rx` and `tx`.
    pub fn new(
        tcp: &[SocketHandle],
        udp: SocketHandle,
        port: u16,
        rx: &'a mut [u8],
        tx: &'a mut [u8],
    ) -> Self {
        let n = tcp.len().min(MAX_TCP_SOCKETS);
        let mut session = Session::server(rx, tx);
        // What smoltcp cannot do is refused as iperf3 refuses an option its socket
        // rejects; `--fq-rate` is paced by the session, as smoltcp has no socket pacing.
        session.set_review_params(true);
        session.set_app_fq_pacing(true);
        Self {
            session,
            tcp: heapless::Vec::from_slice(&tcp[..n]).unwrap_or_default(),
            udp,
            port,
            slots: [Slot::Listening; MAX_TCP_SOCKETS],
            cookies: [[0; COOKIE_SIZE]; MAX_TCP_SOCKETS],
            udp_peers: [None; MAX_STREAMS],
            counters: ServerCounters::default(),
            last: None,
            now: 0,
        }
    }

    /// The test session (phase, parameters, live counters).
    pub fn session(&self) -> &Session<'a> {
        &self.session
    }

    /// Tests done, failed, connections denied.
    pub fn counters(&self) -> ServerCounters {
        self.counters
    }

    /// Takes the outcome of the last finished test, if any is new.
    pub fn take_outcome(&mut self) -> Option<Result<TestReport, Failure>> {
        self.last.take()
    }

    /// Number of TCP sockets currently carrying data streams (0 between tests).
    pub fn open_streams(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s, Slot::Data(_)))
            .count()
    }

    /// When the server next needs [`poll`](Self::poll) even without network activity.
    pub fn poll_at(&self) -> Option<Instant> {
        let pending = self.slots.iter().any(|s| matches!(s, Slot::Pending { .. }));
        let t = self.session.poll_at();
        let t = if pending {
            Some(t.unwrap_or(u64::MAX).min(self.now + COOKIE_TIMEOUT_US))
        } else {
            t
        };
        t.map(|t| Instant::from_micros(t.min(i64::MAX as u64) as i64))
    }

    /// Called before the stack sees a SYN for `port`: when it is this server's port and no
    /// socket listens, frees one so the SYN finds a listener ([`crate::evict::idlest`]): a
    /// spent socket (`reclaimed`), else what has been idle longest beyond [`EVICT_GRACE`]
    /// (`evicted`) — a would-be stream that sent no cookie, a denied client that does not
    /// read its answer, the test of an idle client with all its sockets (never a running
    /// test) — else a half-open socket (`reclaimed`). `flush` runs the
    /// interface's egress, so an evicted peer gets its RST before the socket listens again.
    /// (A new client that finds a socket listening but the test held is handled once it
    /// connects: see [`poll`](Self::poll).)
    pub fn make_room<'s>(
        &mut self,
        port: u16,
        sockets: &mut SocketSet<'s>,
        now: Instant,
        flush: &mut dyn FnMut(&mut SocketSet<'s>),
    ) {
        if port != self.port {
            return;
        }
        let listening = self
            .tcp
            .iter()
            .any(|h| sockets.get::<tcp::Socket>(*h).state() == tcp::State::Listen);
        if listening {
            return;
        }
        let test = self.test_progress().map(|t| Candidate {
            kind: Kind::Connection,
            last_progress: t,
        });
        let facts = (0..self.tcp.len()).map(|i| {
            let socket = sockets.get::<tcp::Socket>(self.tcp[i]);
            match self.slots[i] {
                Slot::Listening => candidate(socket, None).filter(reclaims),
                // A would-be stream sends its cookie at once: pending since is idle since.
                Slot::Pending { since, .. } | Slot::Closing { since } => {
                    candidate(socket, Some(instant(since)))
                }
                Slot::Denying => candidate(socket, None),
                Slot::Control => test,
                Slot::Data(_) => None,
            }
        });
        let Some(i) = idlest(facts, now, EVICT_GRACE) else {
            return;
        };
        let free = self.slots[i] != Slot::Control
            && candidate(sockets.get::<tcp::Socket>(self.tcp[i]), None)
                .as_ref()
                .is_some_and(reclaims);
        if self.slots[i] == Slot::Control {
            self.end_idle_test(sockets, Some(i));
        }
        if free {
            self.tcp[i] = relisten(sockets, self.tcp[i], self.port);
            linklab_fmt::debug!("iperf: half-open or closing connection reclaimed");
            self.counters.reclaimed += 1;
        } else {
            self.tcp[i] = evict(sockets, self.tcp[i], self.port, flush);
            linklab_fmt::debug!("iperf: idle connection evicted");
            self.counters.evicted += 1;
        }
        self.slots[i] = Slot::Listening;
    }

    /// When the current test last made progress (the session's last activity: bytes from
    /// the client on its control connection, bytes on its streams), if it may be evicted:
    /// None without a test, for a test running (its own watchdog ends one whose client
    /// vanished) and for a finished one (it is closing).
    fn test_progress(&self) -> Option<Instant> {
        let phase = self.session.phase();
        if matches!(phase, Phase::Idle | Phase::Running) || self.session.is_finished() {
            return None;
        }
        Some(instant(self.session.last_activity()))
    }

    /// True when the test holding the server may give way to a new client: not running, and
    /// no progress for [`EVICT_GRACE`].
    fn test_evictable(&self, now: Instant) -> bool {
        self.test_progress().is_some_and(|t| t + EVICT_GRACE <= now)
    }

    /// Ends the test of a client that went idle: resets its streams and would-be streams
    /// (and its control connection, unless `control` says the caller evicts that one
    /// itself), and forgets the test.
    fn end_idle_test(&mut self, sockets: &mut SocketSet<'_>, control: Option<usize>) {
        for i in 0..self.tcp.len() {
            let ours = matches!(
                self.slots[i],
                Slot::Control | Slot::Data(_) | Slot::Pending { .. }
            );
            if ours && Some(i) != control {
                sockets.get_mut::<tcp::Socket>(self.tcp[i]).abort();
                self.slots[i] = Slot::Closing { since: self.now };
            }
        }
        self.session.reset();
        self.udp_peers = [None; MAX_STREAMS];
    }

    /// Does all pending work: accepts, reads and writes control and data, runs timers.
    /// Call after every `Interface::poll`.
    pub fn poll(&mut self, sockets: &mut SocketSet<'_>, now: Instant) {
        let now = micros(now);
        self.now = now;
        self.bind_udp(sockets);
        // Data first: bytes that arrived before the client's TEST_END still count (reading the
        // control connection first would end the test with them unread, as a short `-n` test
        // shows).
        for i in 0..self.tcp.len() {
            if matches!(self.slots[i], Slot::Data(_)) {
                self.service_slot(sockets, i, now);
            }
        }
        for i in 0..self.tcp.len() {
            if !matches!(self.slots[i], Slot::Data(_)) {
                self.service_slot(sockets, i, now);
            }
        }
        self.service_udp(sockets, now);
        if self.session.params_pending() {
            self.review(sockets);
        }
        // Send what the data streams may send after the control turn.
        for i in 0..self.tcp.len() {
            if let Slot::Data(idx) = self.slots[i] {
                self.send_tcp(sockets, i, idx, now);
            }
        }
        self.session.poll(now);
        self.flush_control(sockets);
        self.after_phase(sockets);
    }

    /// Accepts the client's parameters or refuses what smoltcp sockets cannot do, with the
    /// SERVER_ERROR a stock server sends when setsockopt fails: `-w` (buffers are fixed
    /// when the sockets are made), `-M` (no MSS option), `-S`/`--dscp` (no TOS option),
    /// `-A ,m` for a CPU other than 0 (one core). The rest is honoured: `-N` (the device
    /// never uses Nagle), `-Z` (data is sent in place), `--dont-fragment` (smoltcp always
    /// sets DF), `--fq-rate` (paced by the session), `-C` (reported, like a stock server
    /// that lacks the algorithm, as the congestion control actually used).
    fn review(&mut self, sockets: &mut SocketSet<'_>) {
        let p = *self.session.params();
        let ipv6 = self
            .slots
            .iter()
            .position(|s| *s == Slot::Control)
            .and_then(|i| sockets.get::<tcp::Socket>(self.tcp[i]).remote_endpoint())
            .is_some_and(|e| !matches!(e.addr, IpAddress::Ipv4(_)));
        match refusal(&p, ipv6) {
            Some((code, err)) => self.session.refuse_params(code, err),
            None => {
                if let Some(h) = self.tcp.first() {
                    let cc = sockets.get::<tcp::Socket>(*h).congestion_control();
                    let mut name = heapless::String::<16>::new();
                    let _ = core::fmt::write(&mut name, format_args!("{cc:?}"));
                    name.make_ascii_lowercase();
                    self.session.set_congestion_used(&name);
                }
                self.session.accept_params();
            }
        }
    }

    fn bind_udp(&mut self, sockets: &mut SocketSet<'_>) {
        let s = sockets.get_mut::<udp::Socket>(self.udp);
        if !s.is_open() {
            let _ = s.bind(self.port);
        }
    }

    fn service_slot(&mut self, sockets: &mut SocketSet<'_>, i: usize, now: Micros) {
        let handle = self.tcp[i];
        let sock = sockets.get_mut::<tcp::Socket>(handle);
        match self.slots[i] {
            Slot::Listening => {
                if !sock.is_open() {
                    let _ = sock.listen(self.port);
                    return;
                }
                if sock.state() == tcp::State::Listen || sock.state() == tcp::State::SynReceived {
                    return;
                }
                // A connection was established on this socket. A test whose client went
                // idle gives way to it (evicted), as a SYN finding no socket would.
                if self.session.is_busy() && self.test_evictable(instant(now)) {
                    self.end_idle_test(sockets, None);
                    linklab_fmt::debug!("iperf: idle test evicted for a new client");
                    self.counters.evicted += 1;
                }
                if !self.session.is_busy() {
                    self.session.accept_control(now);
                    self.udp_peers = [None; MAX_STREAMS];
                    self.slots[i] = Slot::Control;
                } else if self.session.phase() == Phase::CreateStreams
                    && self.session.params().protocol == Protocol::Tcp
                {
                    self.slots[i] = Slot::Pending { got: 0, since: now };
                } else {
                    self.slots[i] = Slot::Denying;
                }
                self.service_slot(sockets, i, now);
            }
            Slot::Control => {
                let session = &mut self.session;
                while sock.can_recv() && !session.is_finished() {
                    let r = sock.recv(|buf| {
                        let n = session.control_input(buf, now);
                        (n, n)
                    });
                    if !matches!(r, Ok(n) if n > 0) {
                        break;
                    }
                }
                if !sock.may_recv() && !session.is_finished() {
                    session.control_closed(now);
                }
            }
            Slot::Pending { got, since } => {
                let cookie = &mut self.cookies[i];
                let got = got + sock.recv_slice(&mut cookie[got..]).unwrap_or(0);
                if got == COOKIE_SIZE {
                    match self.session.accept_tcp_stream(cookie, now) {
                        Some(idx) => self.slots[i] = Slot::Data(idx),
                        None => {
                            self.slots[i] = Slot::Denying;
                            self.service_slot(sockets, i, now);
                        }
                    }
                } else if !sock.may_recv() || now.saturating_sub(since) > COOKIE_TIMEOUT_US {
                    sock.abort();
                    self.slots[i] = Slot::Closing { since: now };
                } else {
                    self.slots[i] = Slot::Pending { got, since };
                }
            }
            Slot::Data(idx) => {
                if self.session.should_read() {
                    let session = &mut self.session;
                    while sock.can_recv() {
                        let r = sock.recv(|buf| (buf.len(), buf.len()));
                        match r {
                            Ok(n) if n > 0 => session.on_tcp_received(idx, n, now),
                            _ => break,
                        }
                    }
                }
                if !sock.is_active() {
                    self.session.stream_failed(now);
                }
            }
            Slot::Denying => {
                if sock.can_send() {
                    let _ = sock.send_slice(&[wire::state::ACCESS_DENIED as u8]);
                    sock.close();
                    self.counters.denied += 1;
                    self.slots[i] = Slot::Closing { since: now };
                } else if !sock.may_send() {
                    sock.abort();
                    self.slots[i] = Slot::Closing { since: now };
                }
            }
            Slot::Closing { .. } => match sock.state() {
                // Aborted, its RST not sent yet (the next egress sends it; listening now
                // would forget the peer). A SYN that needs the socket may take it before.
                tcp::State::Closed if sock.remote_endpoint().is_some() => {}
                // Closed, or the peer has acknowledged our FIN and all data: nothing is
                // left to deliver, so free the socket now instead of waiting for the peer.
                tcp::State::Closed | tcp::State::TimeWait | tcp::State::FinWait2 => {
                    sock.abort();
                    let _ = sock.listen(self.port);
                    self.slots[i] = Slot::Listening;
                }
                tcp::State::CloseWait => sock.close(),
                _ => {}
            },
        }
    }

    fn send_tcp(&mut self, sockets: &mut SocketSet<'_>, i: usize, idx: usize, now: Micros) {
        let sock = sockets.get_mut::<tcp::Socket>(self.tcp[i]);
        while sock.can_send() {
            let budget = self.session.tcp_send_budget(idx, now);
            if budget == 0 {
                break;
            }
            // Claim transmit-ring space without copying: the payload content is irrelevant
            // to iperf3 (it never checks it), only its length counts.
            let r = sock.send(|buf| {
                let n = buf.len().min(budget);
                (n, n)
            });
            match r {
                Ok(n) if n > 0 => self.session.on_tcp_sent(idx, n, now),
                _ => break,
            }
        }
    }

    fn service_udp(&mut self, sockets: &mut SocketSet<'_>, now: Micros) {
        let sock = sockets.get_mut::<udp::Socket>(self.udp);
        let reading = self.session.should_read();
        while let Ok((data, meta)) = sock.recv() {
            let from = meta.endpoint;
            if let Some(idx) = self.udp_peers.iter().position(|p| *p == Some(from)) {
                if reading {
                    self.session.on_udp_received(idx, data, now);
                }
                continue;
            }
            if self.session.phase() == Phase::CreateStreams {
                if let Some(idx) = self.session.accept_udp_stream(data, now) {
                    if let Some(p) = self.udp_peers.get_mut(idx) {
                        *p = Some(from);
                    }
                    let _ = sock.send_slice(&wire::udp_hello_reply(), from);
                }
            }
        }
        if self.session.params().protocol != Protocol::Udp {
            return;
        }
        let len = self.session.params().len as usize;
        for idx in 0..self.session.streams().len() {
            let Some(peer) = self.udp_peers.get(idx).copied().flatten() else {
                continue;
            };
            while self.session.may_send(idx, now) {
                let Ok(buf) = sock.send(len, peer) else { break };
                match self.session.udp_next(idx, now, buf) {
                    Some(n) => self.session.on_udp_sent(idx, n, now),
                    // Cannot happen (may_send was true and buf has len bytes); the queued
                    // datagram then goes out with a zero header, counted as garbage.
                    None => break,
                }
            }
        }
    }

    fn flush_control(&mut self, sockets: &mut SocketSet<'_>) {
        let Some(i) = self.slots.iter().position(|s| *s == Slot::Control) else {
            return;
        };
        let sock = sockets.get_mut::<tcp::Socket>(self.tcp[i]);
        while !self.session.control_output().is_empty() && sock.can_send() {
            match sock.send_slice(self.session.control_output()) {
                Ok(n) if n > 0 => self.session.control_sent(n),
                _ => break,
            }
        }
    }

    /// Closes data streams after the test and everything after a finished test.
    fn after_phase(&mut self, sockets: &mut SocketSet<'_>) {
        let finished = self.session.is_finished();
        let streams_over =
            !self.session.should_read() && self.session.phase() != Phase::CreateStreams;
        for i in 0..self.tcp.len() {
            let sock = sockets.get_mut::<tcp::Socket>(self.tcp[i]);
            match self.slots[i] {
                Slot::Data(_) if streams_over || finished => {
                    sock.close();
                    self.slots[i] = Slot::Closing { since: self.now };
                }
                Slot::Pending { .. } if finished => {
                    sock.abort();
                    self.slots[i] = Slot::Closing { since: self.now };
                }
                // Close the control connection once our last bytes are queued.
                Slot::Control
                    if finished
                        && (self.session.control_output().is_empty() || !sock.may_send()) =>
                {
                    sock.close();
                    self.slots[i] = Slot::Closing { since: self.now };
                }
                _ => {}
            }
        }
        if finished && !self.slots.contains(&Slot::Control) {
            match self.session.phase() {
                Phase::Failed(f) => {
                    linklab_fmt::debug!("iperf: test failed: {:?}", f);
                    self.counters.tests_failed += 1;
                    self.last = Some(Err(f));
                }
                _ => {
                    linklab_fmt::debug!("iperf: test done");
                    self.counters.tests_done += 1;
                    self.last = Some(Ok(self.session.report()));
                }
            }
            self.session.reset();
            self.udp_peers = [None; MAX_STREAMS];
        }
    }
}

/// What the device refuses of `p`, as (`i_errno`, `errno`); `ipv6` if the client came over
/// IPv6 (TOS is then the traffic class).
fn refusal(p: &Params, ipv6: bool) -> Option<(i32, i32)> {
    if p.window != 0 {
        Some((i_errno::SET_BUF, errno::EOPNOTSUPP))
    } else if p.mss != 0 {
        Some((i_errno::SET_MSS, errno::EOPNOTSUPP))
    } else if p.tos != 0 && ipv6 {
        Some((i_errno::SET_COS, errno::EOPNOTSUPP))
    } else if p.tos != 0 {
        Some((i_errno::SET_TOS, errno::EOPNOTSUPP))
    } else if p.server_affinity.is_some_and(|cpu| cpu != 0) {
        Some((i_errno::AFFINITY, errno::EINVAL))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_smoltcp_cannot_do() {
        let ok = Params::default();
        assert_eq!(refusal(&ok, false), None);
        let with = |f: fn(&mut Params)| {
            let mut p = Params::default();
            f(&mut p);
            p
        };
        assert_eq!(
            refusal(&with(|p| p.window = 8192), false),
            Some((i_errno::SET_BUF, errno::EOPNOTSUPP))
        );
        assert_eq!(
            refusal(&with(|p| p.mss = 1000), false),
            Some((i_errno::SET_MSS, errno::EOPNOTSUPP))
        );
        assert_eq!(
            refusal(&with(|p| p.tos = 0x20), true).map(|r| r.0),
            Some(i_errno::SET_COS)
        );
        assert_eq!(
            refusal(&with(|p| p.server_affinity = Some(1)), false),
            Some((i_errno::AFFINITY, errno::EINVAL))
        );
        let honoured = with(|p| {
            p.nodelay = true;
            p.zerocopy = true;
            p.dont_fragment = true;
            p.fq_rate_bps = 1_000_000;
            p.server_affinity = Some(0);
        });
        assert_eq!(refusal(&honoured, false), None);
    }
}
