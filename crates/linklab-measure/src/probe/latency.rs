//! The latency-under-load step, after Flent's RRUL for one flow each way: round trips (ICMP,
//! UDP and TCP echo, those the device answers) sampled every [`SPACING`] throughout, first on
//! an idle link, then while one TCP flow runs to the device, one from it and one each way at
//! once (iperf3, `-R`, `--bidir`). Each load's round trips are those sent within its window —
//! from the flow's first interval to its last — so the flows' setup and results exchange are
//! not counted as load.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use linklab_results::probe::latency::{self as doc, load_rtt, GrowthBound, LatencyUnderLoad};
use linklab_results::probe::latency::{Load, LoadRtt, RttSeries, Stall, STALL_RTT_MS};
use linklab_results::probe::{Figure, NotMeasured, Unmeasured};

use super::flows::{self, Way};
use super::steps::Outcome;
use crate::rtt::client::{Connection, RunConfig};
use crate::rtt::Transport;

/// Spacing of each transport's probes.
pub const SPACING: Duration = Duration::from_millis(5);
/// Probe size, bytes (ICMP payload, UDP payload, TCP frame).
const PROBE_SIZE: usize = 64;
/// How long the samplers wait for late replies after the last load.
const DRAIN: Duration = Duration::from_millis(1500);
/// What a load costs besides its seconds: the pause before it, connecting, the results.
const LOAD_OVERHEAD: Duration = Duration::from_millis(1200);
/// Pause before each load (a stock iperf3 server reopens its listener between tests).
const LOAD_PAUSE: Duration = Duration::from_millis(300);
/// Each flow's throughput is taken in intervals this long.
const SLICE: Duration = Duration::from_millis(100);

/// What the step measures against: the device and which transports answer.
pub struct Target<'a> {
    /// The host as given.
    pub host: &'a str,
    /// Its address.
    pub addr: IpAddr,
    /// The iperf3 port.
    pub iperf_port: u16,
    /// The echo port.
    pub echo_port: u16,
    /// The transports that answered in discovery, with their names (`icmp`, `echo_udp`...).
    pub transports: Vec<(Transport, &'static str)>,
}

/// How long the idle window and each load run, for `time`; `None` when even 1-second loads do
/// not fit.
pub fn plan(time: Duration) -> Option<(Duration, u32)> {
    let idle = time
        .mul_f64(0.12)
        .clamp(Duration::from_secs(1), Duration::from_secs(3));
    let left = time.checked_sub(idle + DRAIN + LOAD_OVERHEAD * 3)?;
    let seconds = (left.as_secs_f64() / 3.0).floor() as u32;
    (seconds >= 1).then_some((idle, seconds))
}

/// The least time [`plan`] runs the step in: an idle second and three 1-second loads.
pub fn least_time() -> Duration {
    Duration::from_secs(4) + DRAIN + LOAD_OVERHEAD * 3
}

/// The series of one transport's sampler: its samples and why it stopped, if it did.
type Sampled = (Vec<(f64, Option<f64>)>, Option<String>);

/// Samples round trips over `transport` from `epoch` until `halt`.
fn sample(
    peer: SocketAddr,
    transport: Transport,
    epoch: Instant,
    count: u32,
    halt: &AtomicBool,
) -> Sampled {
    let run = || -> anyhow::Result<Vec<(f64, Option<f64>)>> {
        let mut conn = Connection::open(peer, transport, Duration::from_secs(2))?;
        let cfg = RunConfig {
            size: PROBE_SIZE,
            count,
            interval: SPACING,
            drain: DRAIN,
            run: 7,
            keep_samples: true,
        };
        let r = conn.measure_until(epoch, &cfg, halt)?;
        Ok(r.samples
            .iter()
            .map(|s| (s.sent_ns as f64 * 1e-9, s.rtt_ns.map(|n| n as f64 * 1e-6)))
            .collect())
    };
    match run() {
        Ok(samples) => (samples, None),
        Err(e) => (Vec::new(), Some(format!("{e:#}"))),
    }
}

/// Runs the step in `time`: the samplers throughout, the idle window, then the three loads.
pub fn latency_under_load(t: &Target, time: Duration) -> Outcome<Option<LatencyUnderLoad>> {
    let Some((idle, seconds)) = plan(time) else {
        return out_of_time(time);
    };
    let epoch = Instant::now();
    let started_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let halt = AtomicBool::new(false);
    // Enough probes for the whole step and more: `halt` ends them.
    let count = ((time + Duration::from_secs(30)).as_secs_f64() / SPACING.as_secs_f64()) as u32;
    let (loads, sampled) = std::thread::scope(|s| {
        let samplers: Vec<_> = t
            .transports
            .iter()
            .map(|&(transport, _)| {
                let port = if transport == Transport::Icmp {
                    0
                } else {
                    t.echo_port
                };
                let peer = SocketAddr::new(t.addr, port);
                let halt = &halt;
                s.spawn(move || sample(peer, transport, epoch, count, halt))
            })
            .collect();
        let loads = run_loads(t, idle, seconds, epoch);
        halt.store(true, Ordering::Relaxed);
        let sampled: Vec<Sampled> = samplers
            .into_iter()
            .map(|h| h.join().expect("samplers do not panic"))
            .collect();
        (loads, sampled)
    });
    let round_trips: Vec<RttSeries> = t
        .transports
        .iter()
        .zip(sampled)
        .map(|(&(_, name), (samples, error))| series(name, samples, error, &loads))
        .collect();
    let stalls = stalls(&loads, &round_trips);
    let grows = doc::growth(&round_trips);
    let value = LatencyUnderLoad {
        started_unix_ms,
        interval_ms: SPACING.as_secs_f64() * 1e3,
        loads,
        round_trips,
        stalls,
        bound: GrowthBound {
            ratio: doc::GROWTH_RATIO,
            plus_ms: doc::GROWTH_PLUS_MS,
        },
        grows,
    };
    finish(t, value, idle, seconds)
}

/// The idle window, then each load in turn.
fn run_loads(t: &Target, idle: Duration, seconds: u32, epoch: Instant) -> Vec<Load> {
    std::thread::sleep(idle);
    let mut loads = vec![Load {
        name: "idle".into(),
        via: None,
        start_s: 0.0,
        end_s: idle.as_secs_f64(),
        to_device_bps: None,
        from_device_bps: None,
        retransmits: None,
        intervals: Vec::new(),
        error: None,
    }];
    for way in Way::ALL {
        std::thread::sleep(LOAD_PAUSE);
        let mut load = Load {
            name: way.name().into(),
            via: Some(way.via().into()),
            start_s: 0.0,
            end_s: 0.0,
            to_device_bps: None,
            from_device_bps: None,
            retransmits: None,
            intervals: Vec::new(),
            error: None,
        };
        match flows::run(t.host, t.iperf_port, way, seconds, SLICE, epoch) {
            Ok(flow) if !flow.intervals.is_empty() => {
                let iv = &flow.intervals;
                load.start_s = iv[0].start_s;
                load.end_s = iv[iv.len() - 1].end_s;
                load.to_device_bps = flow.to_device_bps;
                load.from_device_bps = flow.from_device_bps;
                let retrans: Vec<u64> = iv.iter().filter_map(|i| i.retransmits).collect();
                load.retransmits = (!retrans.is_empty()).then(|| retrans.iter().sum());
                load.intervals = flow.intervals;
            }
            Ok(_) => load.error = Some("the flow reported no interval".into()),
            Err(e) => load.error = Some(format!("{e:#}")),
        }
        loads.push(load);
    }
    loads
}

/// One transport's series and its figures per load that ran.
fn series(
    name: &str,
    samples: Vec<(f64, Option<f64>)>,
    error: Option<String>,
    loads: &[Load],
) -> RttSeries {
    let mut per_load: Vec<LoadRtt> = loads
        .iter()
        .filter(|l| l.error.is_none())
        .map(|l| load_rtt(&l.name, &samples, l.start_s, l.end_s))
        .collect();
    doc::set_increases(&mut per_load);
    RttSeries {
        transport: name.into(),
        size: PROBE_SIZE,
        samples,
        per_load,
        error,
    }
}

/// The load whose window holds time `t`, or `between`.
fn load_at(loads: &[Load], t: f64) -> String {
    loads
        .iter()
        .find(|l| l.error.is_none() && t >= l.start_s && t < l.end_s)
        .map_or("between".into(), |l| l.name.clone())
}

/// The stalls: runs of flow intervals with no bytes one way, and runs of round trips over
/// [`STALL_RTT_MS`]; each with the retransmissions our side counted meanwhile.
pub fn stalls(loads: &[Load], series: &[RttSeries]) -> Vec<Stall> {
    let mut out: Vec<Stall> = Vec::new();
    for l in loads {
        for (what, rate) in [
            (
                "to_device",
                (|i: &doc::FlowInterval| i.to_device_bps) as fn(&_) -> _,
            ),
            ("from_device", |i: &doc::FlowInterval| i.from_device_bps),
        ] {
            let mut open: Option<Stall> = None;
            for i in &l.intervals {
                match (rate(i) == Some(0.0), open.as_mut()) {
                    (true, Some(s)) => {
                        s.end_s = i.end_s;
                        s.retransmits = add(s.retransmits, i.retransmits);
                    }
                    (true, None) => {
                        open = Some(Stall {
                            kind: "no_bytes".into(),
                            load: l.name.clone(),
                            what: what.into(),
                            start_s: i.start_s,
                            end_s: i.end_s,
                            retransmits: i.retransmits,
                        })
                    }
                    _ => out.extend(open.take()),
                }
            }
            out.extend(open);
        }
    }
    for s in series {
        let mut open: Option<Stall> = None;
        for &(t, rtt) in &s.samples {
            match (rtt, open.as_mut()) {
                (Some(r), Some(st)) if r > STALL_RTT_MS => st.end_s = st.end_s.max(t + r / 1e3),
                (Some(r), None) if r > STALL_RTT_MS => {
                    open = Some(Stall {
                        kind: "rtt_over_1s".into(),
                        load: load_at(loads, t),
                        what: s.transport.clone(),
                        start_s: t,
                        end_s: t + r / 1e3,
                        retransmits: None,
                    })
                }
                (Some(_), Some(_)) => out.extend(open.take()),
                _ => {}
            }
        }
        out.extend(open);
    }
    for st in out.iter_mut().filter(|s| s.kind == "rtt_over_1s") {
        st.retransmits = retransmits_within(loads, st.start_s, st.end_s);
    }
    out.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    out
}

/// Adds two optional counts.
fn add(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        _ => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

/// The retransmissions counted in intervals overlapping `[start, end]`.
fn retransmits_within(loads: &[Load], start: f64, end: f64) -> Option<u64> {
    loads
        .iter()
        .flat_map(|l| &l.intervals)
        .filter(|i| i.end_s > start && i.start_s < end)
        .fold(None, |acc, i| add(acc, i.retransmits))
}

/// No time for the step: a plain line, no figure.
fn out_of_time(time: Duration) -> Outcome<Option<LatencyUnderLoad>> {
    Outcome {
        value: None,
        figures: Vec::new(),
        not_measured: vec![NotMeasured {
            id: "latency".into(),
            label: "latency under load".into(),
            state: Unmeasured::OutOfTime,
            reason: format!(
                "{:.1} s of the run's time for it; an idle second and three 1-second loads take {:.1} s",
                time.as_secs_f64(),
                least_time().as_secs_f64()
            ),
        }],
        error: None,
        detail: "out of time".into(),
    }
}

/// The step's figures (each transport's median per load, between its quartiles), what it could
/// not make, and the error of a load to or from the device that failed.
fn finish(
    t: &Target,
    value: LatencyUnderLoad,
    idle: Duration,
    seconds: u32,
) -> Outcome<Option<LatencyUnderLoad>> {
    let mut figures = Vec::new();
    let mut not_measured = Vec::new();
    for s in &value.round_trips {
        let words = doc::transport_words(&s.transport);
        for l in &s.per_load {
            let id = format!("latency.{}.{}.rtt_p50", s.transport, l.load);
            let label = format!("{words} round trip {}", doc::load_words(&l.load));
            match (l.p25_ms, l.p50_ms, l.p75_ms) {
                (Some(a), Some(m), Some(b)) => figures.push(
                    Figure::quartiles(id, label, m * 1e3, a * 1e3, b * 1e3)
                        .via(&format!("{words} every {} ms", SPACING.as_millis())),
                ),
                _ => not_measured.push(NotMeasured {
                    id,
                    label,
                    state: Unmeasured::Failed,
                    reason: format!("none of {} probes came back", l.sent),
                }),
            }
        }
    }
    for l in value.loads.iter().filter(|l| l.error.is_some()) {
        not_measured.push(NotMeasured {
            id: format!("latency.{}", l.name),
            label: format!("latency {}", doc::load_words(&l.name)),
            state: Unmeasured::Failed,
            reason: l.error.clone().unwrap_or_default(),
        });
    }
    // A flow to or from the device that failed is the iperf server failing; a refused
    // `--bidir` (an iperf3 server that does not run both ways) is only that load absent.
    let error = value
        .loads
        .iter()
        .find(|l| l.name != "both" && l.error.is_some())
        .map(|l| {
            anyhow::anyhow!(
                "latency under load, {}: {}",
                l.name,
                l.error.clone().unwrap_or_default()
            )
        });
    let detail = format!(
        "{} transports every {} ms; {:.1} s idle, loads of {seconds} s ({}); {} stalls",
        t.transports.len(),
        SPACING.as_millis(),
        idle.as_secs_f64(),
        value
            .loads
            .iter()
            .filter_map(|l| l.via.clone())
            .collect::<Vec<_>>()
            .join(", "),
        value.stalls.len()
    );
    Outcome {
        value: Some(value),
        figures,
        not_measured,
        error,
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linklab_results::probe::latency::FlowInterval;

    #[test]
    fn loads_fit_the_time() {
        assert_eq!(plan(Duration::from_secs(5)), None);
        assert!(plan(least_time() + Duration::from_millis(200)).is_some());
        assert_eq!(
            plan(Duration::from_secs(10)),
            Some((Duration::from_millis(1200), 1))
        );
        assert_eq!(
            plan(Duration::from_secs(20)),
            Some((Duration::from_millis(2400), 4))
        );
    }

    fn interval(start: f64, bps: f64, retrans: u64) -> FlowInterval {
        FlowInterval {
            start_s: start,
            end_s: start + 0.1,
            to_device_bps: Some(bps),
            from_device_bps: None,
            retransmits: Some(retrans),
        }
    }

    #[test]
    fn a_cut_flow_is_one_stall_with_its_retransmissions() {
        let mut intervals: Vec<FlowInterval> =
            (0..10).map(|i| interval(i as f64 * 0.1, 1e6, 0)).collect();
        intervals.extend((10..30).map(|i| interval(i as f64 * 0.1, 0.0, u64::from(i % 5 == 0))));
        intervals.extend((30..40).map(|i| interval(i as f64 * 0.1, 1e6, 0)));
        let load = Load {
            name: "to_device".into(),
            via: None,
            start_s: 0.0,
            end_s: 4.0,
            to_device_bps: None,
            from_device_bps: None,
            retransmits: None,
            intervals,
            error: None,
        };
        let rtt = RttSeries {
            transport: "icmp".into(),
            size: 64,
            samples: vec![
                (1.0, Some(1500.0)),
                (1.2, None),
                (1.4, Some(1200.0)),
                (3.5, Some(1.0)),
            ],
            per_load: Vec::new(),
            error: None,
        };
        let s = stalls(&[load], &[rtt]);
        assert_eq!(s.len(), 2, "{s:?}");
        let flow = s.iter().find(|x| x.kind == "no_bytes").unwrap();
        assert!((flow.start_s - 1.0).abs() < 1e-9 && (flow.end_s - 3.0).abs() < 1e-9);
        assert_eq!(flow.retransmits, Some(4));
        let slow = s.iter().find(|x| x.kind == "rtt_over_1s").unwrap();
        assert_eq!(slow.load, "to_device");
        assert!((slow.end_s - 2.6).abs() < 1e-9, "{slow:?}");
    }
}
