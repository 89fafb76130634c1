//! HTTP GET over a std `TcpStream`, driving linklab-perf's sans-IO client (the one the
//! simulator and the firmware use): the discovery's "does it speak HTTP" and the timed
//! downloads of `--http`.
//!
//! A download is whole only when the body the response announced (`Content-Length`) arrived
//! to the byte, or — when none was announced — the body read to the server's close; a body
//! cut short or longer than announced, a stall and anything that is not HTTP are errors that
//! carry the status line when the server sent one. Whether a whole response counts (its
//! status, its content) is the caller's to judge: it gets the status line and the checks.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::anyhow;
use linklab_perf::http::{expected_crc32, Client, ClientError};
use linklab_perf::payload;

use super::answer::io_text;

/// A download cut short by silence: no byte for this long.
pub const STALL: Duration = Duration::from_secs(2);

/// Bytes of a body that must follow a known pattern before it is taken to be that pattern.
const PATTERN_PROOF: u64 = 256;

/// One GET that ended with a whole response, or with the time limit.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// The response's status code.
    pub status: u16,
    /// Its status line, as sent (`HTTP/1.0 404 File not found`).
    pub status_line: String,
    /// The body length it announced (`Content-Length`), if any.
    pub content_length: Option<u64>,
    /// Body bytes received.
    pub body_bytes: u64,
    /// From the request sent to the last byte received, seconds.
    pub seconds: f64,
    /// False when the time limit ended the download before its last byte.
    pub complete: bool,
    /// For a linklab bench file (`/1MB.txt` ...) downloaded whole: whether its CRC32 is right.
    pub crc_ok: Option<bool>,
    /// For a body whose first 256 bytes are 0, 1, ... 255 (byte i is i & 0xff, as the lwIP
    /// peer's `/big.bin`), downloaded whole: whether every byte follows it.
    pub index_bytes_ok: Option<bool>,
}

impl Fetched {
    /// The status line and what arrived, for a line that refuses the response.
    pub fn said(&self) -> String {
        format!("{} ({}-byte body)", self.status_line, self.body_bytes)
    }
}

/// The client's status line for people (empty before the head is in).
fn client_line(c: &Client) -> String {
    String::from_utf8_lossy(c.status_line().unwrap_or(&[])).into_owned()
}

/// Connects to `addr` and sends `GET path` (`Host: host`); the stream and the client.
fn start(
    addr: SocketAddr,
    host: &str,
    path: &str,
    timeout: Duration,
) -> anyhow::Result<(TcpStream, Client)> {
    let mut client = Client::new(host, path).map_err(|e| anyhow!("--http {path:?}: {e}"))?;
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

/// Whether a body follows "byte i is i & 0xff": undecided until [`PATTERN_PROOF`] bytes did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexBytes {
    /// The first bytes follow it so far.
    Maybe,
    /// The first [`PATTERN_PROOF`] bytes followed it, and every byte since.
    Holds,
    /// The first bytes followed it, a later one did not.
    Broken,
    /// Not this pattern (one of the first bytes differs, or too short to tell).
    No,
}

impl IndexBytes {
    /// Checks the body bytes that start at `offset`.
    fn update(self, offset: u64, body: &[u8]) -> IndexBytes {
        let mut state = self;
        for (i, &b) in body.iter().enumerate() {
            let at = offset + i as u64;
            let fits = b == at as u8;
            state = match state {
                IndexBytes::Maybe if !fits => IndexBytes::No,
                IndexBytes::Maybe if at + 1 == PATTERN_PROOF => IndexBytes::Holds,
                IndexBytes::Holds if !fits => IndexBytes::Broken,
                s => s,
            };
            if matches!(state, IndexBytes::No | IndexBytes::Broken) {
                break;
            }
        }
        state
    }

    fn verdict(self) -> Option<bool> {
        match self {
            IndexBytes::Holds => Some(true),
            IndexBytes::Broken => Some(false),
            IndexBytes::Maybe | IndexBytes::No => None,
        }
    }
}

/// Downloads `path`, for at most `limit` (then what arrived so far, `complete: false`).
/// Fails — naming the status line when one arrived — when the response is not HTTP, ends
/// before the body it announced, carries more than it announced, or stalls for [`STALL`].
pub fn fetch(addr: SocketAddr, host: &str, path: &str, limit: Duration) -> anyhow::Result<Fetched> {
    let connect = limit.min(Duration::from_secs(3));
    let (mut stream, mut client) =
        start(addr, host, path, connect).map_err(|e| anyhow!("GET {path}: {}", io_text(&e)))?;
    let begun = Instant::now();
    let deadline = begun + limit;
    let mut last_byte = begun;
    let mut pattern = IndexBytes::Maybe;
    let mut buf = vec![0u8; 64 * 1024];
    // The status line (when one arrived) and the body so far, for a line that fails it.
    let said = |c: &Client| match c.status_line() {
        Some(_) => format!(
            "{}: {}",
            client_line(c),
            match c.content_length() {
                Some(cl) => format!("{} of the {cl} body bytes announced", c.body_bytes()),
                None => format!("{} body bytes, none announced", c.body_bytes()),
            }
        ),
        None => format!("no complete response head in {} bytes", c.total_bytes()),
    };
    let complete = loop {
        let now = Instant::now();
        if now >= deadline {
            break false;
        }
        let wait = (deadline - now).min(STALL);
        stream.set_read_timeout(Some(wait))?;
        match stream.read(&mut buf) {
            Ok(0) => match client.finish() {
                Ok(_) => break true,
                Err(ClientError::Truncated) => {
                    return Err(anyhow!(
                        "GET {path}: {}, then the server closed the connection",
                        said(&client)
                    ))
                }
                Err(e) => return Err(anyhow!("GET {path}: {} ({e})", said(&client))),
            },
            Ok(n) => {
                last_byte = Instant::now();
                let before = client.body_bytes();
                match client.receive(&buf[..n]) {
                    Ok(()) => {}
                    Err(ClientError::ExcessData) => {
                        return Err(anyhow!(
                            "GET {path}: {}: more body bytes arrived than the {} announced",
                            client_line(&client),
                            client.content_length().unwrap_or(0)
                        ))
                    }
                    Err(e) => return Err(anyhow!("GET {path}: {} ({e})", said(&client))),
                }
                // The body bytes of this read are its last ones (the head comes first).
                let new = (client.body_bytes() - before) as usize;
                pattern = pattern.update(before, &buf[n - new..n]);
                if client.download().is_some() {
                    break true;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if last_byte.elapsed() >= STALL && Instant::now() < deadline {
                    return Err(anyhow!(
                        "GET {path}: {}, then the server stalled (no byte for {} s)",
                        said(&client),
                        STALL.as_secs()
                    ));
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(anyhow!("GET {path}: {}: {e}", said(&client))),
        }
    };
    let (Some(status), Some(line)) = (client.status(), client.status_line()) else {
        return Err(anyhow!(
            "GET {path}: no HTTP status line within {:.1} s",
            limit.as_secs_f64()
        ));
    };
    let status_line = String::from_utf8_lossy(line).into_owned();
    let body_bytes = client.body_bytes();
    let ok = complete && (200..300).contains(&status);
    let crc_ok = match (client.download(), payload::find(path)) {
        (Some(d), Some(file)) if ok => Some(d.crc32 == expected_crc32(file)),
        (None, Some(file)) if ok => {
            let d = client.finish().map_err(|e| anyhow!("GET {path}: {e}"))?;
            Some(d.crc32 == expected_crc32(file))
        }
        _ => None,
    };
    Ok(Fetched {
        status,
        content_length: client.content_length(),
        status_line,
        body_bytes,
        seconds: (last_byte - begun).as_secs_f64(),
        complete,
        crc_ok,
        index_bytes_ok: if ok { pattern.verdict() } else { None },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_bytes(body: &[u8], chunk: usize) -> Option<bool> {
        let mut state = IndexBytes::Maybe;
        for (k, part) in body.chunks(chunk).enumerate() {
            state = state.update((k * chunk) as u64, part);
        }
        state.verdict()
    }

    #[test]
    fn the_index_pattern_is_told_from_its_first_bytes() {
        let good: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
        for chunk in [1, 100, 256, 4096] {
            assert_eq!(index_bytes(&good, chunk), Some(true), "chunk {chunk}");
        }
        let mut broken = good.clone();
        broken[3000] ^= 1;
        assert_eq!(index_bytes(&broken, 700), Some(false));
        // A body that is not the pattern, or too short to tell, is not judged by it.
        assert_eq!(index_bytes(b"<html>not found</html>", 8), None);
        assert_eq!(index_bytes(&good[..255], 64), None);
        let mut other = good.clone();
        other[10] = 0;
        assert_eq!(index_bytes(&other, 64), None);
    }
}
