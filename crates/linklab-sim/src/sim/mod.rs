//! The discrete-event simulator: virtual time in nanoseconds, one event queue, one seeded
//! RNG. The same configuration and seed give the same run, event for event.
//!
//! # The device CPU
//!
//! Non-preemptible work (the RX interrupt, a bit-banged transmission) is placed on the
//! CPU timeline as intervals `[entry, exit)`: an interrupt enters at
//! `max(first edge, end of the previous interval) + interrupt latency`. With a bit-banged
//! PHY the interrupt samples the line from its entry to the frame's last bit, so a frame
//! whose preamble has passed before the entry is captured from the middle (the MAC then
//! finds no SFD or a bad FCS, or linklab-phy10's decoder finds no frame): Niccle's
//! truncation. The main loop (smoltcp + application) is preemptible work: it runs only
//! outside those intervals, one iteration per received transmission (or timer), each
//! costing the profile's fixed + per-byte time, and its effects (the stack reading the
//! frame, replies handed to the PHY) happen when the iteration completes. A bit-banged
//! transmission blocks the main loop.
//!
//! # The wire
//!
//! A node starts a transmission when the medium is free: in half duplex one medium for
//! both directions, in full duplex one per direction; free means the last transmission
//! ended at least one inter-packet gap ago. Carrier sense is ideal (no collisions).
//! Propagation delay shifts arrival. Impairments are applied per transmission.
//!
//! # Files
//!
//! * `config.rs`: what a run is given ([`SimConfig`], [`PhyPath`], [`SimError`]).
//! * `events.rs`: what can happen and the queue that orders it.
//! * `medium.rs`: the wire, link pulses and the host's side.
//! * `isr.rs`: the device's PHY and receive interrupt (capture, grant, commit).
//! * `sample_line.rs`: `--phy samples`: the sample-level line and both PHYs that decode it.
//! * `main_loop.rs`: the device's main loop on the CPU (smoltcp, MAC, application).
//! * `report.rs`: what a run produced ([`SimReport`]) and the conservation check.
//! * this file: the simulator's state, [`run`] and the event loop.

mod config;
mod events;
mod isr;
mod main_loop;
mod medium;
mod report;
mod sample_line;

pub use config::{PhyPath, SimConfig, SimError, DEVICE_IP, DEVICE_MAC, HOST_IP, HOST_MAC};
pub use report::{ConservationError, FileStats, PhyCounters, SimReport};

use std::collections::VecDeque;
use std::time::Instant as WallInstant;

use linklab_mac::window::{queue_frames, ETHERNET_MSS};
use linklab_mac::{BoxedSlice, MacAddr, RxGrant, RxProducer};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpCidr};

use crate::app::{App, DownloadResult, PingResult};
use crate::device::{
    device_mac, queue_for_frames, DeviceMac, DeviceQueue, VirtualClock, RX_FRAMES_RANGE,
};
use crate::host::Host;
use crate::pcap::PcapWriter;
use crate::wire::{ImpairmentCounters, NLP_PERIOD_NS};
use events::{Ev, Events, Node};
use main_loop::MainState;
use sample_line::SampleLine;

/// The simulator state for one run over a device RX queue that lives for `'q`.
struct Sim<'q> {
    cfg: SimConfig,
    now: u64,
    pending: Events,
    rng: ChaCha8Rng,
    clock: VirtualClock,
    // Wire.
    medium_free: [u64; 2],
    last_tx_end: [u64; 2],
    transmitting: [bool; 2],
    tx_queue: [VecDeque<Vec<u8>>; 2],
    attempt_at: [Option<u64>; 2],
    /// `--phy samples`: the sample-level line and the PHYs that decode it.
    samples: Option<SampleLine>,
    // Device.
    producer: RxProducer<'q, BoxedSlice>,
    /// The grant the receive interrupt took on entry.
    grant: Option<RxGrant<'q, BoxedSlice>>,
    mac: DeviceMac<'q>,
    iface: Interface,
    sockets: SocketSet<'static>,
    app: App,
    cpu_busy_until: u64,
    isr_active: bool,
    main: MainState,
    main_gen: u64,
    /// Lengths of the transmissions committed and not yet dequeued (the main loop's cost).
    committed: VecDeque<usize>,
    dequeued_seen: u64,
    no_poll_before: u64,
    /// Frames the device's egress made whose transmit cost the CPU has not yet paid (they
    /// leave in order as it does).
    tx_unpaid: VecDeque<Vec<u8>>,
    /// An executor's apps' pass is due once the runner's frames are paid.
    app_pass_due: bool,
    /// CPU time owed for frames the MAC let go after holding them for the gap (the profile's
    /// per-frame and per-byte transmit cost), paid at the start of the next main-loop
    /// iteration.
    tx_debt_ns: u64,
    /// CPU time spent on the device's work (interrupts and main-loop passes), ns.
    busy_ns: u64,
    /// Main-loop passes run.
    passes: u64,
    dev_wake_at: Option<u64>,
    // Host.
    host: Host,
    host_wake_at: Option<u64>,
    // Results.
    phy: PhyCounters,
    to_device: ImpairmentCounters,
    to_host: ImpairmentCounters,
    pings: Vec<PingResult>,
    downloads: Vec<DownloadResult>,
    file_stats: Vec<FileStats>,
    pcap: Option<PcapWriter>,
    events: u64,
    window: usize,
}

/// smoltcp's time for virtual time `ns`.
fn instant(ns: u64) -> Instant {
    Instant::from_micros((ns / 1000) as i64)
}

/// Runs the bench described by `cfg`. A configuration error is an `Err`; a run the
/// watchdog stopped is an `Ok` report with [`SimReport::stopped`] set (and everything
/// measured until then).
pub fn run(cfg: SimConfig) -> Result<SimReport, SimError> {
    if !RX_FRAMES_RANGE.contains(&cfg.rx_frames) {
        return Err(SimError::RxFrames(cfg.rx_frames));
    }
    let samples = match cfg.phy_path {
        PhyPath::Bytes => None,
        PhyPath::Samples(c) => Some(SampleLine::new(c)?),
    };
    let queue = queue_for_frames(cfg.rx_frames, cfg.phy_path.rx_format());
    Ok(run_on(cfg, &queue, samples))
}

/// Runs `cfg` with the device's MAC on `queue`.
fn run_on(cfg: SimConfig, queue: &DeviceQueue, samples: Option<SampleLine>) -> SimReport {
    let clock = VirtualClock::default();
    let format = cfg.phy_path.rx_format();
    let rate = if cfg.mac_line_timing {
        cfg.link.rate.bits_per_s()
    } else {
        0
    };
    let mut mac = device_mac(queue, MacAddr(DEVICE_MAC), rate, format, clock.clone());
    mac.set_burst_cap(cfg.burst_cap);
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut dev_config = Config::new(HardwareAddress::Ethernet(EthernetAddress(DEVICE_MAC)));
    dev_config.random_seed = rng.gen();
    let mut iface = Interface::new(dev_config, &mut mac, instant(0));
    iface.update_ip_addrs(|a| {
        let _ = a.push(IpCidr::new(DEVICE_IP.into(), 24));
    });
    let host = Host::new(HOST_MAC, HOST_IP, rng.gen(), instant(0), cfg.host_tcp);
    let auto = mac.tcp_rx_window();
    let window = cfg.tcp_window.unwrap_or(auto);
    let mut sockets = SocketSet::new(Vec::new());
    let app = App::new(
        &mut sockets,
        HOST_IP,
        cfg.pings,
        cfg.files.clone(),
        cfg.gets,
        window,
        cfg.device_sends,
        cfg.send_buffer,
    );
    let mut sim = Sim {
        pcap: cfg.pcap.then(PcapWriter::new),
        cfg,
        now: 0,
        pending: Events::default(),
        rng,
        clock,
        medium_free: [0; 2],
        last_tx_end: [0; 2],
        transmitting: [false; 2],
        tx_queue: [VecDeque::new(), VecDeque::new()],
        attempt_at: [None; 2],
        samples,
        producer: queue.producer(),
        grant: None,
        mac,
        iface,
        sockets,
        app,
        cpu_busy_until: 0,
        isr_active: false,
        main: MainState::Idle,
        main_gen: 0,
        committed: VecDeque::new(),
        dequeued_seen: 0,
        no_poll_before: 0,
        tx_unpaid: VecDeque::new(),
        app_pass_due: false,
        tx_debt_ns: 0,
        busy_ns: 0,
        passes: 0,
        dev_wake_at: None,
        host,
        host_wake_at: None,
        phy: PhyCounters::default(),
        to_device: ImpairmentCounters::default(),
        to_host: ImpairmentCounters::default(),
        pings: Vec::new(),
        downloads: Vec::new(),
        file_stats: Vec::new(),
        events: 0,
        window,
    };
    sim.schedule(NLP_PERIOD_NS, Ev::Nlp(Node::Host));
    sim.schedule(NLP_PERIOD_NS, Ev::Nlp(Node::Device));
    sim.kick_main();
    let stopped = sim.run_loop().err();
    SimReport {
        mac: sim.mac.counters(),
        pings: sim.pings,
        downloads: sim.downloads,
        file_stats: sim.file_stats,
        phy: sim.phy,
        host: sim.host.counters(),
        to_device: sim.to_device,
        to_host: sim.to_host,
        tcp_window: sim.window,
        auto_window: auto,
        queue_capacity: queue.capacity(),
        queue_frames: queue_frames(queue.capacity(), format, ETHERNET_MSS),
        virtual_ns: sim.now,
        cpu_busy_ns: sim.busy_ns,
        main_passes: sim.passes,
        events: sim.events,
        pcap: sim.pcap,
        stopped,
    }
}

impl Sim<'_> {
    /// Schedules `ev` at `at` (never in the past).
    fn schedule(&mut self, at: u64, ev: Ev) {
        self.pending.push(at.max(self.now), ev);
    }

    /// Runs events until the application has finished, or a watchdog says why not.
    fn run_loop(&mut self) -> Result<(), String> {
        let wall = WallInstant::now();
        while !self.app.finished() {
            let Some((at, ev)) = self.pending.pop() else {
                return Err(self.stalled("no more events"));
            };
            self.now = at;
            self.clock.0.set(self.now);
            self.events += 1;
            if self.now > self.cfg.max_virtual_ns {
                return Err(self.stalled("virtual-time limit reached"));
            }
            if self.now.saturating_sub(self.app.last_progress_ns) > self.cfg.max_stall_ns {
                return Err(self.stalled("no progress"));
            }
            if self.events.is_multiple_of(4096)
                && wall.elapsed().as_secs_f64() > self.cfg.max_wall_s
            {
                return Err(self.stalled("wall-time limit reached"));
            }
            self.handle(ev);
        }
        Ok(())
    }

    fn stalled(&self, why: &str) -> String {
        format!(
            "simulation stopped ({why}) at virtual time {:.6} s after {} events, in {}; last progress at {:.6} s",
            self.now as f64 / 1e9,
            self.events,
            self.app.describe(&self.sockets),
            self.app.last_progress_ns as f64 / 1e9
        )
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::TxAttempt(n) => self.tx_attempt(n),
            Ev::TxEnd(n) => self.tx_end(n),
            Ev::DevRxStart { wire } => self.device_rx_start(wire),
            Ev::HostRx { wire } => self.host_rx(wire),
            Ev::IsrEnter => self.isr_enter(),
            Ev::IsrExit { line } => self.isr_exit(line),
            Ev::MainDone(gen) => self.main_done(gen),
            Ev::DevWake => {
                if self.dev_wake_at == Some(self.now) {
                    self.dev_wake_at = None;
                }
                self.service_mac();
                self.kick_main();
            }
            Ev::HostWake => {
                if self.host_wake_at == Some(self.now) {
                    self.host_wake_at = None;
                    self.host_poll();
                }
            }
            Ev::Nlp(n) => self.nlp(n),
        }
    }
}
