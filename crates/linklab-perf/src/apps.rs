//! The set of apps every linklab device runs over smoltcp (feature `smoltcp`): echo (UDP and
//! TCP 7), the HTTP bench-file server with extra routes such as `GET /stats` (TCP 80), and the
//! iperf3 server (TCP/UDP 5201). One code path for every home of a device: the TAP soft NIC
//! (`linklab serve`) and each firmware image run this same [`DeviceApps`].
//!
//! No heap: the caller lends every socket buffer ([`AppBuffers`]) — statics on an MCU,
//! leaked vectors on a host — and owns the `SocketSet`.

#[cfg(any(feature = "echo", feature = "http"))]
use smoltcp::iface::SocketHandle;
use smoltcp::iface::{Interface, PollIngressSingleResult, PollResult, SocketSet};
use smoltcp::phy::Device;
#[cfg(any(feature = "echo", feature = "http"))]
use smoltcp::socket::tcp;
#[cfg(feature = "echo")]
use smoltcp::socket::udp;
use smoltcp::time::{Duration, Instant};

#[cfg(feature = "echo")]
use crate::echo::{SmoltcpEchoServer, ECHO_PORT};
#[cfg(any(feature = "echo", feature = "http"))]
use crate::evict::half_open_to;
use crate::evict::Choice;
#[cfg(feature = "http")]
use crate::http;
use crate::http::Routes;
use crate::iperf::device::{IperfBuffers, SmoltcpIperfServer, MAX_TCP_SOCKETS};
use crate::iperf::wire::{DEFAULT_PORT as IPERF_PORT, MAX_STREAMS};
use crate::lifetime::DEFAULT_IDLE_TIMEOUT;
#[cfg(any(feature = "echo", feature = "http"))]
use crate::lifetime::{evict, observe, refresh, relisten, tcp_socket, IdleWatch, EVICT_GRACE};
use crate::synack_watch::{SynAckWatch, SynAcks};

pub use crate::socket_buffers::TcpBuffers;
#[cfg(feature = "udp")]
pub use crate::socket_buffers::UdpBuffers;

/// HTTP connections served at once by default (each one its own listening socket).
pub const HTTP_SOCKETS: usize = 2;

/// Every buffer the apps need: the apps a build has (features `echo`, `http`) and the
/// iperf3 server's ([`IperfBuffers`]: `I` yields its data chunks); `H` HTTP sockets.
pub struct AppBuffers<'a, I, const H: usize = HTTP_SOCKETS> {
    /// UDP echo.
    #[cfg(feature = "echo")]
    pub echo_udp: UdpBuffers<'a>,
    /// TCP echo (its receive side is a TCP window like any other).
    #[cfg(feature = "echo")]
    pub echo_tcp: TcpBuffers<'a>,
    /// The HTTP sockets (requests are short heads; the send side carries the downloads).
    #[cfg(feature = "http")]
    pub http: [TcpBuffers<'a>; H],
    /// The iperf3 server's.
    pub iperf: IperfBuffers<'a, I>,
}

pub use crate::app_counters::{AppCounter, APP_COUNTERS};

/// The apps and the handles of the sockets they own: iperf3 over at most `N` TCP sockets
/// with room for `S` streams, and (features `echo`, `http`) echo and `H` HTTP sockets.
pub struct DeviceApps<
    'a,
    const N: usize = MAX_TCP_SOCKETS,
    const S: usize = MAX_STREAMS,
    const H: usize = HTTP_SOCKETS,
> {
    #[cfg(feature = "echo")]
    echo: SmoltcpEchoServer,
    #[cfg(feature = "echo")]
    echo_tcp: SocketHandle,
    #[cfg(feature = "echo")]
    echo_watch: IdleWatch,
    #[cfg(feature = "echo")]
    echo_idle_closed: u64,
    #[cfg(feature = "echo")]
    echo_taken: Taken,
    #[cfg(feature = "http")]
    http: [(SocketHandle, http::Server, IdleWatch); H],
    #[cfg(feature = "http")]
    http_responses: u64,
    #[cfg(feature = "http")]
    http_idle_closed: u64,
    #[cfg(feature = "http")]
    http_taken: Taken,
    #[cfg_attr(not(any(feature = "echo", feature = "http")), allow(dead_code))]
    idle_timeout: Duration,
    iperf: SmoltcpIperfServer<'a, N, S>,
}

/// How often a service's sockets were taken for new clients, and how often a new client had
/// to wait (see [`crate::evict::Choice`]).
#[derive(Clone, Copy, Default)]
#[cfg_attr(not(any(feature = "echo", feature = "http")), allow(dead_code))]
struct Taken {
    /// Spent or half-open sockets freed.
    reclaimed: u64,
    /// Of those, half-open ones our SYN-ACK had answered (stale: no answer for the grace).
    reclaimed_answered: u64,
    /// Idle connections reset.
    evicted: u64,
    /// SYNs dropped unanswered while a handshake we answered may be completing.
    listen_drops: u64,
}

#[cfg_attr(not(any(feature = "echo", feature = "http")), allow(dead_code))]
impl Taken {
    /// Counts what `choice` did; true when the SYN is to be dropped unanswered.
    fn count<T>(&mut self, choice: &Choice<T>) -> bool {
        match choice {
            Choice::Take(_, c) if c.evicts() => self.evicted += 1,
            Choice::Take(_, c) => {
                self.reclaimed += 1;
                self.reclaimed_answered += u64::from(c.answered());
            }
            Choice::Defer => {
                self.listen_drops += 1;
                return true;
            }
            Choice::Refuse => {}
        }
        false
    }
}

#[cfg(feature = "echo")]
fn udp_socket(b: UdpBuffers<'_>) -> udp::Socket<'_> {
    udp::Socket::new(
        udp::PacketBuffer::new(b.rx_meta, b.rx),
        udp::PacketBuffer::new(b.tx_meta, b.tx),
    )
}

impl<'a, const N: usize, const S: usize, const H: usize> DeviceApps<'a, N, S, H> {
    /// Creates every app's sockets in `sockets` from `buffers`. The socket set needs room for
    /// `2 + H` (echo, HTTP) and the iperf3 server's (see [`SmoltcpIperfServer::from_buffers`]).
    ///
    /// Always inlined, so that a caller that writes the result straight into a static (the
    /// firmware) builds it in one frame: outlined, its 13 KB were built and copied once more
    /// (2.3 KB more stack peak on the Cortex-M3 image, measured).
    #[inline(always)]
    pub fn new<I>(sockets: &mut SocketSet<'a>, buffers: AppBuffers<'a, I, H>) -> Self
    where
        I: IntoIterator<Item = &'a mut [u8]>,
    {
        #[cfg(feature = "echo")]
        let (udp, tcp) = (
            sockets.add(udp_socket(buffers.echo_udp)),
            sockets.add(tcp_socket(buffers.echo_tcp)),
        );
        #[cfg(feature = "http")]
        let http = buffers.http.map(|b| {
            (
                sockets.add(tcp_socket(b)),
                http::Server::new(),
                IdleWatch::new(),
            )
        });
        let iperf = SmoltcpIperfServer::from_buffers(sockets, buffers.iperf, IPERF_PORT);
        DeviceApps {
            #[cfg(feature = "echo")]
            echo: SmoltcpEchoServer::new(udp, tcp),
            #[cfg(feature = "echo")]
            echo_tcp: tcp,
            #[cfg(feature = "echo")]
            echo_watch: IdleWatch::new(),
            #[cfg(feature = "echo")]
            echo_idle_closed: 0,
            #[cfg(feature = "echo")]
            echo_taken: Taken::default(),
            #[cfg(feature = "http")]
            http,
            #[cfg(feature = "http")]
            http_responses: 0,
            #[cfg(feature = "http")]
            http_idle_closed: 0,
            #[cfg(feature = "http")]
            http_taken: Taken::default(),
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            iperf,
        }
    }

    /// Sets the application idle timeout of HTTP and TCP echo connections (default
    /// [`DEFAULT_IDLE_TIMEOUT`]): a connection that made no progress for this long (see
    /// [`IdleWatch`]) is reset, so idle or stalled peers cannot hold the fixed pool of
    /// sockets even when no new client asks for one.
    pub fn set_idle_timeout(&mut self, timeout: Duration) {
        self.idle_timeout = timeout;
    }

    /// True when an HTTP socket holds request bytes, i.e. a route such as `/stats` may be
    /// asked for in this poll (so its data is worth gathering); never without `http`.
    pub fn http_request_pending(&self, sockets: &SocketSet<'_>) -> bool {
        #[cfg(feature = "http")]
        return self
            .http
            .iter()
            .any(|(h, _, _)| sockets.get::<tcp::Socket>(*h).can_recv());
        #[cfg(not(feature = "http"))]
        {
            let _ = sockets;
            false
        }
    }

    /// The iperf3 server (its session and counters).
    pub fn iperf(&self) -> &SmoltcpIperfServer<'a, N, S> {
        &self.iperf
    }

    /// Runs every app once over the sockets, answering HTTP paths other than the bench files
    /// from `routes`; call after each [`poll_interface`](Self::poll_interface). Each TCP
    /// connection is looked at before and after its app ran, so its [`IdleWatch`] sees what
    /// the peer did and not what the app did.
    pub fn poll(&mut self, sockets: &mut SocketSet<'a>, routes: &mut dyn Routes, now: Instant) {
        self.iperf.poll(sockets, now);
        #[cfg(feature = "echo")]
        {
            observe(
                &mut self.echo_watch,
                sockets.get::<tcp::Socket>(self.echo_tcp),
                now,
            );
            self.echo.poll(sockets, now);
            let echo = sockets.get_mut::<tcp::Socket>(self.echo_tcp);
            observe(&mut self.echo_watch, echo, now);
            if self.echo_watch.expired(now, self.idle_timeout) {
                echo.abort();
                self.echo_watch.forget();
                self.echo_idle_closed += 1;
            }
        }
        #[cfg(feature = "http")]
        for (handle, server, watch) in &mut self.http {
            let socket = sockets.get_mut::<tcp::Socket>(*handle);
            observe(watch, socket, now);
            if http::smoltcp_serve(socket, server, http::HTTP_PORT, routes) {
                self.http_responses += 1;
            }
            observe(watch, socket, now);
            if watch.expired(now, self.idle_timeout) {
                socket.abort();
                watch.forget();
                self.http_idle_closed += 1;
            }
        }
        #[cfg(not(feature = "http"))]
        let _ = routes;
    }

    /// Runs the interface: ingress one frame at a time, then egress. Before each frame that
    /// opens a TCP connection (see [`crate::lifetime::syn_port`]) to a service none of whose
    /// sockets listens, frees one for it ([`crate::evict::choose`]): a spent socket
    /// (`reclaimed`), else the connection idle longest beyond [`EVICT_GRACE`] (`evicted`:
    /// the peer gets a RST), else a half-open one our SYN-ACK has not answered (`reclaimed`:
    /// lwIP's rule, so spoofed SYNs from hosts that never answer cannot lock real clients
    /// out), else one answered longer than the grace ago (`reclaimed`, also counted in
    /// `reclaimed_answered`). While a handshake we answered may still complete, the SYN is
    /// dropped unanswered (`listen_drops`; its client sends it again), so no client that
    /// believes it is connected is reset; a SYN that finds every connection making progress
    /// gets smoltcp's RST, as from a busy server. Every SYN-ACK leaving is watched
    /// ([`crate::synack_watch`]) to know which handshakes were answered. After each frame, a
    /// UDP echo request is answered and the egress run at once (see
    /// [`SmoltcpEchoServer::echo_datagram`]), so a reply that cannot leave is known before
    /// the next one is queued. Use instead of `Interface::poll`; `next_syn_port` peeks at the
    /// device's next frame (for a linklab-mac `Mac`: `|mac| mac.peek(syn_port).flatten()`).
    /// Without feature `evict` there is no SYN rule and no SYN-ACK watch: a SYN that finds
    /// every socket busy gets smoltcp's RST.
    pub fn poll_interface<D: Device + ?Sized>(
        &mut self,
        iface: &mut Interface,
        device: &mut D,
        sockets: &mut SocketSet<'a>,
        now: Instant,
        next_syn_port: impl FnMut(&D) -> Option<u16>,
    ) {
        self.poll_ingress(iface, device, sockets, now, next_syn_port);
        self.poll_egress(iface, device, sockets, now);
    }

    /// [`DeviceApps::poll_interface`]'s first half: maintenance and ingress (with the SYN
    /// rule), nothing sent but what ingress answers at once. Run the apps, then
    /// [`DeviceApps::poll_egress`]: the segments then leave with what the apps just did —
    /// an ACK carries the window the app's read just opened (sent before it, the window
    /// lacked what the app had not read yet, e.g. iperf3's 37-byte cookie, and the peer
    /// filled it with an odd-sized segment, leaving every later payload off its word in the
    /// receive buffer), and data the app just queued goes out in the same pass.
    pub fn poll_ingress<D: Device + ?Sized>(
        &mut self,
        iface: &mut Interface,
        device: &mut D,
        sockets: &mut SocketSet<'a>,
        now: Instant,
        mut next_syn_port: impl FnMut(&D) -> Option<u16>,
    ) {
        let mut sent = SynAcks::new();
        let mut device = SynAckWatch {
            device,
            sent: &mut sent,
            hide_syn_to: None,
        };
        iface.poll_maintenance(now);
        loop {
            // The SYN rule frees sockets, so a build without eviction skips it.
            let syn = if cfg!(feature = "evict") {
                next_syn_port(device.device)
            } else {
                None
            };
            if let Some(port) = syn {
                self.note_answered(device.sent, sockets, now);
                let mut flush = |s: &mut SocketSet<'a>| egress(iface, &mut device, s, now);
                if self.make_room(port, sockets, now, &mut flush) {
                    device.hide_syn_to = Some(port);
                }
            }
            let ingress = iface.poll_ingress_single(now, &mut device, sockets);
            device.hide_syn_to = None;
            if ingress == PollIngressSingleResult::None {
                break;
            }
            #[cfg(feature = "echo")]
            while self.echo.echo_datagram(sockets, now) {
                egress(iface, &mut device, sockets, now);
            }
        }
        self.note_answered(&mut sent, sockets, now);
    }

    /// [`DeviceApps::poll_interface`]'s second half: egress until nothing is left to send
    /// (noting the SYN-ACKs that leave).
    pub fn poll_egress<D: Device + ?Sized>(
        &mut self,
        iface: &mut Interface,
        device: &mut D,
        sockets: &mut SocketSet<'a>,
        now: Instant,
    ) {
        let mut sent = SynAcks::new();
        let mut device = SynAckWatch {
            device,
            sent: &mut sent,
            hide_syn_to: None,
        };
        egress(iface, &mut device, sockets, now);
        self.note_answered(&mut sent, sockets, now);
    }

    /// Marks the half-open connections whose SYN-ACK left (`sent`, drained) as answered at
    /// `now` (see [`crate::evict::Kind::Answered`]).
    fn note_answered(&mut self, sent: &mut SynAcks, sockets: &SocketSet<'_>, now: Instant) {
        if !cfg!(feature = "evict") {
            return;
        }
        while let Some((port, peer)) = sent.pop() {
            match port {
                #[cfg(feature = "http")]
                http::HTTP_PORT => {
                    for (h, _, watch) in &mut self.http {
                        if half_open_to(sockets.get::<tcp::Socket>(*h), peer) {
                            watch.note_answered(now);
                        }
                    }
                }
                #[cfg(feature = "echo")]
                ECHO_PORT => {
                    if half_open_to(sockets.get::<tcp::Socket>(self.echo_tcp), peer) {
                        self.echo_watch.note_answered(now);
                    }
                }
                _ => self.iperf.note_answered(port, peer, sockets, now),
            }
        }
    }

    /// Frees a socket for a new connection to `port` when none of its sockets listens (see
    /// [`poll_interface`](Self::poll_interface)); `flush` runs the interface's egress. True
    /// when the SYN is to be dropped unanswered ([`Choice::Defer`]).
    fn make_room(
        &mut self,
        port: u16,
        sockets: &mut SocketSet<'a>,
        now: Instant,
        flush: &mut dyn FnMut(&mut SocketSet<'a>),
    ) -> bool {
        match port {
            #[cfg(feature = "http")]
            http::HTTP_PORT => {
                let listening = self
                    .http
                    .iter()
                    .any(|(h, _, _)| sockets.get::<tcp::Socket>(*h).state() == tcp::State::Listen);
                if listening {
                    return false;
                }
                // Progress that came in with the frames before this SYN counts.
                for (h, _, watch) in &mut self.http {
                    refresh(watch, sockets.get::<tcp::Socket>(*h), now);
                }
                let facts = self
                    .http
                    .iter()
                    .map(|(h, _, w)| w.candidate(sockets.get::<tcp::Socket>(*h)));
                let choice = crate::evict::choose(facts, now, EVICT_GRACE);
                if let Choice::Take(i, taken) = choice {
                    let (h, server, watch) = &mut self.http[i];
                    *h = if taken.evicts() {
                        evict(sockets, *h, http::HTTP_PORT, flush)
                    } else {
                        relisten(sockets, *h, http::HTTP_PORT)
                    };
                    server.reset();
                    watch.forget();
                }
                self.http_taken.count(&choice)
            }
            #[cfg(feature = "echo")]
            ECHO_PORT => {
                let socket = sockets.get::<tcp::Socket>(self.echo_tcp);
                refresh(&mut self.echo_watch, socket, now);
                let facts = [self.echo_watch.candidate(socket)];
                let choice = crate::evict::choose(facts, now, EVICT_GRACE);
                if let Choice::Take(_, taken) = choice {
                    self.echo_tcp = if taken.evicts() {
                        evict(sockets, self.echo_tcp, ECHO_PORT, flush)
                    } else {
                        relisten(sockets, self.echo_tcp, ECHO_PORT)
                    };
                    self.echo.forget_tcp(self.echo_tcp);
                    self.echo_watch.forget();
                }
                self.echo_taken.count(&choice)
            }
            _ => self.iperf.make_room(port, sockets, now, flush),
        }
    }

    /// Resets every open TCP connection of the apps (a device going down: the RSTs leave on
    /// the next `Interface::poll`, so no peer waits forever).
    pub fn abort_all(&mut self, sockets: &mut SocketSet<'_>) {
        for (_, socket) in sockets.iter_mut() {
            // (Irrefutable in a build without UDP sockets.)
            #[allow(irrefutable_let_patterns)]
            if let smoltcp::socket::Socket::Tcp(s) = socket {
                if s.is_active() {
                    s.abort();
                }
            }
        }
    }

    /// When the apps next need a poll regardless of traffic (pacing timers, idle timeouts),
    /// if ever.
    pub fn poll_at(&self) -> Option<Instant> {
        #[cfg(any(feature = "echo", feature = "http"))]
        let t = self.idle_timeout;
        let idle: Option<Instant> = None;
        #[cfg(feature = "http")]
        let idle = self
            .http
            .iter()
            .filter_map(|(_, _, w)| w.deadline(t))
            .chain(idle)
            .min();
        #[cfg(feature = "echo")]
        let idle = [self.echo_watch.deadline(t), idle]
            .into_iter()
            .flatten()
            .min();
        #[cfg(feature = "echo")]
        let echo = self.echo.poll_at();
        #[cfg(not(feature = "echo"))]
        let echo = None;
        [self.iperf.poll_at(), echo, idle]
            .into_iter()
            .flatten()
            .min()
    }

    /// Every app's counters, for `/stats` and the console (0 for an app the build lacks).
    pub fn counters(&self) -> [AppCounter; APP_COUNTERS] {
        #[cfg(feature = "echo")]
        let (e, echo_idle_closed, echo_taken) =
            (self.echo.counters(), self.echo_idle_closed, self.echo_taken);
        #[cfg(not(feature = "echo"))]
        let (e, echo_idle_closed, echo_taken) =
            (crate::echo::EchoCounters::default(), 0, Taken::default());
        #[cfg(feature = "http")]
        let (http_responses, http_idle_closed, http_taken) =
            (self.http_responses, self.http_idle_closed, self.http_taken);
        #[cfg(not(feature = "http"))]
        let (http_responses, http_idle_closed, http_taken) = (0, 0, Taken::default());
        let i = self.iperf.counters();
        crate::app_counters::named([
            e.udp_rx_datagrams,
            e.udp_tx_datagrams,
            e.udp_dropped,
            e.udp_unsent,
            e.tcp_connections,
            e.tcp_bytes,
            echo_idle_closed,
            echo_taken.reclaimed,
            echo_taken.evicted,
            echo_taken.reclaimed_answered,
            echo_taken.listen_drops,
            http_responses,
            http_idle_closed,
            http_taken.reclaimed,
            http_taken.evicted,
            http_taken.reclaimed_answered,
            http_taken.listen_drops,
            u64::from(i.tests_done),
            u64::from(i.tests_failed),
            u64::from(i.denied),
            self.iperf.open_streams() as u64,
            u64::from(i.reclaimed),
            u64::from(i.evicted),
            u64::from(i.reclaimed_answered),
            u64::from(i.listen_drops),
        ])
    }
}

/// Runs the interface's egress until it has nothing more to send.
fn egress<D: Device + ?Sized>(
    iface: &mut Interface,
    device: &mut D,
    sockets: &mut SocketSet<'_>,
    now: Instant,
) {
    while iface.poll_egress(now, device, sockets) != PollResult::None {}
}

/// Buffers sized for a host (the TAP soft NIC and its baseline bench), leaked once: the
/// sockets borrow them for the whole run, as firmware keeps its buffers in statics.
#[cfg(feature = "std")]
pub mod host {
    use std::vec;
    use std::vec::Vec;

    use smoltcp::socket::udp;

    use super::{AppBuffers, TcpBuffers, UdpBuffers};
    use crate::iperf::device::{IperfBuffers, MAX_TCP_SOCKETS};
    use crate::iperf::wire::MAX_JSON_LEN;

    /// Send buffer of each HTTP socket: a few segments are enough for a bench download.
    pub const HTTP_TX_BUFFER: usize = 32 * 1024;
    /// Receive buffer of each HTTP socket: requests are one short head.
    pub const HTTP_RX_BUFFER: usize = 2 * 1024;
    /// Send buffer of the TCP echo socket (its receive side is the TCP window).
    pub const ECHO_TX_BUFFER: usize = 16 * 1024;
    /// UDP echo: datagrams buffered each way.
    pub const ECHO_UDP_PACKETS: usize = 16;
    /// UDP echo: payload bytes buffered each way.
    pub const ECHO_UDP_BYTES: usize = 16 * 1024;
    /// Send buffer of each iperf3 data socket (what `-R` keeps in flight).
    pub const IPERF_TCP_TX_BUFFER: usize = 64 * 1024;
    /// Buffers of each iperf3 control socket, each way.
    pub const IPERF_CONTROL_BUFFER: usize = 4 * 1024;
    /// iperf3 UDP socket: datagrams buffered each way (a `-b 50M` burst; the payload bytes
    /// are a data chunk's).
    pub const IPERF_UDP_PACKETS: usize = 128;
    /// Payload bytes the iperf3 UDP socket receives into (of its data chunk).
    pub const IPERF_UDP_BYTES: usize = IPERF_UDP_PACKETS * 1500;

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

    /// Every buffer for the apps; TCP sockets that receive bulk data get a receive buffer
    /// of `tcp_window` bytes (smoltcp advertises its free space as the window), and the
    /// iperf3 server one data chunk per stream iperf3 can ask for.
    pub fn host_buffers(tcp_window: usize) -> AppBuffers<'static, Vec<&'static mut [u8]>> {
        AppBuffers {
            echo_udp: udp_buffers(ECHO_UDP_PACKETS, ECHO_UDP_BYTES),
            echo_tcp: tcp_buffers(tcp_window, ECHO_TX_BUFFER),
            http: [
                tcp_buffers(HTTP_RX_BUFFER, HTTP_TX_BUFFER),
                tcp_buffers(HTTP_RX_BUFFER, HTTP_TX_BUFFER),
            ],
            iperf: IperfBuffers {
                control: [
                    tcp_buffers(IPERF_CONTROL_BUFFER, IPERF_CONTROL_BUFFER),
                    tcp_buffers(IPERF_CONTROL_BUFFER, IPERF_CONTROL_BUFFER),
                ],
                data: (0..MAX_TCP_SOCKETS - 2)
                    .map(|_| leaked(tcp_window.max(IPERF_UDP_BYTES) + IPERF_TCP_TX_BUFFER))
                    .collect(),
                window: tcp_window,
                udp_rx: IPERF_UDP_BYTES,
                udp_meta: [
                    vec![udp::PacketMetadata::EMPTY; IPERF_UDP_PACKETS].leak(),
                    vec![udp::PacketMetadata::EMPTY; IPERF_UDP_PACKETS].leak(),
                ],
                json_rx: leaked(MAX_JSON_LEN),
                json_tx: leaked(MAX_JSON_LEN),
            },
        }
    }
}
