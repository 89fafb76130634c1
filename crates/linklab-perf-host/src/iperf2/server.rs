//! The host server: `iperf -s` (TCP) or `iperf -s -u` (UDP) on one port. A thread per TCP
//! connection drives a [`TcpServerConn`]; `-r`/`-d` connect-backs run on their own threads
//! to the **connection's peer address** (never an address from the header) at the port the
//! header names. The UDP socket's thread drives a [`UdpServer`](linklab_perf::iperf2::UdpServer).

use std::io;
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::mpsc::Sender;
use std::thread;
use std::time::Duration;

use socket2::Type;

use super::config::ServerConfig;
use super::events::{next_id, Event, FlowReport, FlowTag};
use super::tcp::{connect, drive, Meter, Payload};
use super::udp;
use crate::clock::now_us;
use crate::net::{bound, plain};
use linklab_perf::iperf2::flow::{SendFlow, TcpFlow};
use linklab_perf::iperf2::request::{Mode, Protocol};
use linklab_perf::iperf2::tcp_sender::TcpSender;
use linklab_perf::iperf2::tcp_server::{ConnectBack, TcpEnd, TcpServerConn};
use linklab_perf::time::Micros;

enum Listener {
    Tcp(TcpListener),
    Udp(UdpSocket),
}

/// A bound iperf 2 server.
pub struct Server {
    cfg: ServerConfig,
    listener: Listener,
    port: u16,
}

impl Server {
    /// Binds the listener (TCP, or UDP with `cfg.udp`).
    pub fn bind(cfg: ServerConfig) -> io::Result<Self> {
        let listener = if cfg.udp {
            let s = bound(cfg.bind, cfg.port, Type::DGRAM)?;
            s.set_recv_buffer_size(cfg.window.unwrap_or(4 << 20))?;
            Listener::Udp(s.into())
        } else {
            let s = bound(cfg.bind, cfg.port, Type::STREAM)?;
            if let Some(w) = cfg.window {
                s.set_recv_buffer_size(w)?;
            }
            s.listen(128)?;
            Listener::Tcp(s.into())
        };
        let port = match &listener {
            Listener::Tcp(l) => l.local_addr()?.port(),
            Listener::Udp(u) => u.local_addr()?.port(),
        };
        Ok(Self {
            cfg,
            listener,
            port,
        })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Serves until the process ends (or the listener fails), reporting on `events`.
    pub fn run(self, events: Sender<Event>) -> io::Result<()> {
        let protocol = if self.cfg.udp {
            Protocol::Udp
        } else {
            Protocol::Tcp
        };
        let _ = events.send(Event::Listening {
            protocol,
            port: self.port,
        });
        match self.listener {
            Listener::Udp(sock) => udp::serve(sock, &self.cfg, events),
            Listener::Tcp(listener) => loop {
                let (stream, peer) = match listener.accept() {
                    Ok(x) => x,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                let cfg = self.cfg.clone();
                let ev = events.clone();
                thread::spawn(move || serve_tcp(stream, peer, &cfg, &ev));
            },
        }
    }
}

/// Serves one TCP connection that another server accepted and found to be an iperf 2
/// client's (its bytes still unread), on a thread of its own, with the default settings;
/// its events go nowhere. The iperf3 server uses it for an iperf 2 client on its port.
pub fn serve_handed_over(stream: TcpStream) {
    let Ok(peer) = stream.peer_addr() else {
        return;
    };
    thread::spawn(move || {
        let (tx, _rx) = std::sync::mpsc::channel();
        serve_tcp(stream, peer, &ServerConfig::default(), &tx);
    });
}

/// One accepted TCP connection, to its end.
fn serve_tcp(mut stream: TcpStream, peer: SocketAddr, cfg: &ServerConfig, events: &Sender<Event>) {
    let id = next_id();
    let local = stream.local_addr().unwrap_or(peer);
    let start = now_us();
    let mut conn = TcpServerConn::new(cfg.tcp, start);
    let mut meter = Meter::new(cfg.interval_us, start);
    let mut announced = false;
    let report = |start_s: f64, end_s: f64, bytes: u64, sent: bool, reversed: bool| FlowReport {
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
    };
    let next = meter.next();
    drive(
        &mut stream,
        &mut conn,
        &Payload::digits(cfg.write_len),
        || next,
        |now, conn| {
            let mode = conn.request().map(|r| r.mode);
            if !announced && (conn.request().is_some() || conn.outcome().bytes_received >= 4) {
                announced = true;
                let tag = match mode {
                    Some(Mode::Reverse) => FlowTag::Reverse,
                    Some(Mode::FullDuplex) => FlowTag::FullDuplex,
                    _ => FlowTag::Plain,
                };
                if matches!(conn.outcome().end, None | Some(TcpEnd::Completed)) {
                    let _ = events.send(Event::Connected {
                        id,
                        local,
                        peer,
                        protocol: Protocol::Tcp,
                        tag,
                        reversed: false,
                    });
                }
            }
            if let Some(cb) = conn.take_connect_back() {
                let ev = events.clone();
                let write_len = cfg.write_len;
                let cap = cfg.tcp.max_send_us;
                thread::spawn(move || connect_back_tcp(peer, cb, write_len, cap, &ev));
            }
            let counts = TcpFlow::byte_counts(conn);
            meter.tick(now, counts, |s, e, rx, tx| {
                if mode != Some(Mode::Reverse) {
                    let _ = events.send(Event::Interval(report(s, e, rx, false, false)));
                }
                if matches!(mode, Some(Mode::Reverse | Mode::FullDuplex)) {
                    let _ = events.send(Event::Interval(report(s, e, tx, true, true)));
                }
            });
        },
    );
    let o = conn.outcome();
    match o.end {
        Some(TcpEnd::Refused(why)) => {
            let _ = events.send(Event::Notice(format!("refused {peer}: {why}")));
            return;
        }
        Some(TcpEnd::IdleTimeout) => {
            let _ = events.send(Event::Notice(format!(
                "[{id:3}] {} port {}: nothing moved for {} s, closed",
                plain(peer.ip()),
                peer.port(),
                cfg.tcp.idle_timeout_us / 1_000_000
            )));
        }
        _ => {}
    }
    if o.connect_back_refused {
        let _ = events.send(Event::Notice(format!(
            "[{id:3}] {} asked for a connect-back to port {}: refused",
            plain(peer.ip()),
            o.request.map_or(0, |r| r.port)
        )));
    }
    let threads = o.request.map_or(1, |r| r.threads.clamp(1, 1024));
    let mode = o.request.map(|r| r.mode);
    if mode != Some(Mode::Reverse) {
        let secs = o.last_rx_us.saturating_sub(o.start_us) as f64 / 1e6;
        let mut r = report(0.0, secs, o.bytes_received, false, false);
        r.threads = threads;
        let _ = events.send(Event::Final(r));
    }
    if let (Some(Mode::Reverse | Mode::FullDuplex), Some(t)) = (mode, o.last_tx_us) {
        let secs = t.saturating_sub(o.start_us) as f64 / 1e6;
        let mut r = report(0.0, secs, o.bytes_sent, true, true);
        r.threads = threads;
        let _ = events.send(Event::Final(r));
    }
}

/// Connects to a client's `-r`/`-d` listener, again while it refuses, for at most
/// [`LISTENER_GRACE`]: a client may send its header before its listener is up (stock
/// 2.1.8's `-d` on a loaded machine did: its connect-back was refused and one flow lost).
fn connect_refused_again(to: SocketAddr) -> io::Result<TcpStream> {
    let started = std::time::Instant::now();
    loop {
        match connect(to, Duration::from_secs(3)) {
            Err(e)
                if e.kind() == io::ErrorKind::ConnectionRefused
                    && started.elapsed() < LISTENER_GRACE =>
            {
                thread::sleep(Duration::from_millis(50));
            }
            done => return done,
        }
    }
}

/// How long a connect-back waits for the client's listener to come up.
const LISTENER_GRACE: Duration = Duration::from_secs(1);

/// A `-r`/`-d` connect-back: to the peer's own address, at the port its header named.
fn connect_back_tcp(
    peer: SocketAddr,
    cb: ConnectBack,
    write_len: usize,
    cap: Micros,
    events: &Sender<Event>,
) {
    let to = SocketAddr::new(peer.ip(), cb.port);
    let _ = events.send(Event::Connecting {
        protocol: Protocol::Tcp,
        host: plain(to.ip()).to_string(),
        port: cb.port,
        datagram_len: 0,
        ipg_us: 0.0,
    });
    let mut stream = match connect_refused_again(to) {
        Ok(s) => s,
        Err(e) => {
            let _ = events.send(Event::Notice(format!("connect-back to {to} failed: {e}")));
            return;
        }
    };
    let id = next_id();
    let local = stream.local_addr().unwrap_or(to);
    let _ = events.send(Event::Connected {
        id,
        local,
        peer: to,
        protocol: Protocol::Tcp,
        tag: FlowTag::Reverse,
        reversed: true,
    });
    let start = now_us();
    let mut flow = SendFlow::new(TcpSender::new(cb.amount, cb.rate_bps, cap), start);
    let len = match cb.buf_len {
        0 => write_len,
        n => n as usize,
    };
    drive(
        &mut stream,
        &mut flow,
        &Payload::digits(len),
        || None,
        |_, _| {},
    );
    let s = flow.sender();
    let end = s.last_send().unwrap_or(start);
    let _ = events.send(Event::Final(FlowReport {
        id,
        local,
        peer: to,
        protocol: Protocol::Tcp,
        sent: true,
        reversed: true,
        start_s: 0.0,
        end_s: end.saturating_sub(s.started_at().unwrap_or(start)) as f64 / 1e6,
        bytes: s.sent(),
        udp: None,
        threads: 1,
    }));
}
