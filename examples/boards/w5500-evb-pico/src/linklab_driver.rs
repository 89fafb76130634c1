//! Feature `linklab-driver`: linklab's W5500 driver (crates/linklab-w5500) through
//! linklab-mac instead of embassy-net-wiznet. SPI in mode 3 (the PL022 leaves 0.5 SCK
//! periods between bytes, against 1.5 in mode 0); the driver's task on an interrupt
//! executor above the stack's (SWI_IRQ_1), so it resumes the moment a DMA transfer or INTn
//! wakes it instead of waiting for the stack to yield; its frames into linklab-mac's RX
//! queue, the stack's built in place in its TX slots; `/stats` with the driver's and the
//! MAC's counters.

use core::fmt::Write;
use core::task::Context;

use defmt::unwrap;
use embassy_executor::InterruptExecutor;
use embassy_net_driver::{Capabilities, Driver as NetDriver, HardwareAddress, LinkState};
use embassy_rp::gpio::{Input, Output};
use embassy_rp::interrupt;
use embassy_rp::interrupt::{InterruptExt, Priority};
use embassy_rp::peripherals::SPI0;
use embassy_rp::spi::{self, Async, Phase, Polarity, Spi};
use embassy_time::Delay;
use linklab_mac::window::capacity_for_frames;
use linklab_mac::{
    EmbassyMac, EmbassyTimeClock, Inline, LinkSignal, Mac, MacAddr, MacConfig, RxQueue,
};
use linklab_perf::embassy::AppStats;
use linklab_perf::http::{RouteBody, Routes};
use linklab_perf::slice_writer::SliceWriter;
use linklab_w5500::{Config, Runner, SharedCounters, TxQueue, W5500Tx, W5500};
use portable_atomic::{AtomicU32, Ordering};
use static_cell::StaticCell;
// Its memcpy in place of compiler_builtins': every payload byte is copied twice on its way
// (the app's buffer and the socket's ring, the ring and the frame), and compiler_builtins'
// moves a word per loop step on the M0+ (9 % of the CPU sending at 62.5 MHz).
use linklab_memcpy as _;

/// Full-size frames the MAC's RX queue holds between the driver and the stack: the W5500's
/// own 16 KB buffer is the larger queue (the driver leaves frames there while this is full).
const QUEUE_FRAMES: usize = 4;
const QUEUE_BYTES: usize = capacity_for_frames(QUEUE_FRAMES, linklab_w5500::RX_FORMAT);
/// TX slots: one being written to the chip, the next built by the stack, one spare.
const TX_SLOTS: usize = 3;

static QUEUE: RxQueue<Inline<QUEUE_BYTES>> = RxQueue::new();
static TX: TxQueue<TX_SLOTS> = TxQueue::new();
static COUNTERS: SharedCounters = SharedCounters::new();
static LINK: LinkSignal = LinkSignal::new(false);
/// The driver's executor: SWI_IRQ_1 at priority 2, above thread mode (the stack and the apps).
static EXECUTOR: InterruptExecutor = InterruptExecutor::new();

#[interrupt]
unsafe fn SWI_IRQ_1() {
    // SAFETY: the interrupt EXECUTOR was started on (`start`), and nothing else's.
    unsafe { EXECUTOR.on_interrupt() }
}

/// SPI mode 3 (CPOL 1, CPHA 1), which the W5500 takes (datasheet §2.1).
pub fn spi_mode_3(config: &mut spi::Config) {
    config.phase = Phase::CaptureOnSecondTransition;
    config.polarity = Polarity::IdleHigh;
}

type W5500Runner = Runner<
    'static,
    Spi<'static, SPI0, Async>,
    Output<'static>,
    Input<'static>,
    Delay,
    EmbassyTimeClock,
    Inline<QUEUE_BYTES>,
    fn(bool),
    TX_SLOTS,
>;

#[embassy_executor::task]
async fn driver_task(runner: W5500Runner) -> ! {
    runner.run().await
}

fn set_link(up: bool) {
    LINK.set(up);
}

/// Brings the W5500 up on `spi` (SCSn `cs`, INTn `int`, RSTn `reset`) with MAC address
/// `mac`, starts its runner on the driver's executor, and answers embassy-net's driver.
pub async fn start(
    spi: Spi<'static, SPI0, Async>,
    cs: Output<'static>,
    int: Input<'static>,
    reset: Output<'static>,
    mac: [u8; 6],
) -> Driver {
    static RESET: StaticCell<Output<'static>> = StaticCell::new();
    // RSTn stays driven high for as long as the board runs.
    let reset = RESET.init(reset);
    let chip = W5500::new(spi, cs);
    let Ok(chip) = chip.init(Some(reset), Config::new(mac), &mut Delay).await else {
        defmt::panic!("the W5500 did not answer on SPI0");
    };
    let runner = Runner::new(
        chip,
        int,
        Delay,
        EmbassyTimeClock,
        QUEUE.producer(),
        &TX,
        &COUNTERS,
        set_link as fn(bool),
    );
    interrupt::SWI_IRQ_1.set_priority(Priority::P2);
    let spawner = EXECUTOR.start(interrupt::SWI_IRQ_1);
    spawner.spawn(unwrap!(driver_task(runner)));
    let mut mac = Mac::new(
        QUEUE.consumer(),
        TX.producer(),
        EmbassyTimeClock,
        MacConfig::tap(MacAddr(mac)),
    );
    // The MAC checks and fills the IPv4, TCP and UDP checksums a word at a time (the
    // stack's smoltcp then does neither), as the RP2040 soft-PHY example does; the TCP
    // window is the apps' (sized for the W5500's buffer), not the MAC's small queue's.
    mac.set_checksum_offload(true);
    mac.set_burst_cap(false);
    Driver {
        inner: EmbassyMac::new(mac, &LINK),
        busy: true,
    }
}

/// The MAC as embassy-net's driver, publishing the MAC's counters for `/stats` after each
/// poll that moved a frame (the MAC itself belongs to embassy-net's runner).
pub struct Driver {
    inner: MacDriver,
    busy: bool,
}

/// linklab-mac's embassy-net driver over the driver's queues.
type MacDriver = EmbassyMac<
    'static,
    Inline<QUEUE_BYTES>,
    W5500Tx<'static, TX_SLOTS>,
    EmbassyTimeClock,
    &'static LinkSignal,
>;

/// The MAC's counters `/stats` shows: what it received, dropped and sent.
static MAC_COUNTS: [AtomicU32; 6] = [const { AtomicU32::new(0) }; 6];
const MAC_NAMES: [&str; 6] = [
    "rx_packets",
    "rx_filtered",
    "rx_missed_errors",
    "rx_checksum_errors",
    "tx_packets",
    "tx_dropped",
];

impl NetDriver for Driver {
    type RxToken<'a>
        = <MacDriver as NetDriver>::RxToken<'a>
    where
        Self: 'a;
    type TxToken<'a>
        = <MacDriver as NetDriver>::TxToken<'a>
    where
        Self: 'a;

    fn receive(&mut self, cx: &mut Context<'_>) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        let tokens = self.inner.receive(cx);
        self.busy |= tokens.is_some();
        tokens
    }

    fn transmit(&mut self, cx: &mut Context<'_>) -> Option<Self::TxToken<'_>> {
        let token = self.inner.transmit(cx);
        self.busy |= token.is_some();
        token
    }

    fn link_state(&mut self, cx: &mut Context<'_>) -> LinkState {
        if self.busy {
            self.busy = false;
            let c = self.inner.mac().counters();
            let values = [
                c.rx_packets,
                c.rx_filtered,
                c.rx_missed_errors,
                c.rx_checksum_errors,
                c.tx_packets,
                c.tx_dropped,
            ];
            for (cell, v) in MAC_COUNTS.iter().zip(values) {
                cell.store(v as u32, Ordering::Relaxed);
            }
        }
        self.inner.link_state(cx)
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn hardware_address(&self) -> HardwareAddress {
        self.inner.hardware_address()
    }
}

/// `/stats`: the apps' (linklab-perf's `AppStats`), with `"w5500"`: the driver's counters,
/// and `"mac"`: the MAC's.
pub struct Stats(pub AppStats<'static>);

impl Routes for Stats {
    fn before_serve(&mut self) {
        self.0.before_serve();
    }

    fn get(&mut self, path: &str, out: &mut [u8]) -> Option<RouteBody> {
        let apps = self.0.get(path, out)?;
        if path != "/stats" {
            return Some(apps);
        }
        // The apps' object without its closing brace, then the counters and the brace.
        let end = apps.len.checked_sub(1)?;
        let mut w = SliceWriter::new(&mut out[end..]);
        let written = write!(w, ",\"w5500\":{{")
            .and_then(|()| COUNTERS.snapshot().write_json(&mut w))
            .and_then(|()| write!(w, "}},\"mac\":{{"))
            .and_then(|()| {
                for (k, (name, cell)) in MAC_NAMES.iter().zip(&MAC_COUNTS).enumerate() {
                    let comma = if k == 0 { "" } else { "," };
                    write!(w, "{comma}\"{name}\":{}", cell.load(Ordering::Relaxed))?;
                }
                Ok(())
            })
            .and_then(|()| write!(w, "}}}}"));
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
