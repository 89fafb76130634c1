//! What a bench run is asked for: the device's profile and queue, the link, the host, the
//! wire model, the cost model's settings and the watchdogs.

use linklab_perf::payload::{BenchFile, BENCH_FILES};
use linklab_results::values::TcpWindow;
use linklab_sim::host::HostTcp;
use linklab_sim::profile::Profile;
use linklab_sim::wire::{Duplex, Rate};

/// How frames cross the simulated wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phy {
    /// Byte images of the transmissions (fast).
    Bytes,
    /// Manchester samples through linklab-phy10 (drift, jitter, noise).
    Samples,
}

/// The device app that sends, when the device sends instead of downloading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendingApp {
    /// The firmware's iperf3 server under `iperf3 -R`.
    Iperf3,
    /// The firmware's HTTP server under curl (generates the bench file's text per byte).
    Http,
}

/// The settings of one bench run.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchOptions {
    /// The device's profile: the cost model of its MCU.
    pub profile: Profile,
    /// Full-size frames the device's receive queue holds (`None`: 9, or a counted profile's
    /// image's queue).
    pub rx_frames: Option<usize>,
    /// The device's TCP receive window (`auto`: linklab-mac's window for the queue, or a
    /// counted profile's image's).
    pub tcp_window: TcpWindow,
    /// The line rate.
    pub rate: Rate,
    /// Half or full duplex.
    pub duplex: Duplex,
    /// Probability that a transmission is lost.
    pub loss: f64,
    /// Bit error rate.
    pub ber: f64,
    /// Probability that a transmission is cut short.
    pub truncate: f64,
    /// The random seed: the same seed gives the same run.
    pub seed: u64,
    /// The files to download, in order.
    pub sizes: Vec<BenchFile>,
    /// Pings before the downloads.
    pub pings: u16,
    /// Downloads of each file.
    pub gets: u32,
    /// The device sends each file to the host's sink instead, as this app of the firmware
    /// does.
    pub device_sends: Option<SendingApp>,
    /// The host's TCP: its congestion control and delayed-ACK timeout.
    pub host_tcp: HostTcp,
    /// Keep every frame on the wire (for a pcap file).
    pub pcap: bool,
    /// The wire model.
    pub phy: Phy,
    /// [`Phy::Samples`]: receiver samples per bit time.
    pub oversample: u8,
    /// [`Phy::Samples`]: transmitter clock offset, ppm.
    pub drift: i32,
    /// [`Phy::Samples`]: peak edge jitter, samples (at most `oversample`).
    pub jitter: u8,
    /// [`Phy::Samples`]: probability that a sample is flipped.
    pub noise: f64,
    /// The main loop's fixed cost per iteration, µs, instead of the profile's.
    pub main_fixed_us: Option<f64>,
    /// A counted profile's CPU clock, MHz (`None`: 160, the ESP32-C6's).
    pub mhz: Option<f64>,
    /// A counted profile's cycles per instruction (`None`: 1).
    pub cpi: Option<f64>,
    /// A counted profile: the share of the transfer's frame bytes the device copies off their
    /// word (`None`: 0).
    pub misaligned_copy: Option<f64>,
    /// One-way delay between the device and the host, µs (`None`: 0.01, 2 m of cable).
    pub latency_us: Option<f64>,
    /// Watchdog: seconds of virtual time.
    pub max_virtual_s: f64,
    /// Watchdog: seconds of wall time.
    pub max_wall_s: f64,
    /// Watchdog: virtual seconds without progress of the application.
    pub max_stall_s: f64,
}

impl Default for BenchOptions {
    /// The options of `linklab bench` with nothing given: Niccle's optimised profile on a
    /// 10 Mbit/s half-duplex link, 10 pings, 5 downloads of each bench file.
    fn default() -> BenchOptions {
        BenchOptions {
            profile: Profile::NiccleOptimized,
            rx_frames: None,
            tcp_window: TcpWindow::Auto,
            rate: Rate::M10,
            duplex: Duplex::Half,
            loss: 0.0,
            ber: 0.0,
            truncate: 0.0,
            seed: 1,
            sizes: BENCH_FILES.to_vec(),
            pings: 10,
            gets: 5,
            device_sends: None,
            host_tcp: HostTcp::default(),
            pcap: false,
            phy: Phy::Bytes,
            oversample: 8,
            drift: 0,
            jitter: 0,
            noise: 0.0,
            main_fixed_us: None,
            mhz: None,
            cpi: None,
            misaligned_copy: None,
            latency_us: None,
            max_virtual_s: 7200.0,
            max_wall_s: 600.0,
            max_stall_s: 300.0,
        }
    }
}

/// A bench file by its size (`1MB`) or its path (`1MB.txt`, `/1MB.txt`).
pub fn bench_file(item: &str) -> Result<BenchFile, String> {
    let name = |f: &BenchFile| f.path.trim_start_matches('/').trim_end_matches(".txt");
    let item = item.trim();
    BENCH_FILES
        .iter()
        .copied()
        .find(|f| f.path == item || f.path.trim_start_matches('/') == item || name(f) == item)
        .ok_or_else(|| {
            let names: Vec<&str> = BENCH_FILES.iter().map(name).collect();
            format!("expected one of {}", names.join(", "))
        })
}
