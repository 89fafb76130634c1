//! The latency-under-load part of a probe document (`latency`): round trips sampled idle and
//! while TCP runs to the device, from it and both ways (Flent's RRUL for one flow each way),
//! every sample with its time, each load's throughput per interval, the stalls, and the
//! figures per load — median, p90, p99, max, the increase over idle, the losses.
//!
//! Every time is seconds since the step began (`started_unix_ms`). A probe that got no reply is
//! a sample with no round trip (`null`): counted as lost, never as fast.

use serde::{Deserialize, Serialize};

/// A round trip under a load *grows* when its median exceeds the idle median by more than
/// this factor...
pub const GROWTH_RATIO: f64 = 4.0;
/// ... and by more than this many milliseconds (below that it is the host's own scheduling).
pub const GROWTH_PLUS_MS: f64 = 5.0;
/// A round trip longer than this is a stall.
pub const STALL_RTT_MS: f64 = 1000.0;

/// Latency under load: what the step sent, sampled and found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatencyUnderLoad {
    /// When the step began, Unix milliseconds: every `*_s` time below counts from here.
    pub started_unix_ms: u64,
    /// Spacing of the round-trip probes of each transport, milliseconds.
    pub interval_ms: f64,
    /// The loads in the order they ran: `idle`, `to_device`, `from_device`, `both`.
    pub loads: Vec<Load>,
    /// One time series per transport (ICMP, UDP echo, TCP echo: those the device answers).
    pub round_trips: Vec<RttSeries>,
    /// Intervals of a flow with no bytes, and round trips over [`STALL_RTT_MS`].
    pub stalls: Vec<Stall>,
    /// The bound on growth: [`GROWTH_RATIO`] times idle and [`GROWTH_PLUS_MS`] more.
    pub bound: GrowthBound,
    /// One sentence per transport and load whose median grew beyond the bound.
    pub grows: Vec<String>,
}

/// The stated bound on a round trip's growth under load.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GrowthBound {
    /// The median under load over the idle median, beyond which it grows.
    pub ratio: f64,
    /// And the increase beyond which it grows, milliseconds.
    pub plus_ms: f64,
}

/// One load: a time window, what ran in it, the throughput it reached.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Load {
    /// `idle`, `to_device`, `from_device` or `both`.
    pub name: String,
    /// What made the load (`iperf3`, `iperf3 -R`, `iperf3 --bidir`); none when idle.
    pub via: Option<String>,
    /// Start of the window its round trips are counted in, seconds.
    pub start_s: f64,
    /// Its end, seconds.
    pub end_s: f64,
    /// Goodput to the device over the flow (what it received: the iperf3 server's count),
    /// bit/s (none: no flow that way).
    pub to_device_bps: Option<f64>,
    /// Goodput from the device over the flow (what we received), bit/s.
    pub from_device_bps: Option<f64>,
    /// Retransmissions our sending streams counted (`TCP_INFO`), over the load.
    pub retransmits: Option<u64>,
    /// The flow's throughput in each interval, with its time.
    pub intervals: Vec<FlowInterval>,
    /// Why the load did not run or ended early (a refused or failed flow); none when it ran.
    pub error: Option<String>,
}

/// One reporting interval of a load's flow.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FlowInterval {
    /// Its start, seconds.
    pub start_s: f64,
    /// Its end, seconds.
    pub end_s: f64,
    /// Bit/s to the device (what we wrote into the socket), none without a flow that way.
    pub to_device_bps: Option<f64>,
    /// Bit/s from the device (what we received), none without a flow that way.
    pub from_device_bps: Option<f64>,
    /// Retransmissions our sending streams counted in the interval (`TCP_INFO`).
    pub retransmits: Option<u64>,
}

/// The round trips of one transport.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RttSeries {
    /// `icmp`, `echo_udp` or `echo_tcp`.
    pub transport: String,
    /// Probe size, bytes.
    pub size: usize,
    /// Every probe: `[sent_s, rtt_ms]`, `rtt_ms` null when no reply came.
    pub samples: Vec<(f64, Option<f64>)>,
    /// The figures of each load.
    pub per_load: Vec<LoadRtt>,
    /// Why this transport stopped early or could not run (none: it ran throughout).
    pub error: Option<String>,
}

/// The round trips of one transport within one load's window.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadRtt {
    /// The load's name.
    pub load: String,
    /// Probes sent in the window.
    pub sent: u64,
    /// Replies received.
    pub received: u64,
    /// Probes with no reply.
    pub lost: u64,
    /// `lost / sent`, percent.
    pub loss_pct: f64,
    /// First quartile, ms (none when nothing came back).
    pub p25_ms: Option<f64>,
    /// Median, ms.
    pub p50_ms: Option<f64>,
    /// Third quartile, ms.
    pub p75_ms: Option<f64>,
    /// 90th percentile, ms.
    pub p90_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// Largest, ms.
    pub max_ms: Option<f64>,
    /// Median minus the idle median, ms (none for idle, or without either).
    pub increase_ms: Option<f64>,
}

/// A stall: a flow interval with no bytes, or a round trip over a second.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stall {
    /// `no_bytes` or `rtt_over_1s`.
    pub kind: String,
    /// The load it happened in.
    pub load: String,
    /// The flow's direction (`to_device`, `from_device`) or the transport of the round trip.
    pub what: String,
    /// Start, seconds.
    pub start_s: f64,
    /// End, seconds (a round trip: the reply's arrival).
    pub end_s: f64,
    /// Retransmissions our sending streams counted in it (`TCP_INFO`); none when we did not
    /// send that way.
    pub retransmits: Option<u64>,
}

/// The value at quantile `q` of sorted `v` (nearest rank).
pub fn quantile(v: &[f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

/// The figures of `samples` (`[sent_s, rtt_ms]`) sent within `[start_s, end_s)`.
pub fn load_rtt(load: &str, samples: &[(f64, Option<f64>)], start_s: f64, end_s: f64) -> LoadRtt {
    let within: Vec<Option<f64>> = samples
        .iter()
        .filter(|(t, _)| *t >= start_s && *t < end_s)
        .map(|(_, r)| *r)
        .collect();
    let mut rtts: Vec<f64> = within.iter().flatten().copied().collect();
    rtts.sort_by(f64::total_cmp);
    let sent = within.len() as u64;
    let received = rtts.len() as u64;
    let lost = sent - received;
    LoadRtt {
        load: load.into(),
        sent,
        received,
        lost,
        loss_pct: if sent == 0 {
            0.0
        } else {
            lost as f64 * 100.0 / sent as f64
        },
        p25_ms: quantile(&rtts, 0.25),
        p50_ms: quantile(&rtts, 0.50),
        p75_ms: quantile(&rtts, 0.75),
        p90_ms: quantile(&rtts, 0.90),
        p99_ms: quantile(&rtts, 0.99),
        max_ms: rtts.last().copied(),
        increase_ms: None,
    }
}

/// Fills each load's increase over the idle median.
pub fn set_increases(per_load: &mut [LoadRtt]) {
    let idle = per_load
        .iter()
        .find(|l| l.load == "idle")
        .and_then(|l| l.p50_ms);
    for l in per_load.iter_mut().filter(|l| l.load != "idle") {
        l.increase_ms = match (l.p50_ms, idle) {
            (Some(p), Some(i)) => Some(p - i),
            _ => None,
        };
    }
}

/// A load in words, for sentences: `uploading to the device`...
pub fn load_words(load: &str) -> &str {
    match load {
        "idle" => "idle",
        "to_device" => "while TCP runs to the device",
        "from_device" => "while TCP runs from the device",
        "both" => "while TCP runs both ways",
        other => other,
    }
}

/// The sentences for each transport and load whose median grew beyond the bound (or that lost
/// every probe while its idle round trips came back).
pub fn growth(series: &[RttSeries]) -> Vec<String> {
    let mut out = Vec::new();
    for s in series {
        let Some(idle) = s.per_load.iter().find(|l| l.load == "idle") else {
            continue;
        };
        let Some(idle_ms) = idle.p50_ms else {
            continue;
        };
        for l in s.per_load.iter().filter(|l| l.load != "idle") {
            match l.p50_ms {
                Some(p) if p > idle_ms * GROWTH_RATIO && p - idle_ms > GROWTH_PLUS_MS => {
                    out.push(format!(
                        "{} round trip grows {}: median {} ms against {} ms idle (+{} ms, {:.0}×; p99 {} ms, {} of {} lost)",
                        transport_words(&s.transport),
                        load_words(&l.load),
                        ms(p),
                        ms(idle_ms),
                        ms(p - idle_ms),
                        p / idle_ms.max(1e-3),
                        l.p99_ms.map_or("–".into(), ms),
                        l.lost,
                        l.sent
                    ));
                }
                None if l.sent > 0 => out.push(format!(
                    "{} round trip lost {}: none of {} probes came back (idle: median {} ms)",
                    transport_words(&s.transport),
                    load_words(&l.load),
                    l.sent,
                    ms(idle_ms)
                )),
                _ => {}
            }
        }
    }
    out
}

/// A transport for people.
pub fn transport_words(t: &str) -> &str {
    match t {
        "icmp" => "ICMP",
        "echo_udp" => "UDP echo",
        "echo_tcp" => "TCP echo",
        other => other,
    }
}

/// Milliseconds to three significant digits.
pub fn ms(v: f64) -> String {
    match v.abs() {
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        a if a >= 1.0 => format!("{v:.2}"),
        _ => format!("{v:.3}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(idle: f64, load: Option<f64>) -> RttSeries {
        let mut samples: Vec<(f64, Option<f64>)> =
            (0..100).map(|i| (i as f64 * 0.01, Some(idle))).collect();
        samples.extend((0..100).map(|i| (2.0 + i as f64 * 0.01, load)));
        let mut per_load = vec![
            load_rtt("idle", &samples, 0.0, 1.0),
            load_rtt("to_device", &samples, 2.0, 3.0),
        ];
        set_increases(&mut per_load);
        RttSeries {
            transport: "icmp".into(),
            size: 64,
            samples,
            per_load,
            error: None,
        }
    }

    #[test]
    fn figures_per_load_count_losses_never_as_fast() {
        let s = series(0.2, None);
        let l = &s.per_load[1];
        assert_eq!((l.sent, l.received, l.lost), (100, 0, 100));
        assert_eq!(l.p50_ms, None);
        assert_eq!(l.loss_pct, 100.0);
        assert!(growth(&[s])[0].contains("none of 100 probes came back"));
    }

    #[test]
    fn growth_beyond_the_bound_is_said_in_words() {
        let s = series(0.2, Some(400.0));
        assert_eq!(s.per_load[1].increase_ms, Some(399.8));
        let words = growth(&[s]);
        assert_eq!(words.len(), 1);
        assert!(words[0].starts_with("ICMP round trip grows while TCP runs to the device"));
        // Four times idle but by less than 5 ms: within the bound.
        assert!(growth(&[series(0.2, Some(2.0))]).is_empty());
        // 5 ms more but less than four times idle: within the bound.
        assert!(growth(&[series(10.0, Some(30.0))]).is_empty());
    }

    #[test]
    fn quantiles_by_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&v, 0.5), Some(50.0));
        assert_eq!(quantile(&v, 0.99), Some(99.0));
        assert_eq!(quantile(&v, 1.0), Some(100.0));
        assert_eq!(quantile(&[], 0.5), None);
    }
}
