//! The host node: a second smoltcp stack that plays the PC — an HTTP/1.1 server with the
//! bench files (linklab-perf's server) and ICMP echo (smoltcp's automatic echo reply).
//!
//! Its TCP uses CUBIC congestion control like a Linux PC; its retransmission timer is
//! smoltcp's (RFC 6298 with a 1 s minimum, Linux uses 200 ms), which matters only when the
//! device loses frames (`niccle-initial`).
//!
//! The host is a PC with a hardware NIC: it costs no simulated time, frames it receives are
//! checked by linklab-mac's deframer (SFD, length, FCS) and frames it sends are framed by
//! linklab-mac's TX path (preamble, SFD, padding, FCS).

use std::collections::VecDeque;

use linklab_mac::deframe::{deframe, RxError, RxFormat};
use linklab_mac::tx::{build, TxFormat};
use linklab_perf::http::{smoltcp_serve, NoRoutes, Server, HTTP_PORT};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpCidr, Ipv4Address};

/// Listening sockets, so that a new connection finds one while the last one closes.
const SERVER_SOCKETS: usize = 4;

/// Host socket buffers: like a PC, far larger than any window the device offers.
const HOST_TCP_BUFFER: usize = 64 * 1024;

/// The port of the host's TCP sink (`--device-sends`): iperf3's, since it plays an iperf3
/// `-R` client's part (reads everything, closes when the device does).
pub const SINK_PORT: u16 = 5201;

/// Listening sink sockets.
const SINK_SOCKETS: usize = 2;

/// What of the host's TCP can be set through smoltcp's public API, to bring it nearer the
/// Linux PC of Niccle's MAC write-up (its 200 ms minimum RTO and SACK-based recovery cannot).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct HostTcp {
    /// CUBIC (smoltcp's starts at a 2048-byte window) or none (the first flight fills the
    /// receiver's window at once, as Linux's 10-segment initial window does for the device's
    /// 7-segment window; but no window reduction after a loss).
    pub cubic: bool,
    /// Delayed-ACK timeout in ms (smoltcp 10, Linux at least 40; both ACK every second full
    /// segment at once).
    pub ack_delay_ms: u64,
}

impl Default for HostTcp {
    /// smoltcp's defaults, with CUBIC.
    fn default() -> HostTcp {
        HostTcp {
            cubic: true,
            ack_delay_ms: 10,
        }
    }
}

impl HostTcp {
    fn apply(&self, s: &mut tcp::Socket<'_>) {
        s.set_congestion_control(if self.cubic {
            tcp::CongestionControl::Cubic
        } else {
            tcp::CongestionControl::None
        });
        s.set_ack_delay(Some(smoltcp::time::Duration::from_millis(
            self.ack_delay_ms,
        )));
    }
}

/// One connection the sink read to its end: bytes and their CRC32.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SinkResult {
    /// Bytes received.
    pub bytes: u64,
    /// CRC32 of them.
    pub crc32: u32,
}

/// A sink socket and what it read so far.
struct Sink {
    handle: SocketHandle,
    bytes: u64,
    crc: crc32fast::Hasher,
}

/// What the host's NIC saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct HostCounters {
    /// Frames received with a good FCS.
    pub rx_packets: u64,
    /// No SFD found.
    pub rx_frame_errors: u64,
    /// FCS mismatch.
    pub rx_crc_errors: u64,
    /// Too short or too long.
    pub rx_length_errors: u64,
    /// Frames sent.
    pub tx_packets: u64,
    /// HTTP responses completed.
    pub http_responses: u64,
}

/// The host NIC as a smoltcp device: received frames in, wire images out.
#[derive(Default)]
struct HostNic {
    rx: VecDeque<Vec<u8>>,
    tx: VecDeque<Vec<u8>>,
}

struct HostRx(Vec<u8>);
struct HostTx<'a>(&'a mut VecDeque<Vec<u8>>);

impl RxToken for HostRx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl TxToken for HostTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut wire = vec![0u8; TxFormat::Wire.wire_len(len)];
        let mut f = Some(f);
        let mut result = None;
        let built = build(&mut wire, TxFormat::Wire, len, |frame| {
            if let Some(f) = f.take() {
                result = Some(f(frame));
            }
        });
        if let Ok((n, ())) = built {
            wire.truncate(n);
            self.0.push_back(wire);
        }
        match (result, f) {
            (Some(r), _) => r,
            // smoltcp never asks for more than the MTU we report; if it did, the frame is
            // dropped but `f` must still run.
            (None, Some(f)) => f(&mut vec![0u8; len]),
            (None, None) => unreachable!("the closure ran and stored its result"),
        }
    }
}

impl Device for HostNic {
    type RxToken<'a> = HostRx;
    type TxToken<'a> = HostTx<'a>;

    fn receive(&mut self, _t: Instant) -> Option<(HostRx, HostTx<'_>)> {
        let frame = self.rx.pop_front()?;
        Some((HostRx(frame), HostTx(&mut self.tx)))
    }

    fn transmit(&mut self, _t: Instant) -> Option<HostTx<'_>> {
        Some(HostTx(&mut self.tx))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = linklab_mac::frame::MAX_FRAME_LEN;
        caps
    }
}

/// The host: interface, sockets, HTTP servers.
pub struct Host {
    nic: HostNic,
    iface: Interface,
    sockets: SocketSet<'static>,
    servers: Vec<(SocketHandle, Server)>,
    sinks: Vec<Sink>,
    finished: VecDeque<SinkResult>,
    counters: HostCounters,
}

impl Host {
    /// A host with `mac`/`ip` (a /24), listening on port 80 and on the sink's port, its TCP
    /// set as `tcp` says.
    pub fn new(
        mac: [u8; 6],
        ip: Ipv4Address,
        random_seed: u64,
        now: Instant,
        tcp: HostTcp,
    ) -> Host {
        let mut nic = HostNic::default();
        let mut config = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
        config.random_seed = random_seed;
        let mut iface = Interface::new(config, &mut nic, now);
        iface.update_ip_addrs(|a| {
            let _ = a.push(IpCidr::new(ip.into(), 24));
        });
        let mut sockets = SocketSet::new(Vec::new());
        let mut servers = Vec::new();
        for _ in 0..SERVER_SOCKETS {
            let rx = tcp::SocketBuffer::new(vec![0; HOST_TCP_BUFFER]);
            let tx = tcp::SocketBuffer::new(vec![0; HOST_TCP_BUFFER]);
            let mut s = tcp::Socket::new(rx, tx);
            s.set_nagle_enabled(true);
            // A PC's TCP has congestion control (Linux: CUBIC): after a timeout it
            // restarts from one segment instead of resending the whole window.
            tcp.apply(&mut s);
            let _ = s.listen(HTTP_PORT);
            servers.push((sockets.add(s), Server::new()));
        }
        let sinks = (0..SINK_SOCKETS)
            .map(|_| {
                let rx = tcp::SocketBuffer::new(vec![0; HOST_TCP_BUFFER]);
                let tx = tcp::SocketBuffer::new(vec![0; 1024]);
                let mut s = tcp::Socket::new(rx, tx);
                tcp.apply(&mut s);
                let _ = s.listen(SINK_PORT);
                Sink {
                    handle: sockets.add(s),
                    bytes: 0,
                    crc: crc32fast::Hasher::new(),
                }
            })
            .collect();
        Host {
            nic,
            iface,
            sockets,
            servers,
            sinks,
            finished: VecDeque::new(),
            counters: HostCounters::default(),
        }
    }

    /// The oldest sink connection read to its end and not yet taken.
    pub fn take_sink_result(&mut self) -> Option<SinkResult> {
        self.finished.pop_front()
    }

    /// Reads what the sinks received; closes a sink whose peer closed and listens again
    /// once it is closed. True if anything changed.
    fn poll_sinks(&mut self) -> bool {
        let mut progress = false;
        for sink in self.sinks.iter_mut() {
            let s = self.sockets.get_mut::<tcp::Socket>(sink.handle);
            while let Ok(n) = s.recv(|b| {
                sink.crc.update(b);
                (b.len(), b.len())
            }) {
                if n == 0 {
                    break;
                }
                sink.bytes += n as u64;
                progress = true;
            }
            match s.state() {
                tcp::State::CloseWait => {
                    let crc = std::mem::take(&mut sink.crc);
                    self.finished.push_back(SinkResult {
                        bytes: std::mem::take(&mut sink.bytes),
                        crc32: crc.finalize(),
                    });
                    s.close();
                    progress = true;
                }
                tcp::State::Closed | tcp::State::TimeWait => {
                    s.abort();
                    let _ = s.listen(SINK_PORT);
                    sink.bytes = 0;
                    sink.crc = crc32fast::Hasher::new();
                    progress = true;
                }
                _ => {}
            }
        }
        progress
    }

    /// A transmission arrived (after the wire's impairments): check it like a NIC does.
    /// `format` says what its PHY handed over: the wire image (`Raw`) or the bytes a
    /// decoding PHY found after the SFD (`Aligned { fcs: true }`).
    pub fn receive(&mut self, bytes: &[u8], format: RxFormat) {
        let mut buf = bytes.to_vec();
        match deframe(&mut buf, format) {
            Ok(range) => {
                self.counters.rx_packets += 1;
                self.nic
                    .rx
                    .push_back(buf.get(range).unwrap_or(&[]).to_vec());
            }
            Err(RxError::NoSfd) => self.counters.rx_frame_errors += 1,
            Err(RxError::Crc) => self.counters.rx_crc_errors += 1,
            Err(RxError::TooShort | RxError::TooLong) => self.counters.rx_length_errors += 1,
        }
    }

    /// Runs the stack and the servers at `now` until nothing changes.
    pub fn poll(&mut self, now: Instant) {
        for _ in 0..16 {
            self.iface.poll(now, &mut self.nic, &mut self.sockets);
            let mut progress = false;
            for (handle, server) in self.servers.iter_mut() {
                let socket = self.sockets.get_mut::<tcp::Socket>(*handle);
                let before = (socket.send_queue(), socket.recv_queue(), socket.state());
                if smoltcp_serve(socket, server, HTTP_PORT, &mut NoRoutes) {
                    self.counters.http_responses += 1;
                }
                progress |= before != (socket.send_queue(), socket.recv_queue(), socket.state());
            }
            progress |= self.poll_sinks();
            if !progress {
                break;
            }
        }
    }

    /// Wire images waiting to be sent.
    pub fn take_tx(&mut self, out: &mut VecDeque<Vec<u8>>) {
        self.counters.tx_packets += self.nic.tx.len() as u64;
        out.extend(self.nic.tx.drain(..));
    }

    /// When the stack next wants to be polled.
    pub fn poll_at(&mut self, now: Instant) -> Option<Instant> {
        self.iface.poll_at(now, &self.sockets)
    }

    /// The host's counters.
    pub fn counters(&self) -> HostCounters {
        self.counters
    }
}
