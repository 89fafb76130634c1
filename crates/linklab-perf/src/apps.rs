//! The set of apps every linklab device runs over smoltcp (feature `smoltcp`): echo (UDP and
//! TCP 7), the HTTP bench-file server with extra routes such as `GET /stats` (TCP 80), and the
//! iperf3 server (TCP/UDP 5201). One code path for every home of a device: the TAP soft NIC
//! (`linklab serve`) and each firmware image run this same [`DeviceApps`].
//!
//! No heap: the caller lends every socket buffer ([`AppBuffers`]) — statics on an MCU,
//! leaked vectors on a host — and owns the `SocketSet`.

use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;

use crate::echo::SmoltcpEcho;
use crate::http::{self, Routes};
use crate::iperf::device::IperfServer;
use crate::iperf::wire::DEFAULT_PORT as IPERF_PORT;

/// HTTP connections served at once (each one its own listening socket).
pub const HTTP_SOCKETS: usize = 2;

/// A TCP socket's two buffers.
pub struct TcpBuffers<'a> {
    /// Receive buffer: its free space is the window smoltcp advertises.
    pub rx: &'a mut [u8],
    /// Send buffer: what may be in flight, unacknowledged.
    pub tx: &'a mut [u8],
}

/// A UDP socket's buffers: packet metadata slots and payload bytes, each way.
pub struct UdpBuffers<'a> {
    /// Datagrams the receive side can hold.
    pub rx_meta: &'a mut [udp::PacketMetadata],
    /// Payload bytes the receive side can hold.
    pub rx: &'a mut [u8],
    /// Datagrams the send side can hold.
    pub tx_meta: &'a mut [udp::PacketMetadata],
    /// Payload bytes the send side can hold.
    pub tx: &'a mut [u8],
}

/// Every buffer the apps need.
pub struct AppBuffers<'a, I> {
    /// UDP echo.
    pub echo_udp: UdpBuffers<'a>,
    /// TCP echo (its receive side is a TCP window like any other).
    pub echo_tcp: TcpBuffers<'a>,
    /// The HTTP sockets (requests are short heads; the send side carries the downloads).
    pub http: [TcpBuffers<'a>; HTTP_SOCKETS],
    /// The iperf3 server's TCP sockets, 3..=`iperf::device::MAX_TCP_SOCKETS` (see
    /// [`IperfServer`] for what each `-P`/`--bidir` needs); receive buffers are the window.
    pub iperf_tcp: I,
    /// The iperf3 server's UDP socket (its buffers bound the burst it absorbs).
    pub iperf_udp: UdpBuffers<'a>,
    /// iperf3 control JSON received (8 KiB accepts any parameter document).
    pub iperf_json_rx: &'a mut [u8],
    /// iperf3 control JSON sent (4 KiB holds results for 16 streams).
    pub iperf_json_tx: &'a mut [u8],
}

/// One app counter: (app, counter name, value).
pub type AppCounter = (&'static str, &'static str, u64);

/// Number of counters [`DeviceApps::counters`] reports.
pub const APP_COUNTERS: usize = 10;

/// The apps and the handles of the sockets they own.
pub struct DeviceApps<'a> {
    echo: SmoltcpEcho,
    http: [(SocketHandle, http::Server); HTTP_SOCKETS],
    http_responses: u64,
    iperf: IperfServer<'a>,
}

fn tcp_socket(b: TcpBuffers<'_>) -> tcp::Socket<'_> {
    tcp::Socket::new(tcp::SocketBuffer::new(b.rx), tcp::SocketBuffer::new(b.tx))
}

fn udp_socket(b: UdpBuffers<'_>) -> udp::Socket<'_> {
    udp::Socket::new(
        udp::PacketBuffer::new(b.rx_meta, b.rx),
        udp::PacketBuffer::new(b.tx_meta, b.tx),
    )
}

impl<'a> DeviceApps<'a> {
    /// Creates every app's sockets in `sockets` from `buffers`. The socket set needs room for
    /// `4 + ` the number of iperf3 TCP sockets.
    pub fn new<I>(sockets: &mut SocketSet<'a>, buffers: AppBuffers<'a, I>) -> DeviceApps<'a>
    where
        I: IntoIterator<Item = TcpBuffers<'a>>,
    {
        let udp = sockets.add(udp_socket(buffers.echo_udp));
        let tcp = sockets.add(tcp_socket(buffers.echo_tcp));
        let [h0, h1] = buffers.http;
        let http = [
            (sockets.add(tcp_socket(h0)), http::Server::new()),
            (sockets.add(tcp_socket(h1)), http::Server::new()),
        ];
        let mut iperf_tcp: heapless::Vec<SocketHandle, { crate::iperf::device::MAX_TCP_SOCKETS }> =
            heapless::Vec::new();
        for b in buffers.iperf_tcp {
            let handle = sockets.add(tcp_socket(b));
            if iperf_tcp.push(handle).is_err() {
                break;
            }
        }
        let iperf_udp = sockets.add(udp_socket(buffers.iperf_udp));
        let iperf = IperfServer::new(
            &iperf_tcp,
            iperf_udp,
            IPERF_PORT,
            buffers.iperf_json_rx,
            buffers.iperf_json_tx,
        );
        DeviceApps {
            echo: SmoltcpEcho::new(udp, tcp),
            http,
            http_responses: 0,
            iperf,
        }
    }

    /// True when an HTTP socket holds request bytes, i.e. a route such as `/stats` may be
    /// asked for in this poll (so its data is worth gathering).
    pub fn http_request_pending(&self, sockets: &SocketSet<'_>) -> bool {
        self.http
            .iter()
            .any(|(h, _)| sockets.get::<tcp::Socket>(*h).can_recv())
    }

    /// Runs every app once over the sockets, answering HTTP paths other than the bench files
    /// from `routes`; call after each `Interface::poll`.
    pub fn poll(&mut self, sockets: &mut SocketSet<'_>, routes: &mut dyn Routes, now: Instant) {
        self.iperf.poll(sockets, now);
        let _ = self.iperf.take_outcome();
        self.echo.poll(sockets);
        for (handle, server) in &mut self.http {
            if http::serve_tcp(
                sockets.get_mut::<tcp::Socket>(*handle),
                server,
                http::HTTP_PORT,
                routes,
            ) {
                self.http_responses += 1;
            }
        }
    }

    /// When the apps next need a poll regardless of traffic (pacing timers), if ever.
    pub fn poll_at(&self) -> Option<Instant> {
        self.iperf.poll_at()
    }

    /// Every app's counters, for `/stats` and the console.
    pub fn counters(&self) -> [AppCounter; APP_COUNTERS] {
        let e = self.echo.counters();
        let i = self.iperf.counters();
        [
            ("echo", "udp_rx_datagrams", e.udp_rx_datagrams),
            ("echo", "udp_tx_datagrams", e.udp_tx_datagrams),
            ("echo", "udp_dropped", e.udp_dropped),
            ("echo", "tcp_connections", e.tcp_connections),
            ("echo", "tcp_bytes", e.tcp_bytes),
            ("http", "responses", self.http_responses),
            ("iperf", "tests_done", u64::from(i.tests_done)),
            ("iperf", "tests_failed", u64::from(i.tests_failed)),
            ("iperf", "denied", u64::from(i.denied)),
            ("iperf", "open_streams", self.iperf.open_streams() as u64),
        ]
    }
}
