//! Discovery: which of ICMP echo, an iperf server, HTTP and echo (UDP/TCP 7) the host
//! answers, all asked at once, each within a second or two. The iperf server is asked for
//! iperf3 (5201) first, then — when no iperf3 server is there — for iperf 2 (5001), or only
//! the one `--iperf 3|2` names.
//!
//! A port where nothing answers (refused, unreachable, silent) is *absent*: skipped and named.
//! A port that accepts and then does not speak its protocol (garbage, a busy iperf3 server, a
//! stall) is *failed*: the run goes on with the other services and ends with an error.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use linklab_perf::iperf::errors;
use linklab_perf::iperf::wire::{self, state};
use linklab_perf::iperf2::wire::ack::version_text;
use linklab_perf::iperf2::{
    Amount, ClientEnd, Protocol, TcpClientConfig, TcpClientFlow, TcpFlow, TestRequest,
};
use linklab_perf_host::clock::now_us;

use linklab_results::probe::{Service, ServiceState};

use super::answer::{describe, io_text, ANSWER};
use super::http::{self, Probed};
use crate::rtt::client::Connection;
use crate::rtt::Transport;

/// Echo requests (ICMP, UDP echo) discovery sends before it calls the service absent.
const ECHO_TRIES: u32 = 3;

/// How long it waits for the answer to each: three within [`ANSWER`], so that a busy host's
/// late reply still counts (at 300 ms each, one test run beside two CPU hogs saw a host on a
/// veth named absent).
const ECHO_WAIT: Duration = Duration::from_millis(500);

/// The ports discovery asks.
pub struct Ports {
    /// iperf3 control port (`None`: not asked, `--iperf 2`).
    pub iperf3: Option<u16>,
    /// iperf 2 port, asked when no iperf3 server answered (`None`: not asked, `--iperf 3`).
    pub iperf2: Option<u16>,
    /// HTTP port.
    pub http: u16,
    /// Echo port (UDP and TCP).
    pub echo: u16,
}

/// Asks every service at once; one entry each, in a fixed order (icmp, iperf3 and/or
/// iperf2, http, echo-udp, echo-tcp).
pub fn discover(host: &str, addr: std::net::IpAddr, ports: &Ports) -> Vec<Service> {
    let at = |port| SocketAddr::new(addr, port);
    std::thread::scope(|s| {
        let icmp = s.spawn(|| vec![icmp(at(0))]);
        let iperf = s.spawn(|| {
            let three = ports.iperf3.map(|p| iperf3(at(p)));
            let found = three
                .as_ref()
                .is_some_and(|x| x.state == ServiceState::Present);
            let two = ports.iperf2.filter(|_| !found).map(|p| iperf2(at(p)));
            three.into_iter().chain(two).collect()
        });
        let web = s.spawn(|| vec![web(host, at(ports.http))]);
        let udp = s.spawn(|| vec![echo(at(ports.echo), Transport::Udp)]);
        let tcp = s.spawn(|| vec![echo(at(ports.echo), Transport::Tcp)]);
        [icmp, iperf, web, udp, tcp]
            .into_iter()
            .flat_map(|h| h.join().expect("discovery threads do not panic"))
            .collect()
    })
}

fn service(name: &str, port: Option<u16>, state: ServiceState, detail: String) -> Service {
    Service {
        name: name.into(),
        port,
        state,
        detail,
        version: None,
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

/// iperf 2: connect, send an iperf 2.1 test header that asks for the version reply (`-X`),
/// wait for it, hang up. A 2.1 server replies with its version (it serves `-R`); a server
/// that reads the header and says nothing is an iperf 2 server without the reply (lwIP's
/// lwiperf, ESP-IDF's, Zephyr's zperf, NuttX's iperf), told apart by the tests themselves;
/// an iperf3 state byte is an iperf3 server on the iperf 2 port.
fn iperf2(peer: SocketAddr) -> Service {
    let port = Some(peer.port());
    let mut stream = match TcpStream::connect_timeout(&peer, ANSWER) {
        Ok(s) => s,
        Err(e) => return service("iperf2", port, ServiceState::Absent, describe(&e)),
    };
    let failed = |detail: String| service("iperf2", port, ServiceState::Failed, detail);
    let mut request = TestRequest::plain(Protocol::Tcp);
    request.peer_detect = true;
    request.amount = Amount::from_us(1_000_000);
    let mut flow = TcpClientFlow::new(TcpClientConfig::new(request), now_us());
    let header = flow.control_output().to_vec();
    if let Err(e) = stream
        .set_read_timeout(Some(ANSWER))
        .and_then(|()| stream.write_all(&header))
    {
        return failed(describe(&e));
    }
    flow.control_sent(header.len(), now_us());
    let deadline = Instant::now() + ANSWER;
    let mut buf = [0u8; 256];
    let silent = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            break true;
        }
        match stream.read(&mut buf) {
            Ok(0) => {
                return failed(format!(
                    "closed the connection after an iperf 2 test header ({} bytes)",
                    header.len()
                ))
            }
            Ok(n) => {
                flow.on_received(&buf[..n], now_us());
                if flow.end() == Some(ClientEnd::Iperf3Server) {
                    return failed(
                        "an iperf3 server answered on the iperf 2 port (--iperf 3 --iperf-port N measures it)"
                            .into(),
                    );
                }
                if flow.peer_version().is_some() {
                    break false;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                break true
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return failed(describe(&e)),
        }
    };
    match flow.peer_version() {
        Some(v) if !silent => {
            let mut text = [0u8; 24];
            let version = version_text(v, &mut text).to_string();
            Service {
                version: Some(version.clone()),
                ..service(
                    "iperf2",
                    port,
                    ServiceState::Present,
                    format!("an iperf {version} server (it replied with its version: -R on the one connection)"),
                )
            }
        }
        _ => service(
            "iperf2",
            port,
            ServiceState::Present,
            format!(
                "took an iperf 2 test header and sent no version reply within {:.1} s: an iperf 2 server without one (lwIP's lwiperf, ESP-IDF, Zephyr's zperf, NuttX)",
                ANSWER.as_secs_f64()
            ),
        ),
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
