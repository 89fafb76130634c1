//! Accepting while a test runs: data connections presenting their cookie, UDP streams
//! saying hello on the shared socket, and ACCESS_DENIED for everyone else.

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use socket2::SockRef;

use super::super::error::Error;
use super::super::observer::Observer;
use super::super::report::StreamInfo;
use super::super::sockets::{self, StreamOptions};
use super::super::streams::{DataSock, DataStreams, BURST};
use super::listening::Server;
use crate::clock::now_us;
use linklab_perf::iperf::session::{Phase, Session};
use linklab_perf::iperf::wire::{self, COOKIE_SIZE};

/// A TCP connection whose 37-byte cookie is still being read.
pub(super) struct Pending {
    pub(super) sock: TcpStream,
    cookie: [u8; COOKIE_SIZE],
    got: usize,
    deadline: Instant,
}

impl Server {
    /// Answers a connection ACCESS_DENIED and closes it.
    pub(super) fn deny(&self, mut s: TcpStream) {
        let _ = s.write(&[wire::state::ACCESS_DENIED as u8]);
        let _ = s.shutdown(Shutdown::Both);
        self.stats.denied.fetch_add(1, Ordering::Relaxed);
    }

    /// Accepts what waits on the listener: would-be data streams while streams are being
    /// created, ACCESS_DENIED otherwise (without reading, like iperf3).
    pub(super) fn accept_new(&self, session: &Session, pending: &mut Vec<Pending>) {
        let Some(listener) = &self.listener else {
            return;
        };
        loop {
            match listener.accept() {
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
                        self.deny(s);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// Reads the cookies of pending connections; a right one becomes a data stream with
    /// the test's socket options (iperf3's server sets TCP_CONGESTION, TCP_USER_TIMEOUT,
    /// TOS and pacing on each accepted stream).
    pub(super) fn read_pending(
        &self,
        session: &mut Session,
        data: &mut DataStreams,
        pending: &mut Vec<Pending>,
        opts: &StreamOptions,
        obs: &mut dyn Observer,
    ) -> Result<(), Error> {
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
            let Some(complete) = done else {
                i += 1;
                continue;
            };
            let p = pending.swap_remove(i);
            if !complete {
                continue;
            }
            let Some(idx) = session.accept_tcp_stream(&p.cookie, now_us()) else {
                self.deny(p.sock);
                continue;
            };
            let t = p.sock;
            let r = SockRef::from(&t);
            let _ = r.set_nodelay(opts.nodelay);
            if let Some(timeout) = opts.snd_timeout {
                r.set_tcp_user_timeout(Some(timeout))
                    .map_err(|e| sockets::iperf_err(148, &e))?;
            }
            if let Some(name) = &opts.congestion {
                if let Err(e) = r.set_tcp_congestion(name.as_bytes()) {
                    // A name this host does not know: iperf3 warns and goes on.
                    if e.raw_os_error() == Some(libc::ENOENT) {
                        obs.warning("TCP congestion control algorithm not supported");
                    } else {
                        return Err(sockets::iperf_err(134, &e));
                    }
                }
            }
            session.set_congestion_used(&sockets::congestion_in_use(&t));
            let peer = t.peer_addr()?;
            sockets::init_stream(&r, opts, peer_is_v6(&peer), false)?;
            let sender = session.streams().get(idx).is_some_and(|s| s.sender);
            if sender {
                sockets::set_fq_rate(t.as_raw_fd(), opts.fq_rate_bps, &mut |m| obs.warning(m));
            }
            let info = StreamInfo {
                id: session.streams().get(idx).map_or(0, |s| s.id),
                socket: t.as_raw_fd(),
                sender,
                local: t.local_addr()?,
                peer,
            };
            data.add(idx, DataSock::Tcp(t), info, sender)?;
            obs.stream(&info);
        }
        Ok(())
    }

    /// Reads the shared UDP socket: datagrams of known streams are counted, a hello from a
    /// new peer while streams are being created opens a stream.
    pub(super) fn read_udp(
        &self,
        session: &mut Session,
        data: &mut DataStreams,
        local_ip: std::net::IpAddr,
        obs: &mut dyn Observer,
    ) {
        let reading = session.should_read();
        for _ in 0..BURST {
            let (n, from) = match self.udp.recv_from(&mut data.buf) {
                Ok(r) => r,
                Err(_) => return,
            };
            let now = now_us();
            if let Some(idx) = data.udp_peers.iter().position(|p| *p == from) {
                if reading {
                    data.last_rx = Instant::now();
                    session.on_udp_received(idx, &data.buf[..n], now);
                    data.store(idx, n);
                }
                continue;
            }
            if session.phase() != Phase::CreateStreams {
                continue;
            }
            let Some(idx) = session.accept_udp_stream(&data.buf[..n], now) else {
                continue;
            };
            let _ = self.udp.send_to(&wire::udp_hello_reply(), from);
            let Ok(clone) = self.udp.try_clone() else {
                continue;
            };
            while data.udp_peers.len() <= idx {
                data.udp_peers.push(from);
            }
            data.udp_peers[idx] = from;
            let info = StreamInfo {
                id: session.streams().get(idx).map_or(0, |s| s.id),
                socket: clone.as_raw_fd(),
                sender: session.streams().get(idx).is_some_and(|s| s.sender),
                // The shared socket is bound to the wildcard: the client reached the
                // address of its control connection.
                local: std::net::SocketAddr::new(local_ip, self.port),
                peer: from,
            };
            if let Err(e) = data.add(idx, DataSock::Udp(clone, Some(from)), info, false) {
                obs.warning(&e.to_string());
                session.stream_failed(now);
                return;
            }
            obs.stream(&info);
        }
    }
}

/// True for a real IPv6 peer (not an IPv4 client on a dual-stack socket).
fn peer_is_v6(peer: &std::net::SocketAddr) -> bool {
    match peer {
        std::net::SocketAddr::V6(v6) => v6.ip().to_ipv4_mapped().is_none(),
        std::net::SocketAddr::V4(_) => false,
    }
}
