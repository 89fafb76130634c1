//! linklab firmware for QEMU's xilinx-zynq-a9, embassy image: this package's bring-up (its
//! library), zynq7000-hal's embassy-net `Driver` for the GEM (behind `GemDevice`, which adds
//! the counters of `/stats`, QEMU's RX restart and linklab-perf's `ServiceGate`), embassy-net
//! 0.9.1, and linklab-perf's embassy apps — iperf3 (5201), HTTP with the bench files and
//! `/stats` (80), TCP and UDP echo (7), ICMP by embassy-net — each in its own task, on the
//! buffer sizes of the main-loop image (`linklab_firmware::memory`). Logs are defmt frames on
//! UART0, decoded by `linklab emu --embassy`.
#![no_std]
#![no_main]

use core::cell::Cell;

use embassy_net::udp::PacketMetadata;
use embassy_net::{Ipv4Address, Ipv4Cidr, Runner, Stack, StackResources, StaticConfigV4};
use fw_zynq7000::embassy::executor::{self, measured, Layer};
use fw_zynq7000::gem::{self, GemDevice, Rings};
use fw_zynq7000::{init, uart, wake, CONFIG_ADDR, TIMER};
use linklab_firmware::memory::*;
use linklab_firmware::stats::{Snapshot, TcpEntry, TcpList};
use linklab_perf::device_config::DeviceConfig;
use linklab_perf::embassy::{
    echo_server, http_server, iperf_server, AppCounters, IperfBuffers, ServiceGate, TcpBuffers,
    UdpBuffers,
};
use linklab_perf::http::{RouteBody, Routes};
use linklab_perf::socket::TcpState;
use static_cell::StaticCell;

/// The apps' counters and socket list.
static COUNTERS: AppCounters = AppCounters::new();
/// The driver's gate: a SYN or a UDP echo request waits in the GEM's ring until its app
/// made room for it.
static GATE: ServiceGate = ServiceGate::new();

/// Where the rings are, for `/stats` (set once, before the tasks run).
struct RingsCell(Cell<Option<Rings>>);

// SAFETY: one core, no interrupt taken.
unsafe impl Sync for RingsCell {}

static RINGS: RingsCell = RingsCell(Cell::new(None));

/// Bytes behind one iperf3 TCP socket's receive ring: the window, started 3 mod 4 so that
/// every segment after the 37-byte cookie lands on a word (as the main-loop image does).
const IPERF_RX_SKEW: usize = (4 - linklab_perf::iperf::wire::COOKIE_SIZE % 4) % 4;

/// Every socket buffer, word-aligned, in `.bss`.
#[repr(C, align(4))]
struct Bytes {
    echo_udp_rx: [u8; ECHO_UDP],
    echo_udp_tx: [u8; ECHO_UDP],
    echo_tcp_rx: [u8; ECHO_TCP],
    echo_tcp_tx: [u8; ECHO_TCP],
    http_rx: [[u8; HTTP_RX]; 2],
    http_tx: [[u8; HTTP_TX]; 2],
    iperf_rx: [[u8; TCP_WINDOW + 4]; IPERF_TCP_SOCKETS],
    iperf_tx: [[u8; IPERF_TCP_TX]; IPERF_TCP_SOCKETS],
    iperf_udp_rx: [u8; EMBASSY_IPERF_UDP_RX],
    iperf_udp_tx: [u8; EMBASSY_IPERF_UDP_TX],
    json_rx: [u8; IPERF_JSON],
    json_tx: [u8; IPERF_JSON],
}

/// The socket buffers: all zero, so in `.bss`, and never built on the stack (a `StaticCell`
/// initialised with the struct by value put its 60 KB on `main_entry`'s frame).
static mut BYTES: Bytes = Bytes {
    echo_udp_rx: [0; ECHO_UDP],
    echo_udp_tx: [0; ECHO_UDP],
    echo_tcp_rx: [0; ECHO_TCP],
    echo_tcp_tx: [0; ECHO_TCP],
    http_rx: [[0; HTTP_RX]; 2],
    http_tx: [[0; HTTP_TX]; 2],
    iperf_rx: [[0; TCP_WINDOW + 4]; IPERF_TCP_SOCKETS],
    iperf_tx: [[0; IPERF_TCP_TX]; IPERF_TCP_SOCKETS],
    iperf_udp_rx: [0; EMBASSY_IPERF_UDP_RX],
    iperf_udp_tx: [0; EMBASSY_IPERF_UDP_TX],
    json_rx: [0; IPERF_JSON],
    json_tx: [0; IPERF_JSON],
};

/// The UDP sockets' packet records (embassy-net's type).
struct Meta {
    echo_rx: [PacketMetadata; ECHO_UDP_PACKETS],
    echo_tx: [PacketMetadata; ECHO_UDP_PACKETS],
    iperf_rx: [PacketMetadata; IPERF_UDP_RX_PACKETS],
    iperf_tx: [PacketMetadata; IPERF_UDP_TX_PACKETS],
}

extern "C" {
    static _stack_limit: u8;
    static _stack_top: u8;
}

/// The configuration blob, or the default with a log line saying why.
fn config() -> DeviceConfig {
    // SAFETY: RAM, inside the region the linker script keeps free for the blob.
    match unsafe { linklab_firmware::read_config(CONFIG_ADDR) } {
        Ok(c) => c,
        Err(_) => {
            defmt::warn!("linklab firmware: no valid config blob, using 198.18.0.2/24");
            DeviceConfig::DEFAULT
        }
    }
}

#[no_mangle]
extern "C" fn main_entry() -> ! {
    let painted = linklab_firmware::stack::paint(
        core::ptr::addr_of!(_stack_limit) as usize,
        Some(core::ptr::addr_of!(_stack_top) as usize),
    );
    uart::init();
    linklab_cortex_a9::set_console(uart::write);
    let mut periphs = init();
    TIMER.init();
    wake::init(&mut periphs);
    let config = config();
    let (driver, rings, _phy) = match gem::start(config.mac) {
        Ok(parts) => parts,
        Err(why) => {
            defmt::error!("linklab firmware: {=str}", why);
            fw_zynq7000::halt();
        }
    };
    RINGS.0.set(Some(rings));
    static DEVICE: StaticCell<GemDevice> = StaticCell::new();
    let device = DEVICE.init(GemDevice::new(driver, rings).with_gate(&GATE));
    // The HAL's embassy driver reports the link through its own state; the PHY is up.
    zynq7000_hal::eth::embassy_net::update_link_state(embassy_net_driver::LinkState::Up);

    let [a, b, c, d] = config.ip;
    let net_config = embassy_net::Config::ipv4_static(StaticConfigV4 {
        address: Ipv4Cidr::new(Ipv4Address::new(a, b, c, d), config.prefix),
        gateway: None,
        dns_servers: Default::default(),
    });
    static RESOURCES: StaticCell<StackResources<SOCKETS>> = StaticCell::new();
    let m = config.mac;
    let seed = TIMER.now_ns() ^ u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0]);
    let (stack, runner) = embassy_net::new(
        device,
        net_config,
        RESOURCES.init(StackResources::new()),
        seed,
    );

    // SAFETY: main_entry runs once; this is the only reference ever made to BYTES.
    let bytes = unsafe { &mut *core::ptr::addr_of_mut!(BYTES) };
    let Bytes {
        echo_udp_rx,
        echo_udp_tx,
        echo_tcp_rx,
        echo_tcp_tx,
        http_rx: [h0, h1],
        http_tx: [t0, t1],
        iperf_rx,
        iperf_tx,
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
    });
    let mut iperf_tx = iperf_tx.each_mut().map(Some);
    let mut next_tx = iperf_tx.iter_mut();
    let iperf = IperfBuffers {
        tcp: iperf_rx.each_mut().map(|rx| TcpBuffers {
            rx: &mut rx[IPERF_RX_SKEW..IPERF_RX_SKEW + TCP_WINDOW],
            tx: next_tx
                .next()
                .and_then(Option::take)
                .map_or(&mut [][..], |t| &mut t[..]),
        }),
        udp: UdpBuffers {
            rx_meta: &mut meta.iperf_rx,
            rx: iperf_udp_rx,
            tx_meta: &mut meta.iperf_tx,
            tx: iperf_udp_tx,
        },
        json_rx,
        json_tx,
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

    defmt::info!(
        "linklab firmware: {=str} up (embassy), {}.{}.{}.{}/{}, {} frame RX queue, tcp window {}",
        "zynq7000",
        a,
        b,
        c,
        d,
        config.prefix,
        QUEUE_FRAMES,
        TCP_WINDOW
    );
    executor::run(painted, move |spawner| {
        // Each fails only if spawned twice; this runs once.
        for token in [
            net_task(runner).map(|t| spawner.spawn(t)),
            iperf_task(stack, iperf).map(|t| spawner.spawn(t)),
            http_task(stack, http).map(|t| spawner.spawn(t)),
            echo_task(stack, echo_tcp, echo_udp).map(|t| spawner.spawn(t)),
        ] {
            if token.is_err() {
                defmt::error!("linklab firmware: a task could not be spawned");
            }
        }
    })
}

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, &'static mut GemDevice>) -> ! {
    measured(Layer::Stack, runner.run()).await
}

#[embassy_executor::task]
async fn iperf_task(stack: Stack<'static>, b: IperfBuffers<'static, IPERF_TCP_SOCKETS>) -> ! {
    measured(Layer::Apps, iperf_server(stack, b, &COUNTERS, Some(&GATE))).await
}

#[embassy_executor::task]
async fn http_task(stack: Stack<'static>, b: [TcpBuffers<'static>; 2]) -> ! {
    let mut routes = StatsRoute;
    measured(
        Layer::Apps,
        http_server(stack, b, &mut routes, &COUNTERS, Some(&GATE)),
    )
    .await
}

#[embassy_executor::task]
async fn echo_task(stack: Stack<'static>, t: TcpBuffers<'static>, u: UdpBuffers<'static>) -> ! {
    measured(
        Layer::Apps,
        echo_server(stack, t, u, &COUNTERS, Some(&GATE)),
    )
    .await
}

/// `GET /stats`: the main loop's document, from the GEM's registers and rings, the apps'
/// counters and the executor's figures.
struct StatsRoute;

impl Routes for StatsRoute {
    fn get(&mut self, path: &str, out: &mut [u8]) -> Option<RouteBody> {
        if path != "/stats" {
            return None;
        }
        let rings = RINGS.0.get()?;
        let len = Snapshot {
            board: "zynq7000",
            mac: gem::counters(&rings),
            apps: COUNTERS.snapshot(),
            cpu: executor::cpu_figures(),
            link_up: fw_zynq7000::phy::link_up_now(),
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

/// The apps' TCP sockets for `/stats` (port and state).
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

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    match info.location() {
        Some(l) => defmt::error!(
            "linklab firmware: panic at {=str}:{=u32}",
            l.file(),
            l.line()
        ),
        None => defmt::error!("linklab firmware: panic"),
    }
    fw_zynq7000::halt()
}
