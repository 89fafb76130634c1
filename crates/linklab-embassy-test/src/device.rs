//! The device: linklab-mac on a TAP as an embassy-net driver, an "interrupt" thread feeding
//! its RX queue, and embassy-executor running the stack and the application.

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::task::Waker;
use std::thread::JoinHandle;
use std::time::Duration;

use embassy_executor::{Executor, Spawner};
use embassy_futures::select::select;
use embassy_net::{Ipv4Address, Ipv4Cidr, Stack, StackResources, StaticConfigV4};
use linklab_app_gate::AppGate;
use linklab_mac::embassy::{EmbassyMac, EmbassyTimeClock, LinkSignal, WakeAt};
use linklab_mac::timing::{bits_ns, ipg_ns};
use linklab_mac::window::{capacity_for_frames, tcp_rx_window, ETHERNET_MSS};
use linklab_mac::{BoxedSlice, Clock, Counters, Mac, MacAddr, MacConfig, PhyTx, RxQueue};
use linklab_perf::embassy::{AppCounters, ServiceGate};

use crate::app::Stop;
use linklab_tap::{pump_rx, Tap, TapPhy};

/// The device's address and prefix (RFC 2544 space, inside the test's namespace).
pub const DEVICE_CIDR: &str = "198.18.0.2/24";
/// The MAC's line rate: 10BASE-T timing (inter-packet gap) on the TAP.
pub const LINE_RATE_BPS: u64 = 10_000_000;
/// Frames the RX queue holds (the TCP window follows from it).
const RX_FRAMES: usize = 16;
const MAC_ADDRESS: MacAddr = MacAddr([0x02, 0x4c, 0x4c, 0x00, 0x00, 0x02]);

/// The driver type embassy-net runs on.
type Driver = EmbassyMac<'static, BoxedSlice, Paced, SeenClock, &'static LinkSignal, AppGate>;

/// embassy-time's clock and timer as the MAC uses them, remembering the last time read (the
/// MAC reads the clock right before it hands a frame to the PHY, so that is the frame's
/// start) and counting the timer wake-ups asked for (a frame waiting for the gap).
#[derive(Clone, Default)]
struct SeenClock {
    last_read_ns: Arc<AtomicU64>,
    wake_requests: Arc<AtomicU64>,
}

impl Clock for SeenClock {
    fn now_ns(&self) -> u64 {
        let now = EmbassyTimeClock.now_ns();
        self.last_read_ns.store(now, Ordering::Relaxed);
        now
    }
}

impl WakeAt for SeenClock {
    fn wake_at(&self, at_ns: u64, waker: &Waker) {
        self.wake_requests.fetch_add(1, Ordering::Relaxed);
        EmbassyTimeClock.wake_at(at_ns, waker)
    }
}

/// The TAP as transmit PHY, checking on every frame that the MAC started it no earlier than
/// the end of the previous one plus the inter-packet gap, on the MAC's own clock readings.
struct Paced {
    tap: TapPhy<'static>,
    clock: SeenClock,
    /// Earliest start of the next frame: the end of the last one plus the gap.
    earliest_ns: u64,
    /// Frames started before that.
    early: u64,
}

impl PhyTx for Paced {
    fn transmit(&mut self, frame: &[u8]) {
        let start = self.clock.last_read_ns.load(Ordering::Relaxed);
        if start < self.earliest_ns {
            self.early += 1;
        }
        // Preamble + SFD, the frame padded to 60 bytes, FCS: what 10BASE-T would carry.
        let line_bytes = 8 + frame.len().max(60) + 4;
        self.earliest_ns =
            start + bits_ns(8 * line_bytes as u64, LINE_RATE_BPS) + ipg_ns(LINE_RATE_BPS);
        self.tap.transmit(frame);
    }
}

/// What the device hands back when stopped.
#[derive(Debug)]
pub struct Report {
    /// The MAC counters at the end.
    pub counters: Counters,
    /// Frames the MAC handed over before the inter-packet gap had passed (must be 0).
    pub early_frames: u64,
    /// Timer wake-ups the driver asked embassy-time for (frames held for the gap).
    pub timer_wake_requests: u64,
    /// Frames the kernel refused or that failed to write.
    pub tap_refused: u64,
    /// Write errors on the TAP.
    pub tap_errors: u64,
    /// The apps' counters at the end.
    pub apps: [linklab_perf::embassy::AppCounter; linklab_perf::embassy::APP_COUNTERS],
}

/// A running device; [`Running::stop`] ends it and returns the report.
pub struct Running {
    stop_app: &'static Stop,
    stop_net: &'static Stop,
    stop_irq: &'static AtomicBool,
    ready: Receiver<()>,
    report: Receiver<Report>,
    threads: Vec<JoinHandle<()>>,
    counters: &'static AppCounters,
}

impl Running {
    /// Waits until embassy-net sees the link up and has its address, and the servers listen.
    pub fn wait_ready(&self, timeout: Duration) -> bool {
        self.ready.recv_timeout(timeout).is_ok()
    }

    /// The apps' counters now, while the device runs (a client's last message may still be
    /// on its way in when the client exits: wait for its count here before stopping).
    pub fn apps(&self) -> [linklab_perf::embassy::AppCounter; linklab_perf::embassy::APP_COUNTERS] {
        self.counters.snapshot()
    }

    /// Stops the application and the interrupt thread; returns the report.
    pub fn stop(self) -> Report {
        self.stop_app.signal(());
        self.stop_net.signal(());
        let report = self
            .report
            .recv_timeout(Duration::from_secs(10))
            .expect("the device task reports within 10 s of the stop");
        self.stop_irq.store(true, Ordering::Release);
        for t in self.threads {
            t.join().expect("device thread");
        }
        report
    }
}

/// Opens the TAP `tap_name` inside the network namespace at `netns_path` (e.g.
/// `/run/netns/NAME`) and starts the device on it.
pub fn start(netns_path: &str, tap_name: &str) -> std::io::Result<Running> {
    let tap: &'static Tap = Box::leak(Box::new(open_tap_in(netns_path, tap_name)?));
    let queue = RxQueue::boxed(capacity_for_frames(
        RX_FRAMES,
        MacConfig::tap(MAC_ADDRESS).rx_format,
    ))
    .map_err(|e| std::io::Error::other(e.to_string()))?;
    let queue: &'static RxQueue<BoxedSlice> = Box::leak(Box::new(queue));
    let link: &'static LinkSignal = Box::leak(Box::new(LinkSignal::new(false)));
    let stop_app: &'static Stop = Box::leak(Box::new(Stop::new()));
    let stop_net: &'static Stop = Box::leak(Box::new(Stop::new()));
    let stop_irq: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
    let finished: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));

    let config = MacConfig {
        line_rate_bps: LINE_RATE_BPS,
        ..MacConfig::tap(MAC_ADDRESS)
    };
    let clock = SeenClock::default();
    let phy = Paced {
        tap: TapPhy::new(tap),
        clock: clock.clone(),
        earliest_ns: 0,
        early: 0,
    };
    let mac = Mac::new(queue.consumer(), phy, clock, config);
    let gate: &'static ServiceGate = Box::leak(Box::new(ServiceGate::new()));
    let counters: &'static AppCounters = Box::leak(Box::new(AppCounters::new()));
    let driver = EmbassyMac::new(mac, link).with_gate(AppGate(gate));

    let (ready_tx, ready) = mpsc::channel();
    let (report_tx, report) = mpsc::channel();
    let executor = std::thread::Builder::new()
        .name("embassy".into())
        .spawn(move || {
            let executor: &'static mut Executor = Box::leak(Box::new(Executor::new()));
            executor.run_until(
                |spawner| {
                    let task = net_task(
                        spawner,
                        driver,
                        Shared {
                            stop_app,
                            stop_net,
                            ready: ready_tx,
                            report: report_tx,
                            finished,
                            gate,
                            counters,
                        },
                    );
                    spawner.spawn(task.expect("one net task"))
                },
                || finished.load(Ordering::Acquire),
            );
        })?;
    let producer = queue.producer();
    let interrupt = std::thread::Builder::new()
        .name("rx-interrupt".into())
        .spawn(move || {
            // The PHY has found a link: the signal wakes the stack.
            link.set(true);
            let mut scratch = vec![0u8; 2048];
            while !stop_irq.load(Ordering::Acquire) {
                if wait_readable(tap, 20) {
                    pump_rx(tap, &producer, &mut scratch).expect("TAP read");
                }
            }
        })?;
    Ok(Running {
        stop_app,
        stop_net,
        stop_irq,
        ready,
        report,
        threads: vec![executor, interrupt],
        counters,
    })
}

/// Opens the TAP from a thread that has entered the namespace, so the interface is created
/// there; the descriptor then works from any thread.
fn open_tap_in(netns_path: &str, tap_name: &str) -> std::io::Result<Tap> {
    let (path, name) = (netns_path.to_string(), tap_name.to_string());
    std::thread::spawn(move || {
        let ns = std::fs::File::open(&path)?;
        // SAFETY: setns(2) moves only this short-lived thread into the namespace.
        if unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Tap::open(&name)
    })
    .join()
    .expect("TAP opening thread")
}

/// Waits up to `ms` for a frame on the TAP.
fn wait_readable(tap: &Tap, ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd: tap.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: poll(2) on one pollfd we own for the duration of the call.
    unsafe { libc::poll(&mut pfd, 1, ms) > 0 }
}

/// What the two tasks share with the test thread.
struct Shared {
    stop_app: &'static Stop,
    stop_net: &'static Stop,
    ready: Sender<()>,
    report: Sender<Report>,
    finished: &'static AtomicBool,
    gate: &'static ServiceGate,
    counters: &'static AppCounters,
}

/// The network task: embassy-net's runner over the driver until stopped; then
/// the MAC's report (the driver outlives the runner, so its counters can be read).
#[embassy_executor::task]
async fn net_task(spawner: Spawner, mut driver: Driver, shared: Shared) {
    let (address, prefix) = DEVICE_CIDR.split_once('/').expect("ADDR/PREFIX");
    let config = embassy_net::Config::ipv4_static(StaticConfigV4 {
        address: Ipv4Cidr::new(
            address.parse::<Ipv4Address>().expect("IPv4 address"),
            prefix.parse().expect("prefix"),
        ),
        gateway: None,
        dns_servers: Default::default(),
    });
    let resources: &'static mut StackResources<12> = Box::leak(Box::new(StackResources::new()));
    let (stack, mut runner) = embassy_net::new(&mut driver, config, resources, 0x11ab);
    // The application runs in a task of its own, as on a device: a task that polls sockets
    // wakes the runner, so the two must not share one.
    let format = MacConfig::tap(MAC_ADDRESS).rx_format;
    let window = tcp_rx_window(capacity_for_frames(RX_FRAMES, format), format, ETHERNET_MSS);
    spawner.spawn(
        app_task(
            stack,
            window,
            shared.stop_app,
            shared.ready,
            shared.gate,
            shared.counters,
        )
        .expect("one app task"),
    );
    // The runner's borrow of the driver ends here (its last use).
    select(runner.run(), shared.stop_net.wait()).await;
    let phy = driver.mac().phy();
    let _ = shared.report.send(Report {
        counters: driver.mac().counters(),
        early_frames: phy.early,
        timer_wake_requests: phy.clock.wake_requests.load(Ordering::Relaxed),
        tap_refused: phy.tap.refused,
        tap_errors: phy.tap.errors,
        apps: shared.counters.snapshot(),
    });
    shared.finished.store(true, Ordering::Release);
}

/// The application task: waits for the link and the address, says so, serves until stopped.
#[embassy_executor::task]
async fn app_task(
    stack: Stack<'static>,
    window: usize,
    stop: &'static Stop,
    ready: Sender<()>,
    gate: &'static ServiceGate,
    counters: &'static AppCounters,
) {
    stack.wait_link_up().await;
    stack.wait_config_up().await;
    let _ = ready.send(());
    crate::app::serve(stack, window, counters, gate, stop).await;
}
