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

use super::memory::SharedMemory;
#[cfg(feature = "http")]
use super::HTTP_SOCKETS;
use super::{IperfBuffers, TcpBuffers, UdpBuffers};
use crate::data_memory::{DataPlan, MIN_RX};

/// iperf 2's buffers, or a stand-in in a build without it (`IperfMemory::buffers` gives
/// `None` then).
#[cfg(feature = "iperf2")]
pub use super::Iperf2Buffers;
/// iperf 2's buffers: none in a build without linklab-perf's feature `iperf2`.
#[cfg(not(feature = "iperf2"))]
pub enum Iperf2Buffers {}

/// The largest UDP payload an Ethernet frame carries unfragmented (1500 − 20 − 8): one slot
/// of a UDP socket's buffers in [`IperfMemory`] and [`EchoMemory`] (embassy-net's smoltcp
/// does not reassemble fragments, so larger datagrams never arrive whole).
pub const MAX_UDP_PAYLOAD: usize = 1472;

/// Defines, in the calling crate, the embassy-executor tasks that run linklab-perf's apps,
/// one task per app (each woken only by its own sockets):
///
/// - `iperf_task(stack, IperfBuffers<'static, N>)`: the iperf3 server (5201),
/// - `iperf2_task(stack, Iperf2Buffers)` (linklab-perf's feature `iperf2`): the iperf 2
///   server (5001), over the data memory it shares with iperf3's,
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
/// # #[cfg(all(feature = "http", feature = "iperf2"))]
/// # mod example {
/// use embassy_executor::{SpawnError, Spawner};
/// use embassy_net::Stack;
/// use linklab_perf::embassy::{AppCounters, AppStats, IperfMemory, SharedMemory};
/// use static_cell::ConstStaticCell;
///
/// static COUNTERS: AppCounters = AppCounters::new();
/// // Six TCP sockets (two control, four data), a data memory of two streams.
/// static IPERF: ConstStaticCell<IperfMemory<6, 2, 8192, 4096, 4, 2048>> =
///     ConstStaticCell::new(IperfMemory::new());
/// // The data memory as the two iperf servers' tasks share it.
/// static DATA_MEMORY: SharedMemory = SharedMemory::new();
///
/// linklab_perf::embassy_app_tasks! {
///     iperf_sockets: 6,
///     counters: &COUNTERS,
///     gate: None,
///     routes: |stack| AppStats::new("my-board", &COUNTERS, stack),
/// }
///
/// pub fn start_iperf(spawner: Spawner, stack: Stack<'static>) -> Result<(), SpawnError> {
///     let (iperf, iperf2) = IPERF.take().buffers(&DATA_MEMORY);
///     spawner.spawn(iperf_task(stack, iperf)?);
///     if let Some(b) = iperf2 {
///         spawner.spawn(iperf2_task(stack, b)?);
///     }
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

        $crate::__iperf2_task! {
            counters: $counters,
            gate: $gate
            $(, wrap: $wrap)?
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

/// The iperf 2 task of [`embassy_app_tasks!`](crate::embassy_app_tasks) (linklab-perf's
/// feature `iperf2`; nothing without it).
#[cfg(feature = "iperf2")]
#[doc(hidden)]
#[macro_export]
macro_rules! __iperf2_task {
    (counters: $counters:expr, gate: $gate:expr $(, wrap: $wrap:path)?) => {
        /// linklab-perf's iperf 2 server (port 5001), in a task of its own.
        #[allow(dead_code)]
        #[::embassy_executor::task]
        async fn iperf2_task(
            stack: ::embassy_net::Stack<'static>,
            buffers: $crate::embassy::Iperf2Buffers,
        ) -> ! {
            let app = $crate::embassy::iperf2_server::<{ $crate::embassy::IPERF2_SOCKETS }>(
                stack, buffers, $counters, $gate,
            );
            $crate::embassy_app_tasks!(@wrap $($wrap)?; app).await
        }
    };
}

/// The iperf 2 task of [`embassy_app_tasks!`](crate::embassy_app_tasks): none in a build
/// without linklab-perf's feature `iperf2`.
#[cfg(not(feature = "iperf2"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __iperf2_task {
    ($($t:tt)*) => {};
}

/// Spawns the iperf 2 task over `buffers` (linklab-perf's feature `iperf2`; nothing without
/// it).
#[cfg(feature = "iperf2")]
#[doc(hidden)]
#[macro_export]
macro_rules! __spawn_iperf2 {
    ($spawner:expr, $stack:expr, $buffers:expr) => {
        if let Some(b) = $buffers {
            $spawner.spawn(iperf2_task($stack, b)?);
        }
    };
}

/// Spawns the iperf 2 task: nothing in a build without linklab-perf's feature `iperf2`.
#[cfg(not(feature = "iperf2"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __spawn_iperf2 {
    ($spawner:expr, $stack:expr, $buffers:expr) => {
        let _ = $buffers;
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
///   iperf3 task (and, with linklab-perf's feature `iperf2`, the iperf 2 task over the same
///   data memory) if `IPERF`, the HTTP and echo tasks if `HTTP_ECHO`, each over its static
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
///     iperf: IperfMemory<6, 2, { 10 * 1460 }, { 4 * 1460 }, 4, 2048>,
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
        static DATA_MEMORY: $crate::embassy::SharedMemory = $crate::embassy::SharedMemory::new();
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
                let (iperf, iperf2) = IPERF_MEMORY.take().buffers(&DATA_MEMORY);
                spawner.spawn(iperf_task(stack, iperf)?);
                $crate::__spawn_iperf2!(spawner, stack, iperf2);
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

/// iperf 2's TCP sockets on embassy-net: two streams, or a stream and its `-d` connect-back,
/// and one listening for the next stream or client.
pub const IPERF2_SOCKETS: usize = 3;

/// One chunk of the iperf servers' data memory: a window, a send buffer, and the four bytes
/// a receive ring's start 3 mod 4 takes (`crate::embassy::iperf`'s `RX_SKEW`).
#[repr(C)]
struct Chunk<const RX: usize, const TX: usize> {
    rx: [u8; RX],
    tx: [u8; TX],
    skew: [u8; 4],
}

/// The iperf servers' buffers as one static: `N` TCP sockets for iperf3 (two control
/// sockets, `N - 2` data sockets: the most streams a test may have) and the data memory its
/// data sockets, and iperf 2's (feature `iperf2`, [`IPERF2_SOCKETS`]), are lent while they
/// carry a test — `CHUNKS` chunks of a receive window of `RX` bytes and a send buffer of `TX`
/// bytes (what a `-R` stream keeps in flight), each a stream's when the test has no more
/// streams than chunks, shared out equally when it has more
/// ([`crate::data_memory::stream_share`]); iperf3's UDP socket holding `UDP` datagrams of
/// [`MAX_UDP_PAYLOAD`] each way (and iperf 2's UDP socket that many records, its bytes a
/// share); `JSON` bytes for the control JSON each way (a stock client's parameters are ~300
/// bytes, the results ~350 per stream). Zeroed, so a `static` of it is `.bss`:
/// `static IPERF: ConstStaticCell<IperfMemory<…>> = ConstStaticCell::new(IperfMemory::new());`
pub struct IperfMemory<
    const N: usize,
    const CHUNKS: usize,
    const RX: usize,
    const TX: usize,
    const UDP: usize,
    const JSON: usize,
> {
    control_rx: [[u8; MIN_RX]; 2],
    control_tx: [[u8; CONTROL_TX]; 2],
    data: [Chunk<RX, TX>; CHUNKS],
    #[cfg_attr(not(feature = "iperf-udp"), allow(dead_code))]
    udp: UdpMemory<UDP>,
    #[cfg_attr(not(feature = "iperf2"), allow(dead_code))]
    udp2_meta: MaybeUninit<[[PacketMetadata; UDP]; 2]>,
    json_rx: [u8; JSON],
    json_tx: [u8; JSON],
}

/// Send buffer of each iperf3 control socket (one stream's results are ~350 bytes).
const CONTROL_TX: usize = 512;

impl<
        const N: usize,
        const CHUNKS: usize,
        const RX: usize,
        const TX: usize,
        const UDP: usize,
        const JSON: usize,
    > IperfMemory<N, CHUNKS, RX, TX, UDP, JSON>
{
    /// The iperf3 server's TCP sockets, `N`.
    pub const TCP_SOCKETS: usize = N;
    /// The sockets these buffers make (a count for embassy-net's `StackResources`):
    /// iperf3's, its UDP socket with feature `iperf-udp`, iperf 2's `IPERF2_SOCKETS + 1`
    /// with feature `iperf2`.
    pub const SOCKETS: usize = N
        + cfg!(feature = "iperf-udp") as usize
        + cfg!(feature = "iperf2") as usize * (IPERF2_SOCKETS + 1);

    /// All zero.
    pub const fn new() -> Self {
        IperfMemory {
            control_rx: [[0; MIN_RX]; 2],
            control_tx: [[0; CONTROL_TX]; 2],
            data: [const {
                Chunk {
                    rx: [0; RX],
                    tx: [0; TX],
                    skew: [0; 4],
                }
            }; CHUNKS],
            udp: UdpMemory::new(),
            udp2_meta: MaybeUninit::uninit(),
            json_rx: [0; JSON],
            json_tx: [0; JSON],
        }
    }

    /// The buffers, lent to [`iperf_server`](super::iperf_server) and (feature `iperf2`)
    /// [`iperf2_server`](super::iperf2_server), the data memory through `memory` (given its
    /// bytes here: once).
    pub fn buffers(
        &'static mut self,
        memory: &'static SharedMemory,
    ) -> (IperfBuffers<'static, N>, Option<Iperf2Buffers>) {
        let bytes = core::mem::size_of::<[Chunk<RX, TX>; CHUNKS]>();
        // SAFETY: the chunks are byte arrays (`repr(C)`, alignment 1, no padding), so the
        // `data` field is `bytes` initialised bytes, borrowed mutably for 'static here.
        let data =
            unsafe { core::slice::from_raw_parts_mut(self.data.as_mut_ptr().cast::<u8>(), bytes) };
        memory.init(data);
        let plan = DataPlan {
            bytes,
            window: RX,
            tx: TX,
            udp_rx: RX,
            per_stream: 4,
        };
        let [c0, c1] = &mut self.control_rx;
        let [t0, t1] = &mut self.control_tx;
        #[cfg(feature = "iperf2")]
        let iperf2 = {
            let [rx_meta, tx_meta] = self.udp2_meta.write([[PacketMetadata::EMPTY; UDP]; 2]);
            Some(Iperf2Buffers {
                memory,
                udp_meta: [rx_meta, tx_meta],
                sizes: crate::iperf2::pool::Iperf2Sizes {
                    window: RX,
                    tx: TX,
                    udp_rx: RX,
                    udp_tx: TX,
                },
            })
        };
        #[cfg(not(feature = "iperf2"))]
        let iperf2 = None;
        (
            IperfBuffers {
                control: [TcpBuffers { rx: c0, tx: t0 }, TcpBuffers { rx: c1, tx: t1 }],
                memory,
                plan,
                #[cfg(feature = "iperf-udp")]
                udp: self.udp.buffers(),
                json_rx: &mut self.json_rx,
                json_tx: &mut self.json_tx,
            },
            iperf2,
        )
    }
}

impl<
        const N: usize,
        const CHUNKS: usize,
        const RX: usize,
        const TX: usize,
        const UDP: usize,
        const JSON: usize,
    > Default for IperfMemory<N, CHUNKS, RX, TX, UDP, JSON>
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
