//! The data streams of a test and one turn of the event loop: wait for readiness or the
//! session's next deadline, then read and write what the session allows.

use std::fs::File;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::SockRef;

use super::control::Control;
use super::diskfile::DiskFile;
use super::error::Error;
use super::measure::TcpStats;
use super::report::{HostInterval, StreamInfo};
use crate::clock::now_us;
use crate::sys;
use linklab_perf::iperf::report::Interval;
use linklab_perf::iperf::session::Session;
use linklab_perf::iperf::wire;
use nix::poll::{PollFd, PollFlags};

/// A data stream socket; a server UDP stream is the shared socket plus the peer address.
pub(super) enum DataSock {
    Tcp(TcpStream),
    Udp(UdpSocket, Option<SocketAddr>),
}

/// What became ready in one event-loop turn.
pub(super) struct Ready {
    /// The control connection is readable.
    pub(super) ctrl: bool,
    /// The extra descriptors (server: listener, UDP socket) are readable.
    pub(super) extra: [bool; 2],
}

/// Open data streams, in session stream order, and the buffers they use.
pub(super) struct DataStreams {
    pub(super) streams: Vec<Option<DataSock>>,
    /// Per stream: how iperf3 names it.
    pub(super) info: Vec<Option<StreamInfo>>,
    /// Per stream: TCP_INFO over the test (TCP streams we send on).
    pub(super) tcp: Vec<Option<TcpStats>>,
    /// Server: the shared UDP socket (streams are told apart by peer address).
    pub(super) udp: Option<Arc<UdpSocket>>,
    pub(super) udp_peers: Vec<SocketAddr>,
    pub(super) buf: Vec<u8>,
    /// `-Z`: a file holding the payload, sent with sendfile(2).
    zerocopy: Option<File>,
    /// `-F`: the file each stream sends or writes into.
    diskfile: Option<PathBuf>,
    /// Per stream: its `-F` file, open.
    files: Vec<Option<DiskFile>>,
    /// When data last arrived (for `--rcv-timeout`).
    pub(super) last_rx: Instant,
}

/// Most reads or writes per stream per loop turn, so the control connection stays served.
pub(super) const BURST: usize = 64;

impl DataStreams {
    /// No streams yet; blocks of `block` bytes; `-F` streams use `diskfile`.
    pub(super) fn with_file(block: usize, diskfile: Option<PathBuf>) -> Self {
        let mut d = Self {
            streams: Vec::new(),
            info: Vec::new(),
            tcp: Vec::new(),
            udp: None,
            udp_peers: Vec::new(),
            buf: Vec::new(),
            zerocopy: None,
            diskfile,
            files: Vec::new(),
            last_rx: Instant::now(),
        };
        d.set_payload(block, false);
        d
    }

    /// Sizes the payload buffer for blocks of `block` bytes and fills it: iperf3's
    /// repeating `0123456789` with `--repeating-payload`, else a pseudo-random pattern (so
    /// compression on the path cannot flatter the numbers).
    pub(super) fn set_payload(&mut self, block: usize, repeating: bool) {
        self.buf
            .resize(block.clamp(64 * 1024, wire::MAX_BLOCK_LEN), 0);
        for (i, b) in self.buf.iter_mut().enumerate() {
            *b = if repeating {
                b'0' + (i % 10) as u8
            } else {
                (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3]
            };
        }
    }

    /// `-Z`: sends TCP data with sendfile(2) from an unlinked temporary file holding the
    /// payload (what iperf3 does).
    pub(super) fn enable_zerocopy(&mut self) -> io::Result<()> {
        let path =
            std::env::temp_dir().join(format!("linklab-iperf-{}-{}", std::process::id(), now_us()));
        let mut f = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        let _ = std::fs::remove_file(&path);
        f.write_all(&self.buf)?;
        self.zerocopy = Some(f);
        Ok(())
    }

    /// Puts stream `idx`'s socket in place, with how iperf3 names it; `tcp_sender` starts
    /// TCP_INFO sampling for it. With `-F` the stream's file is opened (iperf3's
    /// "unable to open -F file" if it cannot be).
    pub(super) fn add(
        &mut self,
        idx: usize,
        sock: DataSock,
        info: StreamInfo,
        tcp_sender: bool,
    ) -> Result<(), Error> {
        while self.streams.len() <= idx {
            self.streams.push(None);
            self.info.push(None);
            self.tcp.push(None);
            self.files.push(None);
        }
        self.streams[idx] = Some(sock);
        self.info[idx] = Some(info);
        self.tcp[idx] = tcp_sender.then(TcpStats::default);
        if let Some(path) = &self.diskfile {
            let f =
                DiskFile::open(path, info.sender).map_err(|e| super::sockets::iperf_err(14, &e))?;
            self.files[idx] = Some(f);
        }
        Ok(())
    }

    /// Writes received bytes of stream `idx` into its `-F` file, if it has one.
    pub(super) fn store(&mut self, idx: usize, n: usize) {
        if let Some(Some(f)) = self.files.get_mut(idx) {
            f.store(&self.buf[..n]);
        }
    }

    /// Fills the first `n` payload bytes of stream `idx` from its `-F` file; `None` if the
    /// stream has no file to send, `Some(0)` at its end.
    fn fill(&mut self, idx: usize, n: usize) -> Option<usize> {
        let f = self.files.get_mut(idx)?.as_mut().filter(|f| f.sending())?;
        Some(f.fill(&mut self.buf[..n]).unwrap_or(0))
    }

    /// The streams as iperf3 names them, in session order.
    pub(super) fn infos(&self) -> Vec<StreamInfo> {
        self.info.iter().flatten().copied().collect()
    }

    /// Adds TCP_INFO figures to an interval of the session (iperf3 samples at each one).
    pub(super) fn sample(&mut self, interval: Interval) -> HostInterval {
        let mut tcp = Vec::with_capacity(interval.streams.len());
        for s in &interval.streams {
            let idx = stream_index(s.id);
            let sock = match self.streams.get(idx) {
                Some(Some(DataSock::Tcp(t))) => Some(t.as_raw_fd()),
                _ => None,
            };
            let stats = self.tcp.get_mut(idx).and_then(|t| t.as_mut());
            tcp.push(match (stats, sock.and_then(sys::tcp_info)) {
                (Some(stats), Some(info)) => Some(stats.sample(info)),
                _ => None,
            });
        }
        HostInterval { interval, tcp }
    }

    pub(super) fn close_all(&mut self) {
        for s in self.streams.iter_mut() {
            if let Some(DataSock::Tcp(t)) = s.take() {
                let _ = t.shutdown(Shutdown::Both);
            }
        }
        self.streams.clear();
        self.info.clear();
        self.tcp.clear();
        self.files.clear();
        self.udp_peers.clear();
    }

    /// Closes the sockets but keeps what was learned about the streams (for the report).
    pub(super) fn close_sockets(&mut self) {
        for s in self.streams.iter_mut() {
            if let Some(DataSock::Tcp(t)) = s.take() {
                let _ = t.shutdown(Shutdown::Both);
            }
        }
    }

    pub(super) fn open_count(&self) -> usize {
        self.streams.iter().filter(|s| s.is_some()).count()
    }

    /// One turn of the event loop: wait for readiness or the session's deadline, then move
    /// data. Data is handled before control bytes (the caller reads control after), so
    /// data that arrived before TEST_END is still counted. `extra` is polled for
    /// readability too (server listener and UDP socket).
    pub(super) fn step(
        &mut self,
        session: &mut Session,
        ctrl: &Control,
        extra: Option<&[BorrowedFd<'_>]>,
    ) -> Result<Ready, Error> {
        let now = now_us();
        session.poll(now);
        let reading = session.should_read();
        let mut fds: Vec<PollFd<'_>> = Vec::with_capacity(self.streams.len() + 4);
        let mut map: Vec<usize> = Vec::new();
        if let Some(fd) = ctrl.fd() {
            fds.push(PollFd::new(fd, PollFlags::POLLIN));
        }
        let ctrl_slots = fds.len();
        for (i, s) in self.streams.iter().enumerate() {
            let Some(sock) = s else { continue };
            let sender = session.streams().get(i).is_some_and(|st| st.sender);
            let mut ev = PollFlags::empty();
            if reading && !sender {
                ev |= PollFlags::POLLIN;
            }
            if sender && session.may_send(i, now) {
                ev |= PollFlags::POLLOUT;
            }
            match sock {
                DataSock::Udp(_, Some(_)) => {
                    // Server UDP stream: reads happen on the shared socket.
                    ev.remove(PollFlags::POLLIN);
                    if !ev.is_empty() {
                        if let Some(u) = &self.udp {
                            fds.push(PollFd::new(u.as_fd(), ev));
                            map.push(i);
                        }
                    }
                }
                DataSock::Tcp(t) if !ev.is_empty() => {
                    fds.push(PollFd::new(t.as_fd(), ev));
                    map.push(i);
                }
                DataSock::Udp(u, None) if !ev.is_empty() => {
                    fds.push(PollFd::new(u.as_fd(), ev));
                    map.push(i);
                }
                _ => {}
            }
        }
        let extra_start = fds.len();
        for fd in extra.unwrap_or(&[]) {
            fds.push(PollFd::new(*fd, PollFlags::POLLIN));
        }
        let timeout = session
            .poll_at()
            .map(|t| Duration::from_micros(t.saturating_sub(now)))
            .unwrap_or(Duration::from_millis(100))
            .min(Duration::from_millis(100));
        sys::ppoll(&mut fds, timeout)?;
        let mut ready = Ready {
            ctrl: ctrl_slots == 1 && sys::has_events(&fds[0]),
            extra: [false; 2],
        };
        for (j, r) in ready.extra.iter_mut().enumerate() {
            *r = fds.get(extra_start + j).is_some_and(sys::has_events);
        }
        let streams: Vec<PollFlags> = fds[ctrl_slots..ctrl_slots + map.len()]
            .iter()
            .map(|p| p.revents().unwrap_or(PollFlags::empty()))
            .collect();
        drop(fds);
        for (&i, re) in map.iter().zip(streams) {
            if re.is_empty() {
                continue;
            }
            if re.intersects(PollFlags::POLLIN | PollFlags::POLLHUP | PollFlags::POLLERR) && reading
            {
                self.read_stream(session, i);
            }
            if re.contains(PollFlags::POLLOUT) {
                self.write_stream(session, i);
            }
        }
        Ok(ready)
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
                        Ok(n) => {
                            self.last_rx = Instant::now();
                            session.on_tcp_received(i, n, now_us());
                            if let Some(Some(f)) = self.files.get_mut(i) {
                                f.store(&self.buf[..n]);
                            }
                        }
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
                        Ok(n) => {
                            self.last_rx = Instant::now();
                            session.on_udp_received(i, &self.buf[..n], now_us());
                            if let Some(Some(f)) = self.files.get_mut(i) {
                                f.store(&self.buf[..n]);
                            }
                        }
                        Err(e) if e.kind() == ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            }
            DataSock::Udp(_, Some(_)) => {}
        }
        if closed {
            // End of stream is not a failure, as in iperf3 (whose reader treats 0 bytes as
            // nothing to count): a sender closes its streams at TEST_END, and that FIN can
            // arrive before the TEST_END byte on the control connection. Stop polling it;
            // the control connection decides how the test ends.
            self.streams[i] = None;
        }
    }

    fn write_stream(&mut self, session: &mut Session, i: usize) {
        let mut failed = false;
        for _ in 0..BURST {
            let now = now_us();
            // -F: the next bytes come from the stream's file; at its end the side is done.
            let want = match self.streams.get(i) {
                Some(Some(DataSock::Tcp(_))) => session.tcp_send_budget(i, now),
                Some(Some(DataSock::Udp(..))) if session.may_send(i, now) => {
                    session.params().len as usize
                }
                _ => 0,
            }
            .min(self.buf.len());
            let from_file = if want == 0 { None } else { self.fill(i, want) };
            if from_file == Some(0) {
                session.data_exhausted();
                break;
            }
            let Some(Some(sock)) = self.streams.get_mut(i) else {
                return;
            };
            match sock {
                DataSock::Tcp(t) => {
                    let budget = from_file.unwrap_or(want);
                    if budget == 0 {
                        break;
                    }
                    let r = match (&self.zerocopy, from_file) {
                        (Some(f), None) => {
                            SockRef::from(&*t).sendfile(f, 0, NonZeroUsize::new(budget))
                        }
                        _ => t.write(&self.buf[..budget]),
                    };
                    let put_back = |n: usize, files: &mut Vec<Option<DiskFile>>| {
                        if let (Some(_), Some(Some(f))) = (from_file, files.get_mut(i)) {
                            let _ = f.unread(budget - n);
                        }
                    };
                    match r {
                        Ok(n) => {
                            put_back(n, &mut self.files);
                            session.on_tcp_sent(i, n, now)
                        }
                        Err(e) if e.kind() == ErrorKind::Interrupted => {
                            put_back(0, &mut self.files)
                        }
                        Err(e) if e.kind() == ErrorKind::WouldBlock => {
                            put_back(0, &mut self.files);
                            break;
                        }
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
            if let Some(info) = sys::tcp_info(t.as_raw_fd()) {
                session.set_retransmits(i, info.total_retrans);
            }
        }
        if failed {
            session.stream_failed(now_us());
            self.streams[i] = None;
        }
    }
}

/// The session index of the stream with iperf3 id `id` (1, 3, 4, ... → 0, 1, 2, ...).
fn stream_index(id: u32) -> usize {
    if id <= 1 {
        0
    } else {
        id as usize - 2
    }
}
