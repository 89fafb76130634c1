//! The network over USB as a network interface (feature `ncm`): embassy-usb's CDC-NCM class
//! (Ethernet frames in NCM transfer blocks, NTB16) into embassy-net at 198.18.0.2/24 with
//! linklab-perf's apps. A Linux host binds its own `cdc_ncm` driver to it and gets an
//! Ethernet interface (its MAC address is [`HOST_MAC`]): no program runs between the port and
//! the host's stack. `GET /ncm` gives this end's counters.
//!
//! The class's frames reach embassy-net through this file's runner, not the class's own
//! (`into_embassy_net_device`), for three reasons, two read from embassy-usb 0.6's source:
//! - its receiver copies a datagram into the buffer it is given without checking its length
//!   against that buffer (`buf[..datagram_len].copy_from_slice`): a transfer block whose
//!   datagram is longer than the MTU would panic the device. Here the datagram is read into
//!   a frame with the room of the class's largest block (2048 bytes), so no datagram can be
//!   longer, and one longer than the MTU is dropped and counted;
//! - it sends the host's NETWORK_CONNECTION notification once, the first time the data
//!   interface is enabled. embassy-rp's endpoints never report being disabled, so after a
//!   USB reset the class would not send it again, and Linux keeps the interface's carrier off
//!   until it comes. Here a handler sees the reset (or the data interface set back to its
//!   alternate setting 0) and the runner waits for the host and notifies it again;
//! - the class's runner shares embassy-net's executor, so each segment the stack builds holds
//!   it off the endpoints (measured: [`crate::frame_queues`]). Here it runs on an interrupt
//!   executor (SWI_IRQ_1) above thread mode, its frames in queues a critical section guards.

use core::fmt::Write as _;

use defmt::{info, unwrap, warn};
use embassy_executor::Spawner;
use embassy_futures::select::{select, Either};
use embassy_net::{Runner, StackResources};
use embassy_executor::InterruptExecutor;
use embassy_rp::clocks::RoscRng;
use embassy_rp::interrupt;
use embassy_rp::interrupt::{InterruptExt, Priority};
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
use embassy_sync::signal::Signal;
use embassy_usb::class::cdc_ncm::{CdcNcmClass, Receiver, Sender, State};
use embassy_usb::types::InterfaceNumber;
use embassy_usb::{Builder, Handler};
use linklab_perf::device_config::DeviceConfig;
use linklab_perf::embassy::{self as apps, AppCounters, AppStats, EchoMemory, HttpMemory, IperfMemory};
use linklab_perf::http::{RouteBody, Routes};
use linklab_perf::slice_writer::SliceWriter;
use portable_atomic::{AtomicU32, Ordering};
use static_cell::{ConstStaticCell, StaticCell};

use crate::frame_queues::{self, Frame, Link, NetDriver, MTU};
use crate::{UsbDriver, BOARD, MAX_PACKET};

type FrameSender = embassy_sync::zerocopy_channel::Sender<'static, CriticalSectionRawMutex, Frame>;
type FrameReceiver = embassy_sync::zerocopy_channel::Receiver<'static, CriticalSectionRawMutex, Frame>;

/// The MAC address the host's interface takes (the class's iMACAddress string; Linux's
/// cdc_ncm reads it at bind): locally administered, the device's own less one.
pub const HOST_MAC: [u8; 6] = [0x02, 0x4c, 0x4c, 0, 0, 0x01];
/// Frames held each way between the class and embassy-net.
const FRAMES: usize = 4;
/// The data interface's number: the class's second interface, the device's only function.
const DATA_INTERFACE: u8 = 1;

/// A full-size TCP segment's payload.
const MSS: usize = 1460;
/// Each iperf3 data stream's receive window: what one full-speed millisecond frame carries
/// (17 packets of 64 bytes) times a few milliseconds of round trip, in whole segments.
const TCP_WINDOW: usize = 8 * MSS;
/// iperf3 TCP sockets: two control sockets and four data sockets.
const IPERF_SOCKETS: usize = 6;
/// The data memory, in streams of a full window and send buffer each.
const IPERF_STREAMS: usize = 2;
/// Each iperf3 data stream's send buffer (`-R`).
const IPERF_TX: usize = 8 * MSS;
/// iperf3 UDP datagrams held each way.
const IPERF_UDP: usize = 4;
/// iperf3's control JSON each way.
const IPERF_JSON: usize = 2048;
/// An HTTP request head.
const HTTP_RX: usize = 1024;
/// Each HTTP socket's send buffer.
const HTTP_TX: usize = 8 * MSS;
/// TCP echo's buffers each way.
const ECHO_TCP: usize = 1024;
/// UDP echo datagrams held each way.
const ECHO_UDP: usize = 2;

const IPERF: bool = cfg!(feature = "iperf");
const HTTP_ECHO: bool = cfg!(feature = "http-echo");
const SOCKETS: usize = app_sockets(IPERF, HTTP_ECHO);

static COUNTERS: AppCounters = AppCounters::new();

linklab_perf::embassy_apps! {
    iperf: IperfMemory<IPERF_SOCKETS, IPERF_STREAMS, TCP_WINDOW, IPERF_TX, IPERF_UDP, IPERF_JSON>,
    http: HttpMemory<HTTP_RX, HTTP_TX>,
    echo: EchoMemory<ECHO_TCP, ECHO_UDP>,
    counters: &COUNTERS,
    gate: None,
    routes: |stack| NcmStats { stats: AppStats::new(BOARD, &COUNTERS, stack) },
}

/// This end's counters (`GET /ncm`). Laws: every datagram read from a transfer block went to
/// embassy-net or was dropped as too long; every frame embassy-net sent went to the class or
/// failed.
struct NcmCounters {
    /// Datagrams read from the host's transfer blocks.
    datagrams_in: AtomicU32,
    /// Of those, handed to embassy-net.
    frames_in: AtomicU32,
    /// Of those, longer than the MTU: dropped.
    too_long: AtomicU32,
    /// Frames embassy-net handed to the class.
    frames_out: AtomicU32,
    /// Of those, in a transfer block the endpoint took.
    datagrams_out: AtomicU32,
    /// Of those, refused by the endpoint.
    out_errors: AtomicU32,
    /// Times the host enabled the data interface and was told the network is connected.
    connections: AtomicU32,
    /// Times the host reset the device or set the data interface back to alternate setting 0.
    disconnections: AtomicU32,
}

static NCM: NcmCounters = NcmCounters {
    datagrams_in: AtomicU32::new(0),
    frames_in: AtomicU32::new(0),
    too_long: AtomicU32::new(0),
    frames_out: AtomicU32::new(0),
    datagrams_out: AtomicU32::new(0),
    out_errors: AtomicU32::new(0),
    connections: AtomicU32::new(0),
    disconnections: AtomicU32::new(0),
};

fn bump(counter: &AtomicU32) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Signalled when the host takes the network away: a USB reset, the device deconfigured, or
/// the data interface set to its alternate setting 0.
static HOST_LEFT: Signal<CriticalSectionRawMutex, ()> = Signal::new();

/// Sees the host take the network away (embassy-usb calls it from the device's task).
struct HostWatch;

impl Handler for HostWatch {
    fn reset(&mut self) {
        HOST_LEFT.signal(());
    }

    fn configured(&mut self, configured: bool) {
        if !configured {
            HOST_LEFT.signal(());
        }
    }

    fn set_alternate_setting(&mut self, iface: InterfaceNumber, alternate_setting: u8) {
        if iface == InterfaceNumber(DATA_INTERFACE) && alternate_setting == 0 {
            HOST_LEFT.signal(());
        }
    }
}

/// `/stats` (linklab-perf's) and `/ncm`: this end's counters.
struct NcmStats {
    stats: AppStats<'static>,
}

impl Routes for NcmStats {
    fn before_serve(&mut self) {
        self.stats.before_serve();
    }

    fn get(&mut self, path: &str, out: &mut [u8]) -> Option<RouteBody> {
        if path != "/ncm" {
            return self.stats.get(path, out);
        }
        let g = |c: &AtomicU32| c.load(Ordering::Relaxed);
        let fields = [
            ("datagrams_in", g(&NCM.datagrams_in)),
            ("frames_in", g(&NCM.frames_in)),
            ("too_long", g(&NCM.too_long)),
            ("frames_out", g(&NCM.frames_out)),
            ("datagrams_out", g(&NCM.datagrams_out)),
            ("out_errors", g(&NCM.out_errors)),
            ("connections", g(&NCM.connections)),
            ("disconnections", g(&NCM.disconnections)),
        ];
        let mut w = SliceWriter::new(out);
        write!(w, "{{\"board\":\"{BOARD}\"").ok()?;
        for (name, value) in fields {
            write!(w, ",\"{name}\":{value}").ok()?;
        }
        w.write_str("}").ok()?;
        Some(RouteBody {
            len: w.len(),
            content_type: "application/json",
        })
    }
}

/// The CDC-NCM class on `builder` (before the device is built), with the handler that sees
/// the host leave.
pub fn class(builder: &mut Builder<'static, UsbDriver>) -> CdcNcmClass<'static, UsbDriver> {
    static STATE: StaticCell<State<'static>> = StaticCell::new();
    static WATCH: StaticCell<HostWatch> = StaticCell::new();
    let class = CdcNcmClass::new(builder, STATE.init(State::new()), HOST_MAC, MAX_PACKET);
    builder.handler(WATCH.init(HostWatch));
    class
}

/// Datagrams from the host into embassy-net: waits for the host to enable the data
/// interface (then notifies it that the network is connected), reads transfer blocks until
/// the host leaves, and again.
async fn receive(
    mut usb: Receiver<'static, UsbDriver>,
    link: &'static Link,
    mut rx: FrameSender,
) -> ! {
    loop {
        link.set(false);
        if usb.wait_connection().await.is_err() {
            continue;
        }
        // What the host did before it enabled the data interface (the resets of enumeration)
        // is over.
        HOST_LEFT.reset();
        bump(&NCM.connections);
        info!("ncm: the host enabled the data interface, network connected");
        link.set(true);
        loop {
            // A free frame first, the datagram read straight into it (a block holds no
            // datagram longer than the frame's room).
            let frame = rx.send().await;
            let n = match select(usb.read_packet(frame.room()), HOST_LEFT.wait()).await {
                Either::First(Ok(n)) => n,
                Either::First(Err(e)) => {
                    warn!("ncm: the data endpoint failed: {}", e);
                    break;
                }
                Either::Second(()) => break,
            };
            bump(&NCM.datagrams_in);
            if n > MTU {
                bump(&NCM.too_long);
                continue;
            }
            frame.set_len(n);
            rx.send_done();
            bump(&NCM.frames_in);
        }
        bump(&NCM.disconnections);
        info!("ncm: the host left");
    }
}

/// Frames from embassy-net to the host, one transfer block each.
async fn send(mut usb: Sender<'static, UsbDriver>, mut tx: FrameReceiver) -> ! {
    loop {
        let frame = tx.receive().await;
        bump(&NCM.frames_out);
        match usb.write_packet(frame.bytes()).await {
            Ok(()) => bump(&NCM.datagrams_out),
            Err(e) => {
                bump(&NCM.out_errors);
                warn!("ncm: a frame was refused: {}", e);
            }
        }
        tx.receive_done();
    }
}

/// The class's runner: frames each way between the endpoints and the queues.
#[embassy_executor::task]
async fn ncm_task(class: CdcNcmClass<'static, UsbDriver>, link: &'static Link, rx: FrameSender, tx: FrameReceiver) -> ! {
    let (sender, receiver) = class.split();
    match select(receive(receiver, link, rx), send(sender, tx)).await {
        Either::First(never) | Either::Second(never) => never,
    }
}

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, NetDriver>) -> ! {
    runner.run().await
}

/// The executor of the class's runner, above thread mode (where embassy-net and the apps run)
/// and below the USB controller's interrupt.
static USB_EXECUTOR: InterruptExecutor = InterruptExecutor::new();

#[interrupt]
unsafe fn SWI_IRQ_1() {
    // SAFETY: the executor's own interrupt, started in `start` before it can fire.
    unsafe { USB_EXECUTOR.on_interrupt() }
}

/// Starts the class's runner (on its interrupt executor), embassy-net and the apps.
pub async fn start(spawner: Spawner, class: CdcNcmClass<'static, UsbDriver>) {
    static QUEUES: ConstStaticCell<frame_queues::Storage<FRAMES>> = ConstStaticCell::new(frame_queues::Storage::new());
    static LINK: Link = Link::new();
    let (device, rx, tx) = QUEUES.take().split(&LINK, DeviceConfig::DEFAULT.mac);
    interrupt::USBCTRL_IRQ.set_priority(Priority::P1);
    interrupt::SWI_IRQ_1.set_priority(Priority::P2);
    let usb_spawner = USB_EXECUTOR.start(interrupt::SWI_IRQ_1);
    usb_spawner.spawn(unwrap!(ncm_task(class, &LINK, rx, tx)));

    let net_config = apps::static_ipv4(DeviceConfig::DEFAULT.ip, DeviceConfig::DEFAULT.prefix);
    static RESOURCES: ConstStaticCell<StackResources<SOCKETS>> = ConstStaticCell::new(StackResources::new());
    let (stack, runner) = embassy_net::new(device, net_config, RESOURCES.take(), RoscRng.next_u64());
    spawner.spawn(unwrap!(net_task(runner)));
    unwrap!(spawn_apps::<IPERF, HTTP_ECHO>(spawner, stack));
    apps::announce(stack, BOARD).await;
}
