//! The iperf3 server over a pool of sockets, whatever the stack: which socket carries the
//! control connection, which the data streams, which stays listening to deny a second
//! client; cookies, UDP peers, the results, closing and re-listening, and which socket gives
//! way when a new client finds them all busy ([`PoolServer::room_for`]). The adapters
//! ([`super::device::SmoltcpIperfServer`] on smoltcp 0.14, `crate::embassy::EmbassyIperfServer`
//! on embassy-net) hand it their sockets through [`PoolSockets`] and call
//! [`PoolServer::poll`]; the protocol itself is the sans-IO [`Session`].
//!
//! Received TCP data is counted and dropped in place in the socket's receive buffer; TCP data
//! sent is claimed in the send buffer without writing it (iperf3 never checks the payload).
//! Received data is consumed only up to a word boundary of the receive buffer (up to three
//! bytes, already counted, wait for the next read): the stack then advertises windows that
//! end on a word, so a sender that fills the window ends its segment there, and the next
//! segment's payload is copied from the frame (word-aligned) into the buffer on a word. After
//! iperf3's 37-byte cookie the first flight lands off its word; the first segment that fills
//! the window realigns the stream, once per connection (the receive slow mode of the
//! firmware README). Only where the adapter's sockets allow it (`TcpOps::may_leave_bytes`):
//! on embassy-net, only with the driver's gate, which wakes the server for the next segment
//! while it keeps bytes ([`PoolServer::keeps_bytes`]; embassy-net wakes a reader only when its
//! socket is empty).
//!
//! Sockets have roles when the adapter says so ([`PoolServer::set_data_slots`]): data
//! sockets (large buffers: the window) listen only while a test's streams are being
//! connected, control sockets (small buffers) carry control connections and deny second
//! clients; the adapter may lend a data socket its buffers only while it listens or carries a
//! stream ([`PoolSockets::prepare`], [`PoolSockets::release`]).
//!
//! The modes a build leaves out (features `iperf-udp`, `iperf-parallel`, `iperf-bidir`,
//! `iperf-rate`) are refused as a stock iperf3 server built without them refuses:
//! SERVER_ERROR with iperf3's `IEUNIMP` ("an option you are trying to set is not implemented
//! yet", what iperf3 sends for SCTP or QUIC when built without them); a test needing more
//! streams than the sockets lent gets `IENUMSTREAMS`.

use super::errors::{errno, i_errno};
use super::json::{Params, Protocol};
use super::report::TestReport;
use super::session::{Failure, Phase, Session};
use super::stream::Micros;
use super::wire::{self, COOKIE_SIZE, MAX_STREAMS};
use crate::evict::{candidate, choose, Candidate, Choice, Kind, GRACE_MS};
use crate::rules::RST_GRACE_MS;
#[cfg(feature = "iperf-udp")]
use crate::socket::UdpOps;
use crate::socket::{TcpOps, TcpState};

/// Most TCP sockets the server can manage.
pub const MAX_TCP_SOCKETS: usize = 2 + MAX_STREAMS;
/// How long a new connection may take to present its cookie.
const COOKIE_TIMEOUT_US: Micros = 5_000_000;
/// [`GRACE_MS`] in the session's microseconds.
const GRACE_US: Micros = GRACE_MS * 1000;
/// [`RST_GRACE_MS`] in the session's microseconds.
const RST_GRACE_US: Micros = RST_GRACE_MS * 1000;

/// The sockets of a server's pool, as a stack's adapter lends them for one poll.
pub trait PoolSockets {
    /// The stack's UDP remote endpoint.
    type Endpoint: Copy + PartialEq;
    /// One TCP socket of the pool.
    type Tcp<'s>: TcpOps
    where
        Self: 's;
    /// The UDP socket.
    #[cfg(feature = "iperf-udp")]
    type Udp<'s>: UdpOps<Endpoint = Self::Endpoint>
    where
        Self: 's;
    /// How many TCP sockets (2..=`N` of the server; extra ones are left alone).
    fn tcp_count(&self) -> usize;
    /// TCP socket `i` (< `tcp_count`).
    fn tcp(&mut self, i: usize) -> Self::Tcp<'_>;
    /// The UDP socket.
    #[cfg(feature = "iperf-udp")]
    fn udp(&mut self) -> Self::Udp<'_>;
    /// Data socket `i` is about to listen for a stream: give it its buffers if it has none
    /// (see [`PoolServer::set_data_slots`]); false if there are none to give now (it is
    /// asked again on the next poll). By default sockets keep their buffers.
    fn prepare(&mut self, _i: usize) -> bool {
        true
    }
    /// Data socket `i` is closed and parked until the next test's streams: its buffers may
    /// go back to the adapter.
    fn release(&mut self, _i: usize) {}
    /// A UDP test is starting: give the UDP socket its buffers if it has none; false if
    /// there are none to give now.
    #[cfg(feature = "iperf-udp")]
    fn prepare_udp(&mut self) -> bool {
        true
    }
    /// The UDP test is over: the UDP socket's buffers may go back to the adapter.
    #[cfg(feature = "iperf-udp")]
    fn release_udp(&mut self) {}
    /// Makes TCP socket `i`, whose connection the pool just reset for a new client, listen
    /// on `port` again: at once for a half-open or spent connection; for an `evicted` one
    /// (a live peer) after its RST has left. True when it listens now; false when the pool
    /// is to make it listen once the RST left (see [`Room::Freeing`]).
    fn free(&mut self, i: usize, port: u16, evicted: bool) -> bool;
}

/// What [`PoolServer::room_for`] did for a SYN to the server's port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Room {
    /// The SYN may go to the stack: a socket listens (one was freed for it, or one already
    /// did), or none could be freed (every connection made progress: the stack answers a
    /// RST, as a busy server does).
    Ready,
    /// A socket was freed but listens only once its evicted peer's RST has left (at most
    /// [`RST_GRACE_MS`]): hold the SYN until then.
    Freeing,
    /// Drop the SYN unanswered: a handshake we answered may be completing, and no other
    /// socket may be taken ([`Choice::Defer`]); its client sends it again.
    Defer,
}

/// What the pool knows of a listening socket's half-open connection: when it was first seen
/// half-open, and when our SYN-ACK to its peer left (see [`crate::evict::Kind`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Handshake {
    seen: Option<Micros>,
    answered: Option<Micros>,
}

/// What a TCP socket of the pool is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    /// Listening (or about to).
    Listening,
    /// A data socket closed between tests (see [`PoolServer::set_data_slots`]).
    Parked,
    /// Connected, reading the 37-byte cookie of a would-be data stream: `got` bytes so far,
    /// `ok` while they match the test's cookie.
    Pending { got: usize, since: Micros, ok: bool },
    /// The control connection of the current test.
    Control,
    /// Data stream `idx` of the current test.
    Data(usize),
    /// Being answered ACCESS_DENIED.
    Denying,
    /// Closing (since then); re-listens once closed.
    Closing { since: Micros },
    /// Reset for a new client (since then); re-listens once its RST has left, at most
    /// [`RST_GRACE_US`] later (only where [`PoolSockets::free`] cannot wait for it itself).
    Evicted { since: Micros },
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
    /// and made no progress for the grace, a would-be stream that sent no cookie, a denied
    /// client that does not read its answer.
    pub evicted: u32,
    /// Of the reclaimed, half-open sockets our SYN-ACK had answered (after the grace with no
    /// answer).
    pub reclaimed_answered: u32,
    /// SYNs dropped unanswered while a handshake we answered could complete.
    pub listen_drops: u32,
}

/// The iperf3 server's pool logic (see the module docs) over at most `N` TCP sockets, with
/// room for `S` streams; `E` is the stack's UDP endpoint.
pub struct PoolServer<'a, E, const N: usize = MAX_TCP_SOCKETS, const S: usize = MAX_STREAMS> {
    session: Session<'a, S>,
    port: u16,
    slots: [Slot; N],
    handshakes: [Handshake; N],
    /// Per data socket: bytes at the head of its receive buffer already counted (left
    /// there to keep the buffer's read position on a word; see the module docs).
    held: [u8; N],
    /// Sockets `..data_slots` are data sockets (0: every socket takes any role).
    data_slots: usize,
    #[cfg(feature = "iperf-udp")]
    udp_peers: [Option<E>; S],
    /// The UDP socket has its buffers for the current test.
    #[cfg(feature = "iperf-udp")]
    udp_ready: bool,
    counters: ServerCounters,
    /// The last test's outcome, until taken; its report is read from the session, which
    /// keeps the finished test until the next client.
    last: Option<Result<(), Failure>>,
    /// The finished test was counted; the session only keeps it for its report.
    done: bool,
    now: Micros,
    _endpoint: core::marker::PhantomData<E>,
}

impl<'a, E: Copy + PartialEq, const N: usize, const S: usize> PoolServer<'a, E, N, S> {
    /// A server on `port` with JSON buffers `rx` and `tx` (8 KiB `rx` accepts any parameter
    /// document; a stock client's is ~300 bytes; 4 KiB `tx` holds results for 16 streams,
    /// one stream's ~350 bytes).
    pub fn new(port: u16, rx: &'a mut [u8], tx: &'a mut [u8]) -> Self {
        let mut session = Session::server_for(rx, tx);
        // What a device stack cannot do is refused as iperf3 refuses an option its socket
        // rejects; `--fq-rate` is paced by the session, as there is no socket pacing.
        session.set_review_params(true);
        session.set_app_fq_pacing(true);
        Self {
            session,
            port,
            slots: [Slot::Listening; N],
            handshakes: [Handshake::default(); N],
            held: [0; N],
            data_slots: 0,
            #[cfg(feature = "iperf-udp")]
            udp_peers: [None; S],
            #[cfg(feature = "iperf-udp")]
            udp_ready: false,
            counters: ServerCounters::default(),
            last: None,
            done: false,
            now: 0,
            _endpoint: core::marker::PhantomData,
        }
    }

    /// Gives the sockets roles: sockets `..d` (at most the socket count less one) are data
    /// sockets, which listen only while a test's TCP streams are being connected and are
    /// parked (closed, their buffers back with the adapter: [`PoolSockets::release`])
    /// otherwise; the rest carry control connections (one for the test, one more to answer
    /// a second client ACCESS_DENIED) and need only small buffers. While streams are being
    /// connected the control sockets do not listen, so a stream never lands on one. A test
    /// needing more streams than `d` is refused (`IENUMSTREAMS`). Without roles (`d` = 0,
    /// the default) every socket takes any role and all listen.
    pub fn set_data_slots(&mut self, d: usize) {
        self.data_slots = d.min(N.saturating_sub(1));
        for i in 0..self.data_slots {
            self.slots[i] = Slot::Parked;
        }
    }

    /// The port served.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The test session (phase, parameters, live counters).
    pub fn session(&self) -> &Session<'a, S> {
        &self.session
    }

    /// Tests done, failed, connections denied, sockets reclaimed, connections evicted.
    pub fn counters(&self) -> ServerCounters {
        self.counters
    }

    /// Takes the outcome of the last finished test, if any is new: its report is made
    /// now, from the finished test the session keeps until the next client connects (a
    /// device that never asks carries no report code).
    pub fn take_outcome(&mut self) -> Option<Result<TestReport<S>, Failure>> {
        let last = self.last.take()?;
        Some(last.map(|()| self.session.report()))
    }

    /// A test holds the server: a client connected and its test is not over (a finished
    /// test kept for its report holds nothing).
    fn held(&self) -> bool {
        self.session.is_busy() && !self.done
    }

    /// True when a data stream keeps bytes it has counted in its socket, to keep its read
    /// position on a word ([`TcpOps::may_leave_bytes`]): its adapter must wake the server
    /// when more arrive, even if its stack wakes a reader only for an empty socket.
    pub fn keeps_bytes(&self) -> bool {
        self.slots
            .iter()
            .zip(&self.held)
            .any(|(slot, &held)| matches!(slot, Slot::Data(_)) && held != 0)
    }

    /// Number of TCP sockets currently carrying data streams (0 between tests).
    pub fn open_streams(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| matches!(s, Slot::Data(_)))
            .count()
    }

    /// When the server next needs [`poll`](Self::poll) even without network activity.
    pub fn poll_at(&self) -> Option<Micros> {
        let deadlines = self.slots.iter().filter_map(|s| match s {
            Slot::Pending { .. } => Some(self.now + COOKIE_TIMEOUT_US),
            Slot::Evicted { since } => Some(since + RST_GRACE_US),
            _ => None,
        });
        self.session.poll_at().into_iter().chain(deadlines).min()
    }

    /// Our SYN-ACK to the peer of TCP socket `i`'s half-open connection left at `now`: its
    /// peer may believe it is connected (see [`crate::evict::Kind::Answered`]). The stack's
    /// adapter tells, as it sees SYN-ACKs leave.
    pub fn note_answered(&mut self, i: usize, now: Micros) {
        if let Some(h) = self.handshakes.get_mut(i) {
            h.answered.get_or_insert(now);
        }
    }

    /// Called before the stack sees a SYN for `port` (at `now`): when it is this server's
    /// port and no socket listens, frees one so the SYN finds a listener
    /// ([`crate::evict::choose`]): a spent socket (`reclaimed`), else what has been idle
    /// longest beyond [`GRACE_MS`] (`evicted`: its peer gets a RST) — a would-be stream that
    /// sent no cookie, a denied client that does not read its answer, the test of an idle
    /// client with all its sockets (never a running test) — else a half-open socket our
    /// SYN-ACK has not answered, else one answered longer than the grace ago (`reclaimed`,
    /// and `reclaimed_answered`). While a handshake we answered may complete and nothing
    /// else may go, the SYN is to be dropped ([`Room::Defer`], `listen_drops`).
    /// [`PoolSockets::free`] makes the socket listen again. (A new client that finds a
    /// socket listening but the test held is handled once it connects: see
    /// [`poll`](Self::poll).)
    pub fn room_for<P: PoolSockets>(&mut self, port: u16, sockets: &mut P, now: Micros) -> Room {
        if port != self.port {
            return Room::Ready;
        }
        let n = sockets.tcp_count().min(N);
        if (0..n).any(|i| sockets.tcp(i).state() == TcpState::Listen) {
            return Room::Ready;
        }
        if self.slots[..n]
            .iter()
            .any(|s| matches!(s, Slot::Evicted { .. }))
        {
            return Room::Freeing;
        }
        let test = self.test_progress().map(|t| Candidate {
            kind: Kind::Connection,
            last_progress: Some(t),
        });
        let slots = self.slots;
        let handshakes = self.handshakes;
        let facts = (0..n).map(|i| {
            let socket = sockets.tcp(i);
            match slots[i] {
                Slot::Listening => {
                    let h = handshakes[i];
                    candidate(&socket, h.seen, h.answered).filter(|c| !c.evicts())
                }
                // A would-be stream sends its cookie at once: pending since is idle since.
                Slot::Pending { since, .. } | Slot::Closing { since } => {
                    candidate(&socket, Some(since), None)
                }
                Slot::Denying => candidate(&socket, None, None),
                Slot::Control => test,
                Slot::Data(_) | Slot::Evicted { .. } | Slot::Parked => None,
            }
        });
        let (i, taken) = match choose(facts, now, GRACE_US) {
            Choice::Take(i, taken) => (i, taken),
            Choice::Defer => {
                linklab_fmt::debug!("iperf: SYN dropped, a handshake we answered may complete");
                self.counters.listen_drops += 1;
                return Room::Defer;
            }
            Choice::Refuse => return Room::Ready,
        };
        self.handshakes[i] = Handshake::default();
        if self.slots[i] == Slot::Control {
            self.end_idle_test(sockets, Some(i), now);
        }
        sockets.tcp(i).abort();
        let evicted = taken.evicts();
        if evicted {
            linklab_fmt::debug!("iperf: idle connection evicted");
            self.counters.evicted += 1;
        } else {
            linklab_fmt::debug!("iperf: half-open or closing connection reclaimed");
            self.counters.reclaimed += 1;
            if taken.answered() {
                self.counters.reclaimed_answered += 1;
            }
        }
        if sockets.free(i, self.port, evicted) {
            self.slots[i] = Slot::Listening;
            Room::Ready
        } else {
            self.slots[i] = Slot::Evicted { since: now };
            Room::Freeing
        }
    }

    /// When the current test last made progress (the session's last activity: bytes from
    /// the client on its control connection, bytes on its streams), if it may be evicted:
    /// None without a test, for a test running (its own watchdog ends one whose client
    /// vanished) and for a finished one (it is closing).
    fn test_progress(&self) -> Option<Micros> {
        let phase = self.session.phase();
        if matches!(phase, Phase::Idle | Phase::Running) || self.session.is_finished() {
            return None;
        }
        Some(self.session.last_activity())
    }

    /// True when the test holding the server may give way to a new client: not running, and
    /// no progress for [`GRACE_MS`]. Never without feature `evict`.
    fn test_evictable(&self, now: Micros) -> bool {
        cfg!(feature = "evict")
            && self
                .test_progress()
                .is_some_and(|t| t.saturating_add(GRACE_US) <= now)
    }

    /// Ends the test of a client that went idle: resets its streams and would-be streams
    /// (and its control connection, unless `control` says the caller evicts that one
    /// itself), and forgets the test.
    fn end_idle_test<P: PoolSockets>(
        &mut self,
        sockets: &mut P,
        control: Option<usize>,
        now: Micros,
    ) {
        let n = sockets.tcp_count().min(N);
        for i in 0..n {
            let ours = matches!(
                self.slots[i],
                Slot::Control | Slot::Data(_) | Slot::Pending { .. }
            );
            if ours && Some(i) != control {
                sockets.tcp(i).abort();
                self.slots[i] = Slot::Closing { since: now };
            }
        }
        self.session.reset();
        self.done = false;
        self.end_udp(sockets);
    }

    /// Forgets the UDP test's peers and lets the UDP socket's buffers go.
    #[cfg_attr(not(feature = "iperf-udp"), allow(clippy::unused_self))]
    fn end_udp<P: PoolSockets>(&mut self, _sockets: &mut P) {
        #[cfg(feature = "iperf-udp")]
        {
            self.udp_peers = [None; S];
            if self.udp_ready {
                self.udp_ready = false;
                _sockets.release_udp();
            }
        }
    }

    /// Does all pending work: accepts, reads and writes control and data, runs timers.
    /// Call after the stack processed what arrived.
    pub fn poll<P: PoolSockets<Endpoint = E>>(&mut self, sockets: &mut P, now: Micros) {
        self.now = now;
        let n = sockets.tcp_count().min(N);
        // Data first: bytes that arrived before the client's TEST_END still count (reading the
        // control connection first would end the test with them unread, as a short `-n` test
        // shows).
        for i in 0..n {
            if matches!(self.slots[i], Slot::Data(_)) {
                self.service_slot(&mut sockets.tcp(i), i, now);
            }
        }
        for i in 0..n {
            if self.slots[i] == Slot::Listening && self.held() {
                self.evict_idle_test_for(sockets, i, now);
            }
            if !matches!(self.slots[i], Slot::Data(_)) {
                self.service_slot(&mut sockets.tcp(i), i, now);
            }
        }
        #[cfg(feature = "iperf-udp")]
        self.service_udp(sockets, now);
        if self.session.params_pending() {
            self.review(sockets, n);
            // A UDP test's socket gets its buffers before CREATE_STREAMS leaves: the client's
            // hello follows it at once.
            #[cfg(feature = "iperf-udp")]
            self.ready_udp(sockets);
        }
        // Send what the data streams may send after the control turn.
        for i in 0..n {
            if let Slot::Data(idx) = self.slots[i] {
                self.send_tcp(&mut sockets.tcp(i), idx, now);
            }
        }
        self.session.poll(now);
        if let Some(i) = self.slots.iter().position(|s| *s == Slot::Control) {
            self.flush_control(&mut sockets.tcp(i));
        }
        self.after_phase(sockets, n);
        if self.data_slots > 0 {
            self.apply_roles(sockets, n);
        }
    }

    /// True while a test's TCP streams are being connected (data sockets listen then).
    fn streams_connecting(&self) -> bool {
        self.held()
            && self.session.phase() == Phase::CreateStreams
            && self.session.params().protocol == Protocol::Tcp
    }

    /// Listens on the sockets whose role wants a listener now and parks the others (see
    /// [`set_data_slots`](Self::set_data_slots)): data sockets while streams are being
    /// connected, control sockets otherwise. A socket holding a connection keeps it.
    fn apply_roles<P: PoolSockets>(&mut self, sockets: &mut P, n: usize) {
        let streams = self.streams_connecting();
        for i in 0..n {
            let data = i < self.data_slots;
            let listen = data == streams;
            match self.slots[i] {
                Slot::Parked if listen && (!data || sockets.prepare(i)) => {
                    let mut s = sockets.tcp(i);
                    s.abort();
                    let _ = s.listen(self.port);
                    self.slots[i] = Slot::Listening;
                }
                Slot::Listening if !listen => {
                    let idle = {
                        let mut s = sockets.tcp(i);
                        let idle = matches!(
                            s.state(),
                            TcpState::Listen | TcpState::Closed | TcpState::TimeWait
                        ) && !s.rst_pending();
                        if idle {
                            s.abort();
                        }
                        idle
                    };
                    if idle {
                        self.slots[i] = Slot::Parked;
                        self.handshakes[i] = Handshake::default();
                        if data {
                            sockets.release(i);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// How many streams a test may have: the data sockets (with roles), else every socket
    /// but the control and the spare one; at most the session's `S`.
    fn stream_capacity(&self, n: usize) -> usize {
        let sockets = if self.data_slots > 0 {
            self.data_slots
        } else {
            n.saturating_sub(2)
        };
        sockets.min(S)
    }

    /// Accepts the client's parameters or refuses what a device stack cannot do, with the
    /// SERVER_ERROR a stock server sends when setsockopt fails: `-w` (buffers are fixed
    /// when the sockets are made), `-M` (no MSS option), `-S`/`--dscp` (no TOS option),
    /// `-A ,m` for a CPU other than 0 (one core). The rest is honoured: `-N` (the device
    /// never uses Nagle), `-Z` (data is sent in place), `--dont-fragment` (smoltcp always
    /// sets DF), `--fq-rate` (paced by the session), `-C` (reported, like a stock server
    /// that lacks the algorithm, as the congestion control actually used).
    fn review<P: PoolSockets>(&mut self, sockets: &mut P, n: usize) {
        let p = *self.session.params();
        let ipv6 = self.slots[..n]
            .iter()
            .position(|s| *s == Slot::Control)
            .is_some_and(|i| sockets.tcp(i).remote_is_ipv6());
        match refusal(&p, ipv6, self.stream_capacity(n)) {
            Some((code, err)) => self.session.refuse_params(code, err),
            None => {
                if n > 0 {
                    let cc = sockets.tcp(0).congestion_control();
                    self.session.set_congestion_used(cc);
                }
                self.session.accept_params();
            }
        }
    }

    /// A connection established on listening socket `i` while a test holds the server: when
    /// that test's client went idle, the test gives way to it (evicted), as a SYN finding no
    /// socket would make it.
    fn evict_idle_test_for<P: PoolSockets>(&mut self, sockets: &mut P, i: usize, now: Micros) {
        let established = !matches!(
            sockets.tcp(i).state(),
            TcpState::Closed | TcpState::Listen | TcpState::SynReceived | TcpState::TimeWait
        );
        if established && self.test_evictable(now) {
            self.end_idle_test(sockets, None, now);
            linklab_fmt::debug!("iperf: idle test evicted for a new client");
            self.counters.evicted += 1;
        }
    }

    fn service_slot(&mut self, sock: &mut impl TcpOps, i: usize, now: Micros) {
        match self.slots[i] {
            Slot::Listening => {
                let handshake = &mut self.handshakes[i];
                if !sock.is_open() {
                    *handshake = Handshake::default();
                    if !sock.rst_pending() {
                        let _ = sock.listen(self.port);
                    }
                    return;
                }
                match sock.state() {
                    TcpState::Listen => {
                        *handshake = Handshake::default();
                        return;
                    }
                    TcpState::SynReceived => {
                        handshake.seen.get_or_insert(now);
                        return;
                    }
                    _ => *handshake = Handshake::default(),
                }
                // A connection was established on this socket.
                if !self.held() {
                    self.session.accept_control(now);
                    self.done = false;
                    #[cfg(feature = "iperf-udp")]
                    {
                        self.udp_peers = [None; S];
                    }
                    self.slots[i] = Slot::Control;
                } else if self.session.phase() == Phase::CreateStreams
                    && self.session.params().protocol == Protocol::Tcp
                {
                    self.slots[i] = Slot::Pending {
                        got: 0,
                        since: now,
                        ok: true,
                    };
                } else {
                    self.slots[i] = Slot::Denying;
                }
                self.service_slot(sock, i, now);
            }
            Slot::Control => {
                let session = &mut self.session;
                while sock.can_recv() && !session.is_finished() {
                    if sock.recv(|buf| session.control_input(buf, now)) == 0 {
                        break;
                    }
                }
                if !sock.may_recv() && !session.is_finished() {
                    session.control_closed(now);
                }
            }
            Slot::Pending { got, since, ok } => {
                let cookie = *self.session.cookie();
                let (mut got, mut ok, mut held) = (got, ok, 0);
                let keep_word = sock.may_leave_bytes();
                // Checked where it lies; its last bytes stay in the buffer when that keeps
                // the read position on a word (see the module docs).
                while got < COOKIE_SIZE {
                    let mut seen = 0;
                    let taken = sock.recv(|buf| {
                        seen = buf.len().min(COOKIE_SIZE - got);
                        ok &= buf[..seen] == cookie[got..got + seen];
                        let take = if got + seen == COOKIE_SIZE && keep_word {
                            word_aligned_take(buf.as_ptr(), seen)
                        } else {
                            seen
                        };
                        held = (seen - take) as u8;
                        take
                    });
                    got += seen;
                    if taken == 0 {
                        break;
                    }
                }
                if got == COOKIE_SIZE && ok {
                    match self.session.accept_tcp_stream(&cookie, now) {
                        Some(idx) => {
                            self.slots[i] = Slot::Data(idx);
                            self.held[i] = held;
                        }
                        None => {
                            self.slots[i] = Slot::Denying;
                            self.service_slot(sock, i, now);
                        }
                    }
                } else if got == COOKIE_SIZE {
                    self.slots[i] = Slot::Denying;
                    self.service_slot(sock, i, now);
                } else if !sock.may_recv() || now.saturating_sub(since) > COOKIE_TIMEOUT_US {
                    sock.abort();
                    self.slots[i] = Slot::Closing { since: now };
                } else {
                    self.slots[i] = Slot::Pending { got, since, ok };
                }
            }
            Slot::Data(idx) => {
                if self.session.should_read() {
                    self.read_stream(sock, i, idx, now);
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
            Slot::Evicted { since } => {
                // Listen once the evicted peer's RST has left (listening forgets the peer),
                // or after the grace (a peer that vanished never gets one).
                if !sock.rst_pending() || now.saturating_sub(since) >= RST_GRACE_US {
                    sock.abort();
                    let _ = sock.listen(self.port);
                    self.slots[i] = Slot::Listening;
                }
            }
            Slot::Parked => {}
            Slot::Closing { .. } => match sock.state() {
                // Aborted, its RST not sent yet (the next transmission sends it; listening
                // now would forget the peer). A SYN that needs the socket may take it before.
                TcpState::Closed if sock.rst_pending() => {}
                // Closed, or the peer has acknowledged our FIN and all data: nothing is
                // left to deliver, so free the socket now instead of waiting for the peer.
                TcpState::Closed | TcpState::TimeWait | TcpState::FinWait2 => {
                    sock.abort();
                    let _ = sock.listen(self.port);
                    self.slots[i] = Slot::Listening;
                }
                TcpState::CloseWait => sock.close(),
                _ => {}
            },
        }
    }

    /// Counts what arrived on data stream `idx` (socket `i`) and consumes it, keeping the
    /// buffer's read position on a word: up to three bytes already counted stay until more
    /// arrive ([`word_aligned_take`]), or until the data runs on past the buffer's end.
    fn read_stream(&mut self, sock: &mut impl TcpOps, i: usize, idx: usize, now: Micros) {
        let held = &mut self.held[i];
        let keep_word = sock.may_leave_bytes();
        loop {
            let queued = sock.queues().0;
            let mut fresh = 0;
            let taken = sock.recv(|buf| {
                let len = buf.len();
                fresh = len.saturating_sub(usize::from(*held));
                if fresh == 0 {
                    // Only bytes already counted: leave them, unless more wait past the
                    // buffer's end, where this run stops.
                    if queued > len {
                        *held = 0;
                        return len;
                    }
                    return 0;
                }
                let take = if keep_word {
                    word_aligned_take(buf.as_ptr(), len)
                } else {
                    len
                };
                *held = (len - take) as u8;
                take
            });
            if fresh > 0 {
                self.session.on_tcp_received(idx, fresh, now);
            }
            if taken == 0 {
                break;
            }
        }
    }

    fn send_tcp(&mut self, sock: &mut impl TcpOps, idx: usize, now: Micros) {
        while sock.can_send() {
            let budget = self.session.tcp_send_budget(idx, now);
            if budget == 0 {
                break;
            }
            // Claim send-buffer space without writing: the payload content is irrelevant to
            // iperf3 (it never checks it), only its length counts.
            match sock.send(|buf| buf.len().min(budget)) {
                0 => break,
                n => self.session.on_tcp_sent(idx, n, now),
            }
        }
    }

    /// Lends the UDP socket its buffers once a UDP test creates its streams (again each
    /// poll until a chunk is free), and keeps it bound: made anew over its buffers, it is
    /// not, and a hello arriving before it is would be answered "port unreachable".
    #[cfg(feature = "iperf-udp")]
    fn ready_udp<P: PoolSockets<Endpoint = E>>(&mut self, sockets: &mut P) {
        if self.held()
            && self.session.phase() == Phase::CreateStreams
            && self.session.params().protocol == Protocol::Udp
            && !self.udp_ready
        {
            self.udp_ready = sockets.prepare_udp();
        }
        let mut sock = sockets.udp();
        if !sock.is_open() {
            let _ = sock.bind(self.port);
        }
    }

    #[cfg(feature = "iperf-udp")]
    fn service_udp<P: PoolSockets<Endpoint = E>>(&mut self, sockets: &mut P, now: Micros) {
        self.ready_udp(sockets);
        let sock = &mut sockets.udp();
        let reading = self.session.should_read();
        loop {
            let mut hello_from = None;
            let got = sock.recv(|data, from| {
                if let Some(idx) = self.udp_peers.iter().position(|p| *p == Some(from)) {
                    if reading {
                        self.session.on_udp_received(idx, data, now);
                    }
                    return;
                }
                if self.session.phase() == Phase::CreateStreams {
                    if let Some(idx) = self.session.accept_udp_stream(data, now) {
                        if let Some(p) = self.udp_peers.get_mut(idx) {
                            *p = Some(from);
                        }
                        hello_from = Some(from);
                    }
                }
            });
            if !got {
                break;
            }
            if let Some(from) = hello_from {
                let reply = wire::udp_hello_reply();
                let _ = sock.send(reply.len(), from, |buf| {
                    buf[..reply.len()].copy_from_slice(&reply);
                    reply.len()
                });
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
                let session = &mut self.session;
                let mut sent = None;
                // `udp_next` fills the datagram (header and payload) in place; it cannot
                // fail here (may_send was true and the buffer has `len` bytes).
                let queued = sock.send(len, peer, |buf| {
                    sent = session.udp_next(idx, now, buf);
                    sent.unwrap_or(0)
                });
                match sent {
                    Some(n) if queued => self.session.on_udp_sent(idx, n, now),
                    _ => break,
                }
            }
        }
    }

    fn flush_control(&mut self, sock: &mut impl TcpOps) {
        while !self.session.control_output().is_empty() && sock.can_send() {
            match sock.send_slice(self.session.control_output()) {
                0 => break,
                n => self.session.control_sent(n),
            }
        }
    }

    /// Closes data streams after the test and everything after a finished test.
    fn after_phase<P: PoolSockets>(&mut self, sockets: &mut P, n: usize) {
        let finished = self.session.is_finished();
        let streams_over =
            !self.session.should_read() && self.session.phase() != Phase::CreateStreams;
        for i in 0..n {
            match self.slots[i] {
                Slot::Data(_) if streams_over || finished => {
                    sockets.tcp(i).close();
                    self.slots[i] = Slot::Closing { since: self.now };
                }
                Slot::Pending { .. } if finished => {
                    sockets.tcp(i).abort();
                    self.slots[i] = Slot::Closing { since: self.now };
                }
                // Close the control connection once our last bytes are queued.
                Slot::Control if finished => {
                    let mut sock = sockets.tcp(i);
                    if self.session.control_output().is_empty() || !sock.may_send() {
                        sock.close();
                        self.slots[i] = Slot::Closing { since: self.now };
                    }
                }
                _ => {}
            }
        }
        if finished && !self.done && !self.slots.contains(&Slot::Control) {
            match self.session.phase() {
                Phase::Failed(f) => {
                    linklab_fmt::debug!("iperf: test failed: {:?}", f);
                    self.counters.tests_failed += 1;
                    self.last = Some(Err(f));
                }
                _ => {
                    linklab_fmt::debug!("iperf: test done");
                    self.counters.tests_done += 1;
                    self.last = Some(Ok(()));
                }
            }
            // The session keeps the finished test for its report until the next client.
            self.done = true;
            self.end_udp(sockets);
        }
    }
}

/// Of `len` received bytes lent at `start`, how many to consume so that the read position
/// stays on a word: all but those past the last word boundary (at most three), or all when
/// that would consume nothing.
fn word_aligned_take(start: *const u8, len: usize) -> usize {
    let past = (start as usize).wrapping_add(len) % 4;
    if len > past {
        len - past
    } else {
        len
    }
}

/// True when `p` asks for a mode this build leaves out (features `iperf-udp`,
/// `iperf-parallel`, `iperf-bidir`, `iperf-rate`).
fn unimplemented(p: &Params) -> bool {
    let paced = p.rate_bps != 0 || p.fq_rate_bps != 0 || p.burst != 0;
    (p.protocol == Protocol::Udp && !cfg!(feature = "iperf-udp"))
        || (p.parallel > 1 && !cfg!(feature = "iperf-parallel"))
        || (p.bidirectional && !cfg!(feature = "iperf-bidir"))
        || (paced && !cfg!(feature = "iperf-rate"))
}

/// What the device refuses of `p`, as (`i_errno`, `errno`); `ipv6` if the client came over
/// IPv6 (TOS is then the traffic class); `capacity` the streams its sockets carry.
fn refusal(p: &Params, ipv6: bool, capacity: usize) -> Option<(i32, i32)> {
    let streams = usize::from(p.parallel.max(1)) * if p.bidirectional { 2 } else { 1 };
    if unimplemented(p) {
        // What iperf3 answers for a protocol or option it was built without (SCTP, QUIC).
        Some((i_errno::UNIMP, 0))
    } else if streams > capacity {
        Some((i_errno::NUM_STREAMS, 0))
    } else if p.window != 0 {
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
    fn refuses_what_a_device_stack_cannot_do() {
        let refusal = |p: &Params, ipv6| refusal(p, ipv6, 2);
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
            if cfg!(feature = "iperf-rate") {
                p.fq_rate_bps = 1_000_000;
            }
            p.server_affinity = Some(0);
        });
        assert_eq!(refusal(&honoured, false), None);
    }

    #[test]
    fn refuses_more_streams_than_the_sockets_carry() {
        let p = Params {
            parallel: 2,
            ..Params::default()
        };
        let refused = refusal(&p, false, 1).map(|r| r.0);
        let expected = if cfg!(feature = "iperf-parallel") {
            i_errno::NUM_STREAMS
        } else {
            i_errno::UNIMP
        };
        assert_eq!(refused, Some(expected));
        assert_eq!(refusal(&Params::default(), false, 1), None);
    }

    /// The modes a build leaves out are refused with iperf3's "not implemented".
    #[test]
    fn left_out_modes_are_not_implemented() {
        let udp = Params {
            protocol: Protocol::Udp,
            ..Params::default()
        };
        let bidir = Params {
            bidirectional: true,
            ..Params::default()
        };
        let parallel = Params {
            parallel: 2,
            ..Params::default()
        };
        let rate = Params {
            rate_bps: 10_000_000,
            ..Params::default()
        };
        let fq_rate = Params {
            fq_rate_bps: 10_000_000,
            ..Params::default()
        };
        let burst = Params {
            burst: 10,
            ..Params::default()
        };
        for (p, built) in [
            (udp, cfg!(feature = "iperf-udp")),
            (bidir, cfg!(feature = "iperf-bidir")),
            (parallel, cfg!(feature = "iperf-parallel")),
            (rate, cfg!(feature = "iperf-rate")),
            (fq_rate, cfg!(feature = "iperf-rate")),
            (burst, cfg!(feature = "iperf-rate")),
        ] {
            let want = (!built).then_some((i_errno::UNIMP, 0));
            assert_eq!(refusal(&p, false, 16), want, "{p:?}");
        }
    }

    #[test]
    fn the_read_position_stays_on_a_word() {
        let buf = [0u32; 8];
        let at = buf.as_ptr().cast::<u8>();
        // From a word: whole words taken, the rest kept.
        assert_eq!(word_aligned_take(at, 10), 8);
        assert_eq!(word_aligned_take(at, 12), 12);
        // From the cookie's end (37 bytes in): up to the next word.
        assert_eq!(word_aligned_take(at.wrapping_add(1), 9), 7);
        // Nothing would be taken: all is.
        assert_eq!(word_aligned_take(at, 3), 3);
    }
}
