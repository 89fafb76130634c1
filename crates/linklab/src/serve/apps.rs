//! The apps the soft NIC runs: linklab-perf's [`DeviceApps`] — the same code the firmware
//! images run — with host-sized buffers, plus the `GET /stats` route of the soft NIC.

use linklab_perf::apps::{AppBuffers, DeviceApps, TcpBuffers, UdpBuffers};
use linklab_perf::http::{RouteBody, Routes};
use linklab_perf::iperf::device::MAX_TCP_SOCKETS;
use linklab_perf::iperf::wire::MAX_JSON_LEN;
use smoltcp::iface::SocketSet;
use smoltcp::socket::udp;
use smoltcp::time::Instant;

use super::stats::Snapshot;

/// Send buffer of each HTTP socket: a few segments are enough for a bench download.
const HTTP_TX_BUFFER: usize = 32 * 1024;
/// Receive buffer of each HTTP socket: requests are one short head.
const HTTP_RX_BUFFER: usize = 2 * 1024;
/// Buffers of the TCP echo socket (its receive side is subject to `--tcp-window` too).
const ECHO_TX_BUFFER: usize = 16 * 1024;
/// UDP echo: datagrams and payload bytes buffered each way.
const ECHO_UDP_PACKETS: usize = 16;
const ECHO_UDP_BYTES: usize = 16 * 1024;
/// Send buffer of each iperf3 TCP socket (what `-R` keeps in flight).
pub const IPERF_TCP_TX_BUFFER: usize = 64 * 1024;
/// iperf3 UDP socket: datagrams and payload bytes buffered each way (a `-b 50M` burst).
pub const IPERF_UDP_PACKETS: usize = 128;
/// Payload bytes of the iperf3 UDP socket's buffers, each way.
pub const IPERF_UDP_BYTES: usize = IPERF_UDP_PACKETS * 1500;

/// `GET /stats` (counters, laws, apps, and as many TCP sockets as fit) and `GET /stats/tcp`
/// (every connected TCP socket, compact rows), rendered from a snapshot taken just before the
/// HTTP sockets were polled, into the buffer the HTTP server lends.
pub struct StatsRoute<'a> {
    snapshot: Option<&'a Snapshot>,
}

impl<'a> StatsRoute<'a> {
    /// The routes answering from `snapshot` (None: not taken, so 404).
    pub fn new(snapshot: Option<&'a Snapshot>) -> Self {
        StatsRoute { snapshot }
    }
}

impl Routes for StatsRoute<'_> {
    fn get(&mut self, path: &str, out: &mut [u8]) -> Option<RouteBody> {
        let snapshot = self.snapshot?;
        let body = match path {
            "/stats" => snapshot.to_json_within(out.len()),
            "/stats/tcp" => snapshot.tcp_json_within(out.len()),
            _ => return None,
        };
        // A body larger than the lent buffer would be cut into invalid JSON: refuse instead.
        let dst = out.get_mut(..body.len())?;
        dst.copy_from_slice(&body);
        Some(RouteBody {
            len: body.len(),
            content_type: "application/json",
        })
    }
}

/// The apps, with buffers sized for a host.
pub struct Apps {
    inner: DeviceApps<'static>,
}

/// A buffer of `len` zero bytes that lives as long as the process: the sockets borrow their
/// buffers for the whole run, as firmware keeps them in statics.
fn leaked(len: usize) -> &'static mut [u8] {
    vec![0; len].leak()
}

fn udp_buffers(packets: usize, bytes: usize) -> UdpBuffers<'static> {
    UdpBuffers {
        rx_meta: vec![udp::PacketMetadata::EMPTY; packets].leak(),
        rx: leaked(bytes),
        tx_meta: vec![udp::PacketMetadata::EMPTY; packets].leak(),
        tx: leaked(bytes),
    }
}

fn tcp_buffers(rx: usize, tx: usize) -> TcpBuffers<'static> {
    TcpBuffers {
        rx: leaked(rx),
        tx: leaked(tx),
    }
}

impl Apps {
    /// Creates every app's sockets in `sockets`; TCP sockets that receive bulk data get a
    /// receive buffer of `tcp_window` bytes (smoltcp advertises its free space as window).
    pub fn new(sockets: &mut SocketSet<'static>, tcp_window: usize) -> Apps {
        let buffers = AppBuffers {
            echo_udp: udp_buffers(ECHO_UDP_PACKETS, ECHO_UDP_BYTES),
            echo_tcp: tcp_buffers(tcp_window, ECHO_TX_BUFFER),
            http: [
                tcp_buffers(HTTP_RX_BUFFER, HTTP_TX_BUFFER),
                tcp_buffers(HTTP_RX_BUFFER, HTTP_TX_BUFFER),
            ],
            iperf_tcp: (0..MAX_TCP_SOCKETS).map(|_| tcp_buffers(tcp_window, IPERF_TCP_TX_BUFFER)),
            iperf_udp: udp_buffers(IPERF_UDP_PACKETS, IPERF_UDP_BYTES),
            iperf_json_rx: leaked(MAX_JSON_LEN),
            iperf_json_tx: leaked(MAX_JSON_LEN),
        };
        Apps {
            inner: DeviceApps::new(sockets, buffers),
        }
    }

    /// True when an HTTP socket holds request bytes, i.e. `/stats` may be asked for now.
    pub fn http_request_pending(&self, sockets: &SocketSet<'_>) -> bool {
        self.inner.http_request_pending(sockets)
    }

    /// Runs every app once over the sockets; call after each `Interface::poll`.
    pub fn poll(&mut self, sockets: &mut SocketSet<'_>, stats: &mut StatsRoute<'_>, now: Instant) {
        self.inner.poll(sockets, stats, now);
    }

    /// When the apps next need a poll regardless of traffic (pacing timers), if ever.
    pub fn poll_at(&self) -> Option<Instant> {
        self.inner.poll_at()
    }

    /// Counters of every app, grouped by app, for `/stats` and the console.
    pub fn counters(&self) -> Vec<(&'static str, Vec<(&'static str, u64)>)> {
        let mut grouped: Vec<(&'static str, Vec<(&'static str, u64)>)> = Vec::new();
        for (app, name, value) in self.inner.counters() {
            match grouped.last_mut() {
                Some((last, fields)) if *last == app => fields.push((name, value)),
                _ => grouped.push((app, vec![(name, value)])),
            }
        }
        grouped
    }
}
