//! The client's `-r`/`-d` listener: opened on `-L` (or `-p`) before the client connects,
//! it serves the server's connect-backs — TCP flows received to their end, or UDP flows
//! answered with their report — until they came or a deadline the client moves once its
//! own flows ended.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use socket2::Type;

use super::config::{ClientConfig, ClientError, ServerConfig};
use super::events::{next_id, Event, FlowReport, FlowTag};
use super::tcp::{drive, Meter, Payload};
use super::udp::{self, Limit};
use crate::clock::now_us;
use crate::net::bound;
use linklab_perf::iperf2::flow::TcpFlow;
use linklab_perf::iperf2::request::Protocol;
use linklab_perf::iperf2::tcp_server::{TcpServerConfig, TcpServerConn};
use linklab_perf::iperf2::wire::DEFAULT_TCP_LEN;
use linklab_perf::time::Micros;

/// The `-r`/`-d` listener: opened before connecting; serves the connect-backs that come
/// before `deadline` (moved by the caller once its own flows ended).
pub(super) struct BackListener {
    deadline: Arc<AtomicU64>,
    handle: thread::JoinHandle<usize>,
    /// The port it listens on.
    pub(super) port: u16,
}

impl BackListener {
    /// Moves the deadline to `until` and waits for the listener; returns the flows served.
    pub(super) fn wait(self, until: Micros) -> usize {
        self.deadline.store(until, Ordering::Relaxed);
        self.handle.join().unwrap_or(0)
    }
}

pub(super) fn listen_back(
    cfg: &ClientConfig,
    addr: SocketAddr,
    events: &Sender<Event>,
) -> Result<Option<BackListener>, ClientError> {
    if !cfg.mode.connects_back() {
        return Ok(None);
    }
    let port = cfg.listen_port.unwrap_or(cfg.port);
    let ip = if addr.is_ipv4() { "0.0.0.0" } else { "::" };
    let bind: Option<IpAddr> = ip.parse().ok();
    let deadline = Arc::new(AtomicU64::new(u64::MAX));
    let wanted = cfg.parallel.max(1) as usize;
    let ev = events.clone();
    let dl = deadline.clone();
    let interval_us = cfg.interval_us;
    let handle = match cfg.protocol {
        Protocol::Tcp => {
            let s = bound(bind, port, Type::STREAM)
                .and_then(|s| s.listen(16).map(|_| s))
                .map_err(|e| ClientError::Io(format!("listen on TCP port {port} for -r/-d"), e))?;
            let listener: TcpListener = s.into();
            let _ = listener.set_nonblocking(true);
            let _ = events.send(Event::Listening {
                protocol: Protocol::Tcp,
                port,
            });
            thread::spawn(move || accept_back(listener, wanted, &dl, interval_us, &ev))
        }
        Protocol::Udp => {
            let s = bound(bind, port, Type::DGRAM)
                .map_err(|e| ClientError::Io(format!("listen on UDP port {port} for -r/-d"), e))?;
            let sock: UdpSocket = s.into();
            let _ = events.send(Event::Listening {
                protocol: Protocol::Udp,
                port,
            });
            thread::spawn(move || {
                let scfg = ServerConfig {
                    udp: true,
                    ..ServerConfig::default()
                };
                let limit = Limit {
                    flows: wanted,
                    deadline: &dl,
                };
                udp::serve_flows(&sock, &scfg, &ev, Some(limit)).unwrap_or(0)
            })
        }
    };
    Ok(Some(BackListener {
        deadline,
        handle,
        port,
    }))
}

/// Accepts up to `wanted` connect-backs and receives each to its end.
fn accept_back(
    listener: TcpListener,
    wanted: usize,
    deadline: &AtomicU64,
    interval_us: Micros,
    events: &Sender<Event>,
) -> usize {
    let mut handles = Vec::new();
    while handles.len() < wanted && now_us() < deadline.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((mut stream, peer)) => {
                let ev = events.clone();
                handles.push(thread::spawn(move || {
                    let id = next_id();
                    let local = stream.local_addr().unwrap_or(peer);
                    let _ = ev.send(Event::Connected {
                        id,
                        local,
                        peer,
                        protocol: Protocol::Tcp,
                        tag: FlowTag::Plain,
                        reversed: false,
                    });
                    let cfg = TcpServerConfig {
                        send_ack: false,
                        serve_reverse: false,
                        serve_full_duplex: false,
                        serve_connect_back: false,
                        ..TcpServerConfig::default()
                    };
                    let start = now_us();
                    let mut conn = TcpServerConn::new(cfg, start);
                    let mut meter = Meter::new(interval_us, start);
                    let next = meter.next();
                    drive(
                        &mut stream,
                        &mut conn,
                        &Payload::digits(DEFAULT_TCP_LEN),
                        || next,
                        |now, c| {
                            meter.tick(now, TcpFlow::byte_counts(c), |s, e, rx, _| {
                                let _ = ev.send(Event::Interval(tcp_report(
                                    id, local, peer, s, e, rx, false, false,
                                )));
                            });
                        },
                    );
                    let o = conn.outcome();
                    let secs = o.last_rx_us.saturating_sub(o.start_us) as f64 / 1e6;
                    let _ = ev.send(Event::Final(tcp_report(
                        id,
                        local,
                        peer,
                        0.0,
                        secs,
                        o.bytes_received,
                        false,
                        false,
                    )));
                }));
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(5))
            }
            Err(_) => thread::sleep(Duration::from_millis(5)),
        }
    }
    let n = handles.len();
    for h in handles {
        let _ = h.join();
    }
    n
}

#[allow(clippy::too_many_arguments)]
pub(super) fn tcp_report(
    id: u32,
    local: SocketAddr,
    peer: SocketAddr,
    start_s: f64,
    end_s: f64,
    bytes: u64,
    sent: bool,
    reversed: bool,
) -> FlowReport {
    FlowReport {
        id,
        local,
        peer,
        protocol: Protocol::Tcp,
        sent,
        reversed,
        start_s,
        end_s,
        bytes,
        udp: None,
        threads: 1,
    }
}
