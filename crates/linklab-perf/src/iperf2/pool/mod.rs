//! iperf 2's server (port 5001) over a pool of sockets, whatever the stack: which socket
//! listens, which carries a client's stream or a `-r`/`-d` connect-back, the UDP socket and
//! its flow, the test they make up, the memory they borrow, and who gives way when a new
//! client finds the server busy. The adapters (`iperf2::device::SmoltcpIperf2Server` on
//! smoltcp 0.14, `crate::embassy`'s iperf 2 task on embassy-net) hand it their sockets
//! through [`Iperf2Sockets`] and call [`Iperf2Pool::poll`]; the protocol is the sans-IO core
//! ([`super::TcpServerConn`], [`super::TcpSender`], [`super::UdpServer`]).
//!
//! **One test at a time, with iperf3.** The sockets own no buffers: each is lent a slice of
//! the device's one data memory ([`crate::data_memory`]) while it listens for, carries or
//! sends a stream. Between tests one TCP socket listens and the UDP socket is bound over
//! idle slices (a window and a send buffer; a few datagrams), which iperf3 takes back when
//! its client starts a test. A test is the streams of one client (its `-P`, the connect-backs
//! it asks for) or one UDP flow; while it runs, the memory is the test's.
//!
//! **Busy.** iperf 2 has no refusal message, so a client that comes while the server is busy
//! (another client's test, an iperf3 test, a TCP test while a UDP flow runs or the other way
//! round) is answered by the stack: its SYN finds nothing listening and gets a RST (stock
//! `iperf -c` prints `connect failed: Connection refused` and exits 1), its UDP datagrams
//! find no bound socket (ICMP port unreachable: `write failed: Connection refused`); a
//! connection from another host that lands on a socket listening for the test's next
//! stream is reset (`refused`). An idle test gives way to a new client as iperf3's does
//! ([`Iperf2Pool::room_for`]); the core's watchdog ends it after 10 s without bytes.
//!
//! **Connect-back** (`-r`, `-d`) goes to the address the test's connection came from, at the
//! port its header names (never 0: the core refuses it), over IPv4; nowhere else.
//!
//! **On the device** the payload is never written: the bytes a stream sends are whatever the
//! send buffer holds (iperf 2 never checks them), received bytes are counted and dropped in
//! place. UDP `-R`, `--full-duplex` and connect-backs over UDP are not served (the flow is
//! received and reported).

mod room;
mod tcp;
mod udp;

use super::request::Protocol;
use super::{ConnectBack, TcpSender, TcpServerConfig, TcpServerConn, UdpServer, UdpServerConfig};
use crate::data_memory::Share;
use crate::rules::Peer;
use crate::socket::{TcpOps, TcpState, UdpOps};
use crate::syns::SynCounts;
use crate::time::Micros;

pub use room::Room;

/// Most TCP sockets the server can manage.
pub const MAX_TCP_SOCKETS: usize = 8;

/// How long a connect-back waits for a socket and memory, then for its handshake.
const CONNECT_TIMEOUT_US: Micros = 5_000_000;
/// How long a closing socket waits for its peer's FIN after ours was acknowledged.
const CLOSE_LINGER_US: Micros = 2_000_000;

/// What the server's slices of the data memory are made of.
#[derive(Clone, Copy, Debug)]
pub struct Iperf2Sizes {
    /// The window of a stream the server accepts (whole segments).
    pub window: usize,
    /// The send buffer of a socket that sends (`-R`, `--full-duplex`, a connect-back).
    pub tx: usize,
    /// The UDP socket's receive bytes (a few datagrams of 1 470).
    pub udp_rx: usize,
    /// The UDP socket's send bytes (its reports, 128 bytes each).
    pub udp_tx: usize,
}

/// The server's sockets and the memory they borrow, as a stack's adapter lends them for a poll.
pub trait Iperf2Sockets {
    /// The stack's UDP remote endpoint.
    type Endpoint: Copy + Eq;
    /// One TCP socket of the pool.
    type Tcp<'s>: TcpOps
    where
        Self: 's;
    /// The UDP socket.
    type Udp<'s>: UdpOps<Endpoint = Self::Endpoint>
    where
        Self: 's;
    /// How many TCP sockets (at most [`MAX_TCP_SOCKETS`]).
    fn tcp_count(&self) -> usize;
    /// TCP socket `i` (< `tcp_count`).
    fn tcp(&mut self, i: usize) -> Self::Tcp<'_>;
    /// The UDP socket.
    fn udp(&mut self) -> Self::Udp<'_>;
    /// Makes TCP socket `i` (closed, without buffers) anew over a slice of the data memory
    /// of `share`; `idle` while no test holds the memory (the slice is given back when
    /// iperf3 claims it). False when there is no such slice now.
    fn prepare(&mut self, i: usize, share: Share, idle: bool) -> bool;
    /// Makes TCP socket `i` anew without buffers and gives its slice back (it is closed, and
    /// any RST of it has left).
    fn release(&mut self, i: usize);
    /// TCP socket `i`'s slice now carries a test (no longer idle).
    fn set_busy(&mut self, i: usize);
    /// Makes the UDP socket anew over a slice of `share` (`rx` received, `tx` sent), `idle`
    /// as [`prepare`](Self::prepare).
    fn prepare_udp(&mut self, share: Share, idle: bool) -> bool;
    /// Makes the UDP socket anew without buffers and gives its slice back.
    fn release_udp(&mut self);
    /// The UDP socket's slice now carries a test.
    fn set_udp_busy(&mut self);
    /// The UDP socket's test is over: its slice only waits again (idle).
    fn set_udp_idle(&mut self);
    /// Claims the data memory for a test (false: iperf3 holds it for one).
    fn claim(&mut self) -> bool;
    /// The test is over: the memory is free for the next claim.
    fn unclaim(&mut self);
    /// True when iperf3 claimed the memory while this server holds idle slices: its
    /// listening sockets are to give them back.
    fn must_yield(&self) -> bool;
    /// True while iperf3 holds the memory for a test (nothing of it may be lent here).
    fn memory_taken(&self) -> bool;
    /// Opens TCP socket `i` to `to` from `local_port`; false if it cannot.
    fn connect(&mut self, i: usize, to: Peer, local_port: u16) -> bool;
    /// Resets TCP socket `i` (a half-open handshake) and makes it listen on `port` again.
    fn relisten(&mut self, i: usize, port: u16) {
        let mut sock = self.tcp(i);
        sock.abort();
        let _ = sock.listen(port);
    }
    /// Runs the stack's egress now, so RSTs just queued leave (false where the adapter
    /// cannot: the pool then waits for them).
    fn flush(&mut self) -> bool;
    /// The IPv4 address of a UDP endpoint (None for IPv6).
    fn udp_addr(e: Self::Endpoint) -> Option<[u8; 4]>;
}

/// Counters of the iperf 2 server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Iperf2Counters {
    /// Tests started (a client's streams, or a UDP flow). Every test ends done or failed:
    /// `tests == tests_done + tests_failed` plus one while a test runs.
    pub tests: u32,
    /// Tests whose every stream, flow and connect-back ended normally.
    pub tests_done: u32,
    /// Tests with a stream reset, ended by the watchdog or evicted, refused by its header
    /// (an iperf3 cookie, a bad header), or whose connect-back failed.
    pub tests_failed: u32,
    /// TCP connections and UDP flows taken into tests.
    pub streams: u32,
    /// `-r`/`-d` connections opened to clients.
    pub connect_backs: u32,
    /// Clients turned away while the server was busy: connections from another host reset,
    /// datagrams of a second UDP client dropped (a SYN that finds the server busy is dropped
    /// unanswered instead: [`Iperf2Pool::syns`]).
    pub refused: u32,
    /// UDP datagrams dropped: a second client's while a flow runs, a flow's first while the
    /// server is busy, stale FINs, runts.
    pub datagrams_dropped: u32,
    /// Payload bytes received (headers included, as iperf 2 counts them).
    pub bytes_received: u64,
    /// Payload bytes sent (`-R`, `--full-duplex`, connect-backs).
    pub bytes_sent: u64,
    /// Half-open or closing sockets reset to make room for a new connection.
    pub reclaimed: u32,
    /// Idle tests ended for a new client.
    pub evicted: u32,
    /// Of the reclaimed, half-open sockets our SYN-ACK had answered.
    pub reclaimed_answered: u32,
}

/// What the pool knows of a listening socket's half-open connection (see
/// [`crate::evict::Kind`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Handshake {
    seen: Option<Micros>,
    answered: Option<Micros>,
}

/// A connect-back: its sender, when it was opened, and whether it got connected.
#[derive(Clone, Copy, Debug)]
struct Back {
    sender: TcpSender,
    since: Micros,
    connected: bool,
    /// The client's listener (a refused connect-back is tried again: [`BACK_RETRY_US`]).
    to: Peer,
    /// When a refused connect-back tries again.
    retry_at: Option<Micros>,
}

/// How long after a refused connect-back the pool tries again, within
/// [`CONNECT_TIMEOUT_US`]: a stock 2.1.8 client starts listening for `-d`'s connect-back
/// while it connects, and on a loaded host its listener may not be up when the header
/// arrives (its SYN then gets a RST, and the client "expected reverse connect").
const BACK_RETRY_US: Micros = 100_000;

/// What a TCP socket of the pool is doing. No heap: each socket's role holds its
/// connection's state in place, so the roles are as large as a stream's.
#[derive(Clone, Copy, Debug)]
#[allow(clippy::large_enum_variant)]
enum Role {
    /// Closed, without buffers.
    Parked,
    /// Listening over a slice (or about to), for a new test or the test's next stream.
    Listening(Handshake),
    /// A client's stream.
    Stream(TcpServerConn),
    /// A connect-back to the test's client.
    Back(Back),
    /// Closing (since then); its slice goes back once it is closed.
    Closing { since: Micros },
}

/// The test the server runs: one client's streams and connect-backs, or one UDP flow.
#[derive(Clone, Copy, Debug)]
pub(super) struct Test {
    protocol: Protocol,
    /// The client's IPv4 address (connections from any other are refused; None over IPv6).
    client: Option<[u8; 4]>,
    /// Streams the client's header says it opens (its `-P`, bounded by the sockets); None
    /// until a header is read (a socket keeps listening for more streams until then).
    threads: Option<usize>,
    /// Streams taken.
    accepted: usize,
    /// Something failed.
    failed: bool,
    /// When bytes last moved, for eviction.
    last_progress: Micros,
}

/// iperf 2's server over at most `M` TCP sockets and one UDP socket (see the module docs);
/// `E` is the stack's UDP endpoint.
pub struct Iperf2Pool<E: Copy + Eq, const M: usize = MAX_TCP_SOCKETS> {
    port: u16,
    sizes: Iperf2Sizes,
    tcp_cfg: TcpServerConfig,
    roles: [Role; M],
    /// Connect-backs to open: to whom, what.
    pending: heapless::Vec<(Peer, ConnectBack, Micros), M>,
    test: Option<Test>,
    udp: UdpServer<E, 1>,
    udp_cfg: UdpServerConfig,
    /// The UDP socket has its slice (idle or busy).
    udp_armed: bool,
    /// The local port of the next connect-back.
    next_port: u16,
    counters: Iperf2Counters,
    /// What became of every SYN to the server's port ([`crate::syns`]): its `listen_drops`
    /// are the SYNs dropped unanswered, while a handshake we answered could complete or while
    /// the server is busy (its client sends the SYN again and is served once the test ends).
    /// Apart from [`Iperf2Counters`], which the one-socket server (no SYN rule) shares.
    syns: SynCounts,
    now: Micros,
}

impl<E: Copy + Eq, const M: usize> Iperf2Pool<E, M> {
    /// A server on `port` whose sockets borrow slices of `sizes`.
    pub fn new(port: u16, sizes: Iperf2Sizes) -> Self {
        let tcp_cfg = TcpServerConfig {
            idle_timeout_us: crate::rules::IDLE_TIMEOUT_MS * 1000,
            ..TcpServerConfig::default()
        };
        let udp_cfg = UdpServerConfig {
            idle_timeout_us: crate::rules::IDLE_TIMEOUT_MS * 1000,
            // No wall clock on a device: the first datagram's transit is not a jitter sample.
            first_transit: super::FirstTransit::Skip,
            serve_reverse: false,
            serve_connect_back: false,
            // A client repeats its FIN every 10 ms until a report arrives: half a second
            // answers those of a lost report, and frees the server for the next test soon.
            linger_us: 500_000,
            ..UdpServerConfig::default()
        };
        Self {
            port,
            sizes,
            tcp_cfg,
            roles: [Role::Parked; M],
            pending: heapless::Vec::new(),
            test: None,
            udp: UdpServer::new(udp_cfg),
            udp_cfg,
            udp_armed: false,
            next_port: 49_152,
            counters: Iperf2Counters::default(),
            syns: SynCounts::new(),
            now: 0,
        }
    }

    /// The port served.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's counters.
    pub fn counters(&self) -> Iperf2Counters {
        self.counters
    }

    /// What became of the SYNs to its port.
    pub fn syns(&self) -> SynCounts {
        self.syns
    }

    /// TCP connections and UDP flows of the running test (0 between tests).
    pub fn open_streams(&self) -> usize {
        let tcp = self
            .roles
            .iter()
            .filter(|r| matches!(r, Role::Stream(_) | Role::Back(_)))
            .count();
        tcp + usize::from(self.udp_running())
    }

    /// True while a test holds the server.
    pub fn is_busy(&self) -> bool {
        self.test.is_some()
    }

    /// True when the server holds nothing and waits for nothing: no test, no socket lent a
    /// slice, no connect-back to open. While iperf3's test holds the memory such a server has
    /// nothing to do until it is over, and its adapter may skip its polls.
    pub fn dormant(&self) -> bool {
        self.test.is_none()
            && self.pending.is_empty()
            && !self.udp_armed
            && !self.udp.is_busy()
            && self.roles.iter().all(|r| matches!(r, Role::Parked))
    }

    /// When the server next needs [`poll`](Self::poll) even without network activity.
    pub fn poll_at(&self) -> Option<Micros> {
        let now = self.now;
        let roles = self.roles.iter().filter_map(|r| match r {
            Role::Stream(c) => c.poll_at(now),
            Role::Back(b) if b.connected => b.sender.poll_at(now),
            Role::Back(b) => Some(b.retry_at.unwrap_or(b.since + CONNECT_TIMEOUT_US)),
            Role::Closing { since } => Some(since + CLOSE_LINGER_US),
            _ => None,
        });
        let pending = self.pending.iter().map(|p| p.2 + CONNECT_TIMEOUT_US);
        roles.chain(pending).chain(self.udp.poll_at(now)).min()
    }

    /// Our SYN-ACK to the peer of TCP socket `i`'s half-open connection left at `now` (see
    /// [`crate::evict::Kind::Answered`]).
    pub fn note_answered(&mut self, i: usize, now: Micros) {
        if let Some(Role::Listening(h)) = self.roles.get_mut(i) {
            h.answered.get_or_insert(now);
        }
    }

    /// Does all pending work: accepts, reads and writes streams, opens connect-backs, serves
    /// UDP, ends the test, listens for the next. Call after the stack processed what
    /// arrived.
    pub fn poll<P: Iperf2Sockets<Endpoint = E>>(&mut self, s: &mut P, now: Micros) {
        self.now = now;
        let n = s.tcp_count().min(M);
        if s.must_yield() {
            self.give_back_idle(s, n);
        }
        for i in 0..n {
            self.service_tcp(s, i, now);
        }
        self.open_connect_backs(s, n, now);
        self.service_udp(s, now);
        self.end_test(s, n);
        self.arm(s, n);
    }

    /// iperf3 claimed the memory: the sockets that only wait for a client give their slices
    /// back, those in a handshake too. A spoofed SYN's handshake never completes, and the RST
    /// that ends it never leaves (its source answers no ARP request): under a flood to 5001,
    /// iperf3's streams waited for the memory until their test was evicted (every iperf3
    /// test of the mixed-load soak failed), and after one, a half-open socket timed out kept
    /// its slice for good (`--bidir` then found one share too few). A real client's ACK
    /// finds no socket and is reset, as any iperf 2 client is while iperf3's test holds the
    /// memory.
    fn give_back_idle<P: Iperf2Sockets<Endpoint = E>>(&mut self, s: &mut P, n: usize) {
        if self.test.is_some() {
            return;
        }
        for i in 0..n {
            self.park_listener(s, i, true);
        }
        if self.udp_armed && !self.udp_running() {
            // A flow that only lingers for its client's FIN repeats goes too.
            self.udp = UdpServer::new(self.udp_cfg);
            s.release_udp();
            self.udp_armed = false;
        }
    }

    /// Parks TCP socket `i` if it listens and no connection is arriving on it; with
    /// `handshakes`, also when one is but was never established (half-open, or ended with
    /// its RST not sent yet): the socket goes with nothing sent.
    fn park_listener<P: Iperf2Sockets<Endpoint = E>>(
        &mut self,
        s: &mut P,
        i: usize,
        handshakes: bool,
    ) {
        if !matches!(self.roles[i], Role::Listening(_)) {
            return;
        }
        let quiet = {
            let mut sock = s.tcp(i);
            let quiet = match sock.state() {
                TcpState::Listen | TcpState::Closed => handshakes || !sock.rst_pending(),
                TcpState::SynReceived => handshakes,
                _ => false,
            };
            if quiet {
                sock.abort();
            }
            quiet
        };
        if quiet {
            s.release(i);
            self.roles[i] = Role::Parked;
        }
    }

    /// Listens for what may come next, over a slice: between tests one TCP socket and the
    /// UDP socket (idle slices); during a TCP test, one TCP socket for the client's next
    /// stream until the streams its header announced are in. A listener that got a SYN
    /// (half-open) does not count: another listens beside it, the UDP socket's idle slice
    /// giving way if the memory has no other (a `-P 2` client's second SYN comes before its
    /// first connection is up).
    pub(super) fn arm<P: Iperf2Sockets<Endpoint = E>>(&mut self, s: &mut P, n: usize) {
        if self.test.is_none() && s.memory_taken() {
            // iperf3's test holds the memory: nothing listens (its clients get a RST).
            return;
        }
        let want_tcp = match self.test {
            None => true,
            Some(t) => {
                t.protocol == Protocol::Tcp && t.threads.is_none_or(|want| t.accepted < want)
            }
        };
        let ready: heapless::Vec<usize, M> = (0..n)
            .filter(|&i| {
                matches!(self.roles[i], Role::Listening(_)) && s.tcp(i).state() == TcpState::Listen
            })
            .collect();
        if want_tcp && ready.is_empty() {
            self.arm_listener(s, n);
        }
        // One listener is enough; none when no stream is wanted.
        let keep = usize::from(want_tcp);
        for &i in ready.iter().skip(keep) {
            self.park_listener(s, i, false);
        }
        let want_udp = self.test.is_none_or(|t| t.protocol == Protocol::Udp);
        if want_udp && !self.udp_armed {
            let share = Share {
                rx: self.sizes.udp_rx,
                tx: self.sizes.udp_tx,
            };
            self.udp_armed = s.prepare_udp(share, self.test.is_none());
        } else if !want_udp && self.udp_armed && !self.udp.is_busy() {
            s.release_udp();
            self.udp_armed = false;
        }
        if self.udp_armed {
            let mut sock = s.udp();
            if !sock.is_open() {
                let _ = sock.bind(self.port);
            }
        }
    }

    /// Makes a parked TCP socket listen over a stream's slice (idle between tests); the idle
    /// UDP socket gives its slice up if that is what it takes.
    fn arm_listener<P: Iperf2Sockets<Endpoint = E>>(&mut self, s: &mut P, n: usize) {
        let Some(i) = (0..n).find(|&i| matches!(self.roles[i], Role::Parked)) else {
            return;
        };
        let idle = self.test.is_none();
        let share = Share {
            rx: self.sizes.window,
            tx: self.sizes.tx,
        };
        let mut ok = s.prepare(i, share, idle);
        if !ok && self.udp_armed && !self.udp.is_busy() {
            s.release_udp();
            self.udp_armed = false;
            ok = s.prepare(i, share, idle);
        }
        if ok {
            let mut sock = s.tcp(i);
            sock.abort();
            let _ = sock.listen(self.port);
            self.roles[i] = Role::Listening(Handshake::default());
        }
    }

    /// Ends the test once nothing of it is left: every stream and connect-back over (or
    /// failed to open), the UDP flow done.
    fn end_test<P: Iperf2Sockets<Endpoint = E>>(&mut self, s: &mut P, n: usize) {
        let Some(t) = self.test else { return };
        let running = (0..n).any(|i| matches!(self.roles[i], Role::Stream(_) | Role::Back(_)))
            || !self.pending.is_empty()
            || self.udp_running();
        // A TCP test whose client announced more streams than came is over once those
        // that came are (stock iperf opens them all at once).
        if running {
            return;
        }
        // Its listener's slice was the test's: listen again over an idle one.
        for i in 0..n {
            self.park_listener(s, i, false);
        }
        if t.failed {
            self.counters.tests_failed += 1;
            linklab_fmt::debug!("iperf2: test failed");
        } else {
            self.counters.tests_done += 1;
            linklab_fmt::debug!("iperf2: test done");
        }
        self.test = None;
        if t.protocol == Protocol::Udp {
            // The flow may still answer its client's FIN repeats; the memory is free.
            s.set_udp_idle();
        }
        s.unclaim();
    }

    /// Starts a test of `client` over `protocol`, claiming the memory; false if iperf3
    /// holds it.
    fn start_test<P: Iperf2Sockets<Endpoint = E>>(
        &mut self,
        s: &mut P,
        protocol: Protocol,
        client: Option<[u8; 4]>,
        now: Micros,
    ) -> bool {
        if !s.claim() {
            return false;
        }
        self.counters.tests += 1;
        self.test = self.test_record(protocol, client, now);
        true
    }

    /// A new test's record.
    pub(super) fn test_record(
        &self,
        protocol: Protocol,
        client: Option<[u8; 4]>,
        now: Micros,
    ) -> Option<Test> {
        Some(Test {
            protocol,
            client,
            threads: None,
            accepted: 0,
            failed: false,
            last_progress: now,
        })
    }

    /// True when the running test may give way to a new client: nothing moved for the
    /// grace ([`crate::evict::GRACE_MS`]). Never without feature `evict`.
    pub(super) fn test_evictable(&self, now: Micros) -> bool {
        cfg!(feature = "evict")
            && self.test.is_some_and(|t| {
                t.last_progress
                    .saturating_add(crate::evict::GRACE_MS * 1000)
                    <= now
            })
    }

    /// Ends the running test for a new client: its streams and connect-backs are reset
    /// (`evicted`; the test failed). The memory stays claimed: the caller starts the new
    /// client's test on it, or gives it back.
    pub(super) fn evict_test<P: Iperf2Sockets<Endpoint = E>>(&mut self, s: &mut P, now: Micros) {
        linklab_fmt::debug!("iperf2: idle test evicted for a new client");
        self.counters.evicted += 1;
        self.counters.tests_failed += 1;
        self.pending.clear();
        for j in 0..s.tcp_count().min(M) {
            if matches!(self.roles[j], Role::Stream(_) | Role::Back(_)) {
                s.tcp(j).abort();
                self.roles[j] = Role::Closing { since: now };
            }
        }
        if self.udp.is_busy() {
            self.udp = UdpServer::new(self.udp_cfg);
        }
        self.test = None;
    }

    /// Marks the running test failed.
    fn fail(&mut self) {
        if let Some(t) = self.test.as_mut() {
            t.failed = true;
        }
    }

    /// Bytes moved at `now`: the test made progress.
    fn progress(&mut self, now: Micros) {
        if let Some(t) = self.test.as_mut() {
            t.last_progress = t.last_progress.max(now);
        }
    }
}
