//! The board-independent part of an embassy firmware that serves the apps: the three
//! embassy-executor tasks ([`embassy_app_tasks!`](crate::embassy_app_tasks), defined in the
//! firmware's crate, as embassy-executor wants), static storage for the apps' buffers sized by
//! the board ([`IperfMemory`], [`HttpMemory`], [`EchoMemory`]: all in `.bss`, no heap) with the
//! tasks over it and their spawning ([`embassy_apps!`](crate::embassy_apps)), the static IPv4
//! configuration, and the "serving at" line once the stack has an address ([`announce`]).
//! linklab's emulated embassy images and the real-board examples (`examples/boards/`) run the
//! apps through this one piece of code; what differs between them is the board: its HAL, its
//! driver, its buffer sizes.

use core::mem::MaybeUninit;

use embassy_net::udp::PacketMetadata;
use embassy_net::{Config, Ipv4Address, Ipv4Cidr, Stack, StaticConfigV4};

#[cfg(feature = "http")]
use super::HTTP_SOCKETS;
use super::{IperfBuffers, TcpBuffers, UdpBuffers};

/// The largest UDP payload an Ethernet frame carries unfragmented (1500 − 20 − 8): one slot
/// of a UDP socket's buffers in [`IperfMemory`] and [`EchoMemory`] (embassy-net's smoltcp
/// does not reassemble fragments, so larger datagrams never arrive whole).
pub const MAX_UDP_PAYLOAD: usize = 1472;

/// Defines, in the calling crate, the embassy-executor tasks that run linklab-perf's apps,
/// one task per app (each woken only by its own sockets):
///
/// - `iperf_task(stack, IperfBuffers<'static, N>)`: the iperf3 server (5201),
/// - `http_task(stack, [TcpBuffers<'static>; HTTP_SOCKETS])`: the bench files and the routes
///   (80),
/// - `echo_task(stack, TcpBuffers<'static>, UdpBuffers<'static>)`: TCP and UDP echo (7).
///
/// Each returns embassy-executor's spawn token; the caller spawns those it wants (a task
/// left unspawned costs no RAM: its storage is linked out). The caller depends on
/// `embassy-executor` and `embassy-net`, as every embassy firmware does.
///
/// - `iperf_sockets`: the iperf3 server's TCP sockets, `N` (see [`IperfBuffers`]);
/// - `counters`: a `&'static` [`AppCounters`](super::AppCounters) the apps count into;
/// - `gate`: `Some(&'static ServiceGate)` when the driver holds frames for the apps
///   ([`ServiceGate`](super::ServiceGate)), else `None`;
/// - `routes`: a closure from the `Stack` to the HTTP server's extra routes (a
///   [`Routes`](crate::http::Routes) value, e.g. [`AppStats`](super::AppStats) for `/stats`);
/// - `wrap` (optional): a function every app's future goes through, e.g. one that measures
///   the apps' share of the CPU.
///
/// ```no_run
/// # #[cfg(feature = "http")]
/// # mod example {
/// use embassy_executor::{SpawnError, Spawner};
/// use embassy_net::Stack;
/// use linklab_perf::embassy::{AppCounters, AppStats, IperfMemory};
/// use static_cell::ConstStaticCell;
///
/// static COUNTERS: AppCounters = AppCounters::new();
/// static IPERF: ConstStaticCell<IperfMemory<4, 8192, 4096, 4, 2048>> =
///     ConstStaticCell::new(IperfMemory::new());
///
/// linklab_perf::embassy_app_tasks! {
///     iperf_sockets: 4,
///     counters: &COUNTERS,
///     gate: None,
///     routes: |stack| AppStats::new("my-board", &COUNTERS, stack),
/// }
///
/// pub fn start_iperf(spawner: Spawner, stack: Stack<'static>) -> Result<(), SpawnError> {
///     spawner.spawn(iperf_task(stack, IPERF.take().buffers())?);
///     Ok(())
/// }
/// # }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! embassy_app_tasks {
    (
        iperf_sockets: $n:expr,
        counters: $counters:expr,
        gate: $gate:expr,
        routes: $routes:expr
        $(, wrap: $wrap:path)?
        $(,)?
    ) => {
        /// linklab-perf's iperf3 server (port 5201), in a task of its own.
        #[allow(dead_code)]
        #[::embassy_executor::task]
        async fn iperf_task(
            stack: ::embassy_net::Stack<'static>,
            buffers: $crate::embassy::IperfBuffers<'static, { $n }>,
        ) -> ! {
            let app = $crate::embassy::iperf_server(stack, buffers, $counters, $gate);
            $crate::embassy_app_tasks!(@wrap $($wrap)?; app).await
        }

        /// linklab-perf's HTTP server (port 80: the bench files and the routes), in a task of
        /// its own.
        #[allow(dead_code)]
        #[::embassy_executor::task]
        async fn http_task(
            stack: ::embassy_net::Stack<'static>,
            buffers: [$crate::embassy::TcpBuffers<'static>; $crate::embassy::HTTP_SOCKETS],
        ) -> ! {
            let mut routes = ($routes)(stack);
            let app = $crate::embassy::http_server(stack, buffers, &mut routes, $counters, $gate);
            $crate::embassy_app_tasks!(@wrap $($wrap)?; app).await
        }

        /// linklab-perf's TCP and UDP echo (port 7), in a task of its own.
        #[allow(dead_code)]
        #[::embassy_executor::task]
        async fn echo_task(
            stack: ::embassy_net::Stack<'static>,
            tcp: $crate::embassy::TcpBuffers<'static>,
            udp: $crate::embassy::UdpBuffers<'static>,
        ) -> ! {
            let app = $crate::embassy::echo_server(stack, tcp, udp, $counters, $gate);
            $crate::embassy_app_tasks!(@wrap $($wrap)?; app).await
        }
    };
    (@wrap ; $app:expr) => {
        $app
    };
    (@wrap $wrap:path; $app:expr) => {
        $wrap($app)
    };
}

/// Everything an embassy firmware needs to serve the apps from buffers sized by the board, in
/// the calling crate: a `static` of each of the three buffer types given (`.bss`: see
/// [`IperfMemory`], [`HttpMemory`], [`EchoMemory`]), the three tasks of
/// [`embassy_app_tasks!`](crate::embassy_app_tasks), and
///
/// - `const fn app_sockets(iperf: bool, http_echo: bool) -> usize`: the sockets the apps
///   chosen take (for embassy-net's `StackResources`);
/// - `fn spawn_apps::<IPERF, HTTP_ECHO>(spawner, stack) -> Result<(), SpawnError>`: spawns the
///   iperf3 task if `IPERF`, the HTTP and echo tasks if `HTTP_ECHO`, each over its static
///   (once: a second call panics, as the buffers are lent for good). An app left out costs
///   neither its buffers nor its code: they are linked out.
///
/// The caller depends on `embassy-executor`, `embassy-net` and `static_cell`, as embassy
/// firmwares do.
///
/// ```no_run
/// # #[cfg(all(feature = "http", feature = "echo"))]
/// # mod example {
/// use embassy_executor::Spawner;
/// use embassy_net::{Stack, StackResources};
/// use linklab_perf::embassy::{AppCounters, AppStats, EchoMemory, HttpMemory, IperfMemory};
///
/// static COUNTERS: AppCounters = AppCounters::new();
/// linklab_perf::embassy_apps! {
///     iperf: IperfMemory<4, { 10 * 1460 }, { 4 * 1460 }, 4, 2048>,
///     http: HttpMemory<1024, { 4 * 1460 }>,
///     echo: EchoMemory<1024, 2>,
///     counters: &COUNTERS,
///     gate: None,
///     routes: |stack| AppStats::new("my-board", &COUNTERS, stack),
/// }
///
/// /// For `embassy_net::new`.
/// pub type Resources = StackResources<{ app_sockets(true, true) }>;
///
/// /// After `embassy_net::new`.
/// pub fn start(spawner: Spawner, stack: Stack<'static>) {
///     spawn_apps::<true, true>(spawner, stack).unwrap();
/// }
/// # }
/// # fn main() {}
/// ```
#[macro_export]
macro_rules! embassy_apps {
    (
        iperf: $iperf:ty,
        http: $http:ty,
        echo: $echo:ty,
        counters: $counters:expr,
        gate: $gate:expr,
        routes: $routes:expr $(,)?
    ) => {
        static IPERF_MEMORY: ::static_cell::ConstStaticCell<$iperf> =
            ::static_cell::ConstStaticCell::new(<$iperf>::new());
        static HTTP_MEMORY: ::static_cell::ConstStaticCell<$http> =
            ::static_cell::ConstStaticCell::new(<$http>::new());
        static ECHO_MEMORY: ::static_cell::ConstStaticCell<$echo> =
            ::static_cell::ConstStaticCell::new(<$echo>::new());

        $crate::embassy_app_tasks! {
            iperf_sockets: <$iperf>::TCP_SOCKETS,
            counters: $counters,
            gate: $gate,
            routes: $routes,
        }

        /// The sockets linklab-perf's apps take: iperf3's if `iperf`, HTTP's and echo's if
        /// `http_echo`.
        #[allow(dead_code)]
        const fn app_sockets(iperf: bool, http_echo: bool) -> usize {
            iperf as usize * <$iperf>::SOCKETS
                + http_echo as usize * (<$http>::SOCKETS + <$echo>::SOCKETS)
        }

        /// Spawns linklab-perf's iperf3 task if `IPERF`, its HTTP and echo tasks if
        /// `HTTP_ECHO`, over `stack`, each with its static buffers (once).
        fn spawn_apps<const IPERF: bool, const HTTP_ECHO: bool>(
            spawner: ::embassy_executor::Spawner,
            stack: ::embassy_net::Stack<'static>,
        ) -> ::core::result::Result<(), ::embassy_executor::SpawnError> {
            if IPERF {
                spawner.spawn(iperf_task(stack, IPERF_MEMORY.take().buffers())?);
            }
            if HTTP_ECHO {
                spawner.spawn(http_task(stack, HTTP_MEMORY.take().buffers())?);
                let (tcp, udp) = ECHO_MEMORY.take().buffers();
                spawner.spawn(echo_task(stack, tcp, udp)?);
            }
            Ok(())
        }
    };
}

/// The iperf3 server's buffers as one static: `N` TCP sockets, each with a receive buffer of
/// `RX` bytes (the TCP window a data stream gets) and a send buffer of `TX` bytes (what a
/// `-R` stream keeps in flight); one UDP socket holding `UDP` datagrams of
/// [`MAX_UDP_PAYLOAD`] each way; `JSON` bytes for the control JSON each way (a stock client's
/// parameters are ~300 bytes, the results ~350 per stream). Zeroed, so a `static` of it is
/// `.bss`: `static IPERF: ConstStaticCell<IperfMemory<…>> = ConstStaticCell::new(IperfMemory::new());`
pub struct IperfMemory<
    const N: usize,
    const RX: usize,
    const TX: usize,
    const UDP: usize,
    const JSON: usize,
> {
    tcp_rx: [[u8; RX]; N],
    tcp_tx: [[u8; TX]; N],
    #[cfg_attr(not(feature = "iperf-udp"), allow(dead_code))]
    udp: UdpMemory<UDP>,
    json_rx: [u8; JSON],
    json_tx: [u8; JSON],
}

impl<const N: usize, const RX: usize, const TX: usize, const UDP: usize, const JSON: usize>
    IperfMemory<N, RX, TX, UDP, JSON>
{
    /// The iperf3 server's TCP sockets, `N`.
    pub const TCP_SOCKETS: usize = N;
    /// The sockets these buffers make (a count for embassy-net's `StackResources`): the UDP
    /// socket only with feature `iperf-udp`.
    pub const SOCKETS: usize = N + cfg!(feature = "iperf-udp") as usize;

    /// All zero.
    pub const fn new() -> Self {
        IperfMemory {
            tcp_rx: [[0; RX]; N],
            tcp_tx: [[0; TX]; N],
            udp: UdpMemory::new(),
            json_rx: [0; JSON],
            json_tx: [0; JSON],
        }
    }

    /// The buffers, lent to [`iperf_server`](super::iperf_server).
    pub fn buffers(&mut self) -> IperfBuffers<'_, N> {
        let mut tx = self.tcp_tx.iter_mut();
        IperfBuffers {
            tcp: self.tcp_rx.each_mut().map(|rx| TcpBuffers {
                rx,
                tx: tx.next().map_or(&mut [][..], |t| &mut t[..]),
            }),
            #[cfg(feature = "iperf-udp")]
            udp: self.udp.buffers(),
            json_rx: &mut self.json_rx,
            json_tx: &mut self.json_tx,
        }
    }
}

impl<const N: usize, const RX: usize, const TX: usize, const UDP: usize, const JSON: usize> Default
    for IperfMemory<N, RX, TX, UDP, JSON>
{
    fn default() -> Self {
        Self::new()
    }
}

/// The HTTP server's buffers as one static: [`HTTP_SOCKETS`] sockets, each with `RX` bytes
/// for a request head and `TX` bytes of send buffer (what a download keeps in flight).
#[cfg(feature = "http")]
pub struct HttpMemory<const RX: usize, const TX: usize> {
    rx: [[u8; RX]; HTTP_SOCKETS],
    tx: [[u8; TX]; HTTP_SOCKETS],
}

#[cfg(feature = "http")]
impl<const RX: usize, const TX: usize> HttpMemory<RX, TX> {
    /// The sockets these buffers make.
    pub const SOCKETS: usize = HTTP_SOCKETS;

    /// All zero.
    pub const fn new() -> Self {
        HttpMemory {
            rx: [[0; RX]; HTTP_SOCKETS],
            tx: [[0; TX]; HTTP_SOCKETS],
        }
    }

    /// The buffers, lent to [`http_server`](super::http_server).
    pub fn buffers(&mut self) -> [TcpBuffers<'_>; HTTP_SOCKETS] {
        let mut tx = self.tx.iter_mut();
        self.rx.each_mut().map(|rx| TcpBuffers {
            rx,
            tx: tx.next().map_or(&mut [][..], |t| &mut t[..]),
        })
    }
}

#[cfg(feature = "http")]
impl<const RX: usize, const TX: usize> Default for HttpMemory<RX, TX> {
    fn default() -> Self {
        Self::new()
    }
}

/// Echo's buffers as one static: the TCP socket's `TCP` bytes each way, the UDP socket's
/// `UDP` datagrams of [`MAX_UDP_PAYLOAD`] each way.
#[cfg(feature = "echo")]
pub struct EchoMemory<const TCP: usize, const UDP: usize> {
    tcp_rx: [u8; TCP],
    tcp_tx: [u8; TCP],
    udp: UdpMemory<UDP>,
}

#[cfg(feature = "echo")]
impl<const TCP: usize, const UDP: usize> EchoMemory<TCP, UDP> {
    /// The sockets these buffers make.
    pub const SOCKETS: usize = 2;

    /// All zero.
    pub const fn new() -> Self {
        EchoMemory {
            tcp_rx: [0; TCP],
            tcp_tx: [0; TCP],
            udp: UdpMemory::new(),
        }
    }

    /// The TCP and UDP buffers, lent to [`echo_server`](super::echo_server).
    pub fn buffers(&mut self) -> (TcpBuffers<'_>, UdpBuffers<'_>) {
        let tcp = TcpBuffers {
            rx: &mut self.tcp_rx,
            tx: &mut self.tcp_tx,
        };
        (tcp, self.udp.buffers())
    }
}

#[cfg(feature = "echo")]
impl<const TCP: usize, const UDP: usize> Default for EchoMemory<TCP, UDP> {
    fn default() -> Self {
        Self::new()
    }
}

/// A UDP socket's buffers: `P` datagrams of [`MAX_UDP_PAYLOAD`] each way. The packet records
/// are written when the buffers are lent: left uninitialised until then, they keep the static
/// all zero, so it lands in `.bss` (a record's empty value is not all zero bytes, and one such
/// byte would put the whole static, buffers and all, in `.data`: a copy in flash).
struct UdpMemory<const P: usize> {
    rx_meta: MaybeUninit<[PacketMetadata; P]>,
    rx: [[u8; MAX_UDP_PAYLOAD]; P],
    tx_meta: MaybeUninit<[PacketMetadata; P]>,
    tx: [[u8; MAX_UDP_PAYLOAD]; P],
}

impl<const P: usize> UdpMemory<P> {
    const fn new() -> Self {
        UdpMemory {
            rx_meta: MaybeUninit::uninit(),
            rx: [[0; MAX_UDP_PAYLOAD]; P],
            tx_meta: MaybeUninit::uninit(),
            tx: [[0; MAX_UDP_PAYLOAD]; P],
        }
    }

    #[cfg_attr(not(any(feature = "echo", feature = "iperf-udp")), allow(dead_code))]
    fn buffers(&mut self) -> UdpBuffers<'_> {
        UdpBuffers {
            rx_meta: self.rx_meta.write([PacketMetadata::EMPTY; P]),
            rx: self.rx.as_flattened_mut(),
            tx_meta: self.tx_meta.write([PacketMetadata::EMPTY; P]),
            tx: self.tx.as_flattened_mut(),
        }
    }
}

/// embassy-net's configuration for the static address `ip`/`prefix`, with no gateway (a
/// bench is one link: the device answers whoever is on it).
pub fn static_ipv4(ip: [u8; 4], prefix: u8) -> Config {
    let [a, b, c, d] = ip;
    Config::ipv4_static(StaticConfigV4 {
        address: Ipv4Cidr::new(Ipv4Address::new(a, b, c, d), prefix),
        gateway: None,
        dns_servers: Default::default(),
    })
}

/// Waits until `stack` has its link and an IPv4 address (static, or from DHCP), logs what to
/// run against it, and returns the address.
pub async fn announce(stack: Stack<'_>, board: &str) -> Option<Ipv4Cidr> {
    stack.wait_link_up().await;
    stack.wait_config_up().await;
    let address = stack.config_v4().map(|c| c.address);
    if let Some(cidr) = address {
        let ip = cidr.address();
        linklab_fmt::info!(
            "linklab-perf: {} serving at {}: iperf3 -c {} (5201), http://{}/stats (80), echo (7)",
            board,
            cidr,
            ip,
            ip
        );
    }
    address
}
