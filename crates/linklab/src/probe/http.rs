//! HTTP GET over a std `TcpStream`, driving linklab-perf's sans-IO client (the one the
//! simulator and the firmware use): the discovery's "does it speak HTTP" and the timed
//! downloads of `--http-path`.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use linklab_perf::http::{expected_crc32, Client};
use linklab_perf::payload;

/// A download cut short by silence: no byte for this long.
pub const STALL: Duration = Duration::from_secs(2);

/// One timed GET.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The response's status code.
    pub status: u16,
    /// Body bytes received.
    pub body_bytes: u64,
    /// From the request sent to the last byte received, seconds.
    pub seconds: f64,
    /// False when the time limit ended the download before its last byte.
    pub complete: bool,
    /// For a linklab bench file (`/1MB.txt` ...) downloaded whole: whether its CRC32 is right.
    pub crc_ok: Option<bool>,
}

/// Connects to `addr` and sends `GET path` (`Host: host`); the stream and the client.
fn start(
    addr: SocketAddr,
    host: &str,
    path: &str,
    timeout: Duration,
) -> anyhow::Result<(TcpStream, Client)> {
    let mut client = Client::new(host, path).map_err(|e| anyhow!("--http-path {path:?}: {e}"))?;
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    let mut request = [0u8; 512];
    let n = client.transmit(&mut request);
    stream.write_all(&request[..n])?;
    Ok((stream, client))
}

/// Asks `GET path` and waits up to `timeout` for the status line: `Ok(status)` when the peer
/// speaks HTTP. A refused or unreachable port is an `io::Error` inside the error (absent);
/// anything else (garbage, silence, a closed connection) says what the port did.
pub fn status(addr: SocketAddr, host: &str, path: &str, timeout: Duration) -> Result<u16, Probed> {
    let (mut stream, mut client) = start(addr, host, path, timeout).map_err(Probed::Absent)?;
    let deadline = Instant::now() + timeout;
    let mut buf = [0u8; 2048];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Probed::Broken(format!(
                "accepted the connection but sent no HTTP status line within {:.1} s",
                timeout.as_secs_f64()
            )));
        }
        stream
            .set_read_timeout(Some(left))
            .map_err(|e| Probed::Broken(e.to_string()))?;
        match stream.read(&mut buf) {
            Ok(0) => {
                return Err(Probed::Broken(
                    "closed the connection without an HTTP answer".into(),
                ))
            }
            Ok(n) => {
                if let Err(e) = client.receive(&buf[..n]) {
                    return Err(Probed::Broken(format!(
                        "answered something that is not HTTP ({e})"
                    )));
                }
                if let Some(s) = client.status() {
                    return Ok(s);
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(Probed::Broken(e.to_string())),
        }
    }
}

/// What a port did when asked whether it speaks a protocol.
#[derive(Debug)]
pub enum Probed {
    /// Nothing there: refused, unreachable, no answer to connect.
    Absent(anyhow::Error),
    /// Something accepted the connection and did not speak the protocol.
    Broken(String),
}

/// Downloads `path`, for at most `limit` (then the figures so far, `complete: false`).
/// Fails when the response is not HTTP, is truncated, or stalls for [`STALL`].
pub fn fetch(addr: SocketAddr, host: &str, path: &str, limit: Duration) -> anyhow::Result<Fetched> {
    let connect = limit.min(Duration::from_secs(3));
    let (mut stream, mut client) =
        start(addr, host, path, connect).with_context(|| format!("GET {path}"))?;
    let begun = Instant::now();
    let deadline = begun + limit;
    let mut last_byte = begun;
    let mut buf = vec![0u8; 64 * 1024];
    let complete = loop {
        let now = Instant::now();
        if now >= deadline {
            break false;
        }
        let wait = (deadline - now).min(STALL);
        stream.set_read_timeout(Some(wait))?;
        match stream.read(&mut buf) {
            Ok(0) => {
                client
                    .finish()
                    .map_err(|e| anyhow!("GET {path}: {e} after {} bytes", client.total_bytes()))?;
                break true;
            }
            Ok(n) => {
                last_byte = Instant::now();
                client
                    .receive(&buf[..n])
                    .map_err(|e| anyhow!("GET {path}: {e}"))?;
                if client.download().is_some() {
                    break true;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if last_byte.elapsed() >= STALL && Instant::now() < deadline {
                    bail!(
                        "GET {path}: the server stalled (no byte for {} s after {} bytes)",
                        STALL.as_secs(),
                        client.total_bytes()
                    );
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e).with_context(|| format!("GET {path}")),
        }
    };
    let Some(status) = client.status() else {
        bail!(
            "GET {path}: no HTTP status line within {:.1} s",
            limit.as_secs_f64()
        );
    };
    let done = client.download().or_else(|| client.clone().finish().ok());
    let body_bytes = client.body_bytes();
    let crc_ok = match (done, payload::find(path)) {
        (Some(d), Some(file)) if complete && status == 200 => Some(d.crc32 == expected_crc32(file)),
        _ => None,
    };
    Ok(Fetched {
        status,
        body_bytes,
        seconds: (last_byte - begun).as_secs_f64(),
        complete,
        crc_ok,
    })
}
