//! linklab-perf's iperf3 server (5201), HTTP server (80: bench files and `/stats`) and echo (7)
//! on a W5500-EVB-Pico: RP2040 at 125 MHz and the board's WIZnet W5500 in MACRAW mode over SPI
//! (embassy-net-wiznet; SCK 31.25 MHz, see [`SPI_HZ`]), embassy-net at 198.18.0.2/24 (feature
//! `dhcp`: DHCP), logs over defmt-rtt. `cargo run --release`, then `iperf3 -c 198.18.0.2`.
#![no_std]
#![no_main]

// The driver: embassy-net-wiznet 0.3.0 with the upstream fix of its one-frame-per-interrupt
// hang (../vendor/embassy-net-wiznet, until a release has it); feature `wiznet-0-3-0`: 0.3.0
// as released; feature `linklab-driver`: linklab's own (src/linklab_driver.rs).
#[cfg(not(any(feature = "wiznet-0-3-0", feature = "linklab-driver")))]
use embassy_net_wiznet_fixed as embassy_net_wiznet;
#[cfg(feature = "linklab-driver")]
mod linklab_driver;

use defmt::{info, unwrap};
use embassy_executor::Spawner;
use embassy_net::{Runner, StackResources};
#[cfg(not(feature = "linklab-driver"))]
use embassy_net_wiznet::chip::W5500;
#[cfg(not(feature = "linklab-driver"))]
use embassy_net_wiznet::{Device, State};
use embassy_rp::clocks::RoscRng;
use embassy_rp::gpio::{Input, Level, Output, Pull};
use embassy_rp::peripherals::{DMA_CH0, DMA_CH1};
use embassy_rp::spi::{self, Spi};
use embassy_rp::{bind_interrupts, dma};
#[cfg(not(feature = "linklab-driver"))]
use embassy_rp::{peripherals::SPI0, spi::Async};
#[cfg(not(feature = "linklab-driver"))]
use embassy_time::Delay;
#[cfg(not(feature = "linklab-driver"))]
use embedded_hal_bus::spi::ExclusiveDevice;
use linklab_perf::device_config::DeviceConfig;
use linklab_perf::embassy::{
    self as apps, AppCounters, AppStats, EchoMemory, GatedDriver, HttpMemory, IperfMemory,
    ServiceGate,
};
use static_cell::ConstStaticCell;
use {defmt_rtt as _, panic_probe as _};

const BOARD: &str = "w5500-evb-pico";

/// The SPI clock asked of embassy-rp: 50 MHz, which its divider (an even prescale times an
/// integer, never above the asked clock) turns into 31.25 MHz at clk_peri 125 MHz
/// (125 / (2 x 2)), 256 ns a byte. `W5500_SPI_HZ=N` at build time asks for N instead (CBA's
/// link speed tests ran the board's SPI at 12.5 MHz).
const SPI_HZ: u32 = match option_env!("W5500_SPI_HZ") {
    Some(hz) => parse_hz(hz),
    // Feature `spi-62m5`: clk_peri / 2, the PL022's fastest.
    None if cfg!(feature = "spi-62m5") => 62_500_000,
    None => 50_000_000,
};

/// `W5500_SPI_HZ` as a number (a build error if it is not one).
const fn parse_hz(s: &str) -> u32 {
    let b = s.as_bytes();
    assert!(!b.is_empty(), "W5500_SPI_HZ: a number of Hz");
    let mut n: u32 = 0;
    let mut i = 0;
    while i < b.len() {
        assert!(b[i].is_ascii_digit(), "W5500_SPI_HZ: a number of Hz");
        n = n * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    n
}

// Sizes for 232 KB of SRAM (the last 32 KB are the stack's, memory.x) and a link the SPI bus
// bounds: 31.25 MHz of SPI moves at most 31.25 Mbit/s of frame bytes, less the W5500's
// command bytes and the RP2040's software checksums (W5500 boards measure ~9-11 Mbit/s of TCP).

/// Frames the driver holds between the W5500 and the stack, each way (1.5 KB each). The
/// W5500's own 16 KB receive buffer absorbs the line-rate bursts; these only decouple the
/// SPI transfers from the stack's passes.
#[cfg(not(feature = "linklab-driver"))]
const WIZNET_FRAMES: usize = 4;
/// The W5500's receive buffer in full-size frames: 16 KB over 1516 bytes (a frame and its
/// 2-byte length).
const W5500_RX_FRAMES: usize = 10;
/// A full-size TCP segment's payload.
const MSS: usize = 1460;
/// Each iperf3 data stream's receive buffer, the TCP window it advertises: what the W5500's
/// buffer holds, less two frames of slack for the ACKs and ARP that share it, so a window
/// sent back to back at 100 Mbit/s is never dropped there (linklab's window lesson: a
/// window larger than the queue dropped 45 frames of a 1 MB download in `linklab bench`).
/// With `linklab-driver` the whole buffer: 10 full frames take 15 160 of its 16 384 bytes,
/// the rest holds 19 small frames, and the driver moves frames out as they come (12 % more
/// into the device at 62.5 MHz than with 8, docs/w5500.md).
const TCP_WINDOW: usize = if cfg!(feature = "linklab-driver") {
    W5500_RX_FRAMES * MSS
} else {
    (W5500_RX_FRAMES - 2) * MSS
};
/// iperf3 TCP sockets: two control sockets (the test's, and one left listening to deny a
/// second client) and four data sockets (`-P 4`, `-P 2 --bidir`), each lent a share of the
/// data memory only while it carries a stream.
const IPERF_SOCKETS: usize = 6;
/// The data memory, in streams of a full window and send buffer each (two): a test with
/// more streams shares it out equally (never a window under two segments); iperf 2's tests
/// (port 5001) borrow the same memory, one test at a time across both.
const IPERF_STREAMS: usize = 2;
/// Each iperf3 data stream's send buffer (`-R`): four segments keep the SPI busy while the
/// peer's ACKs come back; more only waits in RAM. With `linklab-driver` eight: its driver
/// writes a segment in 206 µs at 62.5 MHz, and four ran out before the ACKs came back
/// (40.9 Mbit/s from the device, 45.6 with eight: docs/w5500.md).
const IPERF_TX: usize = if cfg!(feature = "linklab-driver") {
    8 * MSS
} else {
    4 * MSS
};
/// iperf3 UDP datagrams held each way (1.5 KB each).
const IPERF_UDP: usize = 4;
/// iperf3's control JSON each way: a stock client's parameters are ~300 bytes, the results
/// of two streams ~700.
const IPERF_JSON: usize = 2048;
/// An HTTP request head (longer ones are refused with 431).
const HTTP_RX: usize = 1024;
/// Each HTTP socket's send buffer: four segments in flight, as iperf3.
const HTTP_TX: usize = 4 * MSS;
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
/// The apps' look at each frame: neither driver gives one, so the driver is wrapped
/// ([`GatedDriver`]): a client that finds every socket of a service busy waits (its SYN
/// dropped unanswered, counted in `/stats`), never reset.
static GATE: ServiceGate = ServiceGate::new();

linklab_perf::embassy_apps! {
    iperf: IperfMemory<IPERF_SOCKETS, IPERF_STREAMS, TCP_WINDOW, IPERF_TX, IPERF_UDP, IPERF_JSON>,
    http: HttpMemory<HTTP_RX, HTTP_TX>,
    echo: EchoMemory<ECHO_TCP, ECHO_UDP>,
    counters: &COUNTERS,
    gate: Some(&GATE),
    routes: |stack| stats(AppStats::new(BOARD, &COUNTERS, stack)),
}

bind_interrupts!(struct Irqs {
    DMA_IRQ_0 => dma::InterruptHandler<DMA_CH0>, dma::InterruptHandler<DMA_CH1>;
});

#[cfg(not(feature = "linklab-driver"))]
type W5500Spi = ExclusiveDevice<Spi<'static, SPI0, Async>, Output<'static>, Delay>;
#[cfg(not(feature = "linklab-driver"))]
type W5500Runner =
    embassy_net_wiznet::Runner<'static, W5500, W5500Spi, Input<'static>, Output<'static>>;

/// The W5500's side: frames over SPI between the chip and the driver's queues.
#[cfg(not(feature = "linklab-driver"))]
#[embassy_executor::task]
async fn wiznet_task(runner: W5500Runner) -> ! {
    runner.run().await
}

/// embassy-net's driver: embassy-net-wiznet's, or linklab-mac's over linklab-w5500.
#[cfg(not(feature = "linklab-driver"))]
type NetDevice = Device<'static>;
#[cfg(feature = "linklab-driver")]
type NetDevice = linklab_driver::Driver;

/// `/stats`: the apps'; with `linklab-driver`, the driver's and the MAC's counters added.
#[cfg(not(feature = "linklab-driver"))]
fn stats(apps: AppStats<'static>) -> AppStats<'static> {
    apps
}
#[cfg(feature = "linklab-driver")]
use linklab_driver::Stats as stats;

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, GatedDriver<'static, NetDevice>>) -> ! {
    runner.run().await
}

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    let p = embassy_rp::init(Default::default());
    info!("{} booting", BOARD);

    // The W5500 on SPI0 (the board's schematic): SCK 18, MOSI 19, MISO 16, CS 17, INT 21,
    // RST 20; the W5500 takes SPI up to 80 MHz, the RP2040 gives 62.5 at most.
    let mut config = spi::Config::default();
    config.frequency = SPI_HZ;
    #[cfg(feature = "linklab-driver")]
    linklab_driver::spi_mode_3(&mut config);
    let spi = Spi::new(
        p.SPI0, p.PIN_18, p.PIN_19, p.PIN_16, p.DMA_CH0, p.DMA_CH1, Irqs, config,
    );
    let cs = Output::new(p.PIN_17, Level::High);
    let int = Input::new(p.PIN_21, Pull::Up);
    let reset = Output::new(p.PIN_20, Level::High);
    // The W5500 has no MAC address of its own: linklab's default, locally administered
    // (change its last byte for a second board on the same bench).
    let mac = DeviceConfig::DEFAULT.mac;
    #[cfg(feature = "linklab-driver")]
    let driver = linklab_driver::start(spi, cs, int, reset, mac).await;
    #[cfg(not(feature = "linklab-driver"))]
    let driver = {
        static WIZNET: ConstStaticCell<State<WIZNET_FRAMES, WIZNET_FRAMES>> =
            ConstStaticCell::new(State::new());
        let spi = unwrap!(ExclusiveDevice::new(spi, cs, Delay));
        let state = WIZNET.take();
        let Ok((driver, wiznet)) = embassy_net_wiznet::new(mac, state, spi, int, reset).await
        else {
            defmt::panic!("the W5500 did not answer on SPI0");
        };
        spawner.spawn(unwrap!(wiznet_task(wiznet)));
        driver
    };

    #[cfg(not(feature = "dhcp"))]
    let config = apps::static_ipv4(DeviceConfig::DEFAULT.ip, DeviceConfig::DEFAULT.prefix);
    #[cfg(feature = "dhcp")]
    let config = embassy_net::Config::dhcpv4(Default::default());
    let seed = RoscRng.next_u64();
    static RESOURCES: ConstStaticCell<StackResources<SOCKETS>> =
        ConstStaticCell::new(StackResources::new());
    let driver = GatedDriver::new(driver, &GATE);
    let (stack, runner) = embassy_net::new(driver, config, RESOURCES.take(), seed);

    spawner.spawn(unwrap!(net_task(runner)));
    unwrap!(spawn_apps::<IPERF, HTTP_ECHO>(spawner, stack));
    apps::announce(stack, BOARD).await;
}
