//! The host client: connect, run one test against any iperf3 server, report.

use std::io::{self, ErrorKind, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::time::Duration;
use std::{format, string::String};

use super::control::Control;
use super::streams::{DataSock, DataStreams};
use super::{now_us, sys, Error};
use crate::iperf::json::{Params, Protocol};
use crate::iperf::report::{Interval, TestReport};
use crate::iperf::session::{ClientOptions, Failure, Phase, Session};
use crate::iperf::stream::Micros;
use crate::iperf::wire::{
    self, DEFAULT_PORT, DEFAULT_TCP_BLOCK_LEN, DEFAULT_UDP_BLOCK_LEN, MAX_JSON_LEN,
};

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
    crate::iperf::session::validate_params(&params).map_err(|e| Error::Config(e.into()))?;
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
                sys::grow_rcvbuf(&s);
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
        let Some(idx) = session.client_stream_opened(now_us()) else {
            // The session no longer wants streams: it has failed, say why.
            return Err(Error::Test(match session.phase() {
                Phase::Failed(f) => f,
                _ => Failure::StreamFailed,
            }));
        };
        debug_assert_eq!(idx, data.streams.len());
        data.streams.push(Some(sock));
    }
    Ok(())
}
