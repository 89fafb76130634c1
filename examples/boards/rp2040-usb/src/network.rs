//! The network over USB: linklab-serial's link on the CDC-ACM byte stream (its `embassy`
//! feature: the link as embassy-net's driver, `pump` between the link and the stream),
//! embassy-net at 198.18.0.2/24 and linklab-perf's apps. `GET /link` gives the link's
//! counters and whether their conservation laws hold.

use core::fmt::Write as _;

use defmt::{info, unwrap, warn};
use embassy_executor::Spawner;
use embassy_net::{Runner, StackResources};
use embassy_rp::clocks::RoscRng;
use embassy_time::Instant;
use embassy_usb::class::cdc_acm::CdcAcmClass;
use linklab_perf::device_config::DeviceConfig;
use linklab_perf::embassy::{
    self as apps, AppCounters, AppStats, EchoMemory, HttpMemory, IperfMemory,
};
use linklab_perf::http::{RouteBody, Routes};
use linklab_perf::slice_writer::SliceWriter;
use linklab_serial::embassy::{pump, LinkDriver, SharedLink};
use linklab_serial::{Config, Link};
use static_cell::{ConstStaticCell, StaticCell};

use crate::cdc::{PacketReader, PacketWriter};
use crate::{UsbDriver, BOARD};

/// Frames in flight each way on the link (linklab-serial's default window).
const WINDOW: usize = 8;
/// The bus's byte rate the link paces itself by: full-speed USB's bulk ceiling, 19 packets
/// of 64 bytes a millisecond (USB 2.0 §5.8.4).
const LINE_BYTES_PER_S: u64 = 1_216_000;
/// A full-size TCP segment's payload.
const MSS: usize = 1460;
/// Each iperf3 data stream's receive window: the link's window less two frames for ACKs.
const TCP_WINDOW: usize = (WINDOW - 2) * MSS;
/// iperf3 TCP sockets: two control sockets and four data sockets.
const IPERF_SOCKETS: usize = 6;
/// The data memory, in streams of a full window and send buffer each.
const IPERF_STREAMS: usize = 2;
/// Each iperf3 data stream's send buffer (`-R`): the link's window of segments.
const IPERF_TX: usize = WINDOW * MSS;
/// iperf3 UDP datagrams held each way.
const IPERF_UDP: usize = 4;
/// iperf3's control JSON each way.
const IPERF_JSON: usize = 2048;
/// An HTTP request head.
const HTTP_RX: usize = 1024;
/// Each HTTP socket's send buffer.
const HTTP_TX: usize = WINDOW * MSS;
/// TCP echo's buffers each way.
const ECHO_TCP: usize = 1024;
/// UDP echo datagrams held each way.
const ECHO_UDP: usize = 2;

const IPERF: bool = cfg!(feature = "iperf");
const HTTP_ECHO: bool = cfg!(feature = "http-echo");
const SOCKETS: usize = app_sockets(IPERF, HTTP_ECHO);

static COUNTERS: AppCounters = AppCounters::new();
static LINK: StaticCell<SharedLink<WINDOW>> = StaticCell::new();

linklab_perf::embassy_apps! {
    iperf: IperfMemory<IPERF_SOCKETS, IPERF_STREAMS, TCP_WINDOW, IPERF_TX, IPERF_UDP, IPERF_JSON>,
    http: HttpMemory<HTTP_RX, HTTP_TX>,
    echo: EchoMemory<ECHO_TCP, ECHO_UDP>,
    counters: &COUNTERS,
    gate: None,
    routes: |stack| LinkStats { stats: AppStats::new(BOARD, &COUNTERS, stack), link: LINK_REF.get() },
}

/// The link, for `/link` (set once, before the apps start).
static LINK_REF: LinkRef = LinkRef(core::cell::OnceCell::new());

/// A `&'static SharedLink` set once at start (single executor: no other thread).
struct LinkRef(core::cell::OnceCell<&'static SharedLink<WINDOW>>);

// SAFETY: the executor is single-threaded (thread mode, one core); nothing else reads it.
unsafe impl Sync for LinkRef {}

impl LinkRef {
    fn get(&self) -> &'static SharedLink<WINDOW> {
        self.0
            .get()
            .copied()
            .expect("the link is set before the apps start")
    }
}

/// `/stats` (linklab-perf's) and `/link`: the link's counters and its laws' verdict.
struct LinkStats {
    stats: AppStats<'static>,
    link: &'static SharedLink<WINDOW>,
}

impl Routes for LinkStats {
    fn before_serve(&mut self) {
        self.stats.before_serve();
    }

    fn get(&mut self, path: &str, out: &mut [u8]) -> Option<RouteBody> {
        if path != "/link" {
            return self.stats.get(path, out);
        }
        let now = Instant::now().as_micros();
        let (counters, state) = self.link.with_link(now, |l| (l.counters(), l.state()));
        let mut w = SliceWriter::new(out);
        let established = state == linklab_serial::State::Established;
        write!(w, "{{\"board\":\"{BOARD}\",\"established\":{established}").ok()?;
        for (name, value) in counters.fields() {
            write!(w, ",\"{name}\":{value}").ok()?;
        }
        let conserved = counters.check_conservation().is_ok();
        write!(w, ",\"conserved\":{conserved}}}").ok()?;
        Some(RouteBody {
            len: w.len(),
            content_type: "application/json",
        })
    }
}

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, LinkDriver<'static, WINDOW>>) -> ! {
    runner.run().await
}

/// Moves the link's bytes over USB; after the host goes away (a bus reset, a new
/// configuration), waits for it to configure the device again and goes on: the link's
/// retransmissions and epochs carry the frames across.
#[embassy_executor::task]
async fn pump_task(
    link: &'static SharedLink<WINDOW>,
    mut reader: PacketReader,
    mut writer: PacketWriter,
) -> ! {
    loop {
        reader.wait_connection().await;
        info!("usb: configured, the link pumps");
        let e = pump(link, &mut reader, &mut writer).await;
        warn!("usb: the pump stopped: {}", defmt::Debug2Format(&e));
    }
}

/// Starts the link once the host has configured the device (its epoch drawn then: the ring
/// oscillator's random bit and the time the host took, so a restarted board is seen as one),
/// then embassy-net and the apps.
pub async fn start(spawner: Spawner, class: CdcAcmClass<'static, UsbDriver>) {
    let (tx, rx) = class.split();
    let mut reader = PacketReader::new(rx);
    let writer = PacketWriter::new(tx);
    reader.wait_connection().await;
    let seed = RoscRng.next_u32() ^ (Instant::now().as_ticks() as u32);
    let config = Config::for_line_rate(LINE_BYTES_PER_S);
    let link = LINK.init(SharedLink::new(
        Link::new(config, seed),
        DeviceConfig::DEFAULT.mac,
    ));
    if LINK_REF.0.set(link).is_err() {
        defmt::panic!("the link was set twice");
    }
    spawner.spawn(unwrap!(pump_task(link, reader, writer)));

    let net_config = apps::static_ipv4(DeviceConfig::DEFAULT.ip, DeviceConfig::DEFAULT.prefix);
    static RESOURCES: ConstStaticCell<StackResources<SOCKETS>> =
        ConstStaticCell::new(StackResources::new());
    let (stack, runner) = embassy_net::new(
        link.driver(),
        net_config,
        RESOURCES.take(),
        RoscRng.next_u64(),
    );
    spawner.spawn(unwrap!(net_task(runner)));
    unwrap!(spawn_apps::<IPERF, HTTP_ECHO>(spawner, stack));
    apps::announce(stack, BOARD).await;
}
