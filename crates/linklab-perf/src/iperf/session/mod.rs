//! The sans-IO iperf3 test: one state machine for both ends of the control connection.
//!
//! A [`Session`] takes control-connection bytes, data-stream events and the current time,
//! and gives back control bytes to send, what each data stream may do next and when it
//! wants to be polled again. It never touches a socket: the std adapter (the crate
//! linklab-perf-host) and the smoltcp adapter ([`super::device`]) move the bytes.
//!
//! The `impl Session` is spread over one file per concern:
//! - `control`: control messages in (cookie, states, parameters, results) and the replies;
//! - `output`: the control output buffer;
//! - `streams`: data streams (accepting, counting, send permission, pacing);
//! - `clock`: the test clock, `-O`, `-i` intervals, the end of the test, the watchdog;
//! - `results`: the results exchange and the report.

mod clock;
mod control;
mod output;
mod results;
mod streams;
#[cfg(test)]
mod tests;

use super::json::{CongestionName, JsonError, ParamStrings, Params};
use super::report::Interval;
use super::stream::Stream;
#[cfg(feature = "iperf-host")]
use super::wire;
use super::wire::{ControlReader, Expect, COOKIE_SIZE, MAX_JSON_LEN, MAX_STREAMS};
use crate::time::Micros;
use output::Output;

pub use control::validate_params;

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
    /// The peer sent a JSON document (or a cookie) where a state byte belongs.
    UnexpectedMessage,
    /// A JSON document was malformed, incomplete or too long.
    BadJson(JsonError),
    /// The parameters ask for something we do not support (see `reason`).
    BadParams(&'static str),
    /// Server: the adapter refused the parameters with SERVER_ERROR (`i_errno`, `errno`),
    /// as iperf3 refuses an option its sockets cannot take.
    Refused(i32, i32),
    /// The peer's results name a stream we do not have.
    UnknownStream,
    /// Nothing happened for longer than the watchdog allows.
    Timeout,
    /// Our control output buffer is too small.
    OutputFull,
    /// A data stream failed (closed or reset) during the test.
    StreamFailed,
}

pub use super::errors::i_errno as server_error;

/// How long a test may sit without any activity before the watchdog ends it.
pub const DEFAULT_WATCHDOG_US: Micros = 10_000_000;
/// A receiving-only client of a `-n`/`-k` test ends after the sender is quiet this long.
pub const QUIET_END_US: Micros = 1_000_000;
/// Grace after `-t` + `-O` before the server gives up on a client: iperf3's own, 40 s (its
/// server allows a 4 s round trip for each of 10 state transitions). A slow link needs it:
/// on the mps2 UART beside busy cores TEST_END reached the device 6 s after the client sent
/// it, and a 5 s grace ended tests stock iperf3 would have finished. A vanished client is
/// freed sooner by the watchdog.
pub const SERVER_GRACE_US: Micros = 40_000_000;

/// Client-side settings that are not part of the wire parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClientOptions<'a> {
    /// The test parameters announced to the server.
    pub params: Params,
    /// The free-text parameters announced with them (`-T`, `--extra-data`, `-C`).
    pub strings: ParamStrings<'a>,
    /// Reporting interval (`-i`) in microseconds, 0 for none (at least 10 ms).
    pub interval_us: Micros,
    /// Seed for the cookie (make it differ per test).
    pub cookie_seed: u64,
}

/// What the peer's results document said about the whole test.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerSummary {
    /// The peer's CPU use, percent (total, user, system), if it could know it.
    pub cpu_util: Option<[f64; 3]>,
    /// 1 if the peer's sending streams report TCP retransmits, 0 if not, -1 if it only
    /// received.
    pub sender_has_retransmits: i64,
    /// The TCP congestion control the peer's streams used, if it said.
    pub congestion_used: Option<CongestionName>,
}

/// The test-wide counters iperf3 keeps (`test->bytes_sent` ...), zeroed when `-O` ends.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    /// Bytes sent on all streams.
    bytes_sent: u64,
    /// Whole blocks sent on all streams.
    blocks_sent: u64,
    /// Bytes received on all streams.
    bytes_received: u64,
    /// Datagrams (UDP) received, for `-R -k`.
    datagrams_received: u64,
    /// When counted data last arrived.
    last_rx: Option<Micros>,
}

/// Everything one test changes: a new test (server) starts from [`Test::new`].
struct Test<const S: usize> {
    phase: Phase,
    cookie: [u8; COOKIE_SIZE],
    params: Params,
    streams: [Stream; S],
    nstreams: usize,
    clock: clock::Clock<S>,
    totals: Totals,
    peer: Option<PeerSummary>,
    last_activity: Micros,
    /// Server: parameters read and waiting for the adapter's verdict.
    params_pending: bool,
    /// Server: our results wait for the adapter's server output.
    results_held: bool,
    /// This side has nothing more to send (`-F` reached the end of its file).
    data_exhausted: bool,
}

impl<const S: usize> Test<S> {
    /// Always inlined: outlined, its 4 KB (the stream table) were built in its own frame and
    /// copied into every caller's (the firmware's stack peak was 41 KB at boot, the session
    /// built and copied at four levels; now 16 KB, measured on the Cortex-M3).
    #[inline(always)]
    fn new(now: Micros) -> Self {
        Self {
            phase: Phase::Idle,
            cookie: [0; COOKIE_SIZE],
            params: Params::default(),
            streams: [Stream::default(); S],
            nstreams: 0,
            clock: clock::Clock::default(),
            totals: Totals::default(),
            peer: None,
            last_activity: now,
            params_pending: false,
            results_held: false,
            data_exhausted: false,
        }
    }
}

impl<'a> Session<'a> {
    /// A server session over a receive buffer (>= 8 KiB to accept any parameter document
    /// iperf3 may send; smaller buffers refuse larger documents) and a transmit buffer
    /// (>= 4 KiB holds results for 16 streams).
    pub fn server(rx: &'a mut [u8], tx: &'a mut [u8]) -> Self {
        Self::server_for(rx, tx)
    }

    /// A client session that will run the test in `opts` (feature `iperf-host`); the cookie is queued as the
    /// first control output. Connect the control connection, then feed it.
    #[cfg(feature = "iperf-host")]
    pub fn client(
        opts: &ClientOptions<'a>,
        rx: &'a mut [u8],
        tx: &'a mut [u8],
        now: Micros,
    ) -> Self {
        let mut s = Self::new(Role::Client, rx, tx, now);
        s.test.params = opts.params;
        s.strings = opts.strings;
        s.set_interval(opts.interval_us);
        s.test.cookie = wire::make_cookie(opts.cookie_seed);
        s.test.phase = Phase::ParamExchange;
        s.reader.expect(Expect::State);
        let cookie = s.test.cookie;
        s.push_out(&cookie);
        s
    }
}

/// The iperf3 test state machine (client or server), over caller-provided buffers, with room
/// for `S` streams (a device serving one stream needs one; [`MAX_STREAMS`] covers every test
/// iperf3 3.12 can ask for).
pub struct Session<'a, const S: usize = MAX_STREAMS> {
    role: Role,
    /// Reporting interval (`-i`), 0 for none.
    interval_us: Micros,
    watchdog_us: Micros,
    reader: ControlReader<'a>,
    out: Output<'a>,
    /// The time of the latest call that told us the time.
    now: Micros,
    /// Client: the free-text parameters.
    #[cfg_attr(not(feature = "iperf-host"), allow(dead_code))]
    strings: ParamStrings<'a>,
    /// Our CPU use over the test, as the adapter measured it.
    cpu_util: Option<[f64; 3]>,
    /// The congestion control our TCP streams use, as the adapter read it.
    congestion_used: Option<CongestionName>,
    /// Server: the adapter reviews parameters before the streams are created.
    review_params: bool,
    /// Server: the adapter supplies its output for `--get-server-output`.
    supplies_output: bool,
    /// The adapter paces `--fq-rate` in software (it has no socket pacing).
    app_fq_pacing: bool,
    test: Test<S>,
}

impl<'a, const S: usize> Session<'a, S> {
    fn new(role: Role, rx: &'a mut [u8], tx: &'a mut [u8], now: Micros) -> Self {
        Self {
            role,
            interval_us: 0,
            watchdog_us: DEFAULT_WATCHDOG_US,
            reader: ControlReader::new(rx, MAX_JSON_LEN),
            out: Output::new(tx),
            now,
            strings: ParamStrings::default(),
            cpu_util: None,
            congestion_used: None,
            review_params: false,
            supplies_output: false,
            app_fq_pacing: false,
            test: Test::new(now),
        }
    }

    /// A server session with room for `S` streams (see [`Session::server`]).
    pub fn server_for(rx: &'a mut [u8], tx: &'a mut [u8]) -> Self {
        Self::new(Role::Server, rx, tx, 0)
    }

    /// Sets the watchdog: the test fails after this long without any activity.
    pub fn set_watchdog(&mut self, us: Micros) {
        self.watchdog_us = us.max(1);
    }

    /// Sets the reporting interval (`-i`) for the next test: 0 for none, else at least
    /// 10 ms (shorter ones would only flood the caller).
    pub fn set_interval(&mut self, us: Micros) {
        self.interval_us = if us == 0 { 0 } else { us.max(10_000) };
    }

    /// Accepts JSON documents up to `max` bytes (at most the receive buffer; a client that
    /// asks for the server's output needs more than [`MAX_JSON_LEN`]).
    pub fn set_max_json(&mut self, max: usize) {
        self.reader.set_max_json(max);
    }

    /// The last JSON document received (parameters or results), until the next message.
    pub fn last_json(&self) -> &[u8] {
        if self.reader.expecting() == Expect::Cookie {
            &[]
        } else {
            self.reader.payload()
        }
    }

    /// Records our CPU use over the test (total, user, system, percent) for the results
    /// exchange; left unset, the results say `null` (unknown).
    pub fn set_cpu_util(&mut self, cpu: [f64; 3]) {
        self.cpu_util = Some(cpu);
    }

    /// Records the TCP congestion control our streams use (cut to 16 bytes).
    pub fn set_congestion_used(&mut self, name: &str) {
        let mut n = CongestionName::new();
        for c in name.chars() {
            if n.push(c).is_err() {
                break;
            }
        }
        self.congestion_used = Some(n);
    }

    /// Server: the adapter reviews each test's parameters ([`params_pending`]) and answers
    /// with [`accept_params`] or [`refuse_params`] before streams are created.
    ///
    /// [`params_pending`]: Self::params_pending
    /// [`accept_params`]: Self::accept_params
    /// [`refuse_params`]: Self::refuse_params
    pub fn set_review_params(&mut self, on: bool) {
        self.review_params = on;
    }

    /// Server: the adapter supplies its output when a client asks for it
    /// (`--get-server-output`): our results then wait for [`send_results`](Self::send_results).
    pub fn set_supplies_output(&mut self, on: bool) {
        self.supplies_output = on;
    }

    /// The adapter cannot pace sockets (`--fq-rate`): the session paces sending streams to
    /// the lower of `-b` and `--fq-rate` instead.
    pub fn set_app_fq_pacing(&mut self, on: bool) {
        self.app_fq_pacing = on;
    }

    /// Which end this session plays.
    pub fn role(&self) -> Role {
        self.role
    }

    /// True for a client session (never without feature `iperf-host`, so a server-only
    /// build carries none of the client's code).
    fn is_client(&self) -> bool {
        cfg!(feature = "iperf-host") && self.role == Role::Client
    }

    /// Where the test is.
    pub fn phase(&self) -> Phase {
        self.test.phase
    }

    /// The test parameters (announced by the client).
    pub fn params(&self) -> &Params {
        &self.test.params
    }

    /// The cookie of the current test.
    pub fn cookie(&self) -> &[u8; COOKIE_SIZE] {
        &self.test.cookie
    }

    /// What the peer's results said about the whole test, once they arrived.
    pub fn peer_summary(&self) -> Option<&PeerSummary> {
        self.test.peer.as_ref()
    }

    /// Our CPU use as recorded by [`set_cpu_util`](Self::set_cpu_util).
    pub fn cpu_util(&self) -> Option<[f64; 3]> {
        self.cpu_util
    }

    /// The congestion control recorded by [`set_congestion_used`](Self::set_congestion_used).
    pub fn congestion_used(&self) -> Option<&str> {
        self.congestion_used.as_deref()
    }

    /// True once the test is over (done or failed); the adapter should close everything.
    pub fn is_finished(&self) -> bool {
        matches!(self.test.phase, Phase::Done | Phase::Failed(_))
    }

    /// When the test last saw activity — control bytes in, stream bytes either way, a stream
    /// opened: what the watchdog counts from (and what decides whether an idle test may give
    /// way to a new client).
    pub fn last_activity(&self) -> Micros {
        self.test.last_activity
    }

    /// Server: true if a client holds the server (a new control connection gets
    /// ACCESS_DENIED).
    pub fn is_busy(&self) -> bool {
        self.test.phase != Phase::Idle
    }

    /// Streams set up so far.
    pub fn streams(&self) -> &[Stream] {
        &self.test.streams[..self.test.nstreams]
    }

    /// Streams the test needs (`-P`, doubled for `--bidir`).
    pub fn streams_wanted(&self) -> usize {
        let p = usize::from(self.test.params.parallel.max(1));
        if self.test.params.bidirectional {
            2 * p
        } else {
            p
        }
    }

    /// Server: a control connection was accepted while idle. Read its cookie next.
    pub fn accept_control(&mut self, now: Micros) {
        self.reset();
        self.now = now;
        self.test.last_activity = now;
        self.test.phase = Phase::Cookie;
        self.reader.expect(Expect::Cookie);
    }

    /// Server: forget the current test and become idle (call after closing its sockets).
    pub fn reset(&mut self) {
        self.test = Test::new(self.now);
        self.cpu_util = None;
        self.congestion_used = None;
        self.reader.expect(Expect::State);
        self.out.clear();
    }

    /// Ends the test with `why` (the first failure wins; a finished test stays as it is).
    /// Not inlined: one copy serves its dozen callers.
    #[inline(never)]
    fn fail(&mut self, why: Failure) {
        if !self.is_finished() {
            self.stop_clock();
            self.test.phase = Phase::Failed(why);
        }
    }

    /// Mutable access to the streams set up so far.
    fn streams_mut(&mut self) -> &mut [Stream] {
        &mut self.test.streams[..self.test.nstreams]
    }

    /// Takes the oldest interval report not yet taken (`-i`); up to 2 are kept (poll at
    /// least once per interval).
    pub fn take_interval(&mut self) -> Option<Interval<S>> {
        self.test.clock.pending.pop_front()
    }

    /// Queues `bytes` of control output; the test fails if the buffer cannot hold them.
    fn push_out(&mut self, bytes: &[u8]) {
        if self.out.push(bytes).is_err() {
            self.fail(Failure::OutputFull);
        }
    }

    /// Queues one state byte.
    fn push_state(&mut self, s: i8) {
        self.push_out(&[s as u8]);
    }

    /// Queues a length-prefixed JSON document written by `f`.
    fn push_json(&mut self, f: impl FnOnce(&mut [u8]) -> Result<usize, JsonError>) {
        if self.out.push_json(f).is_err() {
            self.fail(Failure::OutputFull);
        }
    }

    /// Control bytes waiting to be sent.
    pub fn control_output(&self) -> &[u8] {
        self.out.pending()
    }

    /// Marks `n` bytes of [`control_output`](Self::control_output) as sent.
    pub fn control_sent(&mut self, n: usize) {
        self.out.consume(n);
    }
}
