//! linklab-perf's iperf3 and iperf 2 servers (5201, 5001), HTTP (80: bench files and
//! `/stats`), echo (7) and ICMP on a Raspberry Pi Pico (RP2040) or Pico 2 (RP2350; this file
//! is the rp2350-soft-phy example's too) that is its own 10BASE-T PHY: PIO0 samples the RX
//! line at 40 MHz into a DMA ring and shifts the TX line out at 20 MHz from the encoder's
//! samples (soft-phy-board's `rp`), linklab-phy10 decodes the ring on core 1 (the PHY's
//! core) straight into linklab-mac's RX queue, and embassy-net with the apps runs on core 0,
//! where the MAC's transmitter encodes each frame. Link pulses: FLP bursts advertising
//! 10BASE-T (full duplex) after boot or a lost link, then NLPs. 198.18.0.2/24 (feature
//! `dhcp`: DHCP); logs over defmt-rtt.
//!
//! Never run on hardware: it builds and links against embassy-rp; the circuit is in the
//! README.
#![no_std]
#![no_main]

use core::cell::RefCell;
use core::fmt::Write;

use critical_section::Mutex;
use defmt::{info, unwrap};
use embassy_executor::Spawner;
use embassy_net::{Runner, StackResources};
use embassy_rp::bind_interrupts;
use embassy_rp::clocks::{ClockConfig, RoscRng};
#[cfg(not(feature = "one-core"))]
use embassy_rp::multicore::{spawn_core1, Stack};
use embassy_rp::peripherals::PIO0;
use embassy_rp::pio::{self, Pio, StateMachine};
use embassy_time::{Instant, Timer};
use linklab_mac::PhyTx;
use linklab_perf::device_config::DeviceConfig;
use linklab_perf::embassy::{
    self as apps, AppCounters, AppStats, EchoMemory, GatedDriver, HttpMemory, IperfMemory,
    ServiceGate,
};
use linklab_perf::http::{RouteBody, Routes};
use linklab_perf::slice_writer::SliceWriter;
#[cfg(feature = "cpu-decoder")]
use linklab_phy10::Oversample;
use soft_phy_board::counters::{self, MacCounters, PhyCounters};
use soft_phy_board::link_pulses::{self, LinkPulses, Pulse};
use soft_phy_board::mac::{self, Queue, TCP_WINDOW};
use soft_phy_board::rp::{self, Ring, RingReader, TxBuffers, TxLine, FRAME_WORDS, PULSE_WORDS};
use soft_phy_board::rx::{LinkMonitor, Receiver};
use static_cell::{ConstStaticCell, StaticCell};
use {defmt_rtt as _, panic_probe as _};

#[cfg(not(chip_rp2350))]
const BOARD: &str = "rp2040-soft-phy";
#[cfg(chip_rp2350)]
const BOARD: &str = "rp2350-soft-phy";

/// The RP2350's boot block (its boot ROM looks for it in the first 4 KB of flash).
#[cfg(chip_rp2350)]
#[link_section = ".start_block"]
#[used]
pub static IMAGE_DEF: embassy_rp::block::ImageDef = embassy_rp::block::ImageDef::secure_exe();

/// clk_sys: a multiple of the 40 MHz sampling clock (an integer PIO divider, no fractional
/// jitter): 120 MHz (divider 3), or 160 / 200 MHz with feature `sys-160mhz` / `sys-200mhz`.
const SYS_HZ: u32 = if cfg!(feature = "sys-200mhz") {
    200_000_000
} else if cfg!(feature = "sys-160mhz") {
    160_000_000
} else {
    120_000_000
};
/// The PHY's words of one capture: a full-length frame at 4x (1 534 words) and room for
/// drift and the idle words around it; as symbols (16 bit times a word) 767 words.
const CAPTURE_WORDS: usize = if cfg!(feature = "cpu-decoder") {
    1600
} else {
    800
};
/// Core 1's stack: the receive loop (the capture buffer is a static).
#[cfg(not(feature = "one-core"))]
const CORE1_STACK: usize = 8192;
/// A full-size TCP segment's payload.
const MSS: usize = 1460;
/// iperf3 TCP sockets: two control sockets and four data sockets, as every example.
const IPERF_SOCKETS: usize = 6;
/// The data memory, in streams of a full window and send buffer each.
const IPERF_STREAMS: usize = 2;
/// Each iperf3 data stream's send buffer (`-R`): four segments, 4.9 ms of line.
const IPERF_TX: usize = 4 * MSS;
/// iperf3 UDP datagrams held each way.
const IPERF_UDP: usize = 4;
/// iperf3's control JSON each way.
const IPERF_JSON: usize = 2048;
/// An HTTP request head (longer ones are refused with 431).
const HTTP_RX: usize = 1024;
/// Each HTTP socket's send buffer: four segments in flight, as iperf3.
const HTTP_TX: usize = 4 * MSS;
/// TCP echo's buffers each way.
const ECHO_TCP: usize = 1024;
/// UDP echo datagrams held each way.
const ECHO_UDP: usize = 2;

/// linklab-perf's iperf servers run (feature `iperf`).
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
    routes: |stack| Stats(AppStats::new(BOARD, &COUNTERS, stack)),
}

/// The PHY's counters (its core publishes them) and the MAC's (its driver does).
static PHY_COUNTERS: PhyCounters = PhyCounters::new();
static MAC_COUNTERS: MacCounters = MacCounters::new();

/// `/stats`: the apps' (linklab-perf's `AppStats`), with the MAC's and the PHY's counters and
/// their laws added (soft-phy-board's `counters`).
struct Stats(AppStats<'static>);

impl Routes for Stats {
    fn before_serve(&mut self) {
        self.0.before_serve();
    }

    fn get(&mut self, path: &str, out: &mut [u8]) -> Option<RouteBody> {
        let apps = self.0.get(path, out)?;
        // The apps' object without its closing brace, then the counters and the brace.
        let end = apps.len.checked_sub(1)?;
        let mut w = SliceWriter::new(&mut out[end..]);
        let mac = MAC_COUNTERS.get();
        let written = write!(w, ",")
            .and_then(|()| {
                let tx_refused = critical_section::with(|cs| {
                    TX.borrow_ref(cs).as_ref().map_or(0, |(l, _)| l.frames_refused)
                });
                counters::write_json(&mac, &PHY_COUNTERS.snapshot(), tx_refused, &mut w)
            })
            .and_then(|()| write!(w, "}}"));
        let len = match written {
            Ok(()) => end + w.len(),
            // No room: the apps' object as it was.
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

bind_interrupts!(struct Irqs {
    PIO0_IRQ_0 => pio::InterruptHandler<PIO0>;
});

/// The MAC's RX queue: core 1 commits, core 0's stack takes.
static QUEUE: Queue = Queue::new();
/// The partner as the receiver last saw it.
static LINK: LinkMonitor = LinkMonitor::new();
/// The RX ring the DMA fills.
static RING: Ring = Ring::new();
/// The transmitter and the link pulses' timing, shared by the MAC and the pulse task.
static TX: Mutex<RefCell<Option<(TxLine, LinkPulses)>>> = Mutex::new(RefCell::new(None));

/// DMA channels: the RX ring, its re-arm, the two frame buffers' TX feeds, the link pulses'.
const DMA_RX: u8 = 0;
const DMA_REARM: u8 = 1;
const DMA_TX_FRAMES: [u8; 2] = [2, 3];
const DMA_TX_PULSES: u8 = 4;

fn now_ms() -> u64 {
    Instant::now().as_millis()
}

/// The MAC's transmitter: each frame's wire bytes into a free frame buffer, queued behind
/// the one on the line; PIO Manchester-encodes them.
struct PioTx;

impl PhyTx for PioTx {
    fn transmit(&mut self, wire: &[u8]) {
        critical_section::with(|cs| {
            if let Some((line, pulses)) = TX.borrow_ref_mut(cs).as_mut() {
                if line.send_frame(wire) {
                    pulses.sent(now_ms());
                }
            }
        });
    }

    fn ready(&mut self) -> bool {
        critical_section::with(|cs| {
            TX.borrow_ref(cs)
                .as_ref()
                .is_some_and(|(line, _)| line.ready())
        })
    }

    fn dropped(&mut self) -> u64 {
        critical_section::with(|cs| TX.borrow_ref(cs).as_ref().map_or(0, |(l, _)| l.frames_refused))
    }
}

/// Link pulses in the TX line's silences: FLP bursts, then NLPs (soft-phy-board's policy).
#[embassy_executor::task]
async fn link_pulse_task() -> ! {
    loop {
        Timer::after_millis(2).await;
        let now = now_ms();
        let up = LINK.is_up(now as u32);
        critical_section::with(|cs| {
            let mut tx = TX.borrow_ref_mut(cs);
            let Some((line, pulses)) = tx.as_mut() else {
                return;
            };
            let sent = match pulses.due(now, up) {
                Some(Pulse::Flp) => {
                    line.send_pulses(|out| link_pulses::flp_burst(link_pulses::page(true), out))
                }
                Some(Pulse::Nlp) => line.send_pulses(link_pulses::nlp),
                None => false,
            };
            if sent {
                pulses.sent(now);
            }
        });
    }
}

#[embassy_executor::task]
async fn net_task(
    mut runner: Runner<'static, GatedDriver<'static, mac::CountingDriver<PioTx>>>,
) -> ! {
    runner.run().await
}

/// The PHY's receiver (core 1's, or core 0's task's with `one-core`).
type PhyReceiver = Receiver<'static, linklab_mac::Inline<{ mac::QUEUE_BYTES }>, CAPTURE_WORDS>;

fn phy_receiver() -> &'static mut PhyReceiver {
    static RECEIVER: StaticCell<PhyReceiver> = StaticCell::new();
    #[cfg(feature = "cpu-decoder")]
    let receiver = || Receiver::new(QUEUE.producer(), Oversample::X4);
    #[cfg(not(feature = "cpu-decoder"))]
    let receiver = || Receiver::for_symbols(QUEUE.producer());
    RECEIVER.init_with(receiver)
}

/// One look at the ring: what arrived decoded, every transmission into the MAC's RX queue.
fn phy_poll(reader: &mut RingReader, receiver: &mut PhyReceiver) {
    if !reader.poll(|words| receiver.push(words, || now_ms() as u32, &LINK)) {
        receiver.overrun();
    }
    receiver.publish(&PHY_COUNTERS);
}

/// Core 1: the ring decoded as it fills.
#[cfg(not(feature = "one-core"))]
fn phy_core(reader: &mut RingReader) -> ! {
    let receiver = phy_receiver();
    loop {
        phy_poll(reader, receiver);
    }
}

/// `one-core`: the ring decoded by a task on core 0, yielding to the stack between looks.
#[cfg(feature = "one-core")]
#[embassy_executor::task]
async fn phy_task() -> ! {
    let mut reader = RingReader::new(&RING, DMA_RX);
    let receiver = phy_receiver();
    loop {
        phy_poll(&mut reader, receiver);
        embassy_futures::yield_now().await;
    }
}

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    let clocks = unwrap!(ClockConfig::system_freq(SYS_HZ).ok());
    let p = embassy_rp::init(embassy_rp::config::Config::new(clocks));
    info!("{} booting at {} Hz", BOARD, SYS_HZ);

    let Pio {
        mut common,
        sm0,
        sm1,
        sm2,
        ..
    } = Pio::new(p.PIO0, Irqs);
    static SM0: StaticCell<StateMachine<'static, PIO0, 0>> = StaticCell::new();
    static SM1: StaticCell<StateMachine<'static, PIO0, 1>> = StaticCell::new();
    static SM2: StaticCell<StateMachine<'static, PIO0, 2>> = StaticCell::new();
    let (sm0, sm1, sm2) = (SM0.init(sm0), SM1.init(sm1), SM2.init(sm2));
    // GP2: RX from the line receiver; GP3: TX and GP4: its enable, to the line driver
    // (README, "Circuit").
    let rx_pin = common.make_pio_pin(p.PIN_2);
    let tx_pin = common.make_pio_pin(p.PIN_3);
    let enable_pin = common.make_pio_pin(p.PIN_4);
    // The five DMA channels are driven through their registers (soft-phy-board's `rp`).
    let _dma = (p.DMA_CH0, p.DMA_CH1, p.DMA_CH2, p.DMA_CH3, p.DMA_CH4);
    // The ring's DMA before the sampler: a state machine started first fills its FIFO and
    // stalls, losing the samples until the DMA runs (a frame on the line then was cut).
    rp::start_rx_dma(&RING, DMA_RX, DMA_REARM);
    #[cfg(feature = "cpu-decoder")]
    rp::start_rx_sm(&mut common, sm0, &rx_pin);
    #[cfg(not(feature = "cpu-decoder"))]
    if !rp::start_rx_sm_symbols(&mut common, sm0, &rx_pin) {
        defmt::panic!(
            "clk_sys {} Hz: the RX sampler needs a multiple of 10 MHz",
            SYS_HZ
        );
    }
    rp::start_tx_sm(&mut common, sm1, &tx_pin, &enable_pin);
    rp::start_pulse_sm(&mut common, sm2, &tx_pin, &enable_pin);
    static FRAME_BUFS: ConstStaticCell<[[u32; FRAME_WORDS]; 2]> =
        ConstStaticCell::new([[0; FRAME_WORDS]; 2]);
    static PULSE_BUF: ConstStaticCell<[u32; PULSE_WORDS]> = ConstStaticCell::new([0; PULSE_WORDS]);
    let [frame0, frame1] = FRAME_BUFS.take();
    let bufs = TxBuffers {
        frames: [frame0, frame1],
        pulses: PULSE_BUF.take(),
    };
    critical_section::with(|cs| {
        TX.borrow_ref_mut(cs).replace((
            TxLine::new(bufs, DMA_TX_FRAMES, DMA_TX_PULSES),
            LinkPulses::new(now_ms()),
        ));
    });
    static COMMON: StaticCell<pio::Common<'static, PIO0>> = StaticCell::new();
    COMMON.init(common);

    #[cfg(not(feature = "one-core"))]
    {
        static CORE1: ConstStaticCell<Stack<CORE1_STACK>> = ConstStaticCell::new(Stack::new());
        spawn_core1(p.CORE1, CORE1.take(), move || {
            let mut reader = RingReader::new(&RING, DMA_RX);
            phy_core(&mut reader)
        });
    }
    #[cfg(feature = "one-core")]
    spawner.spawn(unwrap!(phy_task()));

    let driver = mac::CountingDriver::new(
        mac::driver(&QUEUE, PioTx, DeviceConfig::DEFAULT.mac, &LINK),
        &MAC_COUNTERS,
    );
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
    spawner.spawn(unwrap!(link_pulse_task()));
    unwrap!(spawn_apps::<IPERF, HTTP_ECHO>(spawner, stack));
    apps::announce(stack, BOARD).await;
}
