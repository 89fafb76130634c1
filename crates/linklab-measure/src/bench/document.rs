//! A bench run's document ([`BenchReport`], linklab-results) from the simulator's
//! configuration and report.

use linklab_results::bench::{self, BenchReport, CostModel, Counters, Download, FileStats};
use linklab_results::bench::{HostCounters, Impaired, ImpairmentCounters, Impairments, Link};
use linklab_results::bench::{PhyCounters, Ping, Wire};
use linklab_sim::cost::PhyKind;
use linklab_sim::counts::LoopShape;
use linklab_sim::sim::{PhyPath, SimConfig, SimReport};
use linklab_sim::wire::{Duplex, ImpairmentCounters as SimImpaired};

use super::limit::limit;
use super::options::BenchOptions;

/// The document of a run of `options` with `cfg` that gave `r`.
pub fn document(cfg: &SimConfig, options: &BenchOptions, r: &SimReport) -> BenchReport {
    let c = &cfg.cost;
    BenchReport {
        kind: bench::KIND.into(),
        schema_version: bench::SCHEMA_VERSION,
        profile: cfg.profile.name().into(),
        cost_model: CostModel {
            phy: match c.phy {
                PhyKind::BitBanged => "bit-banged",
                PhyKind::Dma => "dma",
            }
            .into(),
            irq_latency_ns: c.irq_latency_ns,
            isr_fixed_ns: c.isr_fixed_ns,
            isr_per_byte_ps: c.isr_per_byte_ps,
            main_fixed_ns: c.main_fixed_ns,
            main_rx_frame_ns: c.main_rx_frame_ns,
            main_per_byte_ps: c.main_per_byte_ps,
            tx_frame_ns: c.tx_frame_ns,
            tx_per_byte_ps: c.tx_per_byte_ps,
            rx_batch: c.rx_batch,
            shape: match c.shape {
                LoopShape::MainLoop => "main-loop",
                LoopShape::Executor => "executor",
            }
            .into(),
        },
        link: Link {
            rate: cfg.link.rate.name().into(),
            rate_bps: cfg.link.rate.bits_per_s(),
            duplex: match cfg.link.duplex {
                Duplex::Half => "half",
                Duplex::Full => "full",
            }
            .into(),
            propagation_ns: cfg.link.propagation_ns,
            phy: match cfg.phy_path {
                PhyPath::Bytes => Wire::Bytes,
                PhyPath::Samples(s) => Wire::Samples {
                    oversample: s.oversample,
                    drift_ppm: s.drift_ppm,
                    jitter_samples: s.jitter_samples,
                    noise: s.noise,
                },
            },
        },
        impairments: Impairments {
            loss: cfg.impairments.loss,
            ber: cfg.impairments.ber,
            truncate: cfg.impairments.truncate,
        },
        seed: cfg.seed,
        rx_frames: r.queue_frames as u64,
        rx_queue_bytes: r.queue_capacity as u64,
        tcp_window: r.tcp_window as u64,
        tcp_window_auto: r.auto_window as u64,
        tcp_window_option: options.tcp_window.to_string(),
        limit_bytes_per_s: Some(limit(cfg)),
        pings: r
            .pings
            .iter()
            .map(|p| Ping {
                seq: p.seq,
                rtt_ms: p.rtt_ms,
            })
            .collect(),
        downloads: r
            .downloads
            .iter()
            .map(|d| Download {
                path: d.path.clone(),
                bytes: d.bytes,
                body_bytes: d.body_bytes,
                seconds: d.seconds,
                bytes_per_s: d.bytes_per_s,
                crc32: Some(d.crc32),
                expected_crc32: Some(d.expected_crc32),
                status: d.status,
                error: d.error.clone(),
            })
            .collect(),
        file_stats: r
            .file_stats
            .iter()
            .map(|s| FileStats {
                path: s.path.clone(),
                phy: phy_counters(&s.phy),
                counters: mac_counters(s.mac.fields()),
            })
            .collect(),
        counters: mac_counters(r.mac.fields()),
        phy_counters: Some(phy_counters(&r.phy)),
        host_counters: Some(HostCounters {
            rx_packets: r.host.rx_packets,
            rx_frame_errors: r.host.rx_frame_errors,
            rx_crc_errors: r.host.rx_crc_errors,
            rx_length_errors: r.host.rx_length_errors,
            tx_packets: r.host.tx_packets,
            http_responses: r.host.http_responses,
        }),
        impairment_counters: Some(ImpairmentCounters {
            to_device: impaired(&r.to_device),
            to_host: impaired(&r.to_host),
        }),
        virtual_seconds: r.virtual_ns as f64 / 1e9,
        cpu_busy_seconds: r.cpu_busy_ns as f64 / 1e9,
        main_passes: r.main_passes,
        send_buffer: cfg.send_buffer as u64,
        burst_cap: cfg.burst_cap,
        events: r.events,
        stopped: r.stopped.clone(),
        conservation: Some(match r.check_conservation(cfg.cost.phy) {
            Ok(()) => "ok".to_string(),
            Err(e) => e.to_string(),
        }),
        pcap_frames: r.pcap.as_ref().map(|p| p.frames()),
    }
}

/// The device MAC's counters (linklab-mac's `fields`: its names, in its order).
fn mac_counters(fields: impl IntoIterator<Item = (&'static str, u64)>) -> Counters {
    Counters(
        fields
            .into_iter()
            .map(|(name, count)| (name.to_string(), count))
            .collect(),
    )
}

/// The simulated PHY's counters.
fn phy_counters(p: &linklab_sim::sim::PhyCounters) -> PhyCounters {
    PhyCounters {
        tx_packets: p.tx_packets,
        tx_ltps: p.tx_ltps,
        rx_packets: p.rx_packets,
        rx_truncated: p.rx_truncated,
        rx_ltps: p.rx_ltps,
        rx_queue_full: p.rx_queue_full,
        rx_bit_offset: p.rx_bit_offset,
        rx_inverted: p.rx_inverted,
        rx_sample_errors: p.rx_sample_errors,
        rx_sample_truncated: p.rx_sample_truncated,
        tx_sample_errors: p.tx_sample_errors,
        tx_sample_truncated: p.tx_sample_truncated,
        rx_idle_line: p.rx_idle_line,
        rx_empty_without_grant: p.rx_empty_without_grant,
    }
}

/// What the impairments did one way.
fn impaired(c: &SimImpaired) -> Impaired {
    Impaired {
        transmissions: c.transmissions,
        lost: c.lost,
        corrupted: c.corrupted,
        bits_flipped: c.bits_flipped,
        truncated: c.truncated,
    }
}
