//! The sans-IO iperf3 test: one state machine for both ends of the control connection.
//!
//! A [`Session`] takes control-connection bytes, data-stream events and the current time,
//! and gives back control bytes to send, what each data stream may do next and when it
//! wants to be polled again. It never touches a socket: the std adapter ([`super::host`])
//! and the smoltcp adapter ([`super::device`]) move the bytes.

use super::json::{JsonError, Params, Protocol, Results};
use super::report::{DirectionReport, Interval, IntervalStream, TestReport};
use super::stream::{stream_id, IntervalBase, Micros, Stream};
use super::wire::{
    self, state, ControlMsg, ControlReader, Expect, UdpHeader, COOKIE_SIZE, MAX_BLOCK_LEN,
    MAX_JSON_LEN, MAX_PARALLEL, MAX_STREAMS, MAX_UDP_BLOCK_LEN,
};

/// Which end of the control connection a session plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Role {
    /// Connects, announces parameters, decides when the test ends.
    Client,
    /// Accepts, follows the client's parameters.
    Server,
}

/// Where a test is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Phase {
    /// Server: no client.
    Idle,
    /// Server: reading the control cookie.
    Cookie,
    /// Parameters are being exchanged.
    ParamExchange,
    /// Data streams are being connected.
    CreateStreams,
    /// Client: TEST_START seen, waiting for TEST_RUNNING.
    Starting,
    /// Data flows.
    Running,
    /// Client: TEST_END sent, waiting for EXCHANGE_RESULTS.
    Ending,
    /// Results are being exchanged.
    ExchangeResults,
    /// Server: results sent, waiting for IPERF_DONE. Client: waiting for DISPLAY_RESULTS.
    Display,
    /// The test finished normally.
    Done,
    /// The test ended with an error.
    Failed(Failure),
}

/// Why a test ended early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Failure {
    /// The server is busy with another client (ACCESS_DENIED).
    AccessDenied,
    /// The server sent SERVER_ERROR with iperf3's `i_errno` and `errno`.
    ServerError(i32, i32),
    /// The peer sent SERVER_TERMINATE or CLIENT_TERMINATE.
    PeerTerminated,
    /// The control connection closed before the test was done.
    ControlClosed,
    /// The peer sent a state byte that makes no sense now.
    UnexpectedState(i8),
    /// A JSON document was malformed, incomplete or too long.
    BadJson(JsonError),
    /// The parameters ask for something we do not support (see `reason`).
    BadParams(&'static str),
    /// The peer's results name a stream we do not have.
    UnknownStream,
    /// Nothing happened for longer than the watchdog allows.
    Timeout,
    /// Our control output buffer is too small.
    OutputFull,
    /// A data stream failed (closed or reset) during the test.
    StreamFailed,
}

/// iperf3 `i_errno` values we send with SERVER_ERROR.
pub mod server_error {
    /// IEBLOCKSIZE: block size invalid.
    pub const BLOCK_SIZE: i32 = 4;
    /// IENUMSTREAMS: number of parallel streams too large.
    pub const NUM_STREAMS: i32 = 10;
    /// IERECVPARAMS: unable to receive parameters.
    pub const RECV_PARAMS: i32 = 109;
}

/// How long a test may sit without any activity before the watchdog ends it.
pub const DEFAULT_WATCHDOG_US: Micros = 10_000_000;
/// A receiving-only client of a `-n`/`-k` test ends after the sender is quiet this long.
pub const QUIET_END_US: Micros = 1_000_000;
/// Grace after `-t` + `-O` before the server gives up on a client (iperf3 uses 5 s).
pub const SERVER_GRACE_US: Micros = 5_000_000;

/// Client-side settings that are not part of the wire parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientOptions {
    /// The test parameters announced to the server.
    pub params: Params,
    /// Reporting interval (`-i`) in microseconds, 0 for none (at least 10 ms).
    pub interval_us: Micros,
    /// Seed for the cookie (make it differ per test).
    pub cookie_seed: u64,
}

/// The iperf3 test state machine (client or server), over caller-provided buffers.
pub struct Session<'a> {
    role: Role,
    phase: Phase,
    reader: ControlReader<'a>,
    out: &'a mut [u8],
    out_len: usize,
    out_pos: usize,
    cookie: [u8; COOKIE_SIZE],
    params: Params,
    interval_us: Micros,
    watchdog_us: Micros,
    streams: [Stream; MAX_STREAMS],
    nstreams: usize,
    /// When the test clock started (TEST_START).
    start: Option<Micros>,
    /// When counting stopped.
    end: Option<Micros>,
    omit_end: Option<Micros>,
    omitting: bool,
    next_interval: Option<Micros>,
    interval_start: Micros,
    pending_intervals: heapless::Deque<Interval, 2>,
    last_activity: Micros,
    now: Micros,
    /// Test-wide sent bytes/blocks since the omitted period (iperf3 `test->bytes_sent`).
    test_bytes_sent: u64,
    test_blocks_sent: u64,
    test_bytes_received: u64,
    /// Datagrams (UDP) received since the omitted period, for `-R -k`.
    test_datagrams_received: u64,
    /// When counted data last arrived.
    last_rx: Option<Micros>,
    peer_cpu: [f64; 3],
    peer_has_retransmits: i64,
    have_peer_results: bool,
}

impl<'a> Session<'a> {
    fn new(role: Role, rx: &'a mut [u8], tx: &'a mut [u8], now: Micros) -> Self {
        Self {
            role,
            phase: Phase::Idle,
            reader: ControlReader::new(rx, MAX_JSON_LEN),
            out: tx,
            out_len: 0,
            out_pos: 0,
            cookie: [0; COOKIE_SIZE],
            params: Params::default(),
            interval_us: 0,
            watchdog_us: DEFAULT_WATCHDOG_US,
            streams: [Stream::default(); MAX_STREAMS],
            nstreams: 0,
            start: None,
            end: None,
            omit_end: None,
            omitting: false,
            next_interval: None,
            interval_start: 0,
            pending_intervals: heapless::Deque::new(),
            last_activity: now,
            now,
            test_bytes_sent: 0,
            test_blocks_sent: 0,
            test_bytes_received: 0,
            test_datagrams_received: 0,
            last_rx: None,
            peer_cpu: [0.0; 3],
            peer_has_retransmits: -1,
            have_peer_results: false,
        }
    }

    /// A server session over a receive buffer (>= 8 KiB to accept any parameter document
    /// iperf3 may send; smaller buffers refuse larger documents) and a transmit buffer
    /// (>= 4 KiB holds results for 16 streams).
    pub fn server(rx: &'a mut [u8], tx: &'a mut [u8]) -> Self {
        Self::new(Role::Server, rx, tx, 0)
    }

    /// A client session that will run the test in `opts`; the cookie is queued as the
    /// first control output. Connect the control connection, then feed it.
    pub fn client(opts: &ClientOptions, rx: &'a mut [u8], tx: &'a mut [u8], now: Micros) -> Self {
        let mut s = Self::new(Role::Client, rx, tx, now);
        s.params = opts.params;
        // Intervals shorter than 10 ms would only flood the caller; 0 means none.
        s.interval_us = if opts.interval_us == 0 {
            0
        } else {
            opts.interval_us.max(10_000)
        };
        s.cookie = wire::make_cookie(opts.cookie_seed);
        s.phase = Phase::ParamExchange;
        s.reader.expect(Expect::State);
        let cookie = s.cookie;
        s.push_out(&cookie);
        s
    }

    /// Sets the watchdog: the test fails after this long without any activity.
    pub fn set_watchdog(&mut self, us: Micros) {
        self.watchdog_us = us.max(1);
    }

    /// Which end this session plays.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Where the test is.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The test parameters (announced by the client).
    pub fn params(&self) -> &Params {
        &self.params
    }

    /// The cookie of the current test.
    pub fn cookie(&self) -> &[u8; COOKIE_SIZE] {
        &self.cookie
    }

    /// True once the test is over (done or failed); the adapter should close everything.
    pub fn is_finished(&self) -> bool {
        matches!(self.phase, Phase::Done | Phase::Failed(_))
    }

    /// Server: true if a client holds the server (a new control connection gets
    /// ACCESS_DENIED).
    pub fn is_busy(&self) -> bool {
        self.phase != Phase::Idle
    }

    /// Streams set up so far.
    pub fn streams(&self) -> &[Stream] {
        &self.streams[..self.nstreams]
    }

    /// Streams the test needs (`-P`, doubled for `--bidir`).
    pub fn streams_wanted(&self) -> usize {
        let p = usize::from(self.params.parallel.max(1));
        if self.params.bidirectional {
            2 * p
        } else {
            p
        }
    }

    // ---- control connection ------------------------------------------------------------

    /// Control bytes waiting to be sent.
    pub fn control_output(&self) -> &[u8] {
        self.out.get(self.out_pos..self.out_len).unwrap_or(&[])
    }

    /// Marks `n` bytes of [`control_output`](Self::control_output) as sent.
    pub fn control_sent(&mut self, n: usize) {
        self.out_pos = (self.out_pos + n).min(self.out_len);
        if self.out_pos == self.out_len {
            self.out_pos = 0;
            self.out_len = 0;
        }
    }

    fn push_out(&mut self, bytes: &[u8]) {
        if self.out_pos > 0 {
            self.out.copy_within(self.out_pos..self.out_len, 0);
            self.out_len -= self.out_pos;
            self.out_pos = 0;
        }
        match self.out.get_mut(self.out_len..self.out_len + bytes.len()) {
            Some(dst) => {
                dst.copy_from_slice(bytes);
                self.out_len += bytes.len();
            }
            None => self.fail(Failure::OutputFull),
        }
    }

    fn push_state(&mut self, s: i8) {
        self.push_out(&[s as u8]);
    }

    fn push_json(&mut self, f: impl FnOnce(&mut [u8]) -> Result<usize, JsonError>) {
        if self.out_pos > 0 {
            self.control_sent(0);
            let (pos, len) = (self.out_pos, self.out_len);
            self.out.copy_within(pos..len, 0);
            self.out_len -= pos;
            self.out_pos = 0;
        }
        let start = self.out_len;
        let Some(space) = self.out.get_mut(start..) else {
            return self.fail(Failure::OutputFull);
        };
        match wire::frame_json(space, |b| f(b).ok()) {
            Some(n) => self.out_len += n,
            None => self.fail(Failure::OutputFull),
        }
    }

    fn fail(&mut self, why: Failure) {
        if !self.is_finished() {
            self.stop_clock();
            self.phase = Phase::Failed(why);
        }
    }

    /// Server: a control connection was accepted while idle. Read its cookie next.
    pub fn accept_control(&mut self, now: Micros) {
        self.reset();
        self.now = now;
        self.last_activity = now;
        self.phase = Phase::Cookie;
        self.reader.expect(Expect::Cookie);
    }

    /// Server: forget the current test and become idle (call after closing its sockets).
    pub fn reset(&mut self) {
        let (role, interval, watchdog) = (self.role, self.interval_us, self.watchdog_us);
        self.phase = Phase::Idle;
        self.reader.expect(Expect::State);
        self.out_len = 0;
        self.out_pos = 0;
        self.cookie = [0; COOKIE_SIZE];
        self.params = Params::default();
        self.streams = [Stream::default(); MAX_STREAMS];
        self.nstreams = 0;
        self.start = None;
        self.end = None;
        self.omit_end = None;
        self.omitting = false;
        self.next_interval = None;
        self.pending_intervals.clear();
        self.test_bytes_sent = 0;
        self.test_blocks_sent = 0;
        self.test_bytes_received = 0;
        self.test_datagrams_received = 0;
        self.last_rx = None;
        self.peer_cpu = [0.0; 3];
        self.peer_has_retransmits = -1;
        self.have_peer_results = false;
        self.role = role;
        self.interval_us = interval;
        self.watchdog_us = watchdog;
    }

    /// The control connection closed (EOF or reset).
    pub fn control_closed(&mut self, now: Micros) {
        self.now = now;
        match self.phase {
            // The server has everything once results went out; a client that hangs up
            // instead of sending IPERF_DONE has still completed the test.
            Phase::Display if self.role == Role::Server => self.phase = Phase::Done,
            _ => self.fail(Failure::ControlClosed),
        }
    }

    /// A data stream failed during the test.
    pub fn stream_failed(&mut self, now: Micros) {
        self.now = now;
        if matches!(
            self.phase,
            Phase::CreateStreams | Phase::Starting | Phase::Running
        ) {
            self.fail(Failure::StreamFailed);
        }
    }

    /// Feeds bytes read from the control connection; returns how many were used. Call
    /// again with the rest while it makes progress (it stops after each message so the
    /// caller can act on a phase change, e.g. open streams).
    pub fn control_input(&mut self, data: &[u8], now: Micros) -> usize {
        self.now = now;
        if data.is_empty() || self.is_finished() || self.phase == Phase::Idle {
            return 0;
        }
        self.last_activity = now;
        let (used, msg) = match self.reader.push(data) {
            Ok(r) => r,
            Err(_) => {
                if self.role == Role::Server && self.phase == Phase::ParamExchange {
                    self.server_error(server_error::RECV_PARAMS);
                }
                self.fail(Failure::BadJson(JsonError::Malformed));
                return data.len();
            }
        };
        if let Some(msg) = msg {
            match self.role {
                Role::Server => self.server_msg(msg, now),
                Role::Client => self.client_msg(msg, now),
            }
        }
        used
    }

    fn server_error(&mut self, code: i32) {
        self.push_state(state::SERVER_ERROR);
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&code.to_be_bytes());
        self.push_out(&b);
    }

    fn server_msg(&mut self, msg: ControlMsg, now: Micros) {
        match (self.phase, msg) {
            (Phase::Cookie, ControlMsg::Cookie) => {
                let mut c = [0u8; COOKIE_SIZE];
                c.copy_from_slice(
                    self.reader
                        .payload()
                        .get(..COOKIE_SIZE)
                        .unwrap_or(&[0; COOKIE_SIZE]),
                );
                self.cookie = c;
                self.push_state(state::PARAM_EXCHANGE);
                self.reader.expect(Expect::Json);
                self.phase = Phase::ParamExchange;
            }
            (Phase::ParamExchange, ControlMsg::Json(_)) => {
                let parsed = Params::from_json(self.reader.payload());
                match parsed {
                    Err(e) => {
                        self.server_error(server_error::RECV_PARAMS);
                        self.fail(Failure::BadJson(e));
                    }
                    Ok(p) => match check_params(&p) {
                        Err((code, why)) => {
                            self.server_error(code);
                            self.fail(Failure::BadParams(why));
                        }
                        Ok(()) => {
                            self.params = p;
                            self.push_state(state::CREATE_STREAMS);
                            self.phase = Phase::CreateStreams;
                        }
                    },
                }
            }
            (Phase::Running, ControlMsg::State(state::TEST_END)) => {
                self.stop_clock();
                self.push_state(state::EXCHANGE_RESULTS);
                self.reader.expect(Expect::Json);
                self.phase = Phase::ExchangeResults;
            }
            (Phase::ExchangeResults, ControlMsg::Json(_)) => {
                if self.take_peer_results() {
                    let ours = self.our_results();
                    self.push_json(|b| ours.to_json(b));
                    self.push_state(state::DISPLAY_RESULTS);
                    self.phase = Phase::Display;
                }
            }
            (Phase::Display, ControlMsg::State(state::IPERF_DONE)) => self.phase = Phase::Done,
            (_, ControlMsg::State(state::TEST_START)) => {}
            (_, ControlMsg::State(state::CLIENT_TERMINATE)) => self.fail(Failure::PeerTerminated),
            (_, ControlMsg::State(s)) => self.fail(Failure::UnexpectedState(s)),
            _ => self.fail(Failure::UnexpectedState(0)),
        }
        let _ = now;
    }

    fn client_msg(&mut self, msg: ControlMsg, now: Micros) {
        match (self.phase, msg) {
            (_, ControlMsg::State(state::ACCESS_DENIED)) => self.fail(Failure::AccessDenied),
            (_, ControlMsg::State(state::SERVER_ERROR)) => self.reader.expect(Expect::ErrorCodes),
            (_, ControlMsg::ErrorCodes(a, b)) => self.fail(Failure::ServerError(a, b)),
            (_, ControlMsg::State(state::SERVER_TERMINATE)) => self.fail(Failure::PeerTerminated),
            (Phase::ParamExchange, ControlMsg::State(state::PARAM_EXCHANGE)) => {
                let p = self.params;
                self.push_json(|b| p.to_json(b));
            }
            (Phase::ParamExchange, ControlMsg::State(state::CREATE_STREAMS)) => {
                self.phase = Phase::CreateStreams;
            }
            (Phase::CreateStreams, ControlMsg::State(state::TEST_START)) => {
                self.start_clock(now);
                self.phase = Phase::Starting;
            }
            (Phase::Starting, ControlMsg::State(state::TEST_RUNNING)) => {
                self.phase = Phase::Running
            }
            (Phase::Running | Phase::Ending, ControlMsg::State(state::EXCHANGE_RESULTS)) => {
                self.stop_clock();
                let ours = self.our_results();
                self.push_json(|b| ours.to_json(b));
                self.reader.expect(Expect::Json);
                self.phase = Phase::ExchangeResults;
            }
            (Phase::ExchangeResults, ControlMsg::Json(_)) => {
                if self.take_peer_results() {
                    self.phase = Phase::Display;
                }
            }
            (Phase::Display, ControlMsg::State(state::DISPLAY_RESULTS)) => {
                self.push_state(state::IPERF_DONE);
                self.phase = Phase::Done;
            }
            (_, ControlMsg::State(s)) => self.fail(Failure::UnexpectedState(s)),
            _ => self.fail(Failure::UnexpectedState(0)),
        }
    }

    fn take_peer_results(&mut self) -> bool {
        let r = match Results::from_json(self.reader.payload()) {
            Ok(r) => r,
            Err(e) => {
                self.fail(Failure::BadJson(e));
                return false;
            }
        };
        for entry in &r.streams {
            match self.streams[..self.nstreams]
                .iter_mut()
                .find(|s| s.id == entry.id)
            {
                Some(s) => s.peer = Some(*entry),
                None => {
                    self.fail(Failure::UnknownStream);
                    return false;
                }
            }
        }
        self.peer_cpu = r.cpu_util;
        self.peer_has_retransmits = r.sender_has_retransmits;
        self.have_peer_results = true;
        true
    }

    /// Our results document (iperf3 `send_results`).
    pub fn our_results(&self) -> Results {
        let secs = self.elapsed_s();
        let mut r = Results {
            cpu_util: [0.0; 3],
            sender_has_retransmits: -1,
            streams: heapless::Vec::new(),
        };
        if self.streams().iter().any(|s| s.sender) {
            let all = self
                .streams()
                .iter()
                .filter(|s| s.sender)
                .all(|s| s.retransmits.is_some());
            r.sender_has_retransmits = i64::from(all && self.params.protocol == Protocol::Tcp);
        }
        for s in self.streams() {
            let _ = r.streams.push(s.result(secs));
        }
        r
    }

    fn start_clock(&mut self, now: Micros) {
        self.start = Some(now);
        self.end = None;
        self.interval_start = now;
        if self.params.omit_s > 0 {
            self.omitting = true;
            self.omit_end = Some(now.saturating_add(u64::from(self.params.omit_s) * 1_000_000));
        }
        if self.interval_us > 0 {
            self.next_interval = Some(now.saturating_add(self.interval_us));
        }
    }

    fn stop_clock(&mut self) {
        if self.start.is_some() && self.end.is_none() {
            let now = self.now;
            self.emit_interval(now, true);
            self.end = Some(now);
            self.next_interval = None;
        }
    }

    /// Seconds from the test start (after omitting) to the end (or now).
    pub fn elapsed_s(&self) -> f64 {
        let Some(start) = self.start else { return 0.0 };
        let start = if self.params.omit_s > 0 && !self.omitting {
            self.omit_end.unwrap_or(start)
        } else {
            start
        };
        let end = self.end.unwrap_or(self.now);
        end.saturating_sub(start) as f64 / 1e6
    }

    // ---- streams ----------------------------------------------------------------------

    fn stream_role_for_next(&self) -> bool {
        let p = usize::from(self.params.parallel.max(1));
        let i = self.nstreams;
        match self.role {
            // iperf_create_streams: --bidir opens P sending streams, then P receiving.
            Role::Client if self.params.bidirectional => i < p,
            Role::Client => !self.params.reverse,
            // iperf_run_server: receivers are accepted first, then senders.
            Role::Server if self.params.bidirectional => i >= p,
            Role::Server => self.params.reverse,
        }
    }

    fn add_stream(&mut self, now: Micros) -> Option<usize> {
        if self.phase != Phase::CreateStreams
            || self.nstreams >= self.streams_wanted()
            || self.nstreams >= MAX_STREAMS
        {
            return None;
        }
        let idx = self.nstreams;
        let sender = self.stream_role_for_next();
        self.streams[idx] = Stream::new(stream_id(idx), sender);
        self.nstreams += 1;
        self.last_activity = now;
        if self.role == Role::Server && self.nstreams == self.streams_wanted() {
            self.push_state(state::TEST_START);
            self.start_clock(now);
            self.push_state(state::TEST_RUNNING);
            self.phase = Phase::Running;
        }
        Some(idx)
    }

    /// Server: a TCP data connection presented `cookie`. Returns the new stream's index if
    /// it belongs to the test being set up; otherwise the connection should get
    /// ACCESS_DENIED and be closed.
    pub fn accept_tcp_stream(&mut self, cookie: &[u8], now: Micros) -> Option<usize> {
        self.now = now;
        if self.params.protocol != Protocol::Tcp || cookie != self.cookie.as_slice() {
            return None;
        }
        self.add_stream(now)
    }

    /// Server: a UDP datagram arrived from an unknown peer while streams are being set
    /// up. Returns the new stream's index if it is a hello; the adapter then answers
    /// [`wire::udp_hello_reply`] and binds the peer address to the stream.
    pub fn accept_udp_stream(&mut self, datagram: &[u8], now: Micros) -> Option<usize> {
        self.now = now;
        if self.params.protocol != Protocol::Udp || !wire::is_udp_hello(datagram) {
            return None;
        }
        self.add_stream(now)
    }

    /// Client: the data stream at the next index is connected (TCP: cookie sent; UDP:
    /// hello answered). Returns its index.
    pub fn client_stream_opened(&mut self, now: Micros) -> Option<usize> {
        self.now = now;
        if self.role != Role::Client {
            return None;
        }
        self.add_stream(now)
    }

    /// True if data streams should be read now (iperf3 reads only while running; the
    /// client keeps draining until the end so a sending server never blocks).
    pub fn should_read(&self) -> bool {
        match self.role {
            Role::Server => self.phase == Phase::Running,
            Role::Client => matches!(
                self.phase,
                Phase::Running | Phase::Ending | Phase::ExchangeResults | Phase::Display
            ),
        }
    }

    /// True while received data is counted.
    fn counting(&self) -> bool {
        self.phase == Phase::Running && self.end.is_none()
    }

    /// Bytes read from TCP stream `idx`.
    pub fn on_tcp_received(&mut self, idx: usize, n: usize, now: Micros) {
        self.now = now;
        self.last_activity = now;
        if !self.counting() {
            return;
        }
        if let Some(s) = self.streams[..self.nstreams].get_mut(idx) {
            if !s.sender {
                s.bytes_received = s.bytes_received.saturating_add(n as u64);
                self.test_bytes_received = self.test_bytes_received.saturating_add(n as u64);
                self.last_rx = Some(now);
            }
        }
    }

    /// A datagram read from UDP stream `idx`.
    pub fn on_udp_received(&mut self, idx: usize, datagram: &[u8], now: Micros) {
        self.now = now;
        self.last_activity = now;
        if !self.counting() {
            return;
        }
        let c64 = self.params.udp_counters_64bit;
        if let Some(s) = self.streams[..self.nstreams].get_mut(idx) {
            if !s.sender {
                s.on_udp_datagram(datagram, now, c64);
                self.test_bytes_received = self
                    .test_bytes_received
                    .saturating_add(datagram.len() as u64);
                self.test_datagrams_received += 1;
                self.last_rx = Some(now);
            }
        }
    }

    fn sender_done(&self) -> bool {
        if self.omitting {
            return false;
        }
        let p = &self.params;
        (p.bytes != 0 && self.test_bytes_sent >= p.bytes)
            || (p.blocks != 0 && self.test_blocks_sent >= p.blocks)
    }

    /// The earliest time stream `idx` may send again under `-b` pacing (iperf3 compares
    /// the stream's average rate since the start with the target).
    fn paced_until(&self, s: &Stream) -> Option<Micros> {
        let rate = self.params.rate_bps;
        let start = self.start?;
        if rate == 0 || s.bytes_sent == 0 {
            return None;
        }
        let us = (u128::from(s.bytes_sent) * 8 * 1_000_000 / u128::from(rate))
            .min(u128::from(u64::MAX / 2));
        Some(start.saturating_add(us as u64))
    }

    /// How many bytes TCP stream `idx` may send now: the rest of the current block, or 0
    /// if it must wait (not running, not a sender, paced, or the test is complete).
    pub fn tcp_send_budget(&self, idx: usize, now: Micros) -> usize {
        if self.params.protocol != Protocol::Tcp || !self.may_send(idx, now) {
            return 0;
        }
        let Some(s) = self.streams().get(idx) else {
            return 0;
        };
        let len = self.params.len.max(1);
        (len - s.block_offset.min(len - 1)) as usize
    }

    /// True if stream `idx` may send now: we send on it, the test is running, the end
    /// condition is not met and `-b` pacing allows it.
    pub fn may_send(&self, idx: usize, now: Micros) -> bool {
        let Some(s) = self.streams().get(idx) else {
            return false;
        };
        s.sender
            && self.counting()
            && !self.sender_done()
            && self.paced_until(s).is_none_or(|t| t <= now)
    }

    /// Bytes written to TCP stream `idx`.
    pub fn on_tcp_sent(&mut self, idx: usize, n: usize, now: Micros) {
        self.now = now;
        self.last_activity = now;
        let len = self.params.len;
        if let Some(s) = self.streams[..self.nstreams].get_mut(idx) {
            let blocks = s.blocks_sent;
            s.on_sent(n, len);
            self.test_blocks_sent += s.blocks_sent - blocks;
            self.test_bytes_sent = self.test_bytes_sent.saturating_add(n as u64);
        }
    }

    /// Writes the next datagram of UDP stream `idx` into `buf` (header + filler already in
    /// `buf`) if it may send now; returns its length. Call [`on_udp_sent`](Self::on_udp_sent)
    /// once it is out, or just call this again after a failed send.
    pub fn udp_next(&self, idx: usize, now: Micros, buf: &mut [u8]) -> Option<usize> {
        if self.params.protocol != Protocol::Udp || !self.may_send(idx, now) {
            return None;
        }
        let s = self.streams().get(idx)?;
        let len = self.params.len as usize;
        let h = UdpHeader {
            sec: (now / 1_000_000) as u32,
            usec: (now % 1_000_000) as u32,
            count: s.packet_count + 1,
        };
        let dgram = buf.get_mut(..len)?;
        h.write(dgram, self.params.udp_counters_64bit)?;
        Some(len)
    }

    /// The datagram from [`udp_next`](Self::udp_next) went out (`n` bytes).
    pub fn on_udp_sent(&mut self, idx: usize, n: usize, now: Micros) {
        self.now = now;
        self.last_activity = now;
        if let Some(s) = self.streams[..self.nstreams].get_mut(idx) {
            s.packet_count += 1;
            s.bytes_sent = s.bytes_sent.saturating_add(n as u64);
            s.blocks_sent += 1;
            self.test_blocks_sent += 1;
            self.test_bytes_sent = self.test_bytes_sent.saturating_add(n as u64);
        }
    }

    /// Records TCP retransmits the adapter read for stream `idx` (e.g. Linux TCP_INFO).
    pub fn set_retransmits(&mut self, idx: usize, retransmits: u64) {
        if let Some(s) = self.streams[..self.nstreams].get_mut(idx) {
            s.retransmits = Some(retransmits);
        }
    }

    // ---- time ---------------------------------------------------------------------------

    /// Runs the clocks: end of the omitted period, intervals, the client's end of test,
    /// the watchdog. Call whenever [`poll_at`](Self::poll_at) passes and after I/O.
    pub fn poll(&mut self, now: Micros) {
        self.now = now;
        if self.is_finished() || self.phase == Phase::Idle {
            return;
        }
        if self.end.is_none() {
            let step = self.interval_us.max(1);
            while let Some(t) = self.next_interval.filter(|t| now >= *t) {
                self.emit_interval(t, false);
                // A late poll (clock jump, stalled caller) must not emit one interval per
                // missed period: only 2 are kept, so the ones holding the data would be
                // pushed out by empty ones, and a big jump would loop for ages. The next
                // interval spans the whole gap up to the last boundary not after `now`.
                let periods = ((now - t) / step).max(1);
                self.next_interval = t.checked_add(periods.saturating_mul(step));
            }
        }
        if self.omitting && self.omit_end.is_some_and(|t| now >= t) {
            self.omitting = false;
            self.test_bytes_sent = 0;
            self.test_blocks_sent = 0;
            self.test_bytes_received = 0;
            self.test_datagrams_received = 0;
            self.last_rx = None;
            for s in &mut self.streams[..self.nstreams] {
                s.reset_after_omit();
            }
            self.interval_start = now;
            if self.interval_us > 0 {
                self.next_interval = Some(now.saturating_add(self.interval_us));
            }
        }
        if self.role == Role::Client && self.phase == Phase::Running && self.client_done(now) {
            self.stop_clock();
            self.push_state(state::TEST_END);
            self.phase = Phase::Ending;
        }
        if self.role == Role::Server && self.phase == Phase::Running && self.params.duration_s > 0 {
            let limit = self.timed_us().saturating_add(SERVER_GRACE_US);
            if self.start.is_some_and(|s| now >= s.saturating_add(limit)) {
                self.fail(Failure::Timeout);
            }
        }
        if now.saturating_sub(self.last_activity) >= self.watchdog_us && !self.is_finished() {
            self.fail(Failure::Timeout);
        }
    }

    /// `-t` plus `-O` in microseconds (0 if the test is not timed).
    fn timed_us(&self) -> Micros {
        let p = &self.params;
        if p.duration_s == 0 {
            return 0;
        }
        (u64::from(p.duration_s) + u64::from(p.omit_s)).saturating_mul(1_000_000)
    }

    fn client_done(&self, now: Micros) -> bool {
        if self.omitting {
            return false;
        }
        let p = &self.params;
        let timed = p.duration_s != 0
            && self
                .start
                .is_some_and(|s| now >= s.saturating_add(self.timed_us()));
        let sends = self.streams().iter().any(|s| s.sender);
        if sends {
            return timed || self.sender_done();
        }
        // Receiving only (-R) with -n/-k: done when that much arrived (TCP blocks are
        // `len` bytes), or when the sender has been quiet for QUIET_END_US after sending
        // something (lost datagrams would otherwise keep the test open forever).
        let blocks_received = match p.protocol {
            Protocol::Udp => self.test_datagrams_received,
            Protocol::Tcp => self.test_bytes_received / u64::from(p.len.max(1)),
        };
        let counted = p.bytes != 0 || p.blocks != 0;
        timed
            || (p.bytes != 0 && self.test_bytes_received >= p.bytes)
            || (p.blocks != 0 && blocks_received >= p.blocks)
            || (counted && self.quiet_end().is_some_and(|t| now >= t))
    }

    /// Receiving-only count-based test: when the sender's silence ends it.
    fn quiet_end(&self) -> Option<Micros> {
        let p = &self.params;
        let receiving_only = self.role == Role::Client && !self.streams().iter().any(|s| s.sender);
        if receiving_only && (p.bytes != 0 || p.blocks != 0) {
            self.last_rx.map(|t| t.saturating_add(QUIET_END_US))
        } else {
            None
        }
    }

    /// When [`poll`](Self::poll) next has something to do (or a paced stream may send);
    /// `None` if nothing is scheduled.
    pub fn poll_at(&self) -> Option<Micros> {
        if self.is_finished() || self.phase == Phase::Idle {
            return None;
        }
        let mut t = self.last_activity.saturating_add(self.watchdog_us);
        let mut take = |x: Option<Micros>| {
            if let Some(x) = x {
                t = t.min(x);
            }
        };
        if self.omitting {
            take(self.omit_end);
        }
        take(self.next_interval);
        if self.phase == Phase::Running {
            if let Some(start) = self.start {
                let p = &self.params;
                if p.duration_s > 0 {
                    let d = self.timed_us();
                    let grace = if self.role == Role::Client {
                        0
                    } else {
                        SERVER_GRACE_US
                    };
                    take(Some(start.saturating_add(d).saturating_add(grace)));
                }
            }
            for s in self.streams().iter().filter(|s| s.sender) {
                take(self.paced_until(s).filter(|x| *x > self.now));
            }
            take(self.quiet_end());
        }
        Some(t)
    }

    fn emit_interval(&mut self, at: Micros, last: bool) {
        if self.interval_us == 0 || at <= self.interval_start {
            return;
        }
        // iperf3 drops a final fragment shorter than a tenth of the interval.
        if last && at - self.interval_start < self.interval_us / 10 {
            return;
        }
        let start = self.start.unwrap_or(at);
        let mut iv = Interval {
            start_s: self.interval_start.saturating_sub(start) as f64 / 1e6,
            end_s: at.saturating_sub(start) as f64 / 1e6,
            omitted: self.omitting,
            streams: heapless::Vec::new(),
        };
        for s in &mut self.streams[..self.nstreams] {
            let b = s.interval_base;
            let _ = iv.streams.push(IntervalStream {
                id: s.id,
                sender: s.sender,
                bytes: s.bytes_for_interval().saturating_sub(b.bytes),
                packets: s.packet_count.saturating_sub(b.packets),
                lost: s.cnt_error.saturating_sub(b.lost),
                outoforder: s.outoforder.saturating_sub(b.outoforder),
                jitter_s: s.jitter,
            });
            s.interval_base = IntervalBase {
                bytes: s.bytes_for_interval(),
                packets: s.packet_count,
                lost: s.cnt_error,
                outoforder: s.outoforder,
            };
        }
        self.interval_start = at;
        if self.pending_intervals.is_full() {
            self.pending_intervals.pop_front();
        }
        let _ = self.pending_intervals.push_back(iv);
    }

    /// Takes the oldest interval report not yet taken (`-i`); up to 2 are kept (poll at least once per interval).
    pub fn take_interval(&mut self) -> Option<Interval> {
        self.pending_intervals.pop_front()
    }

    /// The test's figures as far as known; complete once [`phase`](Self::phase) is
    /// [`Phase::Done`].
    pub fn report(&self) -> TestReport {
        let mut rep = TestReport {
            params: self.params,
            seconds: self.elapsed_s(),
            forward: None,
            reverse: None,
            streams: heapless::Vec::new(),
        };
        for s in self.streams() {
            let forward = (self.role == Role::Client) == s.sender;
            let d = DirectionReport::from_stream(s, self.params.protocol);
            let slot = if forward {
                &mut rep.forward
            } else {
                &mut rep.reverse
            };
            match slot {
                Some(acc) => acc.add(&d),
                None => *slot = Some(d),
            }
            let _ = rep.streams.push((s.id, forward, d));
        }
        let secs = rep.seconds;
        for d in [&mut rep.forward, &mut rep.reverse].into_iter().flatten() {
            d.finish(secs);
        }
        rep
    }
}

/// Checks parameters against what we support; on error gives the SERVER_ERROR code.
fn check_params(p: &Params) -> Result<(), (i32, &'static str)> {
    if p.parallel == 0 || usize::from(p.parallel) > MAX_PARALLEL {
        return Err((server_error::NUM_STREAMS, "parallel streams must be 1..=8"));
    }
    let len = p.len as usize;
    let ok = match p.protocol {
        Protocol::Tcp => (1..=MAX_BLOCK_LEN).contains(&len),
        Protocol::Udp => (UdpHeader::len(p.udp_counters_64bit)..=MAX_UDP_BLOCK_LEN).contains(&len),
    };
    if !ok {
        return Err((server_error::BLOCK_SIZE, "block length out of range"));
    }
    Ok(())
}

/// Checks client parameters before a test (same limits the server applies).
pub fn validate_params(p: &Params) -> Result<(), &'static str> {
    check_params(p).map_err(|(_, why)| why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iperf::wire::state;

    /// Feeds `bytes` fully into `s`.
    fn feed(s: &mut Session, bytes: &[u8], now: Micros) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let n = s.control_input(rest, now);
            assert!(n > 0, "stalled in {:?}", s.phase());
            rest = &rest[n..];
        }
    }

    fn take(s: &mut Session) -> std::vec::Vec<u8> {
        let v = s.control_output().to_vec();
        s.control_sent(v.len());
        v
    }

    extern crate std;

    /// A client and a server session wired back to back: TCP, -P 2, reverse, -n.
    #[test]
    fn client_and_server_sessions_talk() {
        let (mut a, mut b, mut c, mut d) = ([0u8; 8192], [0u8; 8192], [0u8; 8192], [0u8; 8192]);
        let params = Params {
            parallel: 2,
            reverse: true,
            duration_s: 0,
            bytes: 100_000,
            len: 1000,
            ..Params::default()
        };
        let opts = ClientOptions {
            params,
            interval_us: 0,
            cookie_seed: 5,
        };
        let mut cl = Session::client(&opts, &mut a, &mut b, 0);
        let mut sv = Session::server(&mut c, &mut d);
        sv.accept_control(0);
        let mut now = 0;
        for _ in 0..20 {
            let out = take(&mut cl);
            feed(&mut sv, &out, now);
            let out = take(&mut sv);
            feed(&mut cl, &out, now);
            if cl.phase() == Phase::CreateStreams {
                while cl.streams().len() < cl.streams_wanted() {
                    cl.client_stream_opened(now).unwrap();
                    let cookie = *cl.cookie();
                    sv.accept_tcp_stream(&cookie, now).unwrap();
                }
            }
            if sv.phase() == Phase::Running && cl.phase() == Phase::Running {
                // The server sends; the client counts.
                for i in 0..2 {
                    while let n @ 1.. = sv.tcp_send_budget(i, now) {
                        sv.on_tcp_sent(i, n, now);
                        cl.on_tcp_received(i, n, now);
                    }
                }
                now += 1000;
                cl.poll(now);
                sv.poll(now);
            }
            if cl.phase() == Phase::Done {
                break;
            }
        }
        assert_eq!(cl.phase(), Phase::Done);
        let out = take(&mut cl);
        assert_eq!(out, [state::IPERF_DONE as u8]);
        feed(&mut sv, &out, now);
        assert_eq!(sv.phase(), Phase::Done);
        let (rc, rs) = (cl.report(), sv.report());
        let (dc, ds) = (rc.reverse.unwrap(), rs.reverse.unwrap());
        assert_eq!(dc.bytes_sent, 100_000);
        assert_eq!(
            (dc.bytes_sent, dc.bytes_received),
            (ds.bytes_sent, ds.bytes_received)
        );
        assert_eq!(
            sv.streams()
                .iter()
                .map(|s| s.id)
                .collect::<std::vec::Vec<_>>(),
            [1, 3]
        );
        assert!(rc.forward.is_none() && rs.forward.is_none());
    }

    #[test]
    fn server_refuses_what_it_cannot_do() {
        let (mut c, mut d) = ([0u8; 8192], [0u8; 8192]);
        let mut sv = Session::server(&mut c, &mut d);
        sv.accept_control(0);
        feed(&mut sv, &wire::make_cookie(1), 0);
        assert_eq!(take(&mut sv), [state::PARAM_EXCHANGE as u8]);
        let json = br#"{"udp":true,"time":1,"parallel":1,"len":8}"#;
        let mut msg = (json.len() as u32).to_be_bytes().to_vec();
        msg.extend_from_slice(json);
        feed(&mut sv, &msg, 0);
        let out = take(&mut sv);
        assert_eq!(out[0], state::SERVER_ERROR as u8);
        assert_eq!(out.len(), 9);
        assert!(matches!(sv.phase(), Phase::Failed(Failure::BadParams(_))));
        // A finished session ignores further input.
        assert_eq!(sv.control_input(&[1, 2, 3], 0), 0);
        sv.reset();
        assert_eq!(sv.phase(), Phase::Idle);
    }

    /// A client receiving with `-R` and `-i 10 ms`, running since `start`.
    fn running_receiver(
        rx: &'static mut [u8],
        tx: &'static mut [u8],
        start: Micros,
    ) -> Session<'static> {
        let opts = ClientOptions {
            params: Params {
                reverse: true,
                omit_s: 1,
                ..Params::default()
            },
            interval_us: 10_000,
            cookie_seed: 3,
        };
        let mut cl = Session::client(&opts, rx, tx, start);
        feed(
            &mut cl,
            &[state::PARAM_EXCHANGE as u8, state::CREATE_STREAMS as u8],
            start,
        );
        cl.client_stream_opened(start).unwrap();
        feed(
            &mut cl,
            &[state::TEST_START as u8, state::TEST_RUNNING as u8],
            start,
        );
        assert_eq!(cl.phase(), Phase::Running);
        cl
    }

    #[test]
    fn a_late_poll_keeps_the_interval_that_holds_the_data() {
        let mut cl = running_receiver(std::vec![0; 8192].leak(), std::vec![0; 8192].leak(), 0);
        // End the omitted period on time, then receive, then poll 100 intervals late.
        cl.poll(1_000_000);
        while cl.take_interval().is_some() {}
        cl.on_tcp_received(0, 5000, 1_005_000);
        cl.poll(1_000_000 + 100 * 10_000 + 5_000);
        let mut bytes = 0;
        let mut taken = 0;
        while let Some(iv) = cl.take_interval() {
            bytes += iv.streams.iter().map(|s| s.bytes).sum::<u64>();
            taken += 1;
        }
        assert_eq!(
            bytes, 5000,
            "the received bytes must be in a reported interval"
        );
        assert!(taken <= 2);
    }

    #[test]
    fn clock_values_near_the_end_of_time_do_not_overflow() {
        let start = u64::MAX - 1_000;
        let mut cl = running_receiver(std::vec![0; 8192].leak(), std::vec![0; 8192].leak(), start);
        cl.poll(u64::MAX);
        cl.on_tcp_received(0, 10, u64::MAX);
        let _ = cl.poll_at();
        cl.poll(u64::MAX);
        let _ = cl.report();
    }

    #[test]
    fn watchdog_frees_a_silent_peer() {
        let (mut c, mut d) = ([0u8; 512], [0u8; 512]);
        let mut sv = Session::server(&mut c, &mut d);
        sv.set_watchdog(1_000_000);
        sv.accept_control(10);
        assert_eq!(sv.poll_at(), Some(1_000_010));
        sv.poll(1_000_009);
        assert_eq!(sv.phase(), Phase::Cookie);
        sv.poll(1_000_010);
        assert_eq!(sv.phase(), Phase::Failed(Failure::Timeout));
    }
}
