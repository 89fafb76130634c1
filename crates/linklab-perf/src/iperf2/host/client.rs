//! The host client: `-P` TCP connections or UDP flows to one server, the `-r`/`-d`
//! listener on `-L` (or `-p`) opened before connecting, `-R`/`--full-duplex` on the one
//! connection, reporting [`Event`]s and ending with a [`ClientSummary`] or the one reason
//! it failed ([`ClientError`]).

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs, UdpSocket};
use std::string::String;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;
use std::vec::Vec;

use super::back::{listen_back, tcp_report};
use super::events::{Event, FlowReport, FlowTag};
use super::tcp::{connect, drive, Meter, Payload};
use super::udp::{self, figures};
use super::{next_id, now_us, wall_offset_us};
use crate::iperf::stream::Micros;
use crate::iperf2::client::{ClientEnd, TcpClientConfig, TcpClientFlow};
use crate::iperf2::flow::TcpFlow;
use crate::iperf2::request::{Amount, HeaderStyle, Mode, Protocol, TestRequest};
use crate::iperf2::udp_sender::{FinMode, UdpSender, UdpSenderConfig};
use crate::iperf2::wire::report::ReportInfo;
use crate::iperf2::wire::{DEFAULT_TCP_LEN, DEFAULT_UDP_LEN, DEFAULT_UDP_RATE};

/// What the client runs (iperf 2's options).
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The server (`-c`).
    pub host: String,
    /// Its port (`-p`).
    pub port: u16,
    /// TCP or UDP (`-u`).
    pub protocol: Protocol,
    /// Plain, `-r`, `-d`, `-R`, `--full-duplex`.
    pub mode: Mode,
    /// `-t` or `-n`.
    pub amount: Amount,
    /// `-P`.
    pub parallel: u32,
    /// `-l`, if given.
    pub buf_len: Option<u32>,
    /// `-b` in bit/s, if given.
    pub rate_bps: Option<u64>,
    /// `-L`: where to listen for `-r`/`-d` (else `-p`).
    pub listen_port: Option<u16>,
    /// The header (`-C` sends none).
    pub style: HeaderStyle,
    /// `-X`.
    pub peer_detect: bool,
    /// `-i`, 0 for none.
    pub interval_us: Micros,
    /// SO_SNDBUF and SO_RCVBUF of the test sockets (`-w`), `None` for the system's.
    pub window: Option<usize>,
}

impl ClientConfig {
    /// iperf 2's defaults against `host`: TCP, 10 s, port 5001.
    pub fn new(host: &str) -> Self {
        Self {
            host: host.into(),
            port: crate::iperf2::wire::DEFAULT_PORT,
            protocol: Protocol::Tcp,
            mode: Mode::Normal,
            amount: Amount::Time(1000),
            parallel: 1,
            buf_len: None,
            rate_bps: None,
            listen_port: None,
            style: HeaderStyle::V21,
            peer_detect: false,
            interval_us: 0,
            window: None,
        }
    }

    fn request(&self) -> TestRequest {
        let rate = match self.protocol {
            Protocol::Udp => self.rate_bps.unwrap_or(DEFAULT_UDP_RATE),
            Protocol::Tcp => self.rate_bps.unwrap_or(0),
        };
        TestRequest {
            protocol: self.protocol,
            mode: self.mode,
            amount: self.amount,
            port: u32::from(self.listen_port.unwrap_or(self.port)),
            threads: self.parallel,
            buf_len: self.buf_len.unwrap_or(0),
            rate_bps: rate,
            peer_detect: self.peer_detect,
            ..TestRequest::plain(self.protocol)
        }
    }
}

/// What a finished client run saw.
#[derive(Clone, Debug, Default)]
pub struct ClientSummary {
    /// Every flow's whole (ours, sent and received; the connect-backs').
    pub flows: Vec<FlowReport>,
    /// The servers' UDP reports.
    pub server_reports: Vec<FlowReport>,
    /// The server's version, if it replied.
    pub peer_version: Option<(u32, u32)>,
}

/// Why a client run failed.
#[derive(Debug)]
pub enum ClientError {
    /// A socket call failed (connect refused, no route...).
    Io(String, io::Error),
    /// The server is an iperf3 server.
    Iperf3Server,
    /// The server closed the connection before the test's data was sent.
    ServerClosed,
    /// The connection was reset, after this many bytes were sent and received.
    Reset(u64, u64),
    /// Nothing moved for this long (the watchdog of a TCP flow; a UDP `-R` receiver's
    /// wait for the server's datagrams).
    Timeout(Duration),
    /// `-r`/`-d`: the server did not connect back.
    NoConnectBack(u16),
}

impl core::fmt::Display for ClientError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ClientError::Io(what, e) => write!(f, "{what}: {e}"),
            ClientError::Iperf3Server => {
                f.write_str("the server speaks iperf3, not iperf 2 (use `linklab iperf -c` for it)")
            }
            ClientError::ServerClosed => {
                f.write_str("the server closed the connection before the test ended")
            }
            ClientError::Reset(sent, got) => write!(
                f,
                "the connection was reset during the test ({sent} bytes sent, {got} received)"
            ),
            ClientError::Timeout(waited) => write!(
                f,
                "the server stopped responding (nothing moved for {})",
                seconds(*waited)
            ),
            ClientError::NoConnectBack(p) => {
                write!(
                    f,
                    "expected reverse connect did not occur (nothing connected to port {p})"
                )
            }
        }
    }
}

impl std::error::Error for ClientError {}

/// A wait as people say it: "10 s", "2.5 s".
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        std::format!("{s:.0} s")
    } else {
        std::format!("{s} s")
    }
}

/// IPv4-mapped IPv6 addresses as IPv4.
pub(super) fn plain(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// Runs one client test, reporting on `events`.
pub fn run_client(
    cfg: &ClientConfig,
    events: &Sender<Event>,
) -> Result<ClientSummary, ClientError> {
    let addr = (cfg.host.as_str(), cfg.port)
        .to_socket_addrs()
        .map_err(|e| ClientError::Io(std::format!("cannot resolve {}", cfg.host), e))?
        .next()
        .ok_or_else(|| {
            ClientError::Io(
                std::format!("cannot resolve {}", cfg.host),
                io::Error::from(io::ErrorKind::NotFound),
            )
        })?;
    let summary = Arc::new(Mutex::new(ClientSummary::default()));
    let record = {
        let summary = summary.clone();
        let events = events.clone();
        move |e: Event| {
            if let Ok(mut s) = summary.lock() {
                match &e {
                    Event::Final(r) => s.flows.push(*r),
                    Event::ServerReport(r) => s.server_reports.push(*r),
                    _ => {}
                }
            }
            let _ = events.send(e);
        }
    };
    let (tx, rx) = std::sync::mpsc::channel::<Event>();
    let pump = thread::spawn(move || {
        for e in rx {
            record(e);
        }
    });
    let result = match cfg.protocol {
        Protocol::Tcp => run_tcp(cfg, addr, &tx),
        Protocol::Udp => run_udp(cfg, addr, &tx),
    };
    drop(tx);
    let _ = pump.join();
    let mut s = summary.lock().map(|s| s.clone()).unwrap_or_default();
    let peer_version = result?;
    s.peer_version = peer_version;
    Ok(s)
}

/// How long after our flows the `-r`/`-d` listener waits for connect-backs to start.
const CONNECT_BACK_WAIT_US: Micros = 3_000_000;
/// How long a UDP `-R` receiver waits with nothing arriving (for the first datagram, or
/// for more) before it gives up.
const REVERSE_QUIET_US: Micros = 3_000_000;

fn run_tcp(
    cfg: &ClientConfig,
    addr: SocketAddr,
    events: &Sender<Event>,
) -> Result<Option<(u32, u32)>, ClientError> {
    let back = listen_back(cfg, addr, events)?;
    let _ = events.send(Event::Connecting {
        protocol: Protocol::Tcp,
        host: cfg.host.clone(),
        port: cfg.port,
        datagram_len: 0,
        ipg_us: 0.0,
    });
    let request = cfg.request();
    let write_len = cfg.buf_len.map_or(DEFAULT_TCP_LEN, |l| l as usize);
    let window = cfg.window;
    let mut handles = Vec::new();
    for _ in 0..cfg.parallel.max(1) {
        let ev = events.clone();
        let mut ccfg = TcpClientConfig::new(request);
        ccfg.style = cfg.style;
        ccfg.block_len = write_len;
        let interval_us = cfg.interval_us;
        handles.push(thread::spawn(move || {
            tcp_stream(addr, window, ccfg, (request, write_len, interval_us), ev)
        }));
    }
    let mut version = None;
    let mut first_err = None;
    for h in handles {
        match h.join() {
            Ok(Ok(v)) => version = version.or(v),
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(_) => {}
        }
    }
    if let Some(back) = back {
        let port = back.port;
        let wait = if first_err.is_some() {
            0
        } else {
            CONNECT_BACK_WAIT_US
        };
        let got = back.wait(now_us() + wait);
        if first_err.is_none() && got == 0 {
            first_err = Some(ClientError::NoConnectBack(port));
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(version),
    }
}

/// One TCP stream of a test: connects to `addr` (with `window` as its socket buffers), runs
/// the flow and reports its intervals and totals on `ev`; returns the server's version when
/// it told it.
fn tcp_stream(
    addr: SocketAddr,
    window: Option<usize>,
    ccfg: TcpClientConfig,
    (request, write_len, interval_us): (TestRequest, usize, Micros),
    ev: Sender<Event>,
) -> Result<Option<(u32, u32)>, ClientError> {
    let mut stream = connect(addr, Duration::from_secs(10))
        .map_err(|e| ClientError::Io(std::format!("connect to {addr} failed"), e))?;
    if let Some(w) = window {
        let r = socket2::SockRef::from(&stream);
        let _ = r.set_send_buffer_size(w);
        let _ = r.set_recv_buffer_size(w);
    }
    let id = next_id();
    let local = stream.local_addr().unwrap_or(addr);
    let mode = request.mode;
    let _ = ev.send(Event::Connected {
        id,
        local,
        peer: addr,
        protocol: Protocol::Tcp,
        tag: match mode {
            Mode::Reverse => FlowTag::Reverse,
            Mode::FullDuplex => FlowTag::FullDuplex,
            _ => FlowTag::Plain,
        },
        reversed: false,
    });
    let start = now_us();
    let mut flow = TcpClientFlow::new(ccfg, start);
    let payload = Payload::client(&flow, write_len);
    let mut meter = Meter::new(interval_us, start);
    let next = meter.next();
    drive(
        &mut stream,
        &mut flow,
        &payload,
        || next,
        |now, f| {
            meter.tick(now, TcpFlow::byte_counts(f), |s, e, rx, tx| {
                if mode != Mode::Reverse {
                    let _ = ev.send(Event::Interval(tcp_report(
                        id, local, addr, s, e, tx, true, false,
                    )));
                }
                if matches!(mode, Mode::Reverse | Mode::FullDuplex) {
                    let _ = ev.send(Event::Interval(tcp_report(
                        id, local, addr, s, e, rx, false, true,
                    )));
                }
            });
        },
    );
    let end = now_us();
    match flow.end() {
        Some(ClientEnd::Iperf3Server) => return Err(ClientError::Iperf3Server),
        Some(ClientEnd::ServerClosed) => return Err(ClientError::ServerClosed),
        Some(ClientEnd::Reset) => return Err(ClientError::Reset(flow.sent(), flow.received())),
        Some(ClientEnd::Timeout) => {
            return Err(ClientError::Timeout(Duration::from_micros(
                ccfg.idle_timeout_us,
            )))
        }
        _ => {}
    }
    let secs = end.saturating_sub(start) as f64 / 1e6;
    if mode != Mode::Reverse {
        let _ = ev.send(Event::Final(tcp_report(
            id,
            local,
            addr,
            0.0,
            secs,
            flow.sent(),
            true,
            false,
        )));
    }
    if matches!(mode, Mode::Reverse | Mode::FullDuplex) {
        let rx_secs = flow
            .rx_span()
            .map_or(secs, |(_, last)| last.saturating_sub(start) as f64 / 1e6);
        let _ = ev.send(Event::Final(tcp_report(
            id,
            local,
            addr,
            0.0,
            rx_secs,
            flow.received(),
            false,
            true,
        )));
    }
    Ok(flow.peer_version())
}

fn run_udp(
    cfg: &ClientConfig,
    addr: SocketAddr,
    events: &Sender<Event>,
) -> Result<Option<(u32, u32)>, ClientError> {
    let back = listen_back(cfg, addr, events)?;
    let request = cfg.request();
    let len = cfg.buf_len.map_or(DEFAULT_UDP_LEN, |l| l as usize);
    let rate = request.rate_bps;
    let _ = events.send(Event::Connecting {
        protocol: Protocol::Udp,
        host: cfg.host.clone(),
        port: cfg.port,
        datagram_len: len,
        ipg_us: len as f64 * 8.0 * 1e6 / rate.max(1) as f64,
    });
    let mut handles = Vec::new();
    let window = cfg.window;
    for _ in 0..cfg.parallel.max(1) {
        let ev = events.clone();
        handles.push(thread::spawn(move || -> Result<(), ClientError> {
            let any = if addr.is_ipv4() {
                "0.0.0.0:0"
            } else {
                "[::]:0"
            };
            let sock = UdpSocket::bind(any)
                .and_then(|s| s.connect(addr).map(|_| s))
                .map_err(|e| ClientError::Io(std::format!("connect to {addr} failed"), e))?;
            let r = socket2::SockRef::from(&sock);
            let _ = r.set_send_buffer_size(window.unwrap_or(4 << 20));
            if let Some(w) = window {
                let _ = r.set_recv_buffer_size(w);
            }
            let id = next_id();
            let local = sock.local_addr().unwrap_or(addr);
            let reverse = request.mode == Mode::Reverse;
            let _ = ev.send(Event::Connected {
                id,
                local,
                peer: addr,
                protocol: Protocol::Udp,
                tag: if reverse {
                    FlowTag::Reverse
                } else {
                    FlowTag::Plain
                },
                reversed: false,
            });
            if reverse {
                let header = udp::header_datagram(&request, len);
                let quiet = REVERSE_QUIET_US;
                let (stats, span) = udp::receive_reverse(&sock, &header, quiet);
                let secs = span.map_or(0.0, |(a, b)| b.saturating_sub(a) as f64 / 1e6);
                let info: ReportInfo = stats.report(secs, false);
                let _ = ev.send(Event::Final(FlowReport {
                    id,
                    local,
                    peer: addr,
                    protocol: Protocol::Udp,
                    sent: false,
                    reversed: true,
                    start_s: 0.0,
                    end_s: secs,
                    bytes: info.bytes,
                    udp: Some(figures(&info)),
                    threads: 1,
                }));
                if span.is_none() {
                    return Err(ClientError::Timeout(Duration::from_micros(quiet)));
                }
                return Ok(());
            }
            let sender = UdpSender::new(UdpSenderConfig {
                len,
                rate_bps: rate,
                amount: request.amount,
                max_us: u64::MAX,
                header: Some((request, HeaderStyle::V21)),
                format: Default::default(),
                fin: FinMode::AwaitReport,
                wall_offset_us: wall_offset_us(),
            });
            let s = udp::send_flow(&sock, sender);
            udp::report_sender(id, local, addr, false, &s, &ev);
            Ok(())
        }));
    }
    let mut first_err = None;
    for h in handles {
        if let Ok(Err(e)) = h.join() {
            first_err.get_or_insert(e);
        }
    }
    if let Some(back) = back {
        let port = back.port;
        let wait = if first_err.is_some() {
            0
        } else {
            CONNECT_BACK_WAIT_US
        };
        let got = back.wait(now_us() + wait);
        if first_err.is_none() && got == 0 {
            first_err = Some(ClientError::NoConnectBack(port));
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(None),
    }
}
