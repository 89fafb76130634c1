//! linklab-perf's iperf3 server (5201), HTTP server (80: bench files and `/stats`) and echo (7)
//! on a Teensy 4.1: the i.MX RT1062's ENET through linklab-imx-enet (its receive interrupt
//! writes frames straight into linklab-mac's RX queue), the board's DP83825I PHY over RMII,
//! embassy-net over linklab-mac's `EmbassyMac` at 198.18.0.2/24 (feature `dhcp`: DHCP),
//! logs over defmt-rtt. Flash the hex of the release build, then `iperf3 -c 198.18.0.2`.
#![no_std]
#![no_main]

mod enet;
mod time;

use cortex_m::peripheral::NVIC;
use defmt::{info, unwrap};
use embassy_executor::Spawner;
use embassy_net::{Runner, StackResources};
use imxrt_ral as ral;
use linklab_mac::embassy::{EmbassyMac, EmbassyTimeClock};
use linklab_mac::window::capacity_for_frames;
use linklab_mac::{Inline, Mac, MacAddr, MacConfig, RxFormat, RxQueue, TxFormat};
use linklab_perf::device_config::DeviceConfig;
use linklab_perf::embassy::{
    self as apps, AppCounters, AppStats, EchoMemory, GatedDriver, HttpMemory, IperfMemory,
    ServiceGate,
};
use static_cell::ConstStaticCell;
// The runtime (FlexRAM set up before RAM is, the boot image), the flash's configuration block,
// the log and the panic handler.
use {defmt_rtt as _, imxrt_rt as _, panic_probe as _, teensy4_fcb as _};

const BOARD: &str = "teensy41";

// Sizes for the RT1062's 512 KB of FlexRAM (imxrt-rt's default split: statics and the stack
// in DTCM, which the ENET's DMA reaches and the data cache leaves alone), a 100 Mbit/s link,
// and the ENET inserting TCP/UDP checksums on transmit and checking them on receive.

/// Frames the RX queue holds (1.5 KB each): the peer sends a whole TCP window back to back
/// at 100 Mbit/s, faster than the stack drains.
const RX_FRAMES: usize = 12;
/// The RX queue's bytes for [`RX_FRAMES`] frames as the driver stores them.
pub const RX_QUEUE_BYTES: usize = capacity_for_frames(RX_FRAMES, RxFormat::Tagged);
/// A full-size TCP segment's payload.
const MSS: usize = 1460;
/// Each iperf3 data stream's receive buffer, the TCP window it advertises: what the RX queue
/// holds, less two frames of slack for the ACKs and ARP that share it.
const TCP_WINDOW: usize = (RX_FRAMES - 2) * MSS;
/// iperf3 TCP sockets: two control sockets (the test's, and one left listening to deny a
/// second client) and four data sockets (`-P 4`, `-P 2 --bidir`), each lent a share of the
/// data memory only while it carries a stream.
const IPERF_SOCKETS: usize = 6;
/// The data memory, in streams of a full window and send buffer each (four): a test with
/// more streams shares it out equally (never a window under two segments); iperf 2's tests
/// (port 5001) borrow the same memory, one test at a time across both.
const IPERF_STREAMS: usize = 4;
/// Each iperf3 data stream's send buffer (`-R`): what the ENET's 4 transmit descriptors hold.
const IPERF_TX: usize = linklab_imx_enet::TX_DESCRIPTORS * MSS;
/// iperf3 UDP datagrams held each way.
const IPERF_UDP: usize = 4;
/// iperf3's control JSON each way: a client's parameters ~300 bytes, the results ~350 per
/// stream (four streams here).
const IPERF_JSON: usize = 4096;
/// An HTTP request head (longer ones are refused with 431).
const HTTP_RX: usize = 1024;
/// Each HTTP socket's send buffer, as iperf3's.
const HTTP_TX: usize = IPERF_TX;
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

/// The RX queue the ENET's receive DMA writes into (`.bss`, in DTCM).
static RX_QUEUE: RxQueue<Inline<RX_QUEUE_BYTES>> = RxQueue::new();

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

/// The ENET's interrupt at the NVIC.
#[derive(Clone, Copy)]
struct Irq(u16);

// SAFETY: 114 is the RT1062's ENET (ENET1) line, below its NVIC's limit.
unsafe impl cortex_m::interrupt::InterruptNumber for Irq {
    fn number(self) -> u16 {
        self.0
    }
}

/// The ENET's line (imxrt-ral's `Interrupt::ENET`).
const IRQ_ENET: Irq = Irq(ral::Interrupt::ENET as u16);

/// The driver embassy-net runs: linklab-mac's MAC over the ENET's transmit half and the RX
/// queue, its link read over MDIO.
type Driver = EmbassyMac<
    'static,
    Inline<RX_QUEUE_BYTES>,
    linklab_imx_enet::EnetTx<linklab_imx_enet::Mmio>,
    EmbassyTimeClock,
    enet::LinkReader,
>;

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, GatedDriver<'static, Driver>>) -> ! {
    runner.run().await
}

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    let core = unwrap!(cortex_m::Peripherals::take());
    time::start(core.SYST);
    info!("{} booting", BOARD);
    enet::clocks_and_pins();
    let mac = mac_address();
    let Some((tx, link)) = enet::start(mac) else {
        defmt::panic!("the ENET or its PHY did not come up");
    };
    // SAFETY: the receive half is in place for the handler.
    unsafe { NVIC::unmask(IRQ_ENET) };

    let mut mac_layer = Mac::new(
        RX_QUEUE.consumer(),
        tx,
        EmbassyTimeClock,
        MacConfig {
            rx_format: RxFormat::Tagged,
            tx_format: TxFormat::Plain,
            ..MacConfig::aligned_fcs(MacAddr(mac))
        },
    );
    // IPv4/TCP/UDP checksums the ENET did not vouch for are checked in the MAC, word-wise.
    mac_layer.set_checksum_offload(true);
    let driver = EmbassyMac::new(mac_layer, link);

    #[cfg(not(feature = "dhcp"))]
    let config = apps::static_ipv4(DeviceConfig::DEFAULT.ip, DeviceConfig::DEFAULT.prefix);
    #[cfg(feature = "dhcp")]
    let config = embassy_net::Config::dhcpv4(Default::default());
    static RESOURCES: ConstStaticCell<StackResources<SOCKETS>> =
        ConstStaticCell::new(StackResources::new());
    let seed = u64::from_le_bytes([mac[0], mac[1], mac[2], mac[3], mac[4], mac[5], 0x4c, 0x4c])
        ^ embassy_time::Instant::now().as_ticks();
    let driver = GatedDriver::new(driver, &GATE);
    let (stack, runner) = embassy_net::new(driver, config, RESOURCES.take(), seed);

    spawner.spawn(unwrap!(net_task(runner)));
    unwrap!(spawn_apps::<IPERF, HTTP_ECHO>(spawner, stack));
    apps::announce(stack, BOARD).await;
}

/// The MAC address PJRC programs into each Teensy's fuses (OCOTP MAC0/MAC1), or a locally
/// administered one if they are blank.
fn mac_address() -> [u8; 6] {
    // SAFETY: read-only shadow registers of the fuses.
    let ocotp = unsafe { ral::ocotp::OCOTP::instance() };
    let low = ral::read_reg!(ral::ocotp, ocotp, MAC0);
    let high = ral::read_reg!(ral::ocotp, ocotp, MAC1);
    if low == 0 && high == 0 {
        return DeviceConfig::DEFAULT.mac;
    }
    let [_, _, a, b] = high.to_be_bytes();
    let [c, d, e, f] = low.to_be_bytes();
    [a, b, c, d, e, f]
}
