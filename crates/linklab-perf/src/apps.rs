//! The set of apps every linklab device runs over smoltcp (feature `smoltcp`): echo (UDP and
//! TCP 7), the HTTP bench-file server with extra routes such as `GET /stats` (TCP 80), the
//! iperf3 server (TCP/UDP 5201) and (feature `iperf2`) the iperf 2 server (TCP/UDP 5001), the
//! two iperf servers lending their data sockets one data memory ([`crate::data_memory`]: one
//! test at a time across both). One code path for every home of a device: the TAP soft NIC
//! (`linklab serve`) and each firmware image run this same [`DeviceApps`].
//!
//! No heap: the caller lends every socket buffer ([`AppBuffers`]) — statics on an MCU,
//! leaked vectors on a host — and owns the `SocketSet`.

mod counters;
mod interface;

use core::ptr::addr_of_mut;
#[cfg(any(
    feature = "echo",
    feature = "http",
    all(feature = "iperf2-tcp", not(feature = "iperf2"))
))]
use smoltcp::iface::SocketHandle;
use smoltcp::iface::SocketSet;
#[cfg(any(
    feature = "echo",
    feature = "http",
    all(feature = "iperf2-tcp", not(feature = "iperf2"))
))]
use smoltcp::socket::tcp;
#[cfg(feature = "udp")]
use smoltcp::socket::udp;

use smoltcp::time::{Duration, Instant};

use crate::data_memory::DataPlan;
#[cfg(any(feature = "iperf3", feature = "iperf2"))]
use crate::data_memory::{DataMemory, SmoltcpDataMemory};
#[cfg(feature = "echo")]
use crate::echo::SmoltcpEchoServer;
use crate::evict::Choice;
#[cfg(feature = "http")]
use crate::http;
use crate::http::Routes;
#[cfg(feature = "iperf3")]
use crate::iperf::device::IperfBuffers;
use crate::iperf::device::{SmoltcpIperfServer, MAX_TCP_SOCKETS};
#[cfg(feature = "iperf3")]
use crate::iperf::wire::DEFAULT_PORT as IPERF_PORT;
use crate::iperf::wire::MAX_STREAMS;
#[cfg(feature = "iperf2")]
use crate::iperf2::device::SmoltcpIperf2Server;
#[cfg(all(feature = "iperf2-tcp", not(feature = "iperf2")))]
use crate::iperf2::one_socket::OneSocketServer;
#[cfg(any(
    feature = "echo",
    feature = "http",
    all(feature = "iperf2-tcp", not(feature = "iperf2"))
))]
use crate::lifetime::tcp_socket;
use crate::lifetime::DEFAULT_IDLE_TIMEOUT;
#[cfg(any(feature = "echo", feature = "http"))]
use crate::lifetime::{observe, IdleWatch};
#[cfg(feature = "evict")]
use crate::syns::SynCounts;

pub use crate::socket_buffers::TcpBuffers;
#[cfg(feature = "udp")]
pub use crate::socket_buffers::UdpBuffers;

/// HTTP connections served at once by default (each one its own listening socket).
pub const HTTP_SOCKETS: usize = 2;

/// iperf 2's TCP sockets by default: two streams, or a stream and its `-d` connect-back, and
/// one listening for the next stream or client.
pub const IPERF2_SOCKETS: usize = 3;

/// The iperf servers' data memory (see [`crate::data_memory`]): its bytes, how a test's
/// streams share them, the UDP sockets' records.
pub struct DataBuffers<'a> {
    /// The bytes.
    pub bytes: &'a mut [u8],
    /// How a test's streams share them (a stream's window and send buffer when the memory
    /// allows, the UDP socket's receive bytes).
    pub plan: DataPlan,
    /// The UDP sockets' datagram records, received and sent (lent with a share to whichever
    /// server's UDP socket carries or waits for a test).
    #[cfg(feature = "udp")]
    pub udp_meta: [&'a mut [udp::PacketMetadata]; 2],
}

/// Every buffer the apps need: the apps a build has (features `echo`, `http`), the iperf3
/// server's control sockets (`iperf::device::IperfBuffers`) and the iperf servers' data memory
/// ([`DataBuffers`]); `H` HTTP sockets.
pub struct AppBuffers<'a, const H: usize = HTTP_SOCKETS> {
    /// UDP echo.
    #[cfg(feature = "echo")]
    pub echo_udp: UdpBuffers<'a>,
    /// TCP echo (its receive side is a TCP window like any other).
    #[cfg(feature = "echo")]
    pub echo_tcp: TcpBuffers<'a>,
    /// The HTTP sockets (requests are short heads; the send side carries the downloads).
    #[cfg(feature = "http")]
    pub http: [TcpBuffers<'a>; H],
    /// The iperf3 server's control sockets and JSON.
    #[cfg(feature = "iperf3")]
    pub iperf: IperfBuffers<'a>,
    /// The iperf servers' data memory (with `iperf2-tcp` alone: iperf 2's one socket's
    /// window and send buffer, `plan.window` and `plan.tx` bytes of it).
    pub data: DataBuffers<'a>,
}

pub use crate::app_counters::{AppCounter, APP_COUNTERS};

/// The apps and the handles of the sockets they own: iperf3 over `N` TCP sockets (two
/// control sockets, `N - 2` data sockets) with room for `S` streams, (features `echo`,
/// `http`) echo and `H` HTTP sockets, (feature `iperf2`) iperf 2 over `M` TCP sockets.
pub struct DeviceApps<
    'a,
    const N: usize = MAX_TCP_SOCKETS,
    const S: usize = MAX_STREAMS,
    const H: usize = HTTP_SOCKETS,
    const M: usize = IPERF2_SOCKETS,
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
    #[cfg(feature = "iperf3")]
    iperf: SmoltcpIperfServer<'a, N, S>,
    /// The data memory the iperf servers' data sockets are lent.
    #[cfg(any(feature = "iperf3", feature = "iperf2"))]
    memory: SmoltcpDataMemory<'a>,
    #[cfg(feature = "iperf2")]
    iperf2: SmoltcpIperf2Server<M>,
    /// iperf 2's TCP server alone (`iperf2-tcp` without `iperf2`) and its one socket.
    #[cfg(all(feature = "iperf2-tcp", not(feature = "iperf2")))]
    iperf2: (SocketHandle, OneSocketServer),
    /// (The iperf3 server's type parameters, in a build without it.)
    #[cfg(not(feature = "iperf3"))]
    _iperf: core::marker::PhantomData<SmoltcpIperfServer<'a, N, S>>,
}

/// How often a service's sockets were taken for new clients, and what became of each SYN it
/// saw (see [`crate::evict::Choice`], [`crate::syns`]). Only the SYN rule counts here, so a
/// build without feature `evict` (no SYN rule in a main loop) keeps nothing: every count is
/// 0, and the apps are no larger for it (the compact image's flash budget).
#[derive(Clone, Copy, Default)]
#[cfg_attr(not(any(feature = "echo", feature = "http")), allow(dead_code))]
#[cfg_attr(not(feature = "evict"), allow(dead_code))]
pub(super) struct Taken {
    /// Spent or half-open sockets freed.
    reclaimed: u64,
    /// Of those, half-open ones our SYN-ACK had answered (stale: no answer for the grace).
    reclaimed_answered: u64,
    /// Idle connections reset.
    evicted: u64,
    /// Every SYN the service saw: passed to a listening socket, or dropped unanswered.
    #[cfg(feature = "evict")]
    syns: SynCounts,
}

#[cfg_attr(not(any(feature = "echo", feature = "http")), allow(dead_code))]
impl Taken {
    /// A SYN that found a socket listening goes to it.
    pub(super) fn pass(&mut self) {
        #[cfg(feature = "evict")]
        self.syns.pass();
    }

    /// Counts what `choice` did for a SYN that found no socket listening; true when the SYN
    /// is to be dropped unanswered (nothing may be freed now: its client sends it again).
    pub(super) fn count<T>(&mut self, choice: &Choice<T>) -> bool {
        let drop = matches!(choice, Choice::Defer | Choice::Busy);
        #[cfg(feature = "evict")]
        match choice {
            Choice::Take(_, c) if c.evicts() => self.evicted += 1,
            Choice::Take(_, c) => {
                self.reclaimed += 1;
                self.reclaimed_answered += u64::from(c.answered());
            }
            Choice::Defer | Choice::Busy => {}
        }
        #[cfg(feature = "evict")]
        if drop {
            self.syns.drop_unanswered();
        } else {
            self.syns.pass();
        }
        drop
    }

    /// The counts in [`crate::app_counters::NAMES`]' order: `reclaimed`, `evicted`,
    /// `reclaimed_answered`, `syns`, `syns_held`, `listen_drops`.
    pub(super) fn values(&self) -> [u64; 6] {
        #[cfg(feature = "evict")]
        {
            let [syns, held, dropped] = crate::app_counters::syn_values(&self.syns);
            let (r, e, a) = (self.reclaimed, self.evicted, self.reclaimed_answered);
            [r, e, a, syns, held, dropped]
        }
        #[cfg(not(feature = "evict"))]
        [0; 6]
    }
}

#[cfg(feature = "echo")]
fn udp_socket(b: UdpBuffers<'_>) -> udp::Socket<'_> {
    udp::Socket::new(
        udp::PacketBuffer::new(b.rx_meta, b.rx),
        udp::PacketBuffer::new(b.tx_meta, b.tx),
    )
}

impl<'a, const N: usize, const S: usize, const H: usize, const M: usize>
    DeviceApps<'a, N, S, H, M>
{
    /// Creates every app's sockets in `sockets` from `buffers`. The socket set needs room for
    /// `2 + H` (echo, HTTP), the iperf3 server's (see [`SmoltcpIperfServer::from_buffers`])
    /// and `M + 1` (iperf 2). (To build the apps where they are to live, without a copy on
    /// the stack, see [`init`](Self::init).)
    pub fn new(sockets: &mut SocketSet<'a>, buffers: AppBuffers<'a, H>) -> Self {
        let mut place = core::mem::MaybeUninit::uninit();
        Self::init(&mut place, sockets, buffers);
        // SAFETY: `init` initialised every field of `place`.
        unsafe { place.assume_init() }
    }

    /// [`new`](Self::new), built in `place` a field at a time: a firmware that keeps its
    /// apps in a static builds them there, with no whole copy of them on its stack (built by
    /// value, their construction took a 15 KB frame at boot on the Cortex-M3 image).
    #[inline(always)]
    pub fn init<'p>(
        place: &'p mut core::mem::MaybeUninit<Self>,
        sockets: &mut SocketSet<'a>,
        buffers: AppBuffers<'a, H>,
    ) -> &'p mut Self {
        let p = place.as_mut_ptr();
        #[cfg_attr(
            not(all(feature = "iperf3", feature = "iperf2-tcp", not(feature = "iperf2"))),
            allow(unused_mut)
        )]
        let (mut plan, data_bytes) = (buffers.data.plan, buffers.data.bytes);
        // iperf 2's one socket (`iperf2-tcp` without `iperf2`) keeps a window and a send
        // buffer of the data memory for itself: its last bytes beside iperf3 (whose plan
        // loses them), all of them alone.
        #[cfg(all(feature = "iperf2-tcp", not(feature = "iperf2")))]
        let (data_bytes, iperf2_own) = {
            let own = (plan.window + plan.tx).min(data_bytes.len());
            let keep = if cfg!(feature = "iperf3") {
                plan.bytes = plan.bytes.saturating_sub(own);
                data_bytes.len() - own
            } else {
                0
            };
            data_bytes.split_at_mut(keep)
        };
        // (Unused in a build without any of the apps.)
        let _ = (&plan, &sockets);
        // SAFETY: every field of `*p` is written exactly once below through a raw pointer,
        // without reading any, before the whole is assumed initialised.
        unsafe {
            #[cfg(feature = "echo")]
            {
                let udp = sockets.add(udp_socket(buffers.echo_udp));
                let tcp = sockets.add(tcp_socket(buffers.echo_tcp));
                addr_of_mut!((*p).echo).write(SmoltcpEchoServer::new(udp, tcp));
                addr_of_mut!((*p).echo_tcp).write(tcp);
                addr_of_mut!((*p).echo_watch).write(IdleWatch::new());
                addr_of_mut!((*p).echo_idle_closed).write(0);
                addr_of_mut!((*p).echo_taken).write(Taken::default());
            }
            #[cfg(feature = "http")]
            {
                let http =
                    addr_of_mut!((*p).http).cast::<(SocketHandle, http::Server, IdleWatch)>();
                for (i, b) in buffers.http.into_iter().enumerate() {
                    http.add(i).write((
                        sockets.add(tcp_socket(b)),
                        http::Server::new(),
                        IdleWatch::new(),
                    ));
                }
                addr_of_mut!((*p).http_responses).write(0);
                addr_of_mut!((*p).http_idle_closed).write(0);
                addr_of_mut!((*p).http_taken).write(Taken::default());
            }
            addr_of_mut!((*p).idle_timeout).write(DEFAULT_IDLE_TIMEOUT);
            #[cfg(feature = "iperf3")]
            addr_of_mut!((*p).iperf).write(SmoltcpIperfServer::from_buffers(
                sockets,
                buffers.iperf,
                IPERF_PORT,
                plan,
            ));
            #[cfg(feature = "iperf2")]
            addr_of_mut!((*p).iperf2).write(SmoltcpIperf2Server::new(
                crate::iperf2::DEFAULT_PORT,
                crate::iperf2::pool::Iperf2Sizes {
                    window: plan.window,
                    tx: plan.tx,
                    udp_rx: plan.udp_rx,
                    udp_tx: plan.tx,
                },
            ));
            #[cfg(all(feature = "iperf2-tcp", not(feature = "iperf2")))]
            {
                let own = iperf2_own;
                let (rx, tx) = own.split_at_mut(plan.window.min(own.len()));
                let tx_len = plan.tx.min(tx.len());
                let socket = sockets.add(tcp_socket(TcpBuffers {
                    rx,
                    tx: &mut tx[..tx_len],
                }));
                addr_of_mut!((*p).iperf2)
                    .write((socket, OneSocketServer::new(crate::iperf2::DEFAULT_PORT)));
            }
            #[cfg(not(feature = "iperf3"))]
            addr_of_mut!((*p)._iperf).write(core::marker::PhantomData);
            // (No iperf server lent the data memory in this build.)
            #[cfg(not(any(feature = "iperf3", feature = "iperf2")))]
            let _ = data_bytes;
            #[cfg(any(feature = "iperf3", feature = "iperf2"))]
            addr_of_mut!((*p).memory).write(SmoltcpDataMemory {
                bytes: DataMemory::new(data_bytes),
                #[cfg(feature = "udp")]
                udp_meta: crate::lend::Lender::new(buffers.data.udp_meta),
            });
            place.assume_init_mut()
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
    #[cfg(feature = "iperf3")]
    pub fn iperf(&self) -> &SmoltcpIperfServer<'a, N, S> {
        &self.iperf
    }

    /// The iperf 2 server (its counters).
    #[cfg(feature = "iperf2")]
    pub fn iperf2(&self) -> &SmoltcpIperf2Server<M> {
        &self.iperf2
    }

    /// iperf 2's TCP server alone (feature `iperf2-tcp` without `iperf2`).
    #[cfg(all(feature = "iperf2-tcp", not(feature = "iperf2")))]
    pub fn iperf2(&self) -> &OneSocketServer {
        &self.iperf2.1
    }

    /// Tests the iperf servers of this build ended (iperf3's and iperf 2's): (done,
    /// failed). An image without `/stats` marks its console's work lines by their sum.
    pub fn iperf_tests_ended(&self) -> (u32, u32) {
        let ended = (0u32, 0u32);
        #[cfg(feature = "iperf3")]
        let ended = {
            let c = self.iperf.counters();
            (
                ended.0.wrapping_add(c.tests_done),
                ended.1.wrapping_add(c.tests_failed),
            )
        };
        #[cfg(feature = "iperf2-tcp")]
        let ended = {
            let c = self.iperf2().counters();
            (
                ended.0.wrapping_add(c.tests_done),
                ended.1.wrapping_add(c.tests_failed),
            )
        };
        ended
    }

    /// Runs every app once over the sockets, answering HTTP paths other than the bench files
    /// from `routes`; call after each [`poll_interface`](Self::poll_interface). Each TCP
    /// connection is looked at before and after its app ran, so its [`IdleWatch`] sees what
    /// the peer did and not what the app did.
    #[cfg_attr(
        not(any(
            feature = "iperf3",
            feature = "iperf2-tcp",
            feature = "http",
            feature = "echo"
        )),
        allow(unused_variables)
    )]
    pub fn poll(&mut self, sockets: &mut SocketSet<'a>, routes: &mut dyn Routes, now: Instant) {
        #[cfg(feature = "iperf3")]
        self.iperf.poll_lent(sockets, &mut self.memory, now);
        #[cfg(all(feature = "iperf2-tcp", not(feature = "iperf2")))]
        {
            let (handle, server) = &mut self.iperf2;
            let micros = crate::socket::micros(now);
            server.serve(sockets.get_mut::<tcp::Socket>(*handle), micros);
        }
        #[cfg(feature = "iperf2")]
        {
            // iperf3 claimed the memory: iperf 2 gives back its idle shares, and iperf3 lends
            // them to its data sockets at once (its client's streams follow CREATE_STREAMS).
            let yields = self
                .memory
                .bytes
                .must_yield(crate::data_memory::Tenant::Iperf2);
            self.iperf2.poll(sockets, &mut self.memory, now);
            #[cfg(feature = "iperf3")]
            if yields {
                self.iperf.poll_lent(sockets, &mut self.memory, now);
            }
            #[cfg(not(feature = "iperf3"))]
            let _ = yields;
        }
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
        #[cfg(feature = "iperf2")]
        let iperf2 = self.iperf2.poll_at();
        #[cfg(all(feature = "iperf2-tcp", not(feature = "iperf2")))]
        let iperf2 = self.iperf2.1.poll_at().map(crate::socket::instant);
        #[cfg(not(feature = "iperf2-tcp"))]
        let iperf2 = None;
        #[cfg(feature = "iperf3")]
        let iperf = self.iperf.poll_at();
        #[cfg(not(feature = "iperf3"))]
        let iperf = None;
        [iperf, iperf2, echo, idle].into_iter().flatten().min()
    }
}
