//! What a run is given: the configuration, the nodes' addresses, and what can be wrong with a
//! configuration.

use std::fmt;

use linklab_mac::RxFormat;
use linklab_perf::payload::{BenchFile, BENCH_FILES};
use smoltcp::wire::Ipv4Address;

use crate::cost::CostModel;
use crate::device::RX_FRAMES_RANGE;
use crate::profile::Profile;
use crate::sample_wire::{SampleWireConfig, SampleWireError};
use crate::wire::{Duplex, Impairments, LinkConfig, Rate};

/// Device MAC address (locally administered).
pub const DEVICE_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];
/// Host MAC address (locally administered).
pub const HOST_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
/// Host address (RFC 2544 benchmarking range).
pub const HOST_IP: Ipv4Address = Ipv4Address::new(198, 18, 0, 1);
/// Device address.
pub const DEVICE_IP: Ipv4Address = Ipv4Address::new(198, 18, 0, 2);

/// How the frames cross the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PhyPath {
    /// The wire image's bytes are delivered as they are (after impairments); the device's
    /// PHY captures them at a random bit offset and polarity and the MAC finds the SFD.
    Bytes,
    /// Through linklab-phy10's sample-level line (Manchester, drift, jitter, noise); the
    /// device's receive interrupt decodes its capture straight into the MAC's grant.
    Samples(SampleWireConfig),
}

impl PhyPath {
    /// What the device's PHY commits to the MAC's queue on this path.
    pub fn rx_format(self) -> RxFormat {
        match self {
            PhyPath::Bytes => RxFormat::Raw,
            PhyPath::Samples(_) => RxFormat::Aligned { fcs: true },
        }
    }
}

/// Everything a run needs.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Device profile (cost model).
    pub profile: Profile,
    /// The cost model (normally `profile.cost()`).
    pub cost: CostModel,
    /// Full-size frames the device RX queue holds ([`RX_FRAMES_RANGE`]).
    pub rx_frames: usize,
    /// TCP receive window (socket buffer) in bytes; `None` = linklab-mac's safe window.
    pub tcp_window: Option<usize>,
    /// Keep linklab-mac's burst cap on the window the device advertises (smoltcp's
    /// `max_burst_size`), as linklab's firmware does: the counted profiles' devices advertise
    /// at most 6 × 1474 bytes with a 9-frame queue. Off by default: the window is the socket
    /// buffer, even past what the queue holds (the write-up's window lesson).
    pub burst_cap: bool,
    /// The device's send buffer (bytes) with [`SimConfig::device_sends`].
    pub send_buffer: usize,
    /// The device's MAC holds each frame back for the line's gap itself (a MAC timing a
    /// bit-banged PHY, as in the write-up). False: the NIC or PHY paces the line and the MAC
    /// hands smoltcp every frame at once, as linklab's firmware images do (their MAC keeps no
    /// line timing); the wire keeps its gap either way.
    pub mac_line_timing: bool,
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
    /// The device sends each file to the host's TCP sink instead of downloading it (the
    /// direction of curl or iperf3 `-R` against linklab's firmware).
    pub device_sends: bool,
    /// The host's TCP settings (smoltcp's defaults with CUBIC unless changed).
    pub host_tcp: crate::host::HostTcp,
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

impl Default for SimConfig {
    /// The experiment of Niccle's MAC write-up as `linklab bench` runs it by default:
    /// `niccle-optimized`, a 9-frame queue, linklab-mac's window, 10 Mbit/s half duplex over
    /// 2 m of cable, no impairments, seed 1, 10 pings and 5 GETs of every bench file, the
    /// byte wire.
    fn default() -> SimConfig {
        let profile = Profile::NiccleOptimized;
        SimConfig {
            profile,
            cost: profile.cost(),
            rx_frames: 9,
            tcp_window: None,
            burst_cap: false,
            send_buffer: crate::app::DEVICE_SEND_BUFFER,
            mac_line_timing: true,
            link: LinkConfig {
                rate: Rate::M10,
                duplex: Duplex::Half,
                propagation_ns: 10,
            },
            impairments: Impairments::default(),
            seed: 1,
            pings: 10,
            files: BENCH_FILES.to_vec(),
            gets: 5,
            device_sends: false,
            host_tcp: crate::host::HostTcp::default(),
            pcap: false,
            phy_path: PhyPath::Bytes,
            max_virtual_ns: 7_200_000_000_000,
            max_wall_s: 600.0,
            max_stall_ns: 300_000_000_000,
        }
    }
}

/// A configuration the simulator cannot run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SimError {
    /// [`SimConfig::rx_frames`] is outside [`RX_FRAMES_RANGE`].
    RxFrames(usize),
    /// The sample-level wire's configuration is out of range.
    SampleWire(SampleWireError),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::RxFrames(n) => write!(
                f,
                "an RX queue of {n} frames is outside {}..={}",
                RX_FRAMES_RANGE.start(),
                RX_FRAMES_RANGE.end()
            ),
            SimError::SampleWire(e) => write!(f, "sample-level wire: {e}"),
        }
    }
}

impl std::error::Error for SimError {}

impl From<SampleWireError> for SimError {
    fn from(e: SampleWireError) -> SimError {
        SimError::SampleWire(e)
    }
}
