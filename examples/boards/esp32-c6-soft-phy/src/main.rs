//! linklab-perf's iperf3 and iperf 2 servers (5201, 5001), HTTP (80: bench files and
//! `/stats`), echo (7) and ICMP on an ESP32-C6 (160 MHz, one HP core) that is its own
//! 10BASE-T PHY: PARL_IO samples the RX pin at 40 MHz (4x, 1-bit, its highest rate) into a
//! streaming DMA buffer and shifts the TX pin out at 20 MHz (2x) by DMA with its "valid"
//! signal as the line driver's enable; linklab-phy10 decodes the stream straight into
//! linklab-mac's RX queue (soft-phy-board's framer and receiver); the MAC, embassy-net and the
//! apps share the core. Link pulses: FLP bursts advertising 10BASE-T (full duplex) after
//! boot or a lost link, then NLPs. 198.18.0.2/24 (feature `dhcp`: DHCP); logs through `log`
//! on esp-println.
//!
//! Never run on hardware: it builds and links against esp-hal; whether PARL_IO's 1-bit RX
//! streams at 40 MHz without a gap is not known (README).
#![no_std]
#![no_main]

use core::cell::RefCell;

use critical_section::Mutex;
use embassy_executor::Spawner;
use embassy_net::{Runner, StackResources};
use embassy_time::{Instant, Timer};
use esp_hal::clock::CpuClock;
use esp_hal::dma::{DmaRxStreamBuf, DmaTxBuf};
use esp_hal::gpio::NoPin;
use esp_hal::parl_io::{
    BitPackOrder, ParlIo, ParlIoRx, ParlIoRxTransfer, ParlIoTx, ParlIoTxTransfer, RxConfig,
    RxOneBit, TxConfig, TxOneBit, TxPinConfigWithValidPin,
};
use esp_hal::time::Rate;
use esp_hal::timer::timg::TimerGroup;
use esp_hal::{efuse, rng::Rng, Blocking};
use linklab_mac::PhyTx;
use linklab_perf::embassy::{
    self as apps, AppCounters, AppStats, EchoMemory, GatedDriver, HttpMemory, IperfMemory,
    ServiceGate,
};
use linklab_phy10::{encode_frame, Oversample};
use log::{info, warn};
use soft_phy_board::link_pulses::{self, LinkPulses, Pulse, FLP_BURST_WORDS, TX_OVERSAMPLE};
use soft_phy_board::mac::{self, Queue, TCP_WINDOW};
use soft_phy_board::rx::{LinkMonitor, Receiver};
use static_cell::{ConstStaticCell, StaticCell};
use {esp_backtrace as _, esp_println as _};

esp_bootloader_esp_idf::esp_app_desc!();

const BOARD: &str = "esp32-c6-soft-phy";

/// The PHY's words of one capture: a full-length frame at 4x and the idle words around it.
const CAPTURE_WORDS: usize = 1600;
/// The RX stream buffer: 16 KB (3.3 ms of line at 40 MHz) in 8 descriptors of 2 KB.
const RX_STREAM_BYTES: usize = 16 * 1024;
const RX_CHUNK_BYTES: usize = 2048;
/// Bytes taken from the stream at a time.
const RX_POP_BYTES: usize = 1024;
/// The TX words: an FLP burst, the longest transmission (a full frame at 2x is 765).
const TX_WORDS: usize = FLP_BURST_WORDS;
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
    routes: |stack| AppStats::new(BOARD, &COUNTERS, stack),
}

/// The MAC's RX queue: the receive task commits, the stack takes.
static QUEUE: Queue = Queue::new();
/// The partner as the receiver last saw it.
static LINK: LinkMonitor = LinkMonitor::new();
/// The transmitter, shared by the MAC and the link pulse task.
static TX: Mutex<RefCell<Option<ParlTx>>> = Mutex::new(RefCell::new(None));

fn now_ms() -> u64 {
    Instant::now().as_millis()
}

/// PARL_IO's transmitter: idle (the driver and its DMA buffer) or sending.
enum TxState {
    Idle(ParlIoTx<'static, Blocking>, DmaTxBuf),
    Busy(ParlIoTxTransfer<'static, DmaTxBuf, Blocking>),
    /// Between the two (never seen outside `send`).
    Moving,
}

/// The transmitter: samples encoded into `words`, copied into the DMA buffer, shifted out.
struct ParlTx {
    state: TxState,
    words: &'static mut [u32; TX_WORDS],
    pulses: LinkPulses,
    busy_drops: u64,
}

impl ParlTx {
    /// Takes the driver back from a finished transfer.
    fn reclaim(&mut self) {
        if matches!(&self.state, TxState::Busy(t) if t.is_done()) {
            if let TxState::Busy(t) = core::mem::replace(&mut self.state, TxState::Moving) {
                let (_, tx, buf) = t.wait();
                self.state = TxState::Idle(tx, buf);
            }
        }
    }

    fn busy(&mut self) -> bool {
        self.reclaim();
        !matches!(self.state, TxState::Idle(..))
    }

    /// Sends what `fill` writes (samples; it returns how many): false if the line was busy.
    fn send(&mut self, fill: impl FnOnce(&mut [u32]) -> Option<usize>) -> bool {
        if self.busy() {
            self.busy_drops += 1;
            return false;
        }
        let TxState::Idle(tx, mut buf) = core::mem::replace(&mut self.state, TxState::Moving)
        else {
            return false;
        };
        let samples = fill(&mut self.words[..]).unwrap_or(0);
        let bytes = samples.div_ceil(8).min(buf.capacity());
        for (chunk, w) in buf.as_mut_slice()[..bytes]
            .chunks_mut(4)
            .zip(self.words.iter())
        {
            chunk.copy_from_slice(&w.to_le_bytes()[..chunk.len()]);
        }
        buf.set_length(bytes);
        if bytes == 0 {
            self.state = TxState::Idle(tx, buf);
            return false;
        }
        match tx.write(bytes, buf) {
            Ok(t) => {
                self.state = TxState::Busy(t);
                true
            }
            Err((_, tx, buf)) => {
                self.state = TxState::Idle(tx, buf);
                false
            }
        }
    }
}

/// The MAC's transmitter.
struct SharedTx;

impl PhyTx for SharedTx {
    fn transmit(&mut self, wire: &[u8]) {
        critical_section::with(|cs| {
            if let Some(tx) = TX.borrow_ref_mut(cs).as_mut() {
                if tx.send(|out| encode_frame(wire, TX_OVERSAMPLE, out).ok()) {
                    tx.pulses.sent(now_ms());
                }
            }
        });
    }

    fn ready(&mut self) -> bool {
        critical_section::with(|cs| TX.borrow_ref_mut(cs).as_mut().is_some_and(|tx| !tx.busy()))
    }

    fn dropped(&mut self) -> u64 {
        critical_section::with(|cs| TX.borrow_ref(cs).as_ref().map_or(0, |tx| tx.busy_drops))
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
            let mut guard = TX.borrow_ref_mut(cs);
            let Some(tx) = guard.as_mut() else {
                return;
            };
            let sent = match tx.pulses.due(now, up) {
                Some(Pulse::Flp) => {
                    tx.send(|out| link_pulses::flp_burst(link_pulses::page(true), out))
                }
                Some(Pulse::Nlp) => tx.send(link_pulses::nlp),
                None => false,
            };
            if sent {
                tx.pulses.sent(now);
            }
        });
    }
}

type Rx = ParlIoRx<'static, Blocking>;
type RxTransfer = ParlIoRxTransfer<'static, DmaRxStreamBuf, Blocking>;
type PhyReceiver = Receiver<'static, linklab_mac::Inline<{ mac::QUEUE_BYTES }>, CAPTURE_WORDS>;

/// Starts a continuous read: no byte count, software enable (1-bit RX has no valid pin): it
/// runs until the stream buffer fills.
fn start_rx(rx: Rx, buf: DmaRxStreamBuf) -> RxTransfer {
    match rx.read(None, buf) {
        Ok(t) => t,
        Err((e, ..)) => panic!("PARL_IO RX did not start: {e:?}"),
    }
}

/// The receive side: what the stream buffer holds, decoded every 100 µs (500 bytes of line);
/// a full buffer (the DMA stopped: this task fell 3.3 ms behind) restarts the read and
/// counts an overrun.
#[embassy_executor::task]
async fn phy_rx_task(rx: Rx, buf: DmaRxStreamBuf, receiver: &'static mut PhyReceiver) -> ! {
    let mut transfer = start_rx(rx, buf);
    let mut bytes = [0u8; RX_POP_BYTES];
    let mut words = [0u32; RX_POP_BYTES / 4];
    loop {
        loop {
            let n = transfer.available_bytes().min(RX_POP_BYTES) & !3;
            if n == 0 {
                break;
            }
            let n = transfer.pop(&mut bytes[..n]) & !3;
            for (w, b) in words.iter_mut().zip(bytes[..n].chunks_exact(4)) {
                *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
            }
            receiver.push(&words[..n / 4], || now_ms() as u32, &LINK);
        }
        if transfer.is_done() {
            let (_, rx, buf) = transfer.wait();
            receiver.overrun();
            warn!("PARL_IO RX overrun: restarted");
            transfer = start_rx(rx, buf);
        }
        Timer::after_micros(100).await;
    }
}

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, GatedDriver<'static, mac::Driver<SharedTx>>>) -> ! {
    runner.run().await
}

#[esp_rtos::main]
async fn main(spawner: Spawner) {
    esp_println::logger::init_logger_from_env();
    let p = esp_hal::init(esp_hal::Config::default().with_cpu_clock(CpuClock::max()));
    let timg0 = TimerGroup::new(p.TIMG0);
    esp_rtos::start(timg0.timer0, p.FROM_CPU_INTR0);
    info!("{} booting", BOARD);

    // PARL_IO on one DMA channel: RX on GPIO4 (from the line receiver), TX on GPIO5 with its
    // valid signal on GPIO6 as the line driver's enable (README, "Circuit").
    let parl_io = ParlIo::new(p.PARL_IO, p.DMA_CH0).expect("PARL_IO");
    let rx_config = RxConfig::default()
        .with_frequency(Rate::from_mhz(40))
        .with_bit_order(BitPackOrder::Lsb);
    let rx = parl_io
        .rx
        .with_config(RxOneBit::new(p.GPIO4), NoPin, rx_config)
        .expect("PARL_IO RX at 40 MHz");
    let tx_config = TxConfig::default()
        .with_frequency(Rate::from_mhz(20))
        .with_bit_order(BitPackOrder::Lsb)
        .with_idle_value(0);
    let tx_pins = TxPinConfigWithValidPin::new(TxOneBit::new(p.GPIO5), p.GPIO6);
    let tx = parl_io
        .tx
        .with_config(tx_pins, NoPin, tx_config)
        .expect("PARL_IO TX at 20 MHz");
    let rx_buf = esp_hal::dma_rx_stream_buffer!(RX_STREAM_BYTES, RX_CHUNK_BYTES);
    let tx_buf = esp_hal::dma_tx_buffer!(TX_WORDS * 4).expect("TX DMA buffer");
    static TX_WORDS_BUF: ConstStaticCell<[u32; TX_WORDS]> = ConstStaticCell::new([0; TX_WORDS]);
    critical_section::with(|cs| {
        TX.borrow_ref_mut(cs).replace(ParlTx {
            state: TxState::Idle(tx, tx_buf),
            words: TX_WORDS_BUF.take(),
            pulses: LinkPulses::new(now_ms()),
            busy_drops: 0,
        });
    });
    static RECEIVER: StaticCell<PhyReceiver> = StaticCell::new();
    let receiver = RECEIVER.init_with(|| Receiver::new(QUEUE.producer(), Oversample::X4));

    let driver = mac::driver(&QUEUE, SharedTx, mac_address(), &LINK);
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

    spawner.spawn(phy_rx_task(rx, rx_buf, receiver).expect("spawned once"));
    spawner.spawn(link_pulse_task().expect("spawned once"));
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
