//! The apps the soft NIC runs over smoltcp, as firmware would: echo (UDP/TCP 7), the HTTP
//! bench-file server with `GET /stats` (TCP 80) and the iperf3 server (TCP/UDP 5201), all
//! from linklab-perf's smoltcp adapters on one `SocketSet`.

use linklab_perf::echo::SmoltcpEcho;
use linklab_perf::http::{self, RouteBody, Routes};
use linklab_perf::iperf::device::{IperfServer, MAX_TCP_SOCKETS};
use linklab_perf::iperf::wire::{DEFAULT_PORT as IPERF_PORT, MAX_JSON_LEN};
use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;

use super::stats::Snapshot;

/// HTTP connections served at once (each one its own listening socket).
pub const HTTP_SOCKETS: usize = 2;
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

/// The apps and the sockets they own.
pub struct Apps {
    echo: SmoltcpEcho,
    http: Vec<(SocketHandle, http::Server)>,
    http_responses: u64,
    iperf: IperfServer<'static>,
}

fn tcp_socket(rx: usize, tx: usize) -> tcp::Socket<'static> {
    tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; rx]),
        tcp::SocketBuffer::new(vec![0; tx]),
    )
}

impl Apps {
    /// Creates every app's sockets in `sockets`; TCP sockets that receive bulk data get a
    /// receive buffer of `tcp_window` bytes (smoltcp advertises its free space as window).
    pub fn new(sockets: &mut SocketSet<'static>, tcp_window: usize) -> Apps {
        let udp = udp::Socket::new(
            udp::PacketBuffer::new(
                vec![udp::PacketMetadata::EMPTY; ECHO_UDP_PACKETS],
                vec![0; ECHO_UDP_BYTES],
            ),
            udp::PacketBuffer::new(
                vec![udp::PacketMetadata::EMPTY; ECHO_UDP_PACKETS],
                vec![0; ECHO_UDP_BYTES],
            ),
        );
        let udp = sockets.add(udp);
        let tcp = sockets.add(tcp_socket(tcp_window, ECHO_TX_BUFFER));
        let echo = SmoltcpEcho::new(udp, tcp);
        let http = (0..HTTP_SOCKETS)
            .map(|_| {
                (
                    sockets.add(tcp_socket(HTTP_RX_BUFFER, HTTP_TX_BUFFER)),
                    http::Server::new(),
                )
            })
            .collect();
        // The iperf3 server borrows its socket list and JSON buffers for the whole run, as
        // firmware would keep them in statics: leaked once, never freed.
        let iperf_tcp: Vec<SocketHandle> = (0..MAX_TCP_SOCKETS)
            .map(|_| sockets.add(tcp_socket(tcp_window, IPERF_TCP_TX_BUFFER)))
            .collect();
        let iperf_udp = sockets.add(udp::Socket::new(
            udp::PacketBuffer::new(
                vec![udp::PacketMetadata::EMPTY; IPERF_UDP_PACKETS],
                vec![0; IPERF_UDP_BYTES],
            ),
            udp::PacketBuffer::new(
                vec![udp::PacketMetadata::EMPTY; IPERF_UDP_PACKETS],
                vec![0; IPERF_UDP_BYTES],
            ),
        ));
        let iperf = IperfServer::new(
            iperf_tcp.leak(),
            iperf_udp,
            IPERF_PORT,
            vec![0; MAX_JSON_LEN].leak(),
            vec![0; MAX_JSON_LEN].leak(),
        );
        Apps {
            echo,
            http,
            http_responses: 0,
            iperf,
        }
    }

    /// True when an HTTP socket holds request bytes, i.e. `/stats` may be asked for now.
    pub fn http_request_pending(&self, sockets: &SocketSet<'_>) -> bool {
        self.http
            .iter()
            .any(|(h, _)| sockets.get::<tcp::Socket>(*h).can_recv())
    }

    /// Runs every app once over the sockets; call after each `Interface::poll`.
    pub fn poll(&mut self, sockets: &mut SocketSet<'_>, stats: &mut StatsRoute<'_>, now: Instant) {
        self.iperf.poll(sockets, now);
        let _ = self.iperf.take_outcome();
        self.echo.poll(sockets);
        for (handle, server) in &mut self.http {
            if http::serve_tcp(
                sockets.get_mut::<tcp::Socket>(*handle),
                server,
                http::HTTP_PORT,
                stats,
            ) {
                self.http_responses += 1;
            }
        }
    }

    /// When the apps next need a poll regardless of traffic (pacing timers), if ever.
    pub fn poll_at(&self) -> Option<Instant> {
        self.iperf.poll_at()
    }

    /// Counters of every app, for `/stats` and the console.
    pub fn counters(&self) -> Vec<(&'static str, Vec<(&'static str, u64)>)> {
        let e = self.echo.counters();
        let i = self.iperf.counters();
        vec![
            (
                "echo",
                vec![
                    ("udp_rx_datagrams", e.udp_rx_datagrams),
                    ("udp_tx_datagrams", e.udp_tx_datagrams),
                    ("udp_dropped", e.udp_dropped),
                    ("tcp_connections", e.tcp_connections),
                    ("tcp_bytes", e.tcp_bytes),
                ],
            ),
            ("http", vec![("responses", self.http_responses)]),
            (
                "iperf",
                vec![
                    ("tests_done", u64::from(i.tests_done)),
                    ("tests_failed", u64::from(i.tests_failed)),
                    ("denied", u64::from(i.denied)),
                    ("open_streams", self.iperf.open_streams() as u64),
                ],
            ),
        ]
    }
}
