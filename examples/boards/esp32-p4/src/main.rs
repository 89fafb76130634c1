//! linklab-perf's iperf3 server (5201), HTTP server (80: bench files and `/stats`) and echo (7)
//! on an ESP32-P4 board (pins of the ESP32-P4-Function-EV-Board): the ESP32-P4 at 400 MHz, its
//! EMAC (esp-hal's `ethernet`, checksums in hardware both ways) and the board's IP101GRI PHY
//! over RMII, embassy-net at 198.18.0.2/24 (feature `dhcp`: DHCP), logs through `log` on
//! esp-println. `cargo run --release`, then `iperf3 -c 198.18.0.2`.
#![no_std]
#![no_main]

use core::future::Future;
use core::pin::Pin;
use core::task::Context;

use embassy_executor::Spawner;
use embassy_net::{Runner, StackResources};
use embassy_time::{Duration, Timer};
use esp_hal::clock::CpuClock;
use esp_hal::ethernet::clock::ExternalRefClock;
use esp_hal::ethernet::mac::LinkState;
use esp_hal::ethernet::phy::generic::GenericPhy;
use esp_hal::ethernet::phy::{MdioBus, Phy, PhyError};
use esp_hal::ethernet::{Ethernet, EthernetDmaStorage, RmiiPinBundle};
use esp_hal::gpio::{Level, Output, OutputConfig};
use esp_hal::timer::timg::TimerGroup;
use esp_hal::{efuse, rng::Rng, Async};
use linklab_perf::embassy::{
    self as apps, AppCounters, AppStats, EchoMemory, GatedDriver, HttpMemory, IperfMemory,
    ServiceGate,
};
use log::info;
use static_cell::ConstStaticCell;
use {esp_backtrace as _, esp_println as _};

esp_bootloader_esp_idf::esp_app_desc!();

const BOARD: &str = "esp32-p4";

// Sizes for the ~440 KB of L2 RAM left beside esp-hal's default 256 KB L2 cache (the statics
// and the stack share it; the link fails unless 32 KB stay for the stack, .cargo/config.toml),
// a 100 Mbit/s link and a 400 MHz core whose EMAC computes every checksum: as the H743's.

/// Frames the EMAC's DMA can receive before the stack takes them (1.5 KB each): the peer
/// sends a whole TCP window back to back at 100 Mbit/s, faster than the stack drains.
const ETH_RX_FRAMES: usize = 16;
/// Frames queued to send (1.5 KB each): the segments a send buffer below keeps in flight.
const ETH_TX_FRAMES: usize = 8;
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
/// The data memory, in streams of a full window and send buffer each (four): a test with
/// more streams shares it out equally (never a window under two segments); iperf 2's tests
/// (port 5001) borrow the same memory, one test at a time across both.
const IPERF_STREAMS: usize = 4;
/// Each iperf3 data stream's send buffer (`-R`): eight segments in flight ride out the host's
/// delayed ACKs at 100 Mbit/s, and are what the TX ring holds.
const IPERF_TX: usize = ETH_TX_FRAMES * MSS;
/// iperf3 UDP datagrams held each way (1.5 KB each): `-u` bursts at 100 Mbit/s.
const IPERF_UDP: usize = 8;
/// iperf3's control JSON each way: a stock client's parameters are ~300 bytes, the results
/// ~350 per stream (four streams here).
const IPERF_JSON: usize = 4096;
/// An HTTP request head (longer ones are refused with 431).
const HTTP_RX: usize = 1024;
/// Each HTTP socket's send buffer: a download keeps eight segments in flight, as iperf3.
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

type Driver = Ethernet<'static, Async, PolledPhy>;

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, GatedDriver<'static, Driver>>) -> ! {
    runner.run().await
}

#[esp_rtos::main]
async fn main(spawner: Spawner) {
    esp_println::logger::init_logger_from_env();
    let p = esp_hal::init(esp_hal::Config::default().with_cpu_clock(CpuClock::max()));
    let timg0 = TimerGroup::new(p.TIMG0);
    esp_rtos::start(timg0.timer0, p.FROM_CPU_INTR0);
    info!("{} booting", BOARD);

    // The IP101GRI comes out of reset (GPIO51) with its strapped address, 1.
    let mut phy_reset = Output::new(p.GPIO51, Level::Low, OutputConfig::default());
    Timer::after(Duration::from_millis(10)).await;
    phy_reset.set_high();
    Timer::after(Duration::from_millis(100)).await;

    static DMA: ConstStaticCell<EthernetDmaStorage<ETH_RX_FRAMES, ETH_TX_FRAMES>> =
        ConstStaticCell::new(EthernetDmaStorage::new());
    let pins = RmiiPinBundle {
        clock: ExternalRefClock::new(p.GPIO50), // REF_CLK, 50 MHz from the PHY
        rxd0: p.GPIO29,
        rxd1: p.GPIO30,
        rx_dv: p.GPIO28, // CRS_DV
        txd0: p.GPIO34,
        txd1: p.GPIO35,
        tx_en: p.GPIO49,
        mdc: p.GPIO31,
        mdio: p.GPIO52,
    };
    let dma = DMA.take();
    let driver = match Ethernet::new(p.ETH, dma, mac_address(), PolledPhy::new(1), pins) {
        Ok(eth) => eth.into_async(),
        Err(e) => panic!("the Ethernet did not come up: {e:?}"),
    };

    #[cfg(not(feature = "dhcp"))]
    let config = {
        let default = linklab_perf::device_config::DeviceConfig::DEFAULT;
        apps::static_ipv4(default.ip, default.prefix)
    };
    #[cfg(feature = "dhcp")]
    let config = embassy_net::Config::dhcpv4(Default::default());
    let rng = Rng::new();
    let seed = u64::from(rng.random()) << 32 | u64::from(rng.random());
    static RESOURCES: ConstStaticCell<StackResources<SOCKETS>> =
        ConstStaticCell::new(StackResources::new());
    let driver = GatedDriver::new(driver, &GATE);
    let (stack, runner) = embassy_net::new(driver, config, RESOURCES.take(), seed);

    spawner.spawn(net_task(runner).expect("spawned once"));
    spawn_apps::<IPERF, HTTP_ECHO>(spawner, stack).expect("spawned once");
    apps::announce(stack, BOARD).await;
}

/// The Ethernet MAC address as ESP-IDF derives it: the chip's base MAC (eFuse) plus 3.
fn mac_address() -> [u8; 6] {
    let mut mac = [0; 6];
    mac.copy_from_slice(efuse::base_mac_address().as_bytes());
    mac[5] = mac[5].wrapping_add(3);
    mac
}

/// How often the PHY's link is read.
const LINK_POLL: Duration = Duration::from_millis(500);

/// esp-hal's `GenericPhy`, its link read at most every [`LINK_POLL`]: `GenericPhy` asks to
/// be polled again at once whenever embassy-net asks for the link, which would keep the
/// stack's task spinning.
struct PolledPhy {
    phy: GenericPhy,
    next_read: Timer,
    link: Option<LinkState>,
}

impl PolledPhy {
    fn new(address: u8) -> Self {
        PolledPhy {
            phy: GenericPhy::new(address),
            next_read: Timer::after_ticks(0),
            link: None,
        }
    }
}

impl Phy for PolledPhy {
    fn init<M: MdioBus>(&mut self, mdio: &mut M) -> Result<(), PhyError> {
        self.phy.init(mdio)
    }

    fn poll_link<M: MdioBus>(&mut self, mdio: &mut M, cx: Option<&mut Context<'_>>) -> LinkState {
        if let Some(cx) = cx {
            if let Some(link) = self.link {
                if Pin::new(&mut self.next_read).poll(cx).is_pending() {
                    return link;
                }
            }
            self.next_read = Timer::after(LINK_POLL);
            // Registers the wake-up for the next read.
            let _ = Pin::new(&mut self.next_read).poll(cx);
        }
        let link = self.phy.poll_link(mdio, None);
        self.link = Some(link);
        link
    }

    fn address(&self) -> u8 {
        self.phy.address()
    }
}
