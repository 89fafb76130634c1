//! The server's sockets: a TCP listener and a UDP socket on one port (dual-stack unless
//! told otherwise), and its counters.

use std::io::{self, ErrorKind};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::sync::Arc;
use std::time::Duration;

use super::super::error::Error;
use super::super::sockets::{self, StreamOptions};
use super::config::{ServerConfig, ServerStats};

/// An iperf3-compatible server on std::net: one test at a time, others get ACCESS_DENIED.
pub struct Server {
    /// The TCP listener; `None` only if listening again failed (see `options`).
    pub(super) listener: Option<TcpListener>,
    pub(super) udp: Arc<UdpSocket>,
    pub(super) stats: Arc<ServerStats>,
    pub(super) cfg: ServerConfig,
    /// The port actually bound (the configured one may be 0).
    pub(super) port: u16,
}

impl Server {
    /// Listens on `addr` (TCP for control and TCP streams, UDP on the same port).
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        let mut cfg = ServerConfig::new(addr.port());
        cfg.listen.bind = Some(addr.ip());
        Self::listen(cfg).map_err(|e| match e {
            Error::Io(e) => e,
            other => io::Error::other(other.to_string()),
        })
    }

    /// Listens as `cfg` says (by default on every IPv4 and IPv6 address, like iperf3).
    pub fn listen(cfg: ServerConfig) -> Result<Self, Error> {
        let (listener, _) =
            sockets::listen_tcp(&cfg.listen, cfg.listen.port, &StreamOptions::default())?;
        let port = listener.local_addr()?.port();
        let udp =
            sockets::listen_udp(&cfg.listen, port).map_err(|e| sockets::iperf_err(102, &e))?;
        Ok(Self {
            listener: Some(listener),
            udp: Arc::new(udp),
            stats: Arc::default(),
            cfg,
            port,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener()?.local_addr()
    }

    /// The TCP listener.
    pub(super) fn listener(&self) -> io::Result<&TcpListener> {
        self.listener
            .as_ref()
            .ok_or_else(|| io::Error::new(ErrorKind::NotConnected, "the server lost its listener"))
    }

    /// Live counters.
    pub fn stats(&self) -> Arc<ServerStats> {
        self.stats.clone()
    }

    /// Sets the watchdog that frees the server from a client that went quiet.
    pub fn set_watchdog(&mut self, d: Duration) {
        self.cfg.watchdog = d;
    }
}
