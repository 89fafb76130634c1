//! The host client: `-P` TCP connections or UDP flows to one server, the `-r`/`-d`
//! listener on `-L` (or `-p`) opened before connecting, `-R`/`--full-duplex` on the one
//! connection, reporting [`Event`]s and ending with a [`ClientSummary`] or the one reason
//! it failed ([`ClientError`]).

use std::io;
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use super::back::{listen_back, tcp_report};
use super::config::{ClientConfig, ClientError, ClientSummary};
use super::events::{next_id, Event, FlowReport, FlowTag};
use super::tcp::{connect, drive, Meter, Payload};
use super::udp::{self, figures};
use crate::clock::{now_us, wall_offset_us};
use linklab_perf::iperf2::client::{ClientEnd, TcpClientConfig, TcpClientFlow};
use linklab_perf::iperf2::flow::TcpFlow;
use linklab_perf::iperf2::request::{HeaderStyle, Mode, Protocol, TestRequest};
use linklab_perf::iperf2::udp_sender::{FinMode, UdpSender, UdpSenderConfig};
use linklab_perf::iperf2::wire::report::ReportInfo;
use linklab_perf::iperf2::wire::{DEFAULT_TCP_LEN, DEFAULT_UDP_LEN};
use linklab_perf::time::Micros;

/// Runs one client test, reporting on `events`.
pub fn run_client(
    cfg: &ClientConfig,
    events: &Sender<Event>,
) -> Result<ClientSummary, ClientError> {
    let addr = (cfg.host.as_str(), cfg.port)
        .to_socket_addrs()
        .map_err(|e| ClientError::Io(format!("cannot resolve {}", cfg.host), e))?
        .next()
        .ok_or_else(|| {
            ClientError::Io(
                format!("cannot resolve {}", cfg.host),
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
        .map_err(|e| ClientError::Io(format!("connect to {addr} failed"), e))?;
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
                .map_err(|e| ClientError::Io(format!("connect to {addr} failed"), e))?;
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
