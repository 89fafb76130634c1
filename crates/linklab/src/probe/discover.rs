//! Discovery: which of ICMP echo, an iperf3 server, HTTP and echo (UDP/TCP 7) the host
//! answers, all asked at once, each within a second or two.
//!
//! A port where nothing answers (refused, unreachable, silent) is *absent*: skipped and named.
//! A port that accepts and then does not speak its protocol (garbage, a busy iperf3 server, a
//! stall) is *failed*: the run goes on with the other services and ends with an error.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use linklab_perf::iperf::errors;
use linklab_perf::iperf::host::now_us;
use linklab_perf::iperf::wire::{self, state};

use super::document::{Service, ServiceState};
use super::http::{self, Probed};
use crate::rtt::client::Connection;
use crate::rtt::Transport;

/// How long a TCP connect, or an answer, may take.
pub const ANSWER: Duration = Duration::from_millis(1500);

/// Echo requests (ICMP, UDP echo) discovery sends before it calls the service absent.
const ECHO_TRIES: u32 = 3;

/// How long it waits for the answer to each: three within [`ANSWER`], so that a busy host's
/// late reply still counts (at 300 ms each, one test run beside two CPU hogs saw a host on a
/// veth named absent).
const ECHO_WAIT: Duration = Duration::from_millis(500);

/// The ports discovery asks.
pub struct Ports {
    /// iperf3 control port.
    pub iperf: u16,
    /// HTTP port.
    pub http: u16,
    /// Echo port (UDP and TCP).
    pub echo: u16,
}

/// Asks every service at once; one entry each, in a fixed order (icmp, iperf3, http,
/// echo-udp, echo-tcp).
pub fn discover(host: &str, addr: std::net::IpAddr, ports: &Ports) -> Vec<Service> {
    let at = |port| SocketAddr::new(addr, port);
    std::thread::scope(|s| {
        let icmp = s.spawn(|| icmp(at(0)));
        let iperf = s.spawn(|| iperf3(at(ports.iperf)));
        let web = s.spawn(|| web(host, at(ports.http)));
        let udp = s.spawn(|| echo(at(ports.echo), Transport::Udp));
        let tcp = s.spawn(|| echo(at(ports.echo), Transport::Tcp));
        [icmp, iperf, web, udp, tcp]
            .into_iter()
            .map(|h| h.join().expect("discovery threads do not panic"))
            .collect()
    })
}

fn service(name: &str, port: Option<u16>, state: ServiceState, detail: String) -> Service {
    Service {
        name: name.into(),
        port,
        state,
        detail,
    }
}

/// ICMP echo: three requests, 500 ms apart.
fn icmp(peer: SocketAddr) -> Service {
    let answer = Connection::open(peer, Transport::Icmp, ANSWER)
        .and_then(|mut c| c.check_echo(Instant::now(), ECHO_TRIES, ECHO_WAIT));
    match answer {
        Ok(()) => service(
            "icmp",
            None,
            ServiceState::Present,
            "answers echo requests".into(),
        ),
        Err(e) => service("icmp", None, ServiceState::Absent, format!("{e:#}")),
    }
}

/// iperf3: the client's first move of every test — connect, send a cookie, read the state
/// byte. `PARAM_EXCHANGE` means a server ready for a test; `ACCESS_DENIED` one busy with
/// another. Then we hang up (the server drops the half-begun test and listens again).
fn iperf3(peer: SocketAddr) -> Service {
    let port = Some(peer.port());
    let mut stream = match TcpStream::connect_timeout(&peer, ANSWER) {
        Ok(s) => s,
        Err(e) => return service("iperf3", port, ServiceState::Absent, describe(&e)),
    };
    let cookie = wire::make_cookie(now_us() ^ u64::from(peer.port()) << 48);
    let mut byte = [0u8; 1];
    let answer = stream
        .set_read_timeout(Some(ANSWER))
        .and_then(|()| stream.write_all(&cookie))
        .and_then(|()| stream.read(&mut byte));
    let failed = |detail: String| service("iperf3", port, ServiceState::Failed, detail);
    match answer {
        Ok(1) => match byte[0] as i8 {
            state::PARAM_EXCHANGE => service(
                "iperf3",
                port,
                ServiceState::Present,
                "an iperf3 server, ready for a test".into(),
            ),
            state::ACCESS_DENIED => failed(format!(
                "{} (iperf3 error {}: it is running another test)",
                errors::text(121).0,
                121
            )),
            other => failed(format!(
                "not an iperf3 server: answered the cookie with byte {:#04x}",
                other as u8
            )),
        },
        Ok(_) => failed("closed the connection without answering the iperf3 cookie".into()),
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
            failed(format!(
                "accepted the connection but did not answer the iperf3 cookie within {:.1} s",
                ANSWER.as_secs_f64()
            ))
        }
        Err(e) => failed(describe(&e)),
    }
}

/// HTTP: `GET /` and a status line back, whatever the status.
fn web(host: &str, peer: SocketAddr) -> Service {
    let port = Some(peer.port());
    match http::status(peer, host, "/", ANSWER) {
        Ok(status) => service(
            "http",
            port,
            ServiceState::Present,
            format!("answers HTTP (GET / → {status})"),
        ),
        Err(Probed::Absent(e)) => service("http", port, ServiceState::Absent, io_text(&e)),
        Err(Probed::Broken(what)) => service("http", port, ServiceState::Failed, what),
    }
}

/// Echo: one of our rtt probes must come back. Over TCP, a port that accepts and does not
/// echo has failed; over UDP there is no accepting, so silence is absence.
fn echo(peer: SocketAddr, transport: Transport) -> Service {
    let (name, tries, wait) = match transport {
        Transport::Tcp => ("echo-tcp", 1, ANSWER),
        _ => ("echo-udp", ECHO_TRIES, ECHO_WAIT),
    };
    let port = Some(peer.port());
    let mut conn = match Connection::open(peer, transport, ANSWER) {
        Ok(c) => c,
        Err(e) => return service(name, port, ServiceState::Absent, format!("{e:#}")),
    };
    match conn.check_echo(Instant::now(), tries, wait) {
        Ok(()) => service(name, port, ServiceState::Present, "echoes".into()),
        Err(e) if transport == Transport::Tcp => service(
            name,
            port,
            ServiceState::Failed,
            format!("accepted the connection but did not echo: {e:#}"),
        ),
        Err(e) => service(name, port, ServiceState::Absent, format!("{e:#}")),
    }
}

/// A socket error in plain words.
fn describe(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::ConnectionRefused => "connection refused".into(),
        ErrorKind::TimedOut | ErrorKind::WouldBlock => {
            format!("no answer within {:.1} s", ANSWER.as_secs_f64())
        }
        _ => match e.raw_os_error() {
            Some(libc::EHOSTUNREACH) => "host unreachable".into(),
            Some(libc::ENETUNREACH) => "network unreachable".into(),
            _ => e.to_string(),
        },
    }
}

/// An error that may wrap an `io::Error`, in plain words.
pub fn io_text(e: &anyhow::Error) -> String {
    match e.downcast_ref::<std::io::Error>() {
        Some(io) => describe(io),
        None => format!("{e:#}"),
    }
}
