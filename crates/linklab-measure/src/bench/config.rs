//! The simulator's configuration from a bench run's options: the device of the profile (a
//! counted profile's image's queue, window and send buffer), the link, the wire model and the
//! watchdogs, each checked for sense.

use linklab_results::bail_usage;
use linklab_results::values::TcpWindow;
use linklab_sim::cost::{PhyKind, Workload};
use linklab_sim::counts::Clock;
use linklab_sim::profile::Profile;
use linklab_sim::sample_wire::SampleWireConfig;
use linklab_sim::sim::{PhyPath, SimConfig};
use linklab_sim::wire::{Impairments, LinkConfig, Rate};

use super::options::{BenchOptions, Phy, SendingApp};

/// One-way propagation delay: about 2 m of cable.
const PROPAGATION_NS: u64 = 10;

/// Turns the options into a simulator configuration, rejecting bad values.
pub fn config(options: &BenchOptions) -> anyhow::Result<SimConfig> {
    let rate = options.rate;
    let tcp_window = match options.tcp_window {
        TcpWindow::Auto => None,
        TcpWindow::Bytes(w) => Some(w),
    };
    let phy_path = phy_path_of(options)?;
    let counts = options.profile.counts();
    if counts.is_none()
        && (options.mhz.is_some() || options.cpi.is_some() || options.misaligned_copy.is_some())
    {
        bail_usage!(
            "--mhz, --cpi and --misaligned-copy: only with a counted profile (riscv32-measured, riscv32-embassy-measured, riscv32-soft-phy, mps2-measured, sabrelite-measured, niccle-measured; the others are times, not instruction counts)"
        );
    }
    let clock = Clock {
        mhz: options.mhz.unwrap_or(Clock::ESP32_C6.mhz),
        cpi: options.cpi.unwrap_or(Clock::ESP32_C6.cpi),
    };
    let share = options.misaligned_copy.unwrap_or(0.0);
    let sending = options.device_sends.is_some();
    let work = Workload {
        rx_misaligned: if sending { 0.0 } else { share },
        tx_misaligned: if sending { share } else { 0.0 },
        http_sender: options.device_sends == Some(SendingApp::Http),
        oversample: match (&phy_path, options.profile) {
            (PhyPath::Samples(c), Profile::Riscv32SoftPhy) => Some(c.oversample),
            _ => None,
        },
    };
    let mut cost = match options.profile.cost_for(clock, &work) {
        Ok(c) => c,
        Err(e) => bail_usage!("{e}"),
    };
    // A counted profile's device is its image's: its queue, its window (with the MAC's burst
    // cap, which the firmware keeps), the send buffer of the app that sends.
    let device = counts.as_ref().map(|c| c.device);
    let rx_frames = options
        .rx_frames
        .or(device.map(|d| d.rx_queue_frames))
        .unwrap_or(9);
    let (tcp_window, burst_cap) = match (tcp_window, device) {
        (None, Some(d)) => (Some(d.tcp_window), true),
        (w, _) => (w, false),
    };
    let send_buffer = match (device, options.device_sends) {
        (Some(d), Some(SendingApp::Http)) => d.http_send_buffer,
        (Some(d), _) => d.iperf3_send_buffer,
        (None, _) => linklab_sim::app::DEVICE_SEND_BUFFER,
    };
    // A bit-banged PHY must enter its interrupt before the preamble (56 bit times) has
    // passed; at 100M/1G Niccle's 750 ns latency is longer than that, so nothing is ever
    // received: refuse instead of running into the watchdog.
    let preamble_ns = 56 * rate.bit_ps() / 1000;
    if cost.phy == PhyKind::BitBanged && cost.irq_latency_ns >= preamble_ns {
        bail_usage!(
            "--rate {}: profile {} has a bit-banged PHY whose {} ns interrupt latency exceeds the {} ns preamble at this rate (accepted: --rate 10M, or --profile ideal)",
            options.rate,
            options.profile,
            cost.irq_latency_ns,
            preamble_ns
        );
    }
    if let Some(us) = options.main_fixed_us {
        cost.main_fixed_ns = (us * 1000.0).round() as u64;
    }
    Ok(SimConfig {
        profile: options.profile,
        cost,
        rx_frames,
        tcp_window,
        burst_cap,
        send_buffer,
        // A counted profile's image: its NIC (or its soft PHY's DMA) paces the line, the
        // MAC keeps no line timing.
        mac_line_timing: counts.is_none(),
        link: LinkConfig {
            rate,
            duplex: options.duplex,
            propagation_ns: options
                .latency_us
                .map_or(PROPAGATION_NS, |us| (us * 1000.0).round() as u64),
        },
        impairments: Impairments {
            loss: options.loss,
            ber: options.ber,
            truncate: options.truncate,
        },
        seed: options.seed,
        pings: options.pings,
        files: options.sizes.clone(),
        gets: options.gets,
        device_sends: options.device_sends.is_some(),
        host_tcp: options.host_tcp,
        pcap: options.pcap,
        phy_path,
        max_virtual_ns: (options.max_virtual_s * 1e9) as u64,
        max_wall_s: options.max_wall_s,
        max_stall_ns: (options.max_stall_s * 1e9) as u64,
    })
}

/// The PHY path `--phy` asks for: bytes, or samples on a 10BASE-T line checked for sense.
fn phy_path_of(options: &BenchOptions) -> anyhow::Result<PhyPath> {
    let rate = options.rate;
    let phy_path = match options.phy {
        Phy::Bytes => PhyPath::Bytes,
        Phy::Samples => {
            if rate != Rate::M10 {
                bail_usage!("--phy samples models 10BASE-T only: use it with --rate 10M");
            }
            if options.jitter > options.oversample {
                bail_usage!(
                    "--jitter must be in 0..={} (the oversampling factor), got {}",
                    options.oversample,
                    options.jitter
                );
            }
            let cfg = SampleWireConfig {
                oversample: options.oversample,
                drift_ppm: options.drift,
                jitter_samples: options.jitter,
                noise: options.noise,
            };
            linklab_sim::sample_wire::SampleWire::new(cfg)
                .map_err(|e| anyhow::anyhow!("--phy samples: {e}"))?;
            PhyPath::Samples(cfg)
        }
    };
    Ok(phy_path)
}
