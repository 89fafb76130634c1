//! UDP on the host: the server's socket loop (any number of flows, or the one a client's
//! `-r`/`-d` listener waits for), a UDP sender (the client's flow, a server's connect-back)
//! and the `-R` receiver.

use std::collections::HashMap;
use std::io::{self, ErrorKind};
use std::net::{SocketAddr, UdpSocket};
use std::sync::mpsc::Sender;
use std::thread;
use std::time::Duration;

use super::config::ServerConfig;
use super::events::{next_id, Event, FlowReport, FlowTag, UdpFigures};
use crate::clock::{now_us, wall_offset_us};
use crate::net::plain;
use crate::sys;
use linklab_perf::iperf2::request::{Mode, Protocol, TestRequest};
use linklab_perf::iperf2::tcp_server::ConnectBack;
use linklab_perf::iperf2::udp_sender::{FinMode, UdpSendPhase, UdpSender, UdpSenderConfig};
use linklab_perf::iperf2::udp_server::{UdpPhase, UdpServer, UdpServerConfig};
use linklab_perf::iperf2::udp_stats::UdpReceiveStats;
use linklab_perf::iperf2::wire::report::ReportInfo;
use linklab_perf::iperf2::wire::{UdpDatagram, DEFAULT_UDP_LEN, DEFAULT_UDP_RATE};
use linklab_perf::time::Micros;
use nix::poll::PollFlags;

/// Most flows the host's UDP server holds at once.
const FLOWS: usize = 16;

/// The figures of a receiver's counters.
pub(super) fn figures(info: &ReportInfo) -> UdpFigures {
    UdpFigures {
        jitter_ms: info.jitter_s * 1e3,
        lost: info.lost,
        total: info.datagrams,
        out_of_order: info.out_of_order,
    }
}

/// The address this host sends from to reach `peer` (what the connection line prints as
/// "local"), with `port`.
pub(super) fn local_toward(peer: SocketAddr, port: u16) -> SocketAddr {
    let any: SocketAddr = if peer.is_ipv4() {
        "0.0.0.0:0".parse().unwrap_or(peer)
    } else {
        "[::]:0".parse().unwrap_or(peer)
    };
    let ip = UdpSocket::bind(any)
        .and_then(|s| s.connect(peer).and_then(|_| s.local_addr()))
        .map_or(any.ip(), |a| a.ip());
    SocketAddr::new(ip, port)
}

/// Waits until `sock` is readable or `until` (at most 100 ms).
fn wait_readable(sock: &UdpSocket, until: Micros) {
    let now = now_us();
    let wait = until.saturating_sub(now).min(100_000);
    sys::wait_fd(sock, PollFlags::POLLIN, Duration::from_micros(wait));
}

/// When a serving loop stops: after this many flows ended, or at a deadline (which the
/// caller may move while the loop runs).
#[derive(Clone, Copy)]
pub(super) struct Limit<'a> {
    /// Flows to serve.
    pub flows: usize,
    /// Stop at this time (µs on [`now_us`]) if no flow is running.
    pub deadline: &'a std::sync::atomic::AtomicU64,
}

/// Serves UDP flows on `sock` until the process ends (`limit` None) or the limit. Returns
/// the flows that ended.
pub(super) fn serve_flows(
    sock: &UdpSocket,
    cfg: &ServerConfig,
    events: &Sender<Event>,
    limit: Option<Limit<'_>>,
) -> io::Result<usize> {
    sock.set_nonblocking(true)?;
    let port = sock.local_addr()?.port();
    let mut server = UdpServer::<SocketAddr, FLOWS>::new(cfg.udp_cfg);
    let mut ids: HashMap<SocketAddr, (u32, bool)> = HashMap::new();
    let mut buf = vec![0u8; 65_536];
    let mut out = vec![0u8; 65_536];
    let mut done = 0;
    loop {
        let now = now_us();
        for _ in 0..256 {
            match sock.recv_from(&mut buf) {
                Ok((n, peer)) => {
                    let was = busy(&server, peer);
                    let now = now_us();
                    if server.on_datagram(peer, &buf[..n], now) && !was && busy(&server, peer) {
                        let id = next_id();
                        ids.insert(peer, (id, false));
                        let mode = flow_request(&server, peer).map(|r| r.mode);
                        let _ = events.send(Event::Connected {
                            id,
                            local: local_toward(peer, port),
                            peer,
                            protocol: Protocol::Udp,
                            tag: match mode {
                                Some(Mode::Reverse) => FlowTag::Reverse,
                                Some(Mode::FullDuplex) => FlowTag::FullDuplex,
                                _ => FlowTag::Plain,
                            },
                            reversed: false,
                        });
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // An ICMP error from an earlier send: not this socket's end.
                Err(_) => {}
            }
        }
        while let Some((peer, n)) = server.next_output(now_us(), &mut out) {
            let _ = sock.send_to(&out[..n], peer);
        }
        while let Some((peer, cb)) = server.take_connect_back() {
            let ev = events.clone();
            let ucfg = cfg.udp_cfg;
            thread::spawn(move || connect_back_udp(peer, cb, ucfg, &ev));
        }
        server.poll(now);
        // A flow's figures when its FIN came (as stock prints them), or when it ended
        // without one.
        for (peer, s) in server.sessions() {
            if let Some((id, printed)) = ids.get_mut(&peer) {
                let receiving = s.request().mode != Mode::Reverse;
                if !*printed && receiving && s.phase() == UdpPhase::Reporting {
                    *printed = true;
                    let _ = events.send(Event::Final(final_report(
                        *id,
                        peer,
                        port,
                        &s.outcome().report,
                    )));
                }
            }
        }
        while let Some((peer, o)) = server.take_finished() {
            done += 1;
            if let Some((id, printed)) = ids.remove(&peer) {
                if o.request.mode != Mode::Reverse && !printed {
                    let _ = events.send(Event::Final(final_report(id, peer, port, &o.report)));
                }
                if o.request.mode.server_sends_inline() {
                    let _ = events.send(Event::Final(FlowReport {
                        sent: true,
                        reversed: true,
                        bytes: o.sent.1,
                        udp: None,
                        ..final_report(id, peer, port, &o.report)
                    }));
                }
                if o.timed_out {
                    let _ = events.send(Event::Notice(format!(
                        "[{id:3}] {peer}: no datagram for {} s and no FIN: flow ended without a report",
                        cfg.udp_cfg.idle_timeout_us / 1_000_000
                    )));
                }
                if o.connect_back_refused {
                    let _ = events.send(Event::Notice(format!(
                        "[{id:3}] {peer} asked for a connect-back to port {}: refused",
                        o.request.port
                    )));
                }
            }
        }
        if let Some(l) = limit {
            if done >= l.flows
                || (now >= l.deadline.load(std::sync::atomic::Ordering::Relaxed)
                    && !server.is_busy())
            {
                return Ok(done);
            }
        }
        let until = server.poll_at(now).unwrap_or(now + 100_000);
        wait_readable(sock, until);
    }
}

fn busy(server: &UdpServer<SocketAddr, FLOWS>, peer: SocketAddr) -> bool {
    server.sessions().any(|(p, s)| p == peer && s.is_busy())
}

fn flow_request(server: &UdpServer<SocketAddr, FLOWS>, peer: SocketAddr) -> Option<TestRequest> {
    server
        .sessions()
        .find(|(p, s)| *p == peer && s.is_busy())
        .map(|(_, s)| *s.request())
}

fn final_report(id: u32, peer: SocketAddr, port: u16, r: &ReportInfo) -> FlowReport {
    FlowReport {
        id,
        local: local_toward(peer, port),
        peer,
        protocol: Protocol::Udp,
        sent: false,
        reversed: false,
        start_s: 0.0,
        end_s: r.duration_s,
        bytes: r.bytes,
        udp: Some(figures(r)),
        threads: 1,
    }
}

/// `iperf -s -u`: serves forever.
pub(super) fn serve(sock: UdpSocket, cfg: &ServerConfig, events: Sender<Event>) -> io::Result<()> {
    serve_flows(&sock, cfg, &events, None).map(|_| ())
}

/// Sends a UDP flow on a connected socket until the sender is done; returns it.
pub(super) fn send_flow(sock: &UdpSocket, mut sender: UdpSender) -> UdpSender {
    let _ = sock.set_nonblocking(true);
    let mut buf = vec![0u8; sender.config().len.max(256)];
    let mut rbuf = vec![0u8; 65_536];
    loop {
        let now = now_us();
        // Replies (the report) first.
        loop {
            match sock.recv(&mut rbuf) {
                Ok(n) => {
                    sender.on_datagram(&rbuf[..n], now_us());
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let mut sent_any = false;
        for _ in 0..64 {
            match sender.next_datagram(now_us(), &mut buf) {
                Some(n) => {
                    sent_any = true;
                    if let Err(e) = sock.send(&buf[..n]) {
                        if e.kind() == ErrorKind::WouldBlock {
                            sys::wait_fd(sock, PollFlags::POLLOUT, Duration::from_millis(5));
                        }
                    }
                }
                None => break,
            }
        }
        sender.poll(now_us());
        if sender.phase() == UdpSendPhase::Done {
            return sender;
        }
        if sent_any && sender.phase() == UdpSendPhase::Sending {
            if let Some(t) = sender.poll_at(now_us()) {
                if t <= now_us() {
                    continue;
                }
            }
        }
        let until = sender.poll_at(now).unwrap_or(now + 10_000);
        let wait = until.saturating_sub(now_us());
        if wait > 2_000 {
            wait_readable(sock, until);
        } else if wait > 0 {
            // Short gaps: sleep precisely rather than through poll's granularity.
            thread::sleep(Duration::from_micros(wait));
        }
    }
}

/// The sender of a client or a connect-back, and the events it reports.
pub(super) fn report_sender(
    id: u32,
    local: SocketAddr,
    peer: SocketAddr,
    reversed: bool,
    s: &UdpSender,
    events: &Sender<Event>,
) {
    let start = s.started_at().unwrap_or(0);
    let end = s.ended_at().unwrap_or(start);
    let fins = u64::from(s.fins_sent().min(1));
    // What went on the wire that the receiver counts: data and the first FIN.
    let base = FlowReport {
        id,
        local,
        peer,
        protocol: Protocol::Udp,
        sent: true,
        reversed,
        start_s: 0.0,
        end_s: end.saturating_sub(start) as f64 / 1e6,
        // The FIN carries a full datagram, counted as 2.1.8's client counts it.
        bytes: s.bytes_with_fin(),
        udp: None,
        threads: 1,
    };
    let _ = events.send(Event::Final(base));
    let _ = events.send(Event::Sent {
        id,
        datagrams: s.datagrams() + fins,
    });
    match s.report() {
        Some(r) => {
            let _ = events.send(Event::ServerReport(FlowReport {
                sent: false,
                end_s: r.duration_s,
                bytes: r.bytes,
                udp: Some(figures(r)),
                ..base
            }));
        }
        None if s.config().fin == FinMode::AwaitReport => {
            let _ = events.send(Event::Notice(format!(
                "[{id:3}] WARNING: did not receive ack of last datagram after {} tries.",
                s.fins_sent()
            )));
        }
        None => {}
    }
}

/// A UDP `-r`/`-d` connect-back: a flow to the peer's own address at the header's port.
fn connect_back_udp(
    peer: SocketAddr,
    cb: ConnectBack,
    cfg: UdpServerConfig,
    events: &Sender<Event>,
) {
    let to = SocketAddr::new(peer.ip(), cb.port);
    let len = match cb.buf_len {
        0 => DEFAULT_UDP_LEN,
        n => n as usize,
    };
    let rate = if cb.rate_bps == 0 {
        DEFAULT_UDP_RATE
    } else {
        cb.rate_bps
    };
    let _ = events.send(Event::Connecting {
        protocol: Protocol::Udp,
        host: plain(to.ip()).to_string(),
        port: cb.port,
        datagram_len: len,
        ipg_us: len as f64 * 8.0 * 1e6 / rate as f64,
    });
    let any = if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
    let sock = match UdpSocket::bind(any).and_then(|s| s.connect(to).map(|_| s)) {
        Ok(s) => s,
        Err(e) => {
            let _ = events.send(Event::Notice(format!("connect-back to {to} failed: {e}")));
            return;
        }
    };
    let id = next_id();
    let local = sock.local_addr().unwrap_or(to);
    let _ = events.send(Event::Connected {
        id,
        local,
        peer: to,
        protocol: Protocol::Udp,
        tag: FlowTag::Reverse,
        reversed: true,
    });
    let sender = UdpSender::new(UdpSenderConfig {
        len,
        rate_bps: rate,
        amount: cb.amount,
        max_us: cfg.max_send_us,
        header: None,
        format: cfg.format,
        fin: FinMode::AwaitReport,
        wall_offset_us: wall_offset_us(),
    });
    let s = send_flow(&sock, sender);
    report_sender(id, local, to, true, &s, events);
}

/// UDP `-R` on the client: sends its header datagram (re-sent at 0-20 ms gaps, up to 99
/// times, until the server's flow arrives, as 2.1.8 does), then counts the server's flow
/// until its FIN or `quiet_us` of silence. Returns the counters and the flow's span.
pub(super) fn receive_reverse(
    sock: &UdpSocket,
    header: &[u8],
    quiet_us: Micros,
) -> (UdpReceiveStats, Option<(Micros, Micros)>) {
    let _ = sock.set_nonblocking(true);
    let mut stats = UdpReceiveStats::default();
    let mut buf = vec![0u8; 65_536];
    let mut span: Option<(Micros, Micros)> = None;
    let mut tries = 0;
    let mut next_try = 0;
    let mut last = now_us();
    let offset = wall_offset_us();
    loop {
        let now = now_us();
        if span.is_none() && tries < 99 && now >= next_try {
            let _ = sock.send(header);
            tries += 1;
            next_try = now + 1_000 + (now % 19_000);
        }
        loop {
            match sock.recv(&mut buf) {
                Ok(n) => {
                    let t = now_us();
                    last = t;
                    let arrival = (t as i64 + offset).max(0) as u64;
                    if let Some(seq) = stats.on_datagram_bytes(&buf[..n], true, arrival) {
                        let s = span.get_or_insert((t, t));
                        s.1 = t;
                        if seq < 0 {
                            return (stats, span);
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if now.saturating_sub(last) >= quiet_us {
            return (stats, span);
        }
        let until = if span.is_none() {
            next_try.min(now + 20_000)
        } else {
            now + 100_000
        };
        wait_readable(sock, until);
    }
}

/// Builds the header datagram a UDP `-R` client sends: id 1, now's wall time, the header.
pub(super) fn header_datagram(req: &TestRequest, len: usize) -> std::vec::Vec<u8> {
    let mut b = vec![0u8; len.max(76)];
    linklab_perf::iperf2::pattern::fill(&mut b, 0);
    req.write(
        linklab_perf::iperf2::request::HeaderStyle::V21,
        &mut b[16..],
    );
    let mut d = UdpDatagram::new_unchecked(&mut b[..]);
    d.set_seq(1);
    d.set_sent_us((now_us() as i64 + wall_offset_us()).max(0) as u64);
    b
}
