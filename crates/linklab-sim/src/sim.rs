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
//! finds no SFD or a bad FCS): Niccle's truncation. The main loop (smoltcp + application)
//! is preemptible work: it runs only outside those intervals, one iteration per received
//! transmission (or timer), each costing the profile's fixed + per-byte time, and its
//! effects (the stack reading the frame, replies handed to the PHY) happen when the
//! iteration completes. A bit-banged transmission blocks the main loop.
//!
//! # The wire
//!
//! A node starts a transmission when the medium is free: in half duplex one medium for
//! both directions, in full duplex one per direction; free means the last transmission
//! ended at least one inter-packet gap ago. Carrier sense is ideal (no collisions).
//! Propagation delay shifts arrival. Impairments are applied per transmission.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Instant as WallInstant;

use linklab_mac::{Counters, MacAddr};
use linklab_perf::payload::BenchFile;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpCidr, Ipv4Address};

use crate::app::{App, AppEvent, DownloadResult, PingResult};
use crate::device::{with_port, DevicePort, VirtualClock, RX_FRAMES_RANGE};
use crate::host::{Host, HostCounters};
use crate::pcap::PcapWriter;
use crate::profile::{CostModel, PhyKind, Profile};
use crate::wire::{Duplex, Impaired, ImpairmentCounters, Impairments, LinkConfig, NLP_PERIOD_NS};

/// Device MAC address (locally administered).
pub const DEVICE_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];
/// Host MAC address (locally administered).
pub const HOST_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
/// Host address (RFC 2544 benchmarking range).
pub const HOST_IP: Ipv4Address = Ipv4Address::new(198, 18, 0, 1);
/// Device address.
pub const DEVICE_IP: Ipv4Address = Ipv4Address::new(198, 18, 0, 2);

/// Bits of preamble before the SFD: an interrupt entering later has lost the frame's start.
const PREAMBLE_BITS: u64 = 56;

/// How the frames cross the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PhyPath {
    /// The wire image's bytes are delivered as they are (after impairments).
    Bytes,
    /// Through linklab-phy10's sample-level wire (Manchester, drift, jitter, noise).
    Samples(crate::sample_wire::SampleWireConfig),
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Device profile (cost model).
    pub profile: Profile,
    /// The cost model (normally `profile.cost()`).
    pub cost: CostModel,
    /// Full-size frames the device RX queue holds.
    pub rx_frames: usize,
    /// TCP receive window (socket buffer) in bytes; `None` = linklab-mac's safe window.
    pub tcp_window: Option<usize>,
    /// Link parameters.
    pub link: LinkConfig,
    /// Impairments.
    pub impairments: Impairments,
    /// RNG seed.
    pub seed: u64,
    /// Pings before the downloads.
    pub pings: u16,
    /// Files to download.
    pub files: Vec<BenchFile>,
    /// GETs per file.
    pub gets: u32,
    /// Record a pcap.
    pub pcap: bool,
    /// Wire model.
    pub phy_path: PhyPath,
    /// Watchdog: give up after this much virtual time (ns).
    pub max_virtual_ns: u64,
    /// Watchdog: give up after this much wall time (s).
    pub max_wall_s: f64,
    /// Watchdog: give up when the application made no progress for this long (ns).
    pub max_stall_ns: u64,
}

/// The simulated PHY's own counters (seed 000's "PHY TX/RX" lines).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PhyCounters {
    /// Device transmissions.
    pub tx_packets: u64,
    /// Device link test pulses sent.
    pub tx_ltps: u64,
    /// Host transmissions that reached the device PHY.
    pub rx_packets: u64,
    /// ... of which the interrupt entered after the preamble (captured from the middle,
    /// or not at all).
    pub rx_truncated: u64,
    /// Link test pulses that woke the RX interrupt (grant cancelled).
    pub rx_ltps: u64,
    /// Transmissions lost because the queue had no room for a grant (seed's "OOM").
    pub rx_queue_full: u64,
    /// Captures delivered at a bit offset other than 0.
    pub rx_bit_offset: u64,
    /// Captures delivered with inverted polarity.
    pub rx_inverted: u64,
    /// Host transmissions the sample-level wire did not deliver as a frame.
    pub rx_sample_errors: u64,
    /// Host transmissions the sample-level wire delivered cut short.
    pub rx_sample_truncated: u64,
    /// Device transmissions the sample-level wire did not deliver to the host.
    pub tx_sample_errors: u64,
    /// Device transmissions the sample-level wire delivered to the host cut short.
    pub tx_sample_truncated: u64,
    /// Transmissions the interrupt entered too late to see at all (idle line, grant
    /// cancelled).
    pub rx_idle_line: u64,
    /// Interrupt wake-ups with nothing to capture (link pulse, idle line) that found no
    /// grant to cancel because the queue was full.
    pub rx_empty_without_grant: u64,
}

/// A snapshot of the counters after the GETs of one file.
#[derive(Clone, Debug)]
pub struct FileStats {
    /// The file.
    pub path: String,
    /// PHY counters.
    pub phy: PhyCounters,
    /// Device MAC counters.
    pub mac: Counters,
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct SimReport {
    /// Ping results.
    pub pings: Vec<PingResult>,
    /// Download results.
    pub downloads: Vec<DownloadResult>,
    /// Counter snapshots per file.
    pub file_stats: Vec<FileStats>,
    /// Device PHY counters at the end.
    pub phy: PhyCounters,
    /// Device MAC counters at the end.
    pub mac: Counters,
    /// Host NIC counters.
    pub host: HostCounters,
    /// Impairments, host → device.
    pub to_device: ImpairmentCounters,
    /// Impairments, device → host.
    pub to_host: ImpairmentCounters,
    /// The window the device advertised (socket buffer).
    pub tcp_window: usize,
    /// The window linklab-mac computes for this queue.
    pub auto_window: usize,
    /// Queue capacity (bytes).
    pub queue_capacity: usize,
    /// Full-size frames the queue holds.
    pub queue_frames: usize,
    /// Virtual time at the end (ns).
    pub virtual_ns: u64,
    /// Events processed.
    pub events: u64,
    /// The capture, if asked for.
    pub pcap: Option<PcapWriter>,
    /// Why the watchdog stopped the run before the application finished, if it did.
    pub stopped: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Node {
    Host,
    Device,
}

enum Ev {
    /// A node tries to start its next transmission.
    TxAttempt(Node),
    /// A node's transmission ended (at the sender).
    TxEnd(Node),
    /// First bit of a transmission reaches the device.
    DevRxStart { wire: Vec<u8> },
    /// Last bit of a transmission reaches the host.
    HostRx { wire: Vec<u8> },
    /// RX interrupt entry.
    IsrEnter,
    /// RX interrupt exit with what the PHY captured (`None`: nothing, a link pulse).
    IsrExit { captured: Vec<u8> },
    /// A main-loop iteration completes (generation).
    MainDone(u64),
    /// The device's timers (smoltcp, MAC, app) may be due.
    DevWake,
    /// The host's smoltcp timers may be due.
    HostWake,
    /// Link pulse check for a node.
    Nlp(Node),
}

struct Scheduled {
    at: u64,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Scheduled {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

#[derive(Clone, Copy, Debug)]
enum MainState {
    Idle,
    /// Running or preempted: `remaining` ns left, running since `resumed_at` if Some.
    Working {
        gen: u64,
        remaining: u64,
        resumed_at: Option<u64>,
        rx: bool,
    },
}

/// The simulator state for one run.
struct Sim<'p> {
    cfg: SimConfig,
    now: u64,
    seq: u64,
    queue: BinaryHeap<Reverse<Scheduled>>,
    rng: ChaCha8Rng,
    clock: VirtualClock,
    // Wire.
    medium_free: [u64; 2],
    last_tx_end: [u64; 2],
    transmitting: [bool; 2],
    tx_queue: [VecDeque<Vec<u8>>; 2],
    attempt_at: [Option<u64>; 2],
    // Device.
    port: &'p mut dyn DevicePort,
    iface: Interface,
    sockets: SocketSet<'static>,
    app: App,
    cpu_busy_until: u64,
    isr_active: bool,
    isr_granted: bool,
    main: MainState,
    main_gen: u64,
    committed: VecDeque<usize>,
    dequeued_seen: u64,
    no_poll_before: u64,
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
    sample_wire: Option<crate::sample_wire::SampleWire>,
    events: u64,
    window: usize,
}

fn idx(n: Node) -> usize {
    match n {
        Node::Host => 0,
        Node::Device => 1,
    }
}

fn instant(ns: u64) -> Instant {
    Instant::from_micros((ns / 1000) as i64)
}

/// Runs the bench described by `cfg`. A configuration error is an `Err`; a run the
/// watchdog stopped is an `Ok` report with [`SimReport::stopped`] set (and everything
/// measured until then).
pub fn run(cfg: SimConfig) -> Result<SimReport, String> {
    if !RX_FRAMES_RANGE.contains(&cfg.rx_frames) {
        return Err(format!(
            "--rx-frames must be in {}..={}, got {}",
            RX_FRAMES_RANGE.start(),
            RX_FRAMES_RANGE.end(),
            cfg.rx_frames
        ));
    }
    let clock = VirtualClock::default();
    let rate = cfg.link.rate.bits_per_s();
    let frames = cfg.rx_frames;
    with_port(frames, MacAddr(DEVICE_MAC), rate, clock.clone(), |port| {
        run_with_port(cfg, clock, port)
    })
    .unwrap_or_else(|| Err(format!("unsupported --rx-frames {frames}")))
}

fn run_with_port(
    cfg: SimConfig,
    clock: VirtualClock,
    port: &mut dyn DevicePort,
) -> Result<SimReport, String> {
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let mut dev_config = Config::new(HardwareAddress::Ethernet(EthernetAddress(DEVICE_MAC)));
    dev_config.random_seed = rng.gen();
    let mut iface = port.interface(dev_config, instant(0));
    iface.update_ip_addrs(|a| {
        let _ = a.push(IpCidr::new(DEVICE_IP.into(), 24));
    });
    let host = Host::new(HOST_MAC, HOST_IP, rng.gen(), instant(0));
    let auto = port.auto_window();
    let window = cfg.tcp_window.unwrap_or(auto);
    let mut sockets = SocketSet::new(Vec::new());
    let app = App::new(
        &mut sockets,
        HOST_IP,
        cfg.pings,
        cfg.files.clone(),
        cfg.gets,
        window,
    );
    let sample_wire = match cfg.phy_path {
        PhyPath::Bytes => None,
        PhyPath::Samples(c) => Some(
            crate::sample_wire::SampleWire::new(c).map_err(|e| format!("--phy samples: {e}"))?,
        ),
    };
    let mut sim = Sim {
        pcap: cfg.pcap.then(PcapWriter::new),
        cfg,
        now: 0,
        seq: 0,
        queue: BinaryHeap::new(),
        rng,
        clock,
        medium_free: [0; 2],
        last_tx_end: [0; 2],
        transmitting: [false; 2],
        tx_queue: [VecDeque::new(), VecDeque::new()],
        attempt_at: [None; 2],
        port,
        iface,
        sockets,
        app,
        cpu_busy_until: 0,
        isr_active: false,
        isr_granted: false,
        main: MainState::Idle,
        main_gen: 0,
        committed: VecDeque::new(),
        dequeued_seen: 0,
        no_poll_before: 0,
        dev_wake_at: None,
        host,
        host_wake_at: None,
        phy: PhyCounters::default(),
        to_device: ImpairmentCounters::default(),
        to_host: ImpairmentCounters::default(),
        pings: Vec::new(),
        downloads: Vec::new(),
        file_stats: Vec::new(),
        sample_wire,
        events: 0,
        window,
    };
    sim.schedule(NLP_PERIOD_NS, Ev::Nlp(Node::Host));
    sim.schedule(NLP_PERIOD_NS, Ev::Nlp(Node::Device));
    sim.kick_main();
    let stopped = sim.run_loop().err();
    let counters = sim.port.counters();
    Ok(SimReport {
        pings: sim.pings,
        downloads: sim.downloads,
        file_stats: sim.file_stats,
        phy: sim.phy,
        mac: counters,
        host: sim.host.counters(),
        to_device: sim.to_device,
        to_host: sim.to_host,
        tcp_window: sim.window,
        auto_window: auto,
        queue_capacity: sim.port.capacity(),
        queue_frames: sim.port.queue_frames(),
        virtual_ns: sim.now,
        events: sim.events,
        pcap: sim.pcap,
        stopped,
    })
}

impl SimReport {
    /// Checks that every frame is accounted for: linklab-mac's laws, and the simulator's
    /// (every host transmission was lost on the wire, rejected by the sample-level wire or
    /// reached the device PHY; every arrival became a MAC transmission or hit an idle line;
    /// every empty wake-up cancelled a grant or found none).
    pub fn check_conservation(&self, phy_kind: PhyKind) -> Result<(), String> {
        self.mac
            .check_conservation()
            .map_err(|e| format!("linklab-mac: {e}"))?;
        let p = &self.phy;
        let arrived = self.to_device.transmissions - self.to_device.lost;
        if arrived != p.rx_packets + p.rx_sample_errors {
            return Err(format!(
                "wire: {} transmissions - {} lost != {} arrived + {} rejected by the sample wire",
                self.to_device.transmissions, self.to_device.lost, p.rx_packets, p.rx_sample_errors
            ));
        }
        if p.rx_packets != self.mac.rx_transmissions + p.rx_idle_line {
            return Err(format!(
                "phy: {} arrivals != {} MAC transmissions + {} idle-line wake-ups",
                p.rx_packets, self.mac.rx_transmissions, p.rx_idle_line
            ));
        }
        let wakeups = match phy_kind {
            PhyKind::BitBanged => p.rx_ltps + p.rx_idle_line,
            PhyKind::Dma => 0,
        };
        if self.mac.rx_cancelled + p.rx_empty_without_grant != wakeups {
            return Err(format!(
                "phy: {} cancelled grants + {} wake-ups without grant != {} empty wake-ups",
                self.mac.rx_cancelled, p.rx_empty_without_grant, wakeups
            ));
        }
        Ok(())
    }
}

impl Sim<'_> {
    fn schedule(&mut self, at: u64, ev: Ev) {
        let at = at.max(self.now);
        self.seq += 1;
        self.queue.push(Reverse(Scheduled {
            at,
            seq: self.seq,
            ev,
        }));
    }

    fn run_loop(&mut self) -> Result<(), String> {
        let wall = WallInstant::now();
        while !self.app.finished() {
            let Some(Reverse(s)) = self.queue.pop() else {
                return Err(self.stalled("no more events"));
            };
            self.now = s.at;
            self.clock.0.set(self.now);
            self.events += 1;
            if self.now > self.cfg.max_virtual_ns {
                return Err(self.stalled("virtual-time limit reached"));
            }
            if self.now.saturating_sub(self.app.last_progress_ns) > self.cfg.max_stall_ns {
                return Err(self.stalled("no progress"));
            }
            if self.events % 4096 == 0 && wall.elapsed().as_secs_f64() > self.cfg.max_wall_s {
                return Err(self.stalled("wall-time limit reached"));
            }
            self.handle(s.ev);
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
            Ev::TxAttempt(n) => {
                if self.attempt_at[idx(n)] == Some(self.now) {
                    self.attempt_at[idx(n)] = None;
                    self.try_transmit(n);
                }
            }
            Ev::TxEnd(n) => self.tx_end(n),
            Ev::DevRxStart { wire } => self.device_rx_start(wire),
            Ev::HostRx { wire } => {
                if let Some(wire) = self.through_samples(wire, Node::Host) {
                    self.host.receive(&wire);
                    self.host_poll();
                }
            }
            Ev::IsrEnter => self.isr_enter(),
            Ev::IsrExit { captured } => self.isr_exit(captured),
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

    // ---- wire -------------------------------------------------------------------------

    fn medium_index(&self, n: Node) -> usize {
        match self.cfg.link.duplex {
            Duplex::Half => 0,
            Duplex::Full => idx(n),
        }
    }

    /// Schedules a transmit attempt for `n` at `at` unless an earlier one is pending.
    fn request_attempt(&mut self, n: Node, at: u64) {
        let i = idx(n);
        if self.attempt_at[i].is_some_and(|a| a <= at) {
            return;
        }
        self.attempt_at[i] = Some(at);
        self.schedule(at, Ev::TxAttempt(n));
    }

    fn try_transmit(&mut self, n: Node) {
        let i = idx(n);
        if self.transmitting[i] || self.tx_queue[i].is_empty() {
            return;
        }
        let mut ready = self.medium_free[self.medium_index(n)];
        if n == Node::Device && self.cfg.cost.phy == PhyKind::BitBanged {
            // The CPU drives the line: wait for any interrupt to finish.
            ready = ready.max(self.cpu_busy_until);
            if self.isr_active {
                ready = ready.max(self.now + 1);
            }
        }
        if ready > self.now {
            self.request_attempt(n, ready);
            return;
        }
        let Some(wire) = self.tx_queue[i].pop_front() else {
            return;
        };
        let start = self.now;
        let end = start + self.cfg.link.rate.bytes_ns(wire.len());
        let m = self.medium_index(n);
        self.medium_free[m] = end + self.cfg.link.ipg_ns();
        self.transmitting[i] = true;
        if n == Node::Device && self.cfg.cost.phy == PhyKind::BitBanged {
            self.cpu_busy_until = self.cpu_busy_until.max(end);
        }
        if n == Node::Device {
            self.phy.tx_packets += 1;
        }
        if let Some(p) = self.pcap.as_mut() {
            p.record(
                start,
                wire.get(linklab_mac::frame::PREAMBLE_SFD_LEN..)
                    .unwrap_or(&[]),
            );
        }
        let mut delivered = wire;
        let counters = match n {
            Node::Host => &mut self.to_device,
            Node::Device => &mut self.to_host,
        };
        let arrival = start + self.cfg.link.propagation_ns;
        if self
            .cfg
            .impairments
            .apply(&mut delivered, &mut self.rng, counters)
            == Impaired::Delivered
        {
            match n {
                Node::Host => self.schedule(arrival, Ev::DevRxStart { wire: delivered }),
                Node::Device => {
                    let end_at = arrival + self.cfg.link.rate.bytes_ns(delivered.len());
                    self.schedule(end_at, Ev::HostRx { wire: delivered });
                }
            }
        }
        self.schedule(end, Ev::TxEnd(n));
    }

    fn tx_end(&mut self, n: Node) {
        let i = idx(n);
        self.transmitting[i] = false;
        self.last_tx_end[i] = self.now;
        if n == Node::Device {
            self.service_mac();
        }
        if !self.tx_queue[i].is_empty() {
            self.request_attempt(n, self.now);
        } else if n == Node::Device {
            self.kick_main();
        }
    }

    /// Passes a transmission through the sample-level wire if configured: `None` if the
    /// receiving PHY did not see a frame in it.
    fn through_samples(&mut self, wire: Vec<u8>, to: Node) -> Option<Vec<u8>> {
        use crate::sample_wire::SampleOutcome;
        let Some(sw) = self.sample_wire.as_mut() else {
            return Some(wire);
        };
        let mut out = vec![0u8; wire.len() + 64];
        let (len, truncated) = match sw.transfer(&wire, &mut self.rng, &mut out) {
            SampleOutcome::Frame { len } => (len, false),
            SampleOutcome::Truncated { len } => (len, true),
            SampleOutcome::LinkPulse | SampleOutcome::Noise => {
                match to {
                    Node::Device => self.phy.rx_sample_errors += 1,
                    Node::Host => self.phy.tx_sample_errors += 1,
                }
                return None;
            }
        };
        if truncated {
            match to {
                Node::Device => self.phy.rx_sample_truncated += 1,
                Node::Host => self.phy.tx_sample_truncated += 1,
            }
        }
        // The decoder hands over the bytes after the SFD; the receiving sampler sees the
        // preamble and SFD in front of them.
        let mut image = Vec::with_capacity(len + 8);
        image.extend_from_slice(
            &[linklab_mac::frame::PREAMBLE_BYTE; linklab_mac::frame::PREAMBLE_LEN],
        );
        image.push(linklab_mac::frame::SFD);
        image.extend_from_slice(out.get(..len).unwrap_or(&[]));
        Some(image)
    }

    fn nlp(&mut self, n: Node) {
        let i = idx(n);
        let idle_since = self.last_tx_end[i];
        let busy = self.transmitting[i] || !self.tx_queue[i].is_empty();
        if !busy && self.now >= idle_since + NLP_PERIOD_NS {
            match n {
                Node::Device => self.phy.tx_ltps += 1,
                Node::Host => self.device_ltp(),
            }
            self.last_tx_end[i] = self.now;
        }
        let next = self.last_tx_end[i].max(self.now) + NLP_PERIOD_NS;
        let next = if next <= self.now {
            self.now + NLP_PERIOD_NS
        } else {
            next
        };
        self.schedule(next, Ev::Nlp(n));
    }

    // ---- device PHY and interrupt -------------------------------------------------------

    fn device_ltp(&mut self) {
        self.phy.rx_ltps += 1;
        if self.cfg.cost.phy == PhyKind::Dma {
            return; // The PHY chip handles link pulses.
        }
        let entry = self.now.max(self.cpu_busy_until) + self.cfg.cost.irq_latency_ns;
        let exit = entry + self.cfg.cost.isr_ns(0);
        self.cpu_busy_until = exit;
        self.schedule(entry, Ev::IsrEnter);
        self.schedule(
            exit,
            Ev::IsrExit {
                captured: Vec::new(),
            },
        );
    }

    fn device_rx_start(&mut self, wire: Vec<u8>) {
        let Some(wire) = self.through_samples(wire, Node::Device) else {
            return;
        };
        self.phy.rx_packets += 1;
        let cost = self.cfg.cost;
        let bit_ps = self.cfg.link.rate.bit_ps();
        let total_bits = wire.len() as u64 * 8;
        let end = self.now + self.cfg.link.rate.bytes_ns(wire.len());
        // The sampler's start is uncertain by a few bits, and the pair may be swapped.
        let jitter: usize = self.rng.gen_range(0..8);
        let invert = self.rng.gen_bool(0.5);
        let (entry, exit, start_bit) = match cost.phy {
            PhyKind::BitBanged => {
                let entry = self.now.max(self.cpu_busy_until) + cost.irq_latency_ns;
                let late_bits = ((entry - self.now) * 1000).div_ceil(bit_ps);
                let capture_len = total_bits.saturating_sub(late_bits).div_ceil(8) as usize;
                let exit = entry.max(end) + cost.isr_ns(capture_len);
                (entry, exit, late_bits)
            }
            PhyKind::Dma => {
                let entry = end.max(self.cpu_busy_until) + cost.irq_latency_ns;
                let exit = entry + cost.isr_ns(wire.len());
                (entry, exit, 0)
            }
        };
        self.cpu_busy_until = exit;
        let mut captured = Vec::new();
        if start_bit < total_bits {
            if start_bit > PREAMBLE_BITS {
                self.phy.rx_truncated += 1;
            }
            // The bits from the interrupt's entry on, byte-packed (linklab-mac's realign).
            let mut late = wire.clone();
            let n = linklab_mac::deframe::realign(&mut late, start_bit as usize, false);
            late.truncate(n);
            captured = vec![0u8; late.len() + 2];
            let n = linklab_mac::impair::shift_into(&mut captured, &late, jitter, invert);
            captured.truncate(n);
            self.phy.rx_bit_offset += u64::from(jitter != 0);
            self.phy.rx_inverted += u64::from(invert);
        } else {
            // The interrupt came after the whole frame: it finds an idle line.
            self.phy.rx_truncated += 1;
            self.phy.rx_idle_line += 1;
        }
        self.schedule(entry, Ev::IsrEnter);
        self.schedule(exit, Ev::IsrExit { captured });
    }

    fn isr_enter(&mut self) {
        self.isr_active = true;
        if let MainState::Working {
            gen,
            remaining,
            resumed_at: Some(r),
            rx,
        } = self.main
        {
            self.main = MainState::Working {
                gen,
                remaining: remaining.saturating_sub(self.now - r),
                resumed_at: None,
                rx,
            };
        }
        self.isr_granted = self.port.isr_grant();
    }

    fn isr_exit(&mut self, captured: Vec<u8>) {
        self.isr_active = false;
        if self.isr_granted {
            let n = self.port.isr_commit(&captured);
            if n > 0 {
                self.committed.push_back(n);
            }
        } else if !captured.is_empty() {
            self.port.isr_missed();
            self.phy.rx_queue_full += 1;
        } else {
            self.phy.rx_empty_without_grant += 1;
        }
        self.isr_granted = false;
        if let MainState::Working {
            remaining,
            resumed_at: None,
            rx,
            ..
        } = self.main
        {
            // A new generation: the MainDone scheduled before the preemption is stale.
            self.main_gen += 1;
            let g = self.main_gen;
            self.main = MainState::Working {
                gen: g,
                remaining,
                resumed_at: Some(self.now),
                rx,
            };
            self.schedule(self.now + remaining, Ev::MainDone(g));
        } else {
            self.kick_main();
        }
    }

    // ---- device main loop ---------------------------------------------------------------

    fn set_dev_wake(&mut self, at: u64) {
        if self.dev_wake_at.is_some_and(|w| w <= at && w >= self.now) {
            return;
        }
        self.dev_wake_at = Some(at);
        self.schedule(at, Ev::DevWake);
    }

    /// The MAC may hold a frame back for the inter-packet gap: let it go when due (part of
    /// the transmit call, no main-loop iteration), or wake up then.
    fn service_mac(&mut self) {
        let dev = idx(Node::Device);
        match self.port.mac_poll_at_ns() {
            Some(at) if at <= self.now => {
                self.port.mac_poll();
                let before = self.tx_queue[dev].len();
                self.port.take_tx(&mut self.tx_queue[dev]);
                if self.tx_queue[dev].len() > before {
                    self.request_attempt(Node::Device, self.now);
                }
            }
            Some(at) => self.set_dev_wake(at),
            None => {}
        }
    }

    /// The earliest time the device's stack, MAC or app wants to run.
    fn device_timer(&mut self) -> Option<u64> {
        let stack = self
            .iface
            .poll_at(instant(self.now), &self.sockets)
            .map(|i| i.total_micros().max(0) as u64 * 1000);
        [stack, self.port.mac_poll_at_ns(), self.app.next_timer_ns()]
            .into_iter()
            .flatten()
            .min()
    }

    fn kick_main(&mut self) {
        if !matches!(self.main, MainState::Idle) || self.isr_active {
            return;
        }
        let dev = idx(Node::Device);
        if self.cfg.cost.phy == PhyKind::BitBanged
            && (self.transmitting[dev] || !self.tx_queue[dev].is_empty())
        {
            return; // Blocked in the transmit call.
        }
        if let Some(at) = self.port.mac_poll_at_ns().filter(|&at| at > self.now) {
            // The MAC holds a frame back for the gap and hands smoltcp no tokens until then.
            self.set_dev_wake(at);
            return;
        }
        let (rx, len) = match self.committed.front() {
            Some(&len) => (true, len),
            None => {
                let due = self.device_timer();
                match due {
                    Some(t) if t.max(self.no_poll_before) <= self.now => (false, 0),
                    Some(t) => {
                        self.set_dev_wake(t.max(self.no_poll_before));
                        return;
                    }
                    None => return,
                }
            }
        };
        let cost = if rx {
            self.cfg.cost.main_ns(len)
        } else {
            self.cfg.cost.main_ns(0)
        };
        self.main_gen += 1;
        let gen = self.main_gen;
        self.main = MainState::Working {
            gen,
            remaining: cost,
            resumed_at: Some(self.now),
            rx,
        };
        self.schedule(self.now + cost, Ev::MainDone(gen));
    }

    fn main_done(&mut self, gen: u64) {
        let MainState::Working {
            gen: g,
            resumed_at: Some(_),
            rx,
            ..
        } = self.main
        else {
            return;
        };
        if g != gen {
            return;
        }
        self.main = MainState::Idle;
        let now = instant(self.now);
        if rx {
            self.port
                .ingress_one(&mut self.iface, &mut self.sockets, now);
            let dequeued = self.port.counters().rx_dequeued;
            for _ in self.dequeued_seen..dequeued {
                self.committed.pop_front();
            }
            self.dequeued_seen = dequeued;
        }
        let events = self.app.step(self.now, &mut self.iface, &mut self.sockets);
        self.port.egress(&mut self.iface, &mut self.sockets, now);
        let dev = idx(Node::Device);
        let before = self.tx_queue[dev].len();
        self.port.take_tx(&mut self.tx_queue[dev]);
        let sent = self.tx_queue[dev].len() > before;
        if !rx && !sent && events.is_empty() {
            // A timer poll that did nothing: do not spin at the same instant.
            self.no_poll_before = self.now + 1_000;
        }
        for e in events {
            self.record(e);
        }
        if sent {
            self.request_attempt(Node::Device, self.now);
        }
        self.kick_main();
    }

    fn record(&mut self, e: AppEvent) {
        match e {
            AppEvent::Ping(p) => self.pings.push(p),
            AppEvent::Download(d) => self.downloads.push(d),
            AppEvent::FileDone(f) => {
                let mac = self.port.counters();
                self.file_stats.push(FileStats {
                    path: f.path.to_string(),
                    phy: self.phy,
                    mac,
                });
            }
            AppEvent::Finished => {}
        }
    }

    // ---- host -------------------------------------------------------------------------------

    fn host_poll(&mut self) {
        let now = instant(self.now);
        self.host.poll(now);
        let h = idx(Node::Host);
        let before = self.tx_queue[h].len();
        self.host.take_tx(&mut self.tx_queue[h]);
        if self.tx_queue[h].len() > before {
            self.request_attempt(Node::Host, self.now);
        }
        if let Some(at) = self.host.poll_at(now) {
            let at_ns = (at.total_micros().max(0) as u64 * 1000).max(self.now + 1_000);
            if self.host_wake_at.is_none_or(|w| w > at_ns || w < self.now) {
                self.host_wake_at = Some(at_ns);
                self.schedule(at_ns, Ev::HostWake);
            }
        }
    }
}
