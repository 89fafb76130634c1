//! linklab-perf's iperf3 server (5201), HTTP server (80: bench files and `/stats`) and echo (7)
//! on a NUCLEO-F429ZI: STM32F429ZI at 180 MHz, its Ethernet MAC (embassy-stm32's ETH v1) and
//! the board's LAN8742A PHY over RMII, embassy-net at 198.18.0.2/24 (feature `dhcp`: DHCP),
//! logs over defmt-rtt. `cargo run --release`, then `iperf3 -c 198.18.0.2`.
#![no_std]
#![no_main]

use core::future::Future;
use core::pin::Pin;
use core::task::Context;

use defmt::{info, unwrap};
use embassy_executor::Spawner;
use embassy_net::{Runner, StackResources};
use embassy_stm32::eth::{self, Ethernet, GenericPhy, PacketQueue, Phy, Sma};
use embassy_stm32::peripherals::{ETH, ETH_SMA, RNG};
use embassy_stm32::rcc::{
    AHBPrescaler, APBPrescaler, Hse, HseMode, Pll, PllMul, PllPDiv, PllPreDiv, PllQDiv, PllSource,
    Sysclk,
};
use embassy_stm32::time::Hertz;
use embassy_stm32::{bind_interrupts, rng, Config};
use embassy_time::{Duration, Timer};
use linklab_perf::device_config::DeviceConfig;
use linklab_perf::embassy::{
    self as apps, AppCounters, AppStats, EchoMemory, GatedDriver, HttpMemory, IperfMemory,
    ServiceGate,
};
use static_cell::ConstStaticCell;
use {defmt_rtt as _, panic_probe as _};

const BOARD: &str = "nucleo-f429zi";

// Sizes for 192 KB of SRAM (the stack has the 64 KB of CCM RAM to itself, memory.x), a
// 100 Mbit/s link and a 180 MHz Cortex-M4 that computes every checksum in software.

/// Frames the Ethernet DMA can receive before the stack takes them (1.5 KB each): the
/// peer sends a whole TCP window back to back at 100 Mbit/s, faster than the stack drains.
const ETH_RX_FRAMES: usize = 12;
/// Frames queued to send (1.5 KB each): the segments a send buffer below keeps in flight.
const ETH_TX_FRAMES: usize = 4;
/// A full-size TCP segment's payload.
const MSS: usize = 1460;
/// Each iperf3 data stream's receive buffer, the TCP window it advertises: what the receive
/// ring holds, less two frames of slack for the ACKs and ARP that share it, so a window
/// sent back to back is never dropped at the ring (linklab's window lesson: a window
/// larger than the queue dropped 45 frames of a 1 MB download in `linklab bench`).
const TCP_WINDOW: usize = (ETH_RX_FRAMES - 2) * MSS;
/// iperf3 TCP sockets: two control sockets (the test's, and one left listening to deny a
/// second client) and four data sockets (`-P 4`, `-P 2 --bidir`), each lent a share of the
/// data memory only while it carries a stream.
const IPERF_SOCKETS: usize = 6;
/// The data memory, in streams of a full window and send buffer each (two): a test with
/// more streams shares it out equally (never a window under two segments); iperf 2's tests
/// (port 5001) borrow the same memory, one test at a time across both.
const IPERF_STREAMS: usize = 2;
/// Each iperf3 data stream's send buffer (`-R`): four segments in flight are ~3 bandwidth-delay
/// products of a switched LAN (100 Mbit/s × ~0.1 ms), and what the TX ring holds.
const IPERF_TX: usize = ETH_TX_FRAMES * MSS;
/// iperf3 UDP datagrams held each way (1.5 KB each).
const IPERF_UDP: usize = 4;
/// iperf3's control JSON each way: a stock client's parameters are ~300 bytes, the results
/// of two streams ~700.
const IPERF_JSON: usize = 2048;
/// An HTTP request head (longer ones are refused with 431).
const HTTP_RX: usize = 1024;
/// Each HTTP socket's send buffer: a download keeps four segments in flight, as iperf3.
const HTTP_TX: usize = ETH_TX_FRAMES * MSS;
/// TCP echo's buffers each way: echo measures round trips, not throughput.
const ECHO_TCP: usize = 1024;
/// UDP echo datagrams held each way.
const ECHO_UDP: usize = 2;

/// linklab-perf's iperf3 server runs (feature `iperf`).
const IPERF: bool = cfg!(feature = "iperf");
/// linklab-perf's HTTP server and echo run (feature `http-echo`).
const HTTP_ECHO: bool = cfg!(feature = "http-echo");
/// embassy-net's sockets: the apps' and DHCP's.
const SOCKETS: usize = app_sockets(IPERF, HTTP_ECHO) + cfg!(feature = "dhcp") as usize;

static COUNTERS: AppCounters = AppCounters::new();
/// The apps' look at each frame ([`GatedDriver`] around the driver): a client that finds
/// every socket of a service busy waits (its SYN dropped unanswered, counted in `/stats`),
/// never reset, and idle holders give way after the grace.
static GATE: ServiceGate = ServiceGate::new();

linklab_perf::embassy_apps! {
    iperf: IperfMemory<IPERF_SOCKETS, IPERF_STREAMS, TCP_WINDOW, IPERF_TX, IPERF_UDP, IPERF_JSON>,
    http: HttpMemory<HTTP_RX, HTTP_TX>,
    echo: EchoMemory<ECHO_TCP, ECHO_UDP>,
    counters: &COUNTERS,
    gate: Some(&GATE),
    routes: |stack| AppStats::new(BOARD, &COUNTERS, stack),
}

bind_interrupts!(struct Irqs {
    ETH => eth::InterruptHandler;
    HASH_RNG => rng::InterruptHandler<RNG>;
});

type Driver = Ethernet<'static, ETH, PolledPhy>;

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, GatedDriver<'static, Driver>>) -> ! {
    runner.run().await
}

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    let p = embassy_stm32::init(clocks());
    info!("{} booting", BOARD);

    // RMII to the LAN8742A (UM1974, the Nucleo-144 manual; solder bridges as shipped).
    static PACKETS: ConstStaticCell<PacketQueue<ETH_TX_FRAMES, ETH_RX_FRAMES>> =
        ConstStaticCell::new(PacketQueue::new());
    let phy = PolledPhy::new(GenericPhy::new_auto(Sma::new(p.ETH_SMA, p.PA2, p.PC1))); // MDIO, MDC
    let driver = Ethernet::new_with_phy(
        PACKETS.take(),
        p.ETH,
        Irqs,
        p.PA1,  // REF_CLK, 50 MHz from the PHY
        p.PA7,  // CRS_DV
        p.PC4,  // RXD0
        p.PC5,  // RXD1
        p.PG13, // TXD0
        p.PB13, // TXD1
        p.PG11, // TX_EN
        mac_address(),
        phy,
    );

    #[cfg(not(feature = "dhcp"))]
    let config = apps::static_ipv4(DeviceConfig::DEFAULT.ip, DeviceConfig::DEFAULT.prefix);
    #[cfg(feature = "dhcp")]
    let config = embassy_net::Config::dhcpv4(Default::default());
    let seed = rng::Rng::new(p.RNG, Irqs).next_u64();
    static RESOURCES: ConstStaticCell<StackResources<SOCKETS>> =
        ConstStaticCell::new(StackResources::new());
    let driver = GatedDriver::new(driver, &GATE);
    let (stack, runner) = embassy_net::new(driver, config, RESOURCES.take(), seed);

    spawner.spawn(unwrap!(net_task(runner)));
    unwrap!(spawn_apps::<IPERF, HTTP_ECHO>(spawner, stack));
    apps::announce(stack, BOARD).await;
}

/// 180 MHz from the 8 MHz the ST-LINK feeds the HSE pin (bypass): 8 / 4 × 180 / 2.
fn clocks() -> Config {
    let mut config = Config::default();
    config.rcc.hse = Some(Hse {
        freq: Hertz(8_000_000),
        mode: HseMode::Bypass,
    });
    config.rcc.pll_src = PllSource::HSE;
    config.rcc.pll = Some(Pll {
        prediv: PllPreDiv::DIV4,
        mul: PllMul::MUL180,
        divp: Some(PllPDiv::DIV2),
        divq: Some(PllQDiv::DIV8),
        divr: None,
    });
    config.rcc.sys = Sysclk::PLL1_P;
    config.rcc.ahb_pre = AHBPrescaler::DIV1;
    config.rcc.apb1_pre = APBPrescaler::DIV4;
    config.rcc.apb2_pre = APBPrescaler::DIV2;
    config
}

/// A locally administered MAC address folded from the chip's 96-bit unique ID, so that two
/// boards on one bench differ.
fn mac_address() -> [u8; 6] {
    let mut mac = DeviceConfig::DEFAULT.mac;
    for (i, byte) in embassy_stm32::uid::uid().iter().enumerate() {
        mac[3 + i % 3] ^= byte;
    }
    mac
}

/// How often the PHY's link is read.
const LINK_POLL: Duration = Duration::from_millis(500);

/// embassy-stm32's `GenericPhy`, its link read at most every [`LINK_POLL`]: embassy-net asks
/// the driver for the link on every pass of the stack, and each read is an MDIO transfer the
/// CPU waits out (64 MDC cycles, ~36 µs here), where a full-size frame arrives every 121 µs
/// at 100 Mbit/s.
struct PolledPhy {
    phy: GenericPhy<Sma<'static, ETH_SMA>>,
    next_read: Timer,
    up: Option<bool>,
}

impl PolledPhy {
    fn new(phy: GenericPhy<Sma<'static, ETH_SMA>>) -> Self {
        PolledPhy {
            phy,
            next_read: Timer::after_ticks(0),
            up: None,
        }
    }
}

impl Phy for PolledPhy {
    fn phy_reset(&mut self) {
        self.phy.phy_reset()
    }

    fn phy_init(&mut self) {
        self.phy.phy_init()
    }

    fn poll_link(&mut self, cx: &mut Context) -> bool {
        if let Some(up) = self.up {
            if Pin::new(&mut self.next_read).poll(cx).is_pending() {
                return up;
            }
        }
        self.next_read = Timer::after(LINK_POLL);
        // Registers the wake-up for the next read.
        let _ = Pin::new(&mut self.next_read).poll(cx);
        let up = self.phy.poll_link(cx);
        self.up = Some(up);
        up
    }
}
