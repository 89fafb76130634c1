//! The host server: one test at a time on a TCP listener and a UDP socket on the same
//! port; everyone else gets ACCESS_DENIED.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use std::vec::Vec;

use super::control::Control;
use super::streams::{DataSock, DataStreams, BURST};
use super::{now_us, sys, Error};
use crate::iperf::report::TestReport;
use crate::iperf::session::{Failure, Phase, Session};
use crate::iperf::stream::Micros;
use crate::iperf::wire::{self, COOKIE_SIZE, DEFAULT_TCP_BLOCK_LEN, MAX_JSON_LEN};

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
        sys::grow_rcvbuf(&udp);
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
                    let mut p = [sys::pollfd(self.listener.as_raw_fd(), libc::POLLIN)];
                    sys::ppoll(&mut p, Duration::from_millis(100))?;
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
