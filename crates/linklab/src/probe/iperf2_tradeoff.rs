//! iperf 2's `-r` (tradeoff) test as stock iperf 2.1.8 runs it, for a server that answers it
//! without a version reply — lwIP's lwiperf: our test to the server, then the server connects
//! back to the port our header names and sends for the time it asked.
//!
//! Why the probe runs this one test itself: for a `-r`/`-d` test lwiperf compares the first
//! 24 bytes of the segment that follows the header (and of any segment that starts at a
//! 128 KiB boundary of its count) with the header, and aborts the test when they differ
//! (lwIP 2.2.1 `lwiperf_tcp_recv`; its report type 3, DATAERROR, after 24 bytes). Stock
//! 2.1.8 passes because it writes its header into the start of its send buffer, so each of
//! its 128 KiB writes begins with the header's bytes; linklab-perf's iperf 2 client
//! (`iperf2::host::run_client`) sends pure pattern after the header, which lwiperf aborts.
//! This test writes as 2.1.8 does, with that client's header encoding
//! (`TestRequest::write`) and pattern (`iperf2::pattern`); everything else — plain tests,
//! `-R`, UDP — goes through `run_client`.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use linklab_perf::iperf2::host::ClientError;
use linklab_perf::iperf2::wire::DEFAULT_TCP_LEN;
use linklab_perf::iperf2::{pattern, Amount, HeaderStyle, Mode, Protocol, TestRequest};

/// What one way of a test moved: `(bytes, seconds, slices in bit/s)`.
pub type Way = (u64, f64, Vec<f64>);

/// How long after our test the connect-back may take to come (2.1.8 waits the test time
/// plus 3 s in all; we wait 3 s after our end).
const CONNECT_BACK_WAIT: Duration = Duration::from_secs(3);
/// Nothing moved for this long ends a flow (2.1.8's and lwiperf's idle timeout).
const IDLE: Duration = Duration::from_secs(10);

/// Runs one `-r` test of `seconds` each way against `server`; what moved each way (to the
/// server, back from it) and what ended it early, if anything. `slice`: the spread's
/// slices.
pub fn run(
    server: SocketAddr,
    seconds: u32,
    slice: Duration,
) -> (Option<Way>, Option<Way>, Option<ClientError>) {
    let any = match server.ip() {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    };
    // The listener first, as 2.1.8 opens it before connecting.
    let listener = match TcpListener::bind((any, 0)).and_then(|l| {
        l.set_nonblocking(true)?;
        Ok(l)
    }) {
        Ok(l) => l,
        Err(e) => return (None, None, Some(io("listen for the connect-back", e))),
    };
    let port = listener.local_addr().map_or(0, |a| a.port());
    let mut request = TestRequest::plain(Protocol::Tcp);
    request.mode = Mode::Tradeoff;
    request.amount = Amount::from_us(u64::from(seconds) * 1_000_000);
    request.port = u32::from(port);
    let mut header = [0u8; 128];
    let header_len = request.write(HeaderStyle::V21, &mut header);
    let (ended_tx, ended_rx) = mpsc::channel::<Instant>();
    let device = server.ip();
    let back = std::thread::spawn(move || receive_back(&listener, device, port, &ended_rx, slice));
    let forward = send(server, &header[..header_len], seconds, slice);
    let _ = ended_tx.send(Instant::now());
    let back = back.join().unwrap_or(Err(ClientError::Timeout));
    match (forward, back) {
        (Ok(to), Ok(from)) => (Some(to), Some(from), None),
        (Ok(to), Err(e)) => (Some(to), None, Some(e)),
        (Err(e), _) => (None, None, Some(e)),
    }
}

fn io(what: &str, e: std::io::Error) -> ClientError {
    ClientError::Io(what.into(), e)
}

/// Our test: the header as its own write, then 128 KiB writes that each begin with the
/// header's bytes, for `seconds`; then our write side shut and the connection read to the
/// server's close (it closes once it read our end: every byte counted arrived).
fn send(
    server: SocketAddr,
    header: &[u8],
    seconds: u32,
    slice: Duration,
) -> Result<Way, ClientError> {
    let mut s = TcpStream::connect_timeout(&server, Duration::from_secs(3))
        .map_err(|e| io(&format!("connect to {server} failed"), e))?;
    // A failure, with the bytes sent by then.
    let broken = |e: std::io::Error, sent: u64| match e.kind() {
        ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::ConnectionAborted => {
            ClientError::Reset(sent, 0)
        }
        ErrorKind::WouldBlock | ErrorKind::TimedOut => ClientError::Timeout,
        _ => io("send", e),
    };
    s.set_write_timeout(Some(IDLE)).map_err(|e| broken(e, 0))?;
    let start = Instant::now();
    s.write_all(header).map_err(|e| broken(e, 0))?;
    let mut buf = vec![0u8; DEFAULT_TCP_LEN];
    pattern::fill(&mut buf, 0);
    if let Some(b) = buf.get_mut(..header.len()) {
        b.copy_from_slice(header);
    }
    let mut sent = header.len() as u64;
    let mut points = vec![(0.0, 0u64)];
    let end = start + Duration::from_secs(u64::from(seconds));
    while Instant::now() < end {
        s.write_all(&buf).map_err(|e| broken(e, sent))?;
        sent += buf.len() as u64;
        points.push((start.elapsed().as_secs_f64(), sent));
    }
    s.shutdown(Shutdown::Write).map_err(|e| broken(e, sent))?;
    s.set_read_timeout(Some(Duration::from_secs(u64::from(seconds).max(2))))
        .map_err(|e| broken(e, sent))?;
    let mut sink = [0u8; 4096];
    loop {
        match s.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(broken(e, sent)),
        }
    }
    Ok((sent, start.elapsed().as_secs_f64(), slices(&points, slice)))
}

/// The connect-back: accepted from the device alone, until 3 s after our test ended; read to
/// its close.
fn receive_back(
    listener: &TcpListener,
    device: IpAddr,
    port: u16,
    ended: &mpsc::Receiver<Instant>,
    slice: Duration,
) -> Result<Way, ClientError> {
    let mut accept_by: Option<Instant> = None;
    let mut s = loop {
        if let Ok(t) = ended.try_recv() {
            accept_by = Some(t + CONNECT_BACK_WAIT);
        }
        match listener.accept() {
            Ok((s, peer)) if plain(peer.ip()) == plain(device) => break s,
            Ok(_) => {} // not the device: dropped
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if accept_by.is_some_and(|t| Instant::now() > t) {
                    return Err(ClientError::NoConnectBack(port));
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(io("accept the connect-back", e)),
        }
    };
    let start = Instant::now();
    s.set_nonblocking(false)
        .and_then(|()| s.set_read_timeout(Some(IDLE)))
        .map_err(|e| io("the connect-back", e))?;
    let (mut bytes, mut last) = (0u64, start);
    let mut points = vec![(0.0, 0u64)];
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                bytes += n as u64;
                last = Instant::now();
                points.push(((last - start).as_secs_f64(), bytes));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(ClientError::Timeout)
            }
            Err(_) => return Err(ClientError::Reset(0, bytes)),
        }
    }
    Ok((bytes, (last - start).as_secs_f64(), slices(&points, slice)))
}

/// IPv4-mapped IPv6 addresses as IPv4.
fn plain(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// The rate in each whole `slice` of a flow from its cumulative `(seconds, bytes)` points:
/// the bytes counted by each slice's end, less those by its start.
fn slices(points: &[(f64, u64)], slice: Duration) -> Vec<f64> {
    let width = slice.as_secs_f64();
    let Some(&(end, _)) = points.last() else {
        return Vec::new();
    };
    let by = |t: f64| {
        points
            .iter()
            .take_while(|(at, _)| *at <= t)
            .last()
            .map_or(0, |p| p.1)
    };
    let whole = (end / width).floor() as usize;
    (0..whole)
        .map(|k| {
            let (a, b) = (k as f64 * width, (k + 1) as f64 * width);
            (by(b) - by(a)) as f64 * 8.0 / width
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_from_cumulative_counts() {
        let points = [(0.0, 0), (0.1, 1000), (0.3, 3000), (0.5, 5000), (0.6, 6000)];
        let s = slices(&points, Duration::from_millis(250));
        // By 0.25 s: 1000 bytes; by 0.5 s: 5000.
        assert_eq!(s, vec![1000.0 * 8.0 / 0.25, 4000.0 * 8.0 / 0.25]);
        assert!(slices(&[(0.0, 0)], Duration::from_millis(250)).is_empty());
    }
}
