//! The board-independent embassy image (feature `embassy`): embassy-executor, embassy-net
//! over linklab-mac's `EmbassyMac` on the board's NIC (the same RX queue and interrupt
//! path as the main loop), and linklab-perf's embassy apps — iperf3 (5201), HTTP with the
//! bench files and `/stats` (80), TCP and UDP echo (7), ICMP — each in its own task, over
//! the same static buffer sizes as the main-loop image ([`crate::memory`]). Logs go through
//! defmt on the board's console ([`logger`]).
//!
//! A board starts its timer, console and NIC, implements `embassy_time_driver::Driver` on
//! its timer with [`time::Alarms`], and calls [`run`] with an [`EmbassyBoard`]. `/stats` is
//! the main loop's document: the MAC's counters with the conservation law, the apps'
//! counters, the CPU's work per layer (`stack`: embassy-net's runner task; `apps`: the app
//! tasks; `main`: every executor pass; `isr`: the NIC's interrupt and the time driver's
//! alarm) and the stack's peak.

mod driver;
mod executor;
pub mod logger;
pub mod time;

use core::cell::Cell;

use critical_section::Mutex;
use embassy_net::udp::PacketMetadata;
use embassy_net::{Runner, StackResources};
use linklab_mac::embassy::{EmbassyMac, EmbassyTimeClock};
use linklab_mac::{Counters, Mac, MacAddr, MacConfig, PhyTx, RxFormat, TxFormat};
use linklab_perf::data_memory::DataPlan;
use linklab_perf::device_config::DeviceConfig;
use linklab_perf::embassy::{
    static_ipv4, AppCounters, Iperf2Buffers, IperfBuffers, ServiceGate, SharedMemory, TcpBuffers,
    UdpBuffers,
};
use linklab_perf::http::{RouteBody, Routes};
use linklab_perf::iperf2::pool::Iperf2Sizes;
use linklab_perf::socket::TcpState;
use static_cell::StaticCell;

use crate::memory::*;
use crate::stats::{Snapshot, TcpEntry, TcpList};
use crate::RX_QUEUE;
use driver::{AppGate, BoardLink, NetDriver};
pub use executor::{measured, pender, Layer, Measured};

/// What a board gives the embassy image, as plain functions (the apps' tasks and the
/// `/stats` route reach them without the board's type).
#[derive(Clone, Copy)]
pub struct EmbassyBoard {
    /// Board name, in `/stats` and on the console.
    pub name: &'static str,
    /// Nanoseconds since boot.
    pub now_ns: fn() -> u64,
    /// The CPU's work counter: instructions retired where the CPU counts them, else
    /// nanoseconds (under QEMU's `-icount shift=0` one nanosecond awake is one instruction).
    pub work: fn() -> u64,
    /// `work` counts instructions.
    pub counts_instructions: bool,
    /// The controller's link bit.
    pub link_up: fn() -> bool,
    /// Masks interrupts; unless `ready()` (or an interrupt is pending), waits for one (WFI);
    /// unmasks.
    pub idle: fn(ready: fn() -> bool),
    /// Writes bytes to the console UART (blocking): the defmt frames.
    pub console: fn(&[u8]),
    /// The lowest address the stack may grow down to (for stack painting).
    pub stack_limit: usize,
    /// Where the stack starts (the reset code's stack pointer), so the stack's peak counts
    /// every frame down from there (see [`crate::Board::stack_top`]).
    pub stack_top: Option<usize>,
}

/// The board, for the tasks (set once by [`run`]).
static BOARD: Mutex<Cell<Option<EmbassyBoard>>> = Mutex::new(Cell::new(None));

fn the_board() -> Option<EmbassyBoard> {
    critical_section::with(|cs| BOARD.borrow(cs).get())
}

/// The apps' counters and socket list.
static COUNTERS: AppCounters = AppCounters::new();
/// The driver's gate (see [`ServiceGate`]).
static GATE: ServiceGate = ServiceGate::new();

/// Reads the configuration blob at `addr` (placed there by `linklab emu` through QEMU's
/// loader), or the default with a log line saying why.
///
/// # Safety
/// `addr..addr + linklab_perf::device_config::CONFIG_LEN` must be readable memory.
pub unsafe fn config(addr: usize) -> DeviceConfig {
    // SAFETY: forwarded from the caller.
    match unsafe { crate::config::read_config(addr) } {
        Ok(c) => c,
        Err(e) => {
            let why = crate::config::config_problem(e);
            defmt::warn!("linklab firmware: {=str}, using 198.18.0.2/24", why);
            DeviceConfig::DEFAULT
        }
    }
}

/// The MAC's counters for `/stats`, as the image's driver publishes them (set once by
/// [`serve`]).
static MAC_COUNTERS: Mutex<Cell<Option<CountersSource>>> = Mutex::new(Cell::new(None));

/// Where the MAC's counters come from.
type CountersSource = fn() -> Counters;

/// The apps' service gate, for a driver of the board's own that holds SYNs and UDP echo
/// requests for their apps (as linklab-mac's does with it; see [`ServiceGate`]).
pub fn gate() -> &'static ServiceGate {
    &GATE
}

/// Runs the embassy image forever over [`RX_QUEUE`] (filled by the board's NIC interrupt
/// with aligned frames in `rx_format`) and the NIC's transmit side `phy` (plain frames):
/// linklab-mac's `EmbassyMac` as embassy-net's driver, then [`serve`].
/// The board's interrupts must be unmasked by then (the time driver's alarm among them).
pub fn run(
    board: EmbassyBoard,
    phy: &'static mut dyn PhyTx,
    rx_format: RxFormat,
    config: DeviceConfig,
) -> ! {
    let stack_paint = crate::stack::paint(board.stack_limit, board.stack_top);
    logger::set_console(board.console);
    let driver = mac_driver(&board, phy, rx_format, &config);
    let (stack, runner) = net_stack(&board, driver, &config);
    serve(
        board,
        stack_paint,
        stack,
        &config,
        driver::counters,
        move |spawner| {
            if net_task(runner).map(|t| spawner.spawn(t)).is_err() {
                defmt::error!("linklab firmware: a task could not be spawned");
            }
        },
    )
}

/// linklab-mac's MAC over [`RX_QUEUE`] and `phy` as embassy-net's driver, built in its own
/// frame: the MAC (its transmit buffer among it) is built on the stack before it moves into
/// its static, and that frame must not stay under the executor's for the image's life. Built
/// in `run`'s own frame it did: mps2-an385's embassy image peaked at 17 160 B of stack, 15 200
/// B this way (`linklab emu cost mps2-an385 --image embassy`).
#[inline(never)]
fn mac_driver(
    board: &EmbassyBoard,
    phy: &'static mut dyn PhyTx,
    rx_format: RxFormat,
    config: &DeviceConfig,
) -> &'static mut NetDriver {
    let mut mac = Mac::new(
        RX_QUEUE.consumer(),
        driver::DynPhy(phy),
        EmbassyTimeClock,
        MacConfig {
            rx_format,
            tx_format: TxFormat::Plain,
            ..MacConfig::aligned_fcs(MacAddr(config.mac))
        },
    );
    // As the main-loop images: the MAC verifies and fills IPv4/TCP/UDP checksums word-wise
    // (bad frames dropped and counted), so embassy-net's smoltcp does not.
    mac.set_checksum_offload(true);
    static DRIVER: StaticCell<NetDriver> = StaticCell::new();
    DRIVER.init(NetDriver::new(
        EmbassyMac::new(mac, BoardLink::new(board.link_up)).with_gate(AppGate(&GATE)),
    ))
}

/// embassy-net's stack over `driver` at the configured address, its resources static.
pub fn net_stack<D: embassy_net_driver::Driver>(
    board: &EmbassyBoard,
    driver: D,
    config: &DeviceConfig,
) -> (embassy_net::Stack<'static>, Runner<'static, D>) {
    let net_config = static_ipv4(config.ip, config.prefix);
    static RESOURCES: StaticCell<StackResources<SOCKETS>> = StaticCell::new();
    let m = config.mac;
    let seed = (board.now_ns)() ^ u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0]);
    embassy_net::new(
        driver,
        net_config,
        RESOURCES.init(StackResources::new()),
        seed,
    )
}

/// Runs the apps forever on embassy-net's `stack` over whatever driver the board has:
/// linklab-perf's embassy apps, each in its own task, over the static buffers, `/stats`
/// with the MAC's counters from `mac_counters`; `spawn_net` spawns embassy-net's runner
/// (its task is the driver's type's: an embassy task cannot be generic), counted with
/// [`measured`]`(`[`Layer::Stack`]`, ...)`. `stack_paint` is the stack as painted at the
/// image's start.
pub fn serve(
    board: EmbassyBoard,
    stack_paint: crate::stack::Stack,
    stack: embassy_net::Stack<'static>,
    config: &DeviceConfig,
    mac_counters: fn() -> Counters,
    spawn_net: impl FnOnce(embassy_executor::Spawner),
) -> ! {
    critical_section::with(|cs| {
        BOARD.borrow(cs).set(Some(board));
        MAC_COUNTERS.borrow(cs).set(Some(mac_counters));
    });
    logger::set_console(board.console);
    let Some(bytes) = crate::buffers::take_bytes() else {
        defmt::error!("linklab firmware: run() called twice");
        loop {
            (board.idle)(|| false);
        }
    };
    let crate::buffers::Bytes {
        echo_udp_rx,
        echo_udp_tx,
        echo_tcp_rx,
        echo_tcp_tx,
        http_rx: [h0, h1],
        http_tx: [t0, t1],
        iperf_control: [(c0_rx, c0_tx), (c1_rx, c1_tx)],
        iperf_data,
        iperf_udp_rx,
        iperf_udp_tx,
        json_rx,
        json_tx,
    } = bytes;
    static META: StaticCell<Meta> = StaticCell::new();
    let meta = META.init(Meta {
        echo_rx: [PacketMetadata::EMPTY; ECHO_UDP_PACKETS],
        echo_tx: [PacketMetadata::EMPTY; ECHO_UDP_PACKETS],
        iperf_rx: [PacketMetadata::EMPTY; IPERF_UDP_RX_PACKETS],
        iperf_tx: [PacketMetadata::EMPTY; IPERF_UDP_TX_PACKETS],
        iperf2_rx: [PacketMetadata::EMPTY; IPERF_UDP_RX_PACKETS],
        iperf2_tx: [PacketMetadata::EMPTY; IPERF_UDP_TX_PACKETS],
    });
    static DATA_MEMORY: SharedMemory = SharedMemory::new();
    DATA_MEMORY.init(iperf_data);
    let iperf = IperfBuffers {
        control: [
            TcpBuffers {
                rx: c0_rx,
                tx: c0_tx,
            },
            TcpBuffers {
                rx: c1_rx,
                tx: c1_tx,
            },
        ],
        memory: &DATA_MEMORY,
        plan: DataPlan {
            bytes: EMBASSY_IPERF_DATA,
            window: TCP_WINDOW,
            tx: IPERF_TCP_TX,
            udp_rx: TCP_WINDOW,
            per_stream: 4,
        },
        udp: UdpBuffers {
            rx_meta: &mut meta.iperf_rx,
            rx: iperf_udp_rx,
            tx_meta: &mut meta.iperf_tx,
            tx: iperf_udp_tx,
        },
        json_rx,
        json_tx,
    };
    let iperf2 = Iperf2Buffers {
        memory: &DATA_MEMORY,
        udp_meta: [&mut meta.iperf2_rx, &mut meta.iperf2_tx],
        sizes: Iperf2Sizes {
            window: TCP_WINDOW,
            tx: IPERF_TCP_TX,
            udp_rx: TCP_WINDOW,
            udp_tx: IPERF_TCP_TX,
        },
    };
    let http = [TcpBuffers { rx: h0, tx: t0 }, TcpBuffers { rx: h1, tx: t1 }];
    let echo_tcp = TcpBuffers {
        rx: echo_tcp_rx,
        tx: echo_tcp_tx,
    };
    let echo_udp = UdpBuffers {
        rx_meta: &mut meta.echo_rx,
        rx: echo_udp_rx,
        tx_meta: &mut meta.echo_tx,
        tx: echo_udp_tx,
    };

    announce(&board, config);
    executor::run(board, stack_paint, move |spawner| {
        spawn_net(spawner);
        // Each fails only if spawned twice; serve() runs once (the buffers were taken above).
        for token in [
            iperf_task(stack, iperf).map(|t| spawner.spawn(t)),
            iperf2_task(stack, iperf2).map(|t| spawner.spawn(t)),
            http_task(stack, http).map(|t| spawner.spawn(t)),
            echo_task(stack, echo_tcp, echo_udp).map(|t| spawner.spawn(t)),
        ] {
            if token.is_err() {
                defmt::error!("linklab firmware: a task could not be spawned");
            }
        }
    })
}

/// The boot line: the board, the address, the RX queue and the TCP window.
fn announce(board: &EmbassyBoard, config: &DeviceConfig) {
    let [a, b, c, d] = config.ip;
    defmt::info!(
        "linklab firmware: {=str} up (embassy), {}.{}.{}.{}/{}, {} frame RX queue, tcp window {}",
        board.name,
        a,
        b,
        c,
        d,
        config.prefix,
        QUEUE_FRAMES,
        TCP_WINDOW
    );
}

/// The UDP sockets' packet records (embassy-net's type).
struct Meta {
    echo_rx: [PacketMetadata; ECHO_UDP_PACKETS],
    echo_tx: [PacketMetadata; ECHO_UDP_PACKETS],
    iperf_rx: [PacketMetadata; IPERF_UDP_RX_PACKETS],
    iperf_tx: [PacketMetadata; IPERF_UDP_TX_PACKETS],
    iperf2_rx: [PacketMetadata; IPERF_UDP_RX_PACKETS],
    iperf2_tx: [PacketMetadata; IPERF_UDP_TX_PACKETS],
}

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, &'static mut NetDriver>) -> ! {
    measured(Layer::Stack, runner.run()).await
}

// The apps' three tasks, as every embassy firmware of linklab-perf's runs them (the examples
// in `examples/boards/` too), each poll counted to the apps' layer.
linklab_perf::embassy_app_tasks! {
    iperf_sockets: IPERF_TCP_SOCKETS,
    counters: &COUNTERS,
    gate: Some(&GATE),
    routes: |_| StatsRoute,
    wrap: app_work,
}

/// An app's future, its polls counted to [`Layer::Apps`].
fn app_work<F: core::future::Future>(app: F) -> Measured<F> {
    measured(Layer::Apps, app)
}

/// `GET /stats`: rendered into the buffer the HTTP server lends, from what the tasks
/// published.
struct StatsRoute;

impl Routes for StatsRoute {
    fn get(&mut self, path: &str, out: &mut [u8]) -> Option<RouteBody> {
        if path != "/stats" {
            return None;
        }
        let board = the_board()?;
        let len = Snapshot {
            board: board.name,
            mac: critical_section::with(|cs| MAC_COUNTERS.borrow(cs).get())
                .map_or_else(Counters::default, |counters| counters()),
            apps: COUNTERS.snapshot(),
            cpu: executor::cpu_figures(&board),
            link_up: (board.link_up)(),
            phy: None,
            sockets: &AppSockets,
            blast: None,
        }
        .write_json(out)?;
        Some(RouteBody {
            len,
            content_type: "application/json",
        })
    }
}

/// The apps' TCP sockets for `/stats` (port and state; embassy-net's queues are the apps'
/// to read, so they are left out).
struct AppSockets;

impl TcpList for AppSockets {
    fn each(&self, f: &mut dyn FnMut(TcpEntry)) {
        COUNTERS.sockets(|port, state| {
            if !matches!(state, TcpState::Listen | TcpState::Closed) {
                f(TcpEntry {
                    port,
                    state: state.name(),
                    queues: None,
                })
            }
        });
    }
}

/// Writes a panic's location as a defmt error, then halts. Call from the image's
/// `#[panic_handler]` (with interrupts masked).
pub fn panic(info: &core::panic::PanicInfo) {
    match info.location() {
        Some(l) => defmt::error!(
            "linklab firmware: panic at {=str}:{=u32}",
            l.file(),
            l.line()
        ),
        None => defmt::error!("linklab firmware: panic"),
    }
}
