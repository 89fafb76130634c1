//! linklab-perf's iperf3 and iperf 2 servers (5201, 5001), HTTP (80: bench files and
//! `/stats`), echo (7) and ICMP on a Raspberry Pi Pico (RP2040) whose network is an SPI link
//! to a host (a Raspberry Pi running `linklab serial --spidev`): the Pico is the SPI device,
//! PIO and DMA shift its bytes ([`spi`]), linklab-serial's link carries Ethernet frames over
//! them with its CRC, selective repeat, credits and self-test (feature `embassy`:
//! `SharedLink` as embassy-net's driver), and embassy-net runs the apps at 198.18.0.2/24.
//! clk_sys 125 MHz, or 240 MHz with feature `sys-240mhz`; logs over defmt-rtt.
#![no_std]
#![no_main]

mod spi;

use core::fmt::Write;

use defmt::{info, unwrap};
use embassy_executor::Spawner;
use embassy_net::{Runner, StackResources};
use embassy_rp::bind_interrupts;
use embassy_rp::clocks::{ClockConfig, RoscRng};
use embassy_rp::gpio::{Level, Output};
use embassy_rp::interrupt::{self, InterruptExt, Priority};
use embassy_rp::pac::interrupt as irq;
use embassy_rp::peripherals::PIO0;
use embassy_rp::pio::{self, Pio};
use embassy_time::Instant;
use linklab_perf::device_config::DeviceConfig;
use linklab_perf::embassy::{
    self as apps, AppCounters, AppStats, EchoMemory, HttpMemory, IperfMemory,
};
use linklab_perf::http::{RouteBody, Routes};
use linklab_perf::slice_writer::SliceWriter;
use linklab_serial::embassy::{LinkDriver, SharedLink};
use linklab_serial::{Config, Link};
use static_cell::{ConstStaticCell, StaticCell};
use {defmt_rtt as _, panic_probe as _};

const BOARD: &str = "rp2040-spi-link";

/// clk_sys: 125 MHz (embassy-rp's default), or 240 MHz with feature `sys-240mhz`.
const SYS_HZ: u32 = if cfg!(feature = "sys-240mhz") {
    240_000_000
} else {
    125_000_000
};

/// A full-size TCP segment's payload.
const MSS: usize = 1460;
/// Each TCP data stream's receive window: what the link's window holds (8 frames), less one
/// for the ACKs and control frames that share it.
const TCP_WINDOW: usize = 7 * MSS;
/// iperf3 TCP sockets: two control sockets and four data sockets, as every example.
const IPERF_SOCKETS: usize = 6;
/// The data memory, in streams of a full window and send buffer each.
const IPERF_STREAMS: usize = 2;
/// Each iperf3 data stream's send buffer (`-R`): a link window's worth.
const IPERF_TX: usize = 8 * MSS;
/// iperf3 UDP datagrams held each way.
const IPERF_UDP: usize = 4;
/// iperf3's control JSON each way.
const IPERF_JSON: usize = 2048;
/// An HTTP request head (longer ones are refused with 431).
const HTTP_RX: usize = 1024;
/// Each HTTP socket's send buffer.
const HTTP_TX: usize = 4 * MSS;
/// TCP echo's buffers each way.
const ECHO_TCP: usize = 1024;
/// UDP echo datagrams held each way.
const ECHO_UDP: usize = 2;

/// linklab-perf's iperf servers run (feature `iperf`).
const IPERF: bool = cfg!(feature = "iperf");
/// linklab-perf's HTTP server and echo run (feature `http-echo`).
const HTTP_ECHO: bool = cfg!(feature = "http-echo");
/// embassy-net's sockets: the apps'.
const SOCKETS: usize = app_sockets(IPERF, HTTP_ECHO);

static COUNTERS: AppCounters = AppCounters::new();
/// The link, shared by embassy-net (its driver) and the SPI task.
static LINK: StaticCell<SharedLink<8>> = StaticCell::new();

linklab_perf::embassy_apps! {
    iperf: IperfMemory<IPERF_SOCKETS, IPERF_STREAMS, TCP_WINDOW, IPERF_TX, IPERF_UDP, IPERF_JSON>,
    http: HttpMemory<HTTP_RX, HTTP_TX>,
    echo: EchoMemory<ECHO_TCP, ECHO_UDP>,
    counters: &COUNTERS,
    gate: None,
    routes: |stack| Stats { apps: AppStats::new(BOARD, &COUNTERS, stack), link: link() },
}

/// The link once `main` made it.
fn link() -> &'static SharedLink<8> {
    // SAFETY: set once by `main` before any task that calls this is spawned.
    unsafe { LINK_REF.unwrap_unchecked() }
}
static mut LINK_REF: Option<&'static SharedLink<8>> = None;

/// `/stats`: the apps' (linklab-perf's `AppStats`), the link's counters with its laws'
/// verdict, and the SPI transport's counters.
struct Stats {
    apps: AppStats<'static>,
    link: &'static SharedLink<8>,
}

impl Routes for Stats {
    fn before_serve(&mut self) {
        self.apps.before_serve();
    }

    fn get(&mut self, path: &str, out: &mut [u8]) -> Option<RouteBody> {
        let apps = self.apps.get(path, out)?;
        // The apps' object without its closing brace, then the link's and the SPI's.
        let end = apps.len.checked_sub(1)?;
        let mut w = SliceWriter::new(&mut out[end..]);
        let now = Instant::now().as_micros();
        let c = self.link.with_link(now, |l| l.counters());
        let spi = spi::counters();
        let mut written = write!(w, ",\"link\":{{");
        for (i, (k, v)) in c.fields().iter().enumerate() {
            let sep = if i == 0 { "" } else { "," };
            written = written.and_then(|()| write!(w, "{sep}\"{k}\":{v}"));
        }
        let law = if c.check_conservation().is_ok() {
            "ok"
        } else {
            "violated"
        };
        written = written
            .and_then(|()| write!(w, "}},\"link_conservation\":\"{law}\""))
            .and_then(|()| {
                write!(
                    w,
                    ",\"spi\":{{\"transfers\":{},\"bytes\":{},\"tx_partial\":{},\"unarmed\":{},\"rx_overruns\":{},\"tx_underruns\":{},\"armed_at_once\":{},\"armed_by_task\":{},\"sys_hz\":{}}}}}",
                    spi.transfers,
                    spi.bytes,
                    spi.tx_partial,
                    spi.unarmed,
                    spi.rx_overruns,
                    spi.tx_underruns,
                    spi.armed_at_once,
                    spi.armed_by_task,
                    SYS_HZ
                )
            });
        let len = match written {
            Ok(()) => end + w.len(),
            Err(_) => {
                out[end] = b'}';
                apps.len
            }
        };
        Some(RouteBody {
            len,
            content_type: apps.content_type,
        })
    }
}

/// What `main` keeps of PIO0 for ever: the block, the shifter, the CS watcher, the pins.
type PioParts = (
    pio::Common<'static, PIO0>,
    pio::StateMachine<'static, PIO0, 0>,
    pio::StateMachine<'static, PIO0, 1>,
    [pio::Pin<'static, PIO0>; 5],
);

bind_interrupts!(struct Irqs {
    PIO0_IRQ_0 => pio::InterruptHandler<PIO0>;
});

/// The end of each transfer (PIO IRQ flag 0, raised by the CS watcher).
#[irq]
fn PIO0_IRQ_1() {
    spi::on_transfer_end();
}

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, LinkDriver<'static, 8>>) -> ! {
    runner.run().await
}

#[embassy_executor::task]
async fn spi_task(link: &'static SharedLink<8>) -> ! {
    spi::run(link).await
}

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    let clocks = unwrap!(ClockConfig::system_freq(SYS_HZ).ok());
    let p = embassy_rp::init(embassy_rp::config::Config::new(clocks));
    info!("{} booting at {} Hz", BOARD, SYS_HZ);

    let Pio {
        mut common,
        mut sm0,
        mut sm1,
        ..
    } = Pio::new(p.PIO0, Irqs);
    // MOSI GP16, CS GP17, SCK GP18 in; MISO GP19, READY GP20 out (PIO); REQUEST GP21 (SIO).
    let mosi = common.make_pio_pin(p.PIN_16);
    let cs = common.make_pio_pin(p.PIN_17);
    let sck = common.make_pio_pin(p.PIN_18);
    let miso = common.make_pio_pin(p.PIN_19);
    let ready = common.make_pio_pin(p.PIN_20);
    static REQUEST: StaticCell<Output<'static>> = StaticCell::new();
    REQUEST.init(Output::new(p.PIN_21, Level::Low));
    // The three DMA channels are driven through their registers (spi.rs).
    let _dma = (p.DMA_CH0, p.DMA_CH1, p.DMA_CH2);
    spi::setup(
        &mut common,
        &mut sm0,
        &mut sm1,
        [&mosi, &cs, &sck, &miso, &ready],
    );
    // The PIO block, its state machines and pins live as long as the device: dropped, they
    // would release the pins (main returns once the stack is up).
    static PIO_PARTS: StaticCell<PioParts> = StaticCell::new();
    PIO_PARTS.init((common, sm0, sm1, [mosi, cs, sck, miso, ready]));

    // A link whose epoch differs at every start (the host must see a restart as one); its
    // timers those of a 10 MHz line without pacing: the SPI clock is the host's choice.
    let seed = RoscRng.next_u32() ^ (Instant::now().as_ticks() as u32);
    let config = Config {
        line_bytes_per_s: 0,
        ..Config::for_line_rate(1_250_000)
    };
    let mac = DeviceConfig::DEFAULT.mac;
    let link: &'static SharedLink<8> =
        LINK.init_with(|| SharedLink::new(Link::new(config, seed), mac));
    // SAFETY: written once, before the tasks that read it are spawned.
    unsafe { LINK_REF = Some(link) };

    interrupt::PIO0_IRQ_1.set_priority(Priority::P1);
    interrupt::PIO0_IRQ_1.unpend();
    // SAFETY: its handler only touches the transport's own state, under a critical section.
    unsafe { interrupt::PIO0_IRQ_1.enable() };
    spawner.spawn(unwrap!(spi_task(link)));

    let config = apps::static_ipv4(DeviceConfig::DEFAULT.ip, DeviceConfig::DEFAULT.prefix);
    let seed = RoscRng.next_u64();
    static RESOURCES: ConstStaticCell<StackResources<SOCKETS>> =
        ConstStaticCell::new(StackResources::new());
    let (stack, runner) = embassy_net::new(link.driver(), config, RESOURCES.take(), seed);
    spawner.spawn(unwrap!(net_task(runner)));
    unwrap!(spawn_apps::<IPERF, HTTP_ECHO>(spawner, stack));
    apps::announce(stack, BOARD).await;
}
