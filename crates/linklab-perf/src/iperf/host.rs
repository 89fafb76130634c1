//! std::net adapter (feature `std`): an iperf3 client ([`run_client`]) and server
//! ([`Server`]) for the host, driving a [`Session`] with non-blocking sockets and
//! `ppoll(2)`.
//!
//! ```text
//! run_client(&ClientConfig) -> Result<TestReport, Error>     one test against any iperf3 -s
//! Server::bind(addr)?.serve(&stop, |outcome| ...)             iperf3 -s compatible server
//! ```

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};
use std::vec::Vec;
use std::{format, string::String};

use super::json::{Params, Protocol};
use super::report::{Interval, TestReport};
use super::session::{ClientOptions, Failure, Phase, Session};
use super::stream::Micros;
use super::wire::{
    self, COOKIE_SIZE, DEFAULT_PORT, DEFAULT_TCP_BLOCK_LEN, DEFAULT_UDP_BLOCK_LEN, MAX_JSON_LEN,
};

/// Microseconds since the first call in this process (monotonic).
pub fn now_us() -> Micros {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_micros() as Micros
}

/// Why a host test failed.
#[derive(Debug)]
pub enum Error {
    /// A socket call failed.
    Io(io::Error),
    /// The test ended with an iperf3-level failure.
    Test(Failure),
    /// The configuration is not usable (explains which setting).
    Config(String),
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Test(Failure::AccessDenied) => {
                write!(f, "the server is busy running a test; try again later")
            }
            Error::Test(Failure::ServerError(a, b)) => {
                write!(f, "server error (i_errno {a}, errno {b})")
            }
            Error::Test(Failure::ControlClosed) => {
                write!(f, "the control connection closed unexpectedly")
            }
            Error::Test(Failure::Timeout) => {
                write!(f, "the peer stopped responding (watchdog expired)")
            }
            Error::Test(fail) => write!(f, "test failed: {fail:?}"),
            Error::Config(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}

/// What [`run_client`] needs: where the server is and what test to run.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Server host name or address.
    pub host: String,
    /// Server port (5201).
    pub port: u16,
    /// Test parameters. `len == 0` picks iperf3's default (128 KiB TCP, 1460 B UDP);
    /// `rate_bps == 0` means unlimited.
    pub params: Params,
    /// Reporting interval (`-i`), zero for none.
    pub interval: Duration,
    /// Connect timeout for the control and data connections.
    pub connect_timeout: Duration,
    /// The test fails after this long without any activity.
    pub watchdog: Duration,
}

impl ClientConfig {
    /// A 10-second TCP test against `host`:5201.
    pub fn new(host: &str) -> Self {
        Self {
            host: host.into(),
            port: DEFAULT_PORT,
            params: Params {
                len: 0,
                ..Params::default()
            },
            interval: Duration::ZERO,
            connect_timeout: Duration::from_secs(5),
            watchdog: Duration::from_secs(10),
        }
    }
}

/// Runs one iperf3 test against the server in `cfg` and returns what it measured.
pub fn run_client(cfg: &ClientConfig) -> Result<TestReport, Error> {
    run_client_with(cfg, &mut |_| {})
}

/// Like [`run_client`], calling `on_interval` for each `-i` interval.
pub fn run_client_with(
    cfg: &ClientConfig,
    on_interval: &mut dyn FnMut(&Interval),
) -> Result<TestReport, Error> {
    let mut params = cfg.params;
    if params.len == 0 {
        params.len = match params.protocol {
            Protocol::Tcp => DEFAULT_TCP_BLOCK_LEN as u32,
            Protocol::Udp => DEFAULT_UDP_BLOCK_LEN as u32,
        };
    }
    super::session::validate_params(&params).map_err(|e| Error::Config(e.into()))?;
    if params.duration_s == 0 && params.bytes == 0 && params.blocks == 0 {
        return Err(Error::Config(
            "a test needs a duration, a byte count or a block count".into(),
        ));
    }
    let addr = resolve(&cfg.host, cfg.port)?;
    let ctrl = TcpStream::connect_timeout(&addr, cfg.connect_timeout)?;
    ctrl.set_nodelay(true)?;
    ctrl.set_nonblocking(true)?;
    let opts = ClientOptions {
        params,
        interval_us: cfg.interval.as_micros() as Micros,
        cookie_seed: now_us() ^ (u64::from(std::process::id()) << 32) ^ seed_from(&ctrl),
    };
    let (mut rx, mut tx) = (std::vec![0u8; MAX_JSON_LEN], std::vec![0u8; MAX_JSON_LEN]);
    let mut session = Session::client(&opts, &mut rx, &mut tx, now_us());
    session.set_watchdog(cfg.watchdog.as_micros().max(1) as Micros);
    let mut data = DataStreams::new(params.len as usize);
    let mut ctrl = Control::new(ctrl);
    loop {
        ctrl.flush(&mut session)?;
        if session.is_finished() {
            break;
        }
        if session.phase() == Phase::CreateStreams && data.streams.len() < session.streams_wanted()
        {
            open_client_streams(&mut session, &mut data, addr, cfg.connect_timeout)?;
            continue;
        }
        if data.step(&mut session, &ctrl, None)?.ctrl {
            ctrl.read(&mut session);
        }
        session.poll(now_us());
        while let Some(iv) = session.take_interval() {
            on_interval(&iv);
        }
    }
    ctrl.flush(&mut session)?;
    while let Some(iv) = session.take_interval() {
        on_interval(&iv);
    }
    match session.phase() {
        Phase::Failed(f) => Err(Error::Test(f)),
        _ => Ok(session.report()),
    }
}

fn seed_from(s: &TcpStream) -> u64 {
    s.local_addr()
        .map(|a| u64::from(a.port()) << 16)
        .unwrap_or(0)
}

fn resolve(host: &str, port: u16) -> Result<SocketAddr, Error> {
    (host, port)
        .to_socket_addrs()
        .map_err(|e| Error::Config(format!("cannot resolve host {host:?}: {e}")))?
        .next()
        .ok_or_else(|| Error::Config(format!("host {host:?} has no address")))
}

fn open_client_streams(
    session: &mut Session,
    data: &mut DataStreams,
    addr: SocketAddr,
    timeout: Duration,
) -> Result<(), Error> {
    let cookie = *session.cookie();
    while data.streams.len() < session.streams_wanted() {
        let sock = match session.params().protocol {
            Protocol::Tcp => {
                let mut s = TcpStream::connect_timeout(&addr, timeout)?;
                s.write_all(&cookie)?;
                s.set_nonblocking(true)?;
                DataSock::Tcp(s)
            }
            Protocol::Udp => {
                let local: SocketAddr = if addr.is_ipv4() {
                    "0.0.0.0:0"
                } else {
                    "[::]:0"
                }
                .parse()
                .expect("literal");
                let s = UdpSocket::bind(local)?;
                grow_rcvbuf(&s);
                s.connect(addr)?;
                s.set_read_timeout(Some(Duration::from_millis(500)))?;
                let mut buf = [0u8; 64];
                let mut ok = false;
                for _ in 0..(timeout.as_millis() / 500).max(1) {
                    s.send(&wire::udp_hello())?;
                    match s.recv(&mut buf) {
                        Ok(n) if wire::is_udp_hello_reply(&buf[..n]) => {
                            ok = true;
                            break;
                        }
                        Ok(_) => {}
                        Err(e)
                            if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                if !ok {
                    return Err(Error::Io(io::Error::new(
                        ErrorKind::TimedOut,
                        "no reply to the UDP stream hello",
                    )));
                }
                s.set_nonblocking(true)?;
                DataSock::Udp(s, None)
            }
        };
        let idx = session
            .client_stream_opened(now_us())
            .ok_or(Error::Test(Failure::UnexpectedState(0)))?;
        debug_assert_eq!(idx, data.streams.len());
        data.streams.push(Some(sock));
    }
    Ok(())
}

/// The control connection and its read buffer.
struct Control {
    sock: Option<TcpStream>,
}

impl Control {
    fn new(s: TcpStream) -> Self {
        Self { sock: Some(s) }
    }

    fn fd(&self) -> Option<RawFd> {
        self.sock.as_ref().map(|s| s.as_raw_fd())
    }

    /// Writes pending control output (blocking briefly: control messages are small).
    fn flush(&mut self, session: &mut Session) -> Result<(), Error> {
        let Some(s) = self.sock.as_mut() else {
            return Ok(());
        };
        let deadline = Instant::now() + Duration::from_secs(2);
        while !session.control_output().is_empty() {
            match s.write(session.control_output()) {
                Ok(0) => return Err(Error::Test(Failure::ControlClosed)),
                Ok(n) => session.control_sent(n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err(Error::Test(Failure::Timeout));
                    }
                    wait_fd(s.as_raw_fd(), libc::POLLOUT, Duration::from_millis(10));
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    session.control_closed(now_us());
                    self.sock = None;
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Reads what the control connection has and feeds it to the session.
    fn read(&mut self, session: &mut Session) {
        let Some(s) = self.sock.as_mut() else { return };
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf) {
                Ok(0) => {
                    session.control_closed(now_us());
                    self.sock = None;
                    return;
                }
                Ok(n) => {
                    let mut used = 0;
                    while used < n && !session.is_finished() {
                        let k = session.control_input(&buf[used..n], now_us());
                        if k == 0 {
                            break;
                        }
                        used += k;
                    }
                    if n < buf.len() {
                        return;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    session.control_closed(now_us());
                    self.sock = None;
                    return;
                }
            }
        }
    }
}

/// A data stream socket; a server UDP stream is the shared socket plus the peer address.
enum DataSock {
    Tcp(TcpStream),
    Udp(UdpSocket, Option<SocketAddr>),
}

/// What became ready in one event-loop turn.
struct Ready {
    /// The control connection is readable.
    ctrl: bool,
    /// The extra descriptors (server: listener, UDP socket) are readable.
    extra: [bool; 2],
}

/// Open data streams, in session stream order, and the buffers they use.
struct DataStreams {
    streams: Vec<Option<DataSock>>,
    /// Server: the shared UDP socket (streams are told apart by peer address).
    udp: Option<Arc<UdpSocket>>,
    udp_peers: Vec<SocketAddr>,
    buf: Vec<u8>,
}

/// Most reads or writes per stream per loop turn, so the control connection stays served.
const BURST: usize = 64;

impl DataStreams {
    fn new(block: usize) -> Self {
        let mut buf = std::vec![0u8; block.clamp(64 * 1024, wire::MAX_BLOCK_LEN)];
        // Non-zero filler so compression on the path cannot flatter the numbers.
        for (i, b) in buf.iter_mut().enumerate() {
            *b = (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3];
        }
        Self {
            streams: Vec::new(),
            udp: None,
            udp_peers: Vec::new(),
            buf,
        }
    }

    fn close_all(&mut self) {
        for s in self.streams.iter_mut() {
            if let Some(DataSock::Tcp(t)) = s.take() {
                let _ = t.shutdown(Shutdown::Both);
            }
        }
        self.streams.clear();
        self.udp_peers.clear();
    }

    fn open_count(&self) -> usize {
        self.streams.iter().filter(|s| s.is_some()).count()
    }

    /// One turn of the event loop: wait for readiness or the session's deadline, then move
    /// data. Data is handled before control bytes (the caller reads control after), so
    /// data that arrived before TEST_END is still counted. `extra` is polled for
    /// readability too (server listener and UDP socket).
    fn step(
        &mut self,
        session: &mut Session,
        ctrl: &Control,
        extra: Option<&[RawFd]>,
    ) -> Result<Ready, Error> {
        let now = now_us();
        session.poll(now);
        let reading = session.should_read();
        let mut fds: Vec<libc::pollfd> = Vec::with_capacity(self.streams.len() + 4);
        let mut map: Vec<usize> = Vec::new();
        if let Some(fd) = ctrl.fd() {
            fds.push(pollfd(fd, libc::POLLIN));
        }
        let ctrl_slots = fds.len();
        for (i, s) in self.streams.iter().enumerate() {
            let Some(sock) = s else { continue };
            let sender = session.streams().get(i).is_some_and(|st| st.sender);
            let mut ev = 0;
            if reading && !sender {
                ev |= libc::POLLIN;
            }
            if sender && self.may_send(session, i, now) {
                ev |= libc::POLLOUT;
            }
            match sock {
                DataSock::Udp(_, Some(_)) => {
                    // Server UDP stream: reads happen on the shared socket.
                    ev &= !libc::POLLIN;
                    if ev != 0 {
                        if let Some(u) = &self.udp {
                            fds.push(pollfd(u.as_raw_fd(), ev));
                            map.push(i);
                        }
                    }
                }
                DataSock::Tcp(t) if ev != 0 => {
                    fds.push(pollfd(t.as_raw_fd(), ev));
                    map.push(i);
                }
                DataSock::Udp(u, None) if ev != 0 => {
                    fds.push(pollfd(u.as_raw_fd(), ev));
                    map.push(i);
                }
                _ => {}
            }
        }
        let extra_start = fds.len();
        for fd in extra.unwrap_or(&[]) {
            fds.push(pollfd(*fd, libc::POLLIN));
        }
        let timeout = session
            .poll_at()
            .map(|t| Duration::from_micros(t.saturating_sub(now)))
            .unwrap_or(Duration::from_millis(100))
            .min(Duration::from_millis(100));
        ppoll(&mut fds, timeout)?;
        for (k, &i) in map.iter().enumerate() {
            let re = fds[ctrl_slots + k].revents;
            if re == 0 {
                continue;
            }
            if re & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 && reading {
                self.read_stream(session, i);
            }
            if re & libc::POLLOUT != 0 {
                self.write_stream(session, i);
            }
        }
        let mut ready = Ready {
            ctrl: ctrl_slots == 1 && fds[0].revents != 0,
            extra: [false; 2],
        };
        for (j, r) in ready.extra.iter_mut().enumerate() {
            *r = fds.get(extra_start + j).is_some_and(|p| p.revents != 0);
        }
        Ok(ready)
    }

    fn may_send(&self, session: &Session, i: usize, now: Micros) -> bool {
        session.may_send(i, now)
    }

    fn read_stream(&mut self, session: &mut Session, i: usize) {
        let Some(Some(sock)) = self.streams.get_mut(i) else {
            return;
        };
        let mut closed = false;
        match sock {
            DataSock::Tcp(t) => {
                for _ in 0..BURST {
                    match t.read(&mut self.buf) {
                        Ok(0) => {
                            closed = true;
                            break;
                        }
                        Ok(n) => session.on_tcp_received(i, n, now_us()),
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(_) => {
                            closed = true;
                            break;
                        }
                    }
                }
            }
            DataSock::Udp(u, None) => {
                for _ in 0..BURST {
                    match u.recv(&mut self.buf) {
                        Ok(n) => session.on_udp_received(i, &self.buf[..n], now_us()),
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            }
            DataSock::Udp(_, Some(_)) => {}
        }
        if closed {
            // A peer closing a data stream before the end breaks the test; after the
            // end it is how iperf3 finishes.
            if session.phase() == Phase::Running && !session.streams()[i].sender {
                // iperf3 senders close at TEST_END, which can overtake the control byte.
            }
            self.streams[i] = None;
        }
    }

    fn write_stream(&mut self, session: &mut Session, i: usize) {
        let Some(Some(sock)) = self.streams.get_mut(i) else {
            return;
        };
        let mut failed = false;
        for _ in 0..BURST {
            let now = now_us();
            match sock {
                DataSock::Tcp(t) => {
                    let budget = session.tcp_send_budget(i, now).min(self.buf.len());
                    if budget == 0 {
                        break;
                    }
                    match t.write(&self.buf[..budget]) {
                        Ok(n) => session.on_tcp_sent(i, n, now),
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        Err(_) => {
                            failed = true;
                            break;
                        }
                    }
                }
                DataSock::Udp(u, peer) => {
                    let Some(len) = session.udp_next(i, now, &mut self.buf) else {
                        break;
                    };
                    let r = match (peer, &self.udp) {
                        (Some(p), Some(shared)) => shared.send_to(&self.buf[..len], *p),
                        _ => u.send(&self.buf[..len]),
                    };
                    match r {
                        Ok(n) => session.on_udp_sent(i, n, now),
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                        // ECONNREFUSED etc.: the peer went away; stop sending on it.
                        Err(_) => {
                            failed = true;
                            break;
                        }
                    }
                }
            }
        }
        if let Some(Some(DataSock::Tcp(t))) = self.streams.get(i) {
            if let Some(r) = tcp_retransmits(t) {
                session.set_retransmits(i, r);
            }
        }
        if failed {
            session.stream_failed(now_us());
            self.streams[i] = None;
        }
    }
}

/// Total retransmitted segments of a TCP socket (Linux `TCP_INFO.tcpi_total_retrans`).
#[cfg(target_os = "linux")]
fn tcp_retransmits(t: &TcpStream) -> Option<u64> {
    // SAFETY: tcp_info is plain old data; getsockopt writes at most `len` bytes into it.
    let mut info: libc::tcp_info = unsafe { core::mem::zeroed() };
    let mut len = core::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let r = unsafe {
        libc::getsockopt(
            t.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(u64::from(info.tcpi_total_retrans))
}

/// Retransmits are not available on this platform.
#[cfg(not(target_os = "linux"))]
fn tcp_retransmits(_t: &TcpStream) -> Option<u64> {
    None
}

/// Asks for a 4 MiB UDP receive buffer (the kernel caps it at `net.core.rmem_max`) so a
/// scheduling hiccup of the receiving loop does not turn into datagram loss.
fn grow_rcvbuf(s: &UdpSocket) {
    let size: libc::c_int = 4 << 20;
    // SAFETY: setsockopt reads `size` (a c_int) for the given length; failure is harmless.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            core::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

fn ppoll(fds: &mut [libc::pollfd], timeout: Duration) -> io::Result<usize> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `fds` is a valid slice of pollfd for its length; `ts` lives across the call;
    // a null signal mask means "leave it unchanged".
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            core::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

fn wait_fd(fd: RawFd, events: libc::c_short, timeout: Duration) {
    let mut p = [pollfd(fd, events)];
    let _ = ppoll(&mut p, timeout);
}

/// Counters a [`Server`] keeps, shared so a test or a UI can watch it.
#[derive(Debug, Default)]
pub struct ServerStats {
    /// Tests that completed normally.
    pub tests_done: AtomicUsize,
    /// Tests that ended with a failure (peer vanished, bad input, ...).
    pub tests_failed: AtomicUsize,
    /// Connections answered with ACCESS_DENIED (busy, or wrong cookie).
    pub denied: AtomicUsize,
    /// Data streams open right now.
    pub open_streams: AtomicUsize,
    /// Control connections open right now (0 or 1).
    pub open_controls: AtomicUsize,
}

/// The result of one test the server ran.
pub type ServerOutcome = Result<TestReport, Error>;

/// An iperf3-compatible server on std::net: one test at a time, others get ACCESS_DENIED.
pub struct Server {
    listener: TcpListener,
    udp: Arc<UdpSocket>,
    stats: Arc<ServerStats>,
    watchdog: Duration,
}

/// A TCP connection whose 37-byte cookie is still being read.
struct Pending {
    sock: TcpStream,
    cookie: [u8; COOKIE_SIZE],
    got: usize,
    deadline: Instant,
}

impl Server {
    /// Listens on `addr` (TCP for control and TCP streams, UDP on the same port).
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind(addr)?;
        let local = listener.local_addr()?;
        let udp = UdpSocket::bind(local)?;
        grow_rcvbuf(&udp);
        listener.set_nonblocking(true)?;
        udp.set_nonblocking(true)?;
        Ok(Self {
            listener,
            udp: Arc::new(udp),
            stats: Arc::default(),
            watchdog: Duration::from_secs(10),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Live counters.
    pub fn stats(&self) -> Arc<ServerStats> {
        self.stats.clone()
    }

    /// Sets the watchdog that frees the server from a client that went quiet.
    pub fn set_watchdog(&mut self, d: Duration) {
        self.watchdog = d;
    }

    /// Serves tests until `stop` is set (checked at least every 100 ms), reporting each
    /// finished test to `on_test`. Returns after the current test when `stop` is set.
    pub fn serve(
        &mut self,
        stop: &AtomicBool,
        on_test: &mut dyn FnMut(ServerOutcome),
    ) -> io::Result<()> {
        while !stop.load(Ordering::Relaxed) {
            if let Some(outcome) = self.serve_one_until(stop)? {
                on_test(outcome);
            }
        }
        Ok(())
    }

    /// Waits for one client and runs its test (`-1`). `None` if `stop` was set first.
    pub fn serve_one_until(&mut self, stop: &AtomicBool) -> io::Result<Option<ServerOutcome>> {
        // Idle: wait for a control connection.
        let ctrl = loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            self.drain_udp();
            match self.listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    let mut p = [pollfd(self.listener.as_raw_fd(), libc::POLLIN)];
                    ppoll(&mut p, Duration::from_millis(100))?;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        Ok(Some(self.run_test(ctrl, stop)))
    }

    /// Discards stray datagrams while idle so old UDP tests cannot leak into new ones.
    fn drain_udp(&self) {
        let mut b = [0u8; 2048];
        while self.udp.recv_from(&mut b).is_ok() {}
    }

    fn deny(&self, mut s: TcpStream) {
        let _ = s.write(&[wire::state::ACCESS_DENIED as u8]);
        let _ = s.shutdown(Shutdown::Both);
        self.stats.denied.fetch_add(1, Ordering::Relaxed);
    }

    fn run_test(&mut self, ctrl: TcpStream, stop: &AtomicBool) -> ServerOutcome {
        let (mut rx, mut tx) = (std::vec![0u8; MAX_JSON_LEN], std::vec![0u8; MAX_JSON_LEN]);
        let mut session = Session::server(&mut rx, &mut tx);
        session.set_watchdog(self.watchdog.as_micros().max(1) as Micros);
        session.accept_control(now_us());
        let _ = ctrl.set_nodelay(true);
        ctrl.set_nonblocking(true)?;
        self.stats.open_controls.fetch_add(1, Ordering::Relaxed);
        let mut ctrl = Control::new(ctrl);
        let mut data = DataStreams::new(DEFAULT_TCP_BLOCK_LEN);
        data.udp = Some(self.udp.clone());
        let mut pending: Vec<Pending> = Vec::new();
        let mut sized = false;
        let result = (|| -> ServerOutcome {
            loop {
                ctrl.flush(&mut session)?;
                if session.is_finished() || stop.load(Ordering::Relaxed) {
                    break;
                }
                if !sized && session.phase() == Phase::CreateStreams {
                    data.buf.resize(
                        (session.params().len as usize).clamp(64 * 1024, wire::MAX_BLOCK_LEN),
                        0x5a,
                    );
                    sized = true;
                }
                let mut extra = std::vec![self.listener.as_raw_fd(), self.udp.as_raw_fd()];
                extra.extend(pending.iter().map(|p| p.sock.as_raw_fd()));
                let before = data.open_count();
                let ready = data.step(&mut session, &ctrl, Some(&extra))?;
                if ready.extra[1] {
                    self.read_udp(&mut session, &mut data);
                }
                if ready.ctrl {
                    ctrl.read(&mut session);
                }
                if ready.extra[0] {
                    self.accept_new(&session, &mut pending);
                }
                self.read_pending(&mut session, &mut data, &mut pending);
                session.poll(now_us());
                // iperf3 closes the data streams at TEST_END.
                if !session.should_read()
                    && session.phase() != Phase::CreateStreams
                    && data.open_count() > 0
                {
                    data.close_all();
                }
                let after = data.open_count();
                self.set_open(before, after);
            }
            ctrl.flush(&mut session)?;
            Ok(session.report())
        })();
        let open = data.open_count();
        data.close_all();
        self.set_open(open, 0);
        drop(pending);
        if let Some(s) = ctrl.sock.take() {
            let _ = s.shutdown(Shutdown::Both);
        }
        self.stats.open_controls.fetch_sub(1, Ordering::Relaxed);
        self.drain_udp();
        let outcome = match (result, session.phase()) {
            (Err(e), _) => Err(e),
            (Ok(_), Phase::Failed(f)) => Err(Error::Test(f)),
            (Ok(_), Phase::Done) => Ok(session.report()),
            (Ok(_), _) => Err(Error::Test(Failure::PeerTerminated)),
        };
        match &outcome {
            Ok(_) => self.stats.tests_done.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.stats.tests_failed.fetch_add(1, Ordering::Relaxed),
        };
        outcome
    }

    fn set_open(&self, before: usize, after: usize) {
        if after > before {
            self.stats
                .open_streams
                .fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.stats
                .open_streams
                .fetch_sub(before - after, Ordering::Relaxed);
        }
    }

    fn accept_new(&self, session: &Session, pending: &mut Vec<Pending>) {
        loop {
            match self.listener.accept() {
                Ok((s, _)) => {
                    if session.phase() == Phase::CreateStreams
                        && pending.len() < 2 * wire::MAX_STREAMS
                    {
                        let _ = s.set_nonblocking(true);
                        pending.push(Pending {
                            sock: s,
                            cookie: [0; COOKIE_SIZE],
                            got: 0,
                            deadline: Instant::now() + Duration::from_secs(5),
                        });
                    } else {
                        // Busy: answer without reading, like iperf3.
                        self.deny(s);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    fn read_pending(
        &self,
        session: &mut Session,
        data: &mut DataStreams,
        pending: &mut Vec<Pending>,
    ) {
        let mut i = 0;
        while i < pending.len() {
            let p = &mut pending[i];
            let done = match p.sock.read(&mut p.cookie[p.got..]) {
                Ok(0) => Some(false),
                Ok(n) => {
                    p.got += n;
                    (p.got == COOKIE_SIZE).then_some(true)
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    (Instant::now() > p.deadline).then_some(false)
                }
                Err(_) => Some(false),
            };
            match done {
                None => i += 1,
                Some(complete) => {
                    let p = pending.swap_remove(i);
                    let idx = if complete {
                        session.accept_tcp_stream(&p.cookie, now_us())
                    } else {
                        None
                    };
                    match idx {
                        Some(idx) => {
                            let _ = p.sock.set_nodelay(false);
                            while data.streams.len() <= idx {
                                data.streams.push(None);
                            }
                            data.streams[idx] = Some(DataSock::Tcp(p.sock));
                        }
                        None if complete => self.deny(p.sock),
                        None => {}
                    }
                }
            }
        }
    }

    fn read_udp(&self, session: &mut Session, data: &mut DataStreams) {
        let reading = session.should_read();
        for _ in 0..BURST {
            let (n, from) = match self.udp.recv_from(&mut data.buf) {
                Ok(r) => r,
                Err(_) => return,
            };
            let now = now_us();
            if let Some(idx) = data.udp_peers.iter().position(|p| *p == from) {
                if reading {
                    session.on_udp_received(idx, &data.buf[..n], now);
                }
                continue;
            }
            if session.phase() == Phase::CreateStreams {
                if let Some(idx) = session.accept_udp_stream(&data.buf[..n], now) {
                    let _ = self.udp.send_to(&wire::udp_hello_reply(), from);
                    while data.streams.len() <= idx {
                        data.streams.push(None);
                    }
                    if let Ok(clone) = self.udp.try_clone() {
                        data.streams[idx] = Some(DataSock::Udp(clone, Some(from)));
                    }
                    while data.udp_peers.len() <= idx {
                        data.udp_peers.push(from);
                    }
                    data.udp_peers[idx] = from;
                }
            }
        }
    }
}
