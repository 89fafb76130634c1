//! The rtt client: sends a paced stream of packets to an echo endpoint and timestamps the replies.
//!
//! One sender thread paces packets on a fixed schedule (`start + seq * interval`, so delays never
//! accumulate); the calling thread receives replies, takes the round trip from the send time the
//! packet carries, and the inter-arrival time from the previous reply. Any number of packets may be
//! in flight, so the same run yields round-trip and paced inter-arrival histograms.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use hdrhistogram::Histogram;

use super::icmp::IcmpSocket;
use super::packet::{Packet, PacketError, HEADER_LEN};
use linklab_results::rtt::new_histogram;

/// How replies are carried: one packet per UDP datagram, or packets back to back on a TCP stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// One packet per datagram; replies may be lost, duplicated or reordered.
    Udp,
    /// Packets as fixed-size frames on one TCP connection (with TCP_NODELAY).
    Tcp,
    /// One packet per ICMP echo request (the payload ping's `-s` sizes); like UDP otherwise.
    Icmp,
}

/// What one run measures: `count` packets of `size` bytes, one every `interval`.
#[derive(Debug, Clone, Copy)]
pub struct RunConfig {
    /// Packet size in bytes (UDP payload, or TCP frame), at least [`HEADER_LEN`].
    pub size: usize,
    /// Number of packets.
    pub count: u32,
    /// Send spacing; zero sends back to back.
    pub interval: Duration,
    /// How long to wait for replies after the last packet was sent.
    pub drain: Duration,
    /// Run number written into every packet.
    pub run: u16,
    /// Keep every packet's send time and round trip ([`RunResult::samples`]): a time series,
    /// for runs short enough to hold one (probe's latency under load).
    pub keep_samples: bool,
}

/// One packet of a run that keeps its samples: when it was sent and its round trip, or none
/// when no reply came (lost, or later than the drain).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EchoSample {
    /// Send time, nanoseconds since the client's start (the epoch given to `measure`).
    pub sent_ns: u64,
    /// Round trip in nanoseconds; `None`: no reply.
    pub rtt_ns: Option<u64>,
}

/// The raw outcome of one run.
pub struct RunResult {
    /// Packets sent.
    pub sent: u64,
    /// Distinct valid replies received.
    pub received: u64,
    /// Replies for a sequence number already received.
    pub duplicates: u64,
    /// Replies of this run whose length, magic or fill bytes were wrong.
    pub corrupt: u64,
    /// Round-trip times in nanoseconds.
    pub rtt: Histogram<u64>,
    /// Times between successive replies in nanoseconds.
    pub gaps: Histogram<u64>,
    /// Arrival of the first and the last valid reply (ns since the client's start).
    pub arrivals: Option<(u64, u64)>,
    /// Send time of the first and the last packet (ns since the client's start).
    pub sends: Option<(u64, u64)>,
    /// Every packet sent, in order, when [`RunConfig::keep_samples`] (else empty).
    pub samples: Vec<EchoSample>,
}

/// A connection to the echo endpoint, split into a send half and a receive half.
pub struct Connection {
    tx: Half,
    rx: Half,
    buf: Vec<u8>,
    filled: usize,
    peer: SocketAddr,
}

enum Half {
    Udp(UdpSocket),
    Tcp(TcpStream),
    Icmp(IcmpSocket),
}

/// Receive timeout of one poll; bounds how late the receiver notices that a run is over.
const POLL: Duration = Duration::from_millis(20);

/// How long a TCP send may make no progress before the endpoint counts as stalled.
const WRITE_STALL: Duration = Duration::from_secs(2);

/// Largest packet the client can receive (its receive buffer); TCP sizes are capped to it.
pub const MAX_PACKET_LEN: usize = 65536;

impl Connection {
    /// Opens a connection to `peer` (a connected UDP socket, or a TCP connection).
    pub fn open(
        peer: SocketAddr,
        transport: Transport,
        connect_timeout: Duration,
    ) -> anyhow::Result<Connection> {
        let (tx, rx) = match transport {
            Transport::Udp => {
                let local: SocketAddr = if peer.is_ipv4() {
                    "0.0.0.0:0"
                } else {
                    "[::]:0"
                }
                .parse()
                .expect("literal");
                let sock = UdpSocket::bind(local).context("could not open a UDP socket")?;
                sock.connect(peer)
                    .with_context(|| format!("{peer}: could not connect the UDP socket"))?;
                let rx = sock.try_clone().context("could not clone the UDP socket")?;
                (Half::Udp(sock), Half::Udp(rx))
            }
            Transport::Tcp => {
                let stream = connect_tcp(peer, connect_timeout)
                    .map_err(describe)
                    .with_context(|| format!("could not connect to {peer} (TCP)"))?;
                stream
                    .set_nodelay(true)
                    .context("could not set TCP_NODELAY")?;
                // An endpoint that stops reading must not block the sender for ever.
                stream
                    .set_write_timeout(Some(WRITE_STALL))
                    .context("could not set the send timeout")?;
                let rx = stream
                    .try_clone()
                    .context("could not clone the TCP stream")?;
                (Half::Tcp(stream), Half::Tcp(rx))
            }
            Transport::Icmp => {
                let sock = IcmpSocket::open(peer)?;
                let rx = sock
                    .try_clone()
                    .context("could not clone the ICMP socket")?;
                (Half::Icmp(sock), Half::Icmp(rx))
            }
        };
        match &rx {
            Half::Udp(s) => s.set_read_timeout(Some(POLL)),
            Half::Tcp(s) => s.set_read_timeout(Some(POLL)),
            Half::Icmp(s) => s.set_read_timeout(Some(POLL)),
        }
        .context("could not set the receive timeout")?;
        Ok(Connection {
            tx,
            rx,
            buf: vec![0; MAX_PACKET_LEN],
            filled: 0,
            peer,
        })
    }

    /// Checks that the endpoint echoes: sends a header-only packet up to `tries` times, waiting
    /// `wait` for each reply. Fails with one clear sentence when nothing comes back.
    ///
    /// Over TCP one packet waits the whole `tries * wait`: TCP retransmits by itself, and a second
    /// packet's echo would stay in the stream and shift every frame of the measurement after it.
    pub fn check_echo(&mut self, epoch: Instant, tries: u32, wait: Duration) -> anyhow::Result<()> {
        let (tries, wait) = match self.rx {
            Half::Udp(_) | Half::Icmp(_) => (tries, wait),
            Half::Tcp(_) => (1, wait * tries),
        };
        let peer = self.peer;
        let mut packet = [0u8; HEADER_LEN];
        for seq in 0..tries {
            Packet {
                run: u16::MAX,
                seq,
                sent_ns: nanos_since(epoch),
            }
            .write(&mut packet);
            self.tx
                .send(&packet)
                .map_err(describe)
                .with_context(|| format!("{peer}: could not send a probe"))?;
            let deadline = Instant::now() + wait;
            while Instant::now() < deadline {
                match self.recv(HEADER_LEN) {
                    Ok(Some(frame)) => {
                        if matches!(Packet::read(frame, HEADER_LEN), Ok(p) if p.run == u16::MAX) {
                            return Ok(());
                        }
                    }
                    Ok(None) => {}
                    Err(e) => return Err(describe(e)).with_context(|| format!("{peer}")),
                }
            }
        }
        let hint = match self.rx {
            Half::Icmp(_) => "host unreachable or it does not answer ping",
            _ => "host unreachable or no echo server (try `linklab rtt -s` there)",
        };
        bail!(
            "no echo reply from {peer} within {:.1} s: {hint}",
            (wait * tries).as_secs_f64()
        )
    }

    /// Waits up to [`POLL`] for one reply of `size` bytes (a datagram of any length for UDP).
    fn recv(&mut self, size: usize) -> io::Result<Option<&[u8]>> {
        let result = match &mut self.rx {
            Half::Udp(s) => s.recv(&mut self.buf).map(|n| Some(0..n)),
            Half::Icmp(s) => s.recv(&mut self.buf),
            Half::Tcp(s) => match s.read(&mut self.buf[self.filled..size]) {
                Ok(0) => Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the echo server closed the connection",
                )),
                Ok(n) => {
                    self.filled += n;
                    if self.filled == size {
                        self.filled = 0;
                        Ok(Some(0..size))
                    } else {
                        Ok(None)
                    }
                }
                Err(e) => Err(e),
            },
        };
        match result {
            Ok(Some(range)) => Ok(Some(&self.buf[range])),
            Ok(None) => Ok(None),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Runs one measurement: paced packets out, replies timed in.
    pub fn measure(&mut self, epoch: Instant, cfg: &RunConfig) -> anyhow::Result<RunResult> {
        self.measure_until(epoch, cfg, &AtomicBool::new(false))
    }

    /// [`Connection::measure`], sending no more packets once `halt` is set (the replies of those
    /// sent are still waited for, up to the drain).
    pub fn measure_until(
        &mut self,
        epoch: Instant,
        cfg: &RunConfig,
        halt: &AtomicBool,
    ) -> anyhow::Result<RunResult> {
        assert!(
            cfg.size >= HEADER_LEN && cfg.size <= self.buf.len(),
            "packet size checked by the caller"
        );
        const NOT_DONE: u64 = u64::MAX;
        let sender_done = AtomicU64::new(NOT_DONE);
        let stop = AtomicBool::new(false);
        let peer = self.peer;
        let mut tx = self.tx.try_clone().context("could not clone the socket")?;
        let drain_ns = cfg.drain.as_nanos() as u64;

        let mut out = RunResult {
            sent: 0,
            received: 0,
            duplicates: 0,
            corrupt: 0,
            rtt: new_histogram(),
            gaps: new_histogram(),
            arrivals: None,
            sends: None,
            samples: Vec::new(),
        };
        let mut seen = vec![false; cfg.count as usize];
        // Round trips by sequence number, kept only for a run that keeps its samples.
        let mut rtts: Vec<Option<u64>> = if cfg.keep_samples {
            vec![None; cfg.count as usize]
        } else {
            Vec::new()
        };

        let sender_result = std::thread::scope(|scope| {
            let sender = scope.spawn(|| {
                let sent = send_paced(&mut tx, cfg, epoch, &[&stop, halt]);
                sender_done.store(nanos_since(epoch), Ordering::Release);
                sent
            });

            let mut last_arrival = None::<u64>;
            let receive_result = loop {
                if out.received == u64::from(cfg.count) {
                    break Ok(());
                }
                let done_at = sender_done.load(Ordering::Acquire);
                if done_at != NOT_DONE && nanos_since(epoch) >= done_at.saturating_add(drain_ns) {
                    break Ok(());
                }
                let frame = match self.recv(cfg.size) {
                    Ok(Some(frame)) => frame,
                    Ok(None) => continue,
                    Err(e) => break Err(e),
                };
                let now = nanos_since(epoch);
                match Packet::read(frame, cfg.size) {
                    Ok(p) if p.run == cfg.run && (p.seq as usize) < seen.len() => {
                        if seen[p.seq as usize] {
                            out.duplicates += 1;
                            continue;
                        }
                        seen[p.seq as usize] = true;
                        out.received += 1;
                        out.rtt.saturating_record(now.saturating_sub(p.sent_ns));
                        if let Some(slot) = rtts.get_mut(p.seq as usize) {
                            *slot = Some(now.saturating_sub(p.sent_ns));
                        }
                        if let Some(prev) = last_arrival {
                            out.gaps.saturating_record(now - prev);
                        }
                        last_arrival = Some(now);
                        out.arrivals = Some((out.arrivals.map_or(now, |a| a.0), now));
                    }
                    Ok(_) => {} // a late reply from an earlier run or the echo check
                    Err(PacketError::Magic) => {}
                    Err(PacketError::Length | PacketError::Fill) => out.corrupt += 1,
                }
            };
            stop.store(true, Ordering::Relaxed);
            let sender_result = sender.join().expect("sender thread does not panic");
            receive_result
                .map_err(describe)
                .with_context(|| format!("{peer}: receiving replies"))?;
            sender_result
                .map_err(describe)
                .with_context(|| format!("{peer}: sending probes"))
        })?;
        out.sent = sender_result.0;
        out.sends = sender_result.1;
        out.samples = sender_result
            .2
            .iter()
            .zip(rtts)
            .map(|(&sent_ns, rtt_ns)| EchoSample { sent_ns, rtt_ns })
            .collect();
        Ok(out)
    }
}

/// What the sender did: packets sent, the first and last send time, and every send time when
/// the run keeps its samples.
type Sent = (u64, Option<(u64, u64)>, Vec<u64>);

/// Sends `cfg.count` packets on `tx` paced every `cfg.interval` (on a fixed schedule, so delays
/// never accumulate), stopping early once any of `stops` is set.
fn send_paced(
    tx: &mut Half,
    cfg: &RunConfig,
    epoch: Instant,
    stops: &[&AtomicBool],
) -> io::Result<Sent> {
    let mut buf = vec![0u8; cfg.size];
    let start = Instant::now();
    let mut sends = None::<(u64, u64)>;
    let mut sent = 0u64;
    let mut times = Vec::new();
    for seq in 0..cfg.count {
        if stops.iter().any(|s| s.load(Ordering::Relaxed)) {
            break;
        }
        pace_until(start + cfg.interval * seq);
        let now = nanos_since(epoch);
        Packet {
            run: cfg.run,
            seq,
            sent_ns: now,
        }
        .write(&mut buf);
        if cfg.keep_samples {
            times.push(now);
        }
        tx.send(&buf)?;
        sent += 1;
        sends = Some((sends.map_or(now, |s| s.0), now));
    }
    Ok((sent, sends, times))
}

impl Half {
    fn try_clone(&self) -> io::Result<Half> {
        Ok(match self {
            Half::Udp(s) => Half::Udp(s.try_clone()?),
            Half::Tcp(s) => Half::Tcp(s.try_clone()?),
            Half::Icmp(s) => Half::Icmp(s.try_clone()?),
        })
    }

    fn send(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Half::Udp(s) => s.send(buf).map(|_| ()),
            Half::Tcp(s) => s.write_all(buf),
            Half::Icmp(s) => s.send(buf),
        }
    }
}

/// How long a refused TCP connection is tried again: a device with one echo socket (linklab's
/// firmware) refuses while that socket goes from the last connection back to listening, which
/// a client that reconnects at once (probe's next size) can meet.
const REFUSED_GRACE: Duration = Duration::from_secs(1);
/// The pause between those tries.
const REFUSED_RETRY: Duration = Duration::from_millis(20);

/// Connects to `peer`, trying again while it refuses, for up to [`REFUSED_GRACE`] (at most
/// `timeout`); then the last answer stands.
fn connect_tcp(peer: SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let start = Instant::now();
    loop {
        match TcpStream::connect_timeout(&peer, timeout) {
            Err(e)
                if e.kind() == io::ErrorKind::ConnectionRefused
                    && start.elapsed() + REFUSED_RETRY < REFUSED_GRACE.min(timeout) =>
            {
                std::thread::sleep(REFUSED_RETRY);
            }
            result => return result,
        }
    }
}

/// Nanoseconds since `epoch`.
fn nanos_since(epoch: Instant) -> u64 {
    epoch.elapsed().as_nanos() as u64
}

/// Waits until `due`: sleeps while far away, then yields in a short spin for precision.
fn pace_until(due: Instant) {
    loop {
        let now = Instant::now();
        if now >= due {
            return;
        }
        let left = due - now;
        if left > Duration::from_micros(300) {
            std::thread::sleep(left - Duration::from_micros(200));
        } else {
            std::thread::yield_now();
        }
    }
}

/// Turns the socket errors people meet into plain words.
fn describe(e: io::Error) -> anyhow::Error {
    let what = match e.kind() {
        io::ErrorKind::ConnectionRefused => {
            "connection refused: no echo server listening on that port".to_string()
        }
        io::ErrorKind::HostUnreachable => "host unreachable".to_string(),
        io::ErrorKind::NetworkUnreachable => "network unreachable".to_string(),
        io::ErrorKind::TimedOut => "timed out".to_string(),
        _ => e.to_string(),
    };
    anyhow::anyhow!("{what}")
}
