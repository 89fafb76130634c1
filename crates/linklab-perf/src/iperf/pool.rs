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
//! while a stream receives ([`PoolServer::receives`]; embassy-net wakes a reader only when its
//! socket is empty).
//!
//! Sockets have roles when the adapter says so ([`PoolServer::set_data_memory`]): data
//! sockets (large buffers: the window) listen only while a test's streams are being
//! connected, control sockets (small buffers) carry control connections and deny second
//! clients; the adapter lends a data socket its buffers, a share of one data memory
//! ([`crate::data_memory`]) sized for the test's streams, only while it listens or carries a
//! stream ([`PoolSockets::prepare`], [`PoolSockets::release`]), and the memory is claimed
//! for the test ([`PoolSockets::claim`]): one test at a time with iperf 2, whose client
//! keeps iperf3's out (ACCESS_DENIED) while it runs.
//!
//! The modes a build leaves out (features `iperf-udp`, `iperf-parallel`, `iperf-bidir`,
//! `iperf-rate`) are refused as a stock iperf3 server built without them refuses:
//! SERVER_ERROR with iperf3's `IEUNIMP` ("an option you are trying to set is not implemented
//! yet", what iperf3 sends for SCTP or QUIC when built without them); a test needing more
//! streams than the sockets lent gets `IENUMSTREAMS`.

mod cookies;
mod reclaim;
mod refusal;
mod results;
mod roles;
mod slots;
mod sockets;
mod streams;
mod udp;

pub use crate::pool_server::Room;
pub use sockets::PoolSockets;

use super::session::{Failure, Phase, Session};
use super::wire::{self, MAX_STREAMS};
use crate::data_memory::{DataPlan, Share};
use crate::evict::{GRACE_MS, SENDING_GRACE_MS};
use crate::rules::RST_GRACE_MS;
use crate::socket::TcpOps;
use crate::syns::SynCounts;
use crate::time::Micros;

/// Most TCP sockets the server can manage.
pub const MAX_TCP_SOCKETS: usize = 2 + MAX_STREAMS;
/// How long a new connection may take to present its cookie.
const COOKIE_TIMEOUT_US: Micros = 5_000_000;
/// [`GRACE_MS`] in the session's microseconds.
const GRACE_US: Micros = GRACE_MS * 1000;
/// [`SENDING_GRACE_MS`] in the session's microseconds.
const SENDING_GRACE_US: Micros = SENDING_GRACE_MS * 1000;
/// [`RST_GRACE_MS`] in the session's microseconds.
const RST_GRACE_US: Micros = RST_GRACE_MS * 1000;

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
    /// What became of every SYN to the server's port ([`crate::syns`]): its `listen_drops`
    /// are the SYNs dropped unanswered — while a handshake we answered could complete, while
    /// a test's streams connect and a would-be stream holds a data socket, or while every
    /// socket is busy — whose clients send them again.
    pub syns: SynCounts,
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
    /// How the data memory the data sockets are lent is shared (with roles).
    plan: Option<DataPlan>,
    /// What each data socket of the current test gets of it.
    share: Share,
    /// The data memory is claimed for the current test.
    claimed: bool,
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
    /// A new client's connection waits, in this poll, for the last test to end (see
    /// `service_slot`): the next poll must come soon.
    client_waits: bool,
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
            plan: None,
            share: Share { rx: 0, tx: 0 },
            claimed: false,
            #[cfg(feature = "iperf-udp")]
            udp_peers: [None; S],
            #[cfg(feature = "iperf-udp")]
            udp_ready: false,
            counters: ServerCounters::default(),
            last: None,
            done: false,
            client_waits: false,
            now: 0,
            _endpoint: core::marker::PhantomData,
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

    /// A test holds the server: a client connected and its test is not over (a finished
    /// test kept for its report holds nothing).
    fn held(&self) -> bool {
        self.session.is_busy() && !self.done
    }

    /// True while a TCP data stream of the test receives: its adapter must wake the server
    /// when more arrive, even if its stack wakes a reader only for an empty socket (the
    /// stream may keep up to three counted bytes there to stay on a word,
    /// [`TcpOps::may_leave_bytes`]), and may have the driver wake it for each segment (the
    /// embassy adapter's gate, which holds the stack's ACK until the read:
    /// `ServiceGate::hold_tx`).
    pub fn receives(&self) -> bool {
        let streams = self.session.streams();
        self.slots.iter().any(
            |slot| matches!(slot, Slot::Data(idx) if streams.get(*idx).is_some_and(|s| !s.sender)),
        )
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
        // CREATE_STREAMS waits for the data sockets (iperf 2 gives its idle shares of the
        // memory back in its own poll; the last test's stream may still be closing): look
        // again soon.
        let waiting =
            (self.data_slots > 0 && self.streams_connecting() && !self.listening_for_streams(N))
                .then_some(self.now + 1_000);
        let client_waits = self.client_waits.then_some(self.now + 1_000);
        self.session
            .poll_at()
            .into_iter()
            .chain(deadlines)
            .chain(waiting)
            .chain(client_waits)
            .min()
    }

    /// Does all pending work: accepts, reads and writes control and data, runs timers.
    /// Call after the stack processed what arrived.
    pub fn poll<P: PoolSockets<Endpoint = E>>(&mut self, sockets: &mut P, now: Micros) {
        self.now = now;
        self.client_waits = false;
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
        // The data sockets listen before CREATE_STREAMS leaves, or the client's streams would
        // find none and be refused: their memory may have to be given back by iperf 2 first,
        // and a data socket may still be closing the last test's stream (the peer's ACK of
        // our FIN not in yet: back-to-back tests on an image with one data socket, the
        // minimal one, saw "unable to connect stream: Connection refused"). Mostly they
        // listen in the same poll, before the stack sends CREATE_STREAMS.
        let connecting = self.data_slots > 0 && self.streams_connecting();
        if connecting {
            self.apply_roles(sockets, n);
        }
        // A test that failed while CREATE_STREAMS waited for the data sockets (the watchdog)
        // never sends it: its client would connect streams nothing listens for, and report
        // them refused instead of the server gone.
        if matches!(self.session.phase(), Phase::Failed(_))
            && self.session.control_output() == [wire::state::CREATE_STREAMS as u8]
        {
            self.session.control_sent(1);
        }
        if let Some(i) = self.slots.iter().position(|s| *s == Slot::Control) {
            if !connecting || self.listening_for_streams(n) {
                self.flush_control(&mut sockets.tcp(i));
            }
        }
        self.after_phase(sockets, n);
        if self.data_slots > 0 {
            self.apply_roles(sockets, n);
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
}
