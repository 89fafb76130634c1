//! The measurement steps, each a call into the subcommands' library functions (`rtt::measure`,
//! `sweep::measure`, `sweep::step::run_test`) or the HTTP adapter, sized to the time it is given.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use linklab_perf::iperf::{Params, Protocol};

use super::document::{HttpDownload, Quantity, TcpTest};
use super::http;
use crate::rtt::{self, RttReport, Transport};
use crate::sweep::analysis::{KneeRule, DEFAULT_TOLERANCE_PCT, KNEE_LOSS_PCT};
use crate::sweep::{self, step::StepConfig, SweepReport};

/// Spacing of the round-trip probes: 500 per second (5.9 Mbit/s at 1472 B, which any device
/// with an echo server takes).
const RTT_INTERVAL: Duration = Duration::from_millis(2);
/// How long to wait for late echo replies after the last probe of a size.
const RTT_DRAIN: Duration = Duration::from_millis(250);
/// What each size costs besides its probes: connecting, the echo check (the drain is only
/// waited for when replies are missing).
const RTT_OVERHEAD: Duration = Duration::from_millis(100);
/// What an iperf3 test costs besides its seconds: connecting, setup, results exchange.
const IPERF_OVERHEAD: Duration = Duration::from_millis(1000);
/// A test fails when the server says nothing for this long beyond its seconds.
const IPERF_STALL: Duration = Duration::from_secs(3);
/// Pause between sweep steps.
const SWEEP_PAUSE: Duration = Duration::from_millis(200);
/// Pause between two iperf3 tests (a stock server closes and reopens its listener).
const IPERF_PAUSE: Duration = Duration::from_millis(300);

/// The outcome of a step: what it measured, and the error that ended it, if any.
pub struct Outcome<T> {
    /// What was measured (all of it when `error` is `None`).
    pub value: T,
    /// Why it stopped early.
    pub error: Option<anyhow::Error>,
    /// What it did, for the step record.
    pub detail: String,
}

/// Round trips over `transport` for each of `sizes`, as many probes per size as `time` allows.
pub fn round_trips(
    host: &str,
    peer: SocketAddr,
    transport: Transport,
    sizes: &[usize],
    time: Duration,
) -> Outcome<Option<RttReport>> {
    let per_size = time / sizes.len().max(1) as u32;
    let probes = per_size.saturating_sub(RTT_OVERHEAD).as_secs_f64() / RTT_INTERVAL.as_secs_f64();
    let count = (probes as u32).clamp(20, 2000);
    let plan = rtt::Plan {
        host: host.into(),
        peer,
        transport,
        sizes: sizes.to_vec(),
        count,
        interval: RTT_INTERVAL,
        drain: RTT_DRAIN,
    };
    let rtt::Measured { report, error } = rtt::measure(&plan);
    let detail = format!(
        "{} sizes × {count} probes, one every {} ms",
        report.sizes.len(),
        RTT_INTERVAL.as_millis()
    );
    let value = (!report.sizes.is_empty()).then_some(report);
    Outcome {
        value,
        error,
        detail,
    }
}

/// Downloads each path, sharing `time` between them.
pub fn downloads(
    host: &str,
    peer: SocketAddr,
    paths: &[String],
    time: Duration,
) -> Outcome<Vec<HttpDownload>> {
    let mut out = Vec::new();
    let end = Instant::now() + time;
    for (i, path) in paths.iter().enumerate() {
        let left = end.saturating_duration_since(Instant::now());
        let share = (left / (paths.len() - i) as u32).max(Duration::from_secs(1));
        match http::fetch(peer, host, path, share) {
            Ok(f) => out.push(HttpDownload {
                path: path.clone(),
                status: f.status,
                body: Quantity::new(f.body_bytes as f64, "bytes"),
                time: Quantity::new(f.seconds, "s"),
                rate: Quantity::new(
                    if f.seconds > 0.0 {
                        f.body_bytes as f64 * 8.0 / f.seconds
                    } else {
                        0.0
                    },
                    "bit/s",
                ),
                complete: f.complete,
                crc_ok: f.crc_ok,
            }),
            Err(error) => {
                let detail = format!("{} of {} paths", out.len(), paths.len());
                return Outcome {
                    value: out,
                    error: Some(error.context(format!("HTTP at {peer}"))),
                    detail,
                };
            }
        }
    }
    let detail = format!("{} paths", out.len());
    Outcome {
        value: out,
        error: None,
        detail,
    }
}

/// The iperf3 server both TCP tests and sweeps use.
pub fn iperf_config(host: &str, port: u16, seconds: u32, reverse: bool, tcp: bool) -> StepConfig {
    StepConfig {
        host: host.into(),
        port,
        tcp,
        reverse,
        seconds,
        length: None,
        watchdog: Duration::from_secs(u64::from(seconds)) + IPERF_STALL,
    }
}

/// iperf3 TCP to and from the device, then with two streams each way, as `time` allows (the
/// single-stream tests first: they are the figures that matter most).
pub fn tcp_tests(host: &str, port: u16, time: Duration) -> Outcome<Vec<TcpTest>> {
    let end = Instant::now() + time;
    let seconds = ((time / 4)
        .saturating_sub(IPERF_OVERHEAD)
        .as_secs_f64()
        .floor() as u32)
        .max(1);
    let mut out = Vec::new();
    let mut skipped = Vec::new();
    for (reverse, streams) in [(false, 1), (true, 1), (false, 2), (true, 2)] {
        let direction = if reverse { "from_device" } else { "to_device" };
        let cost = Duration::from_secs(u64::from(seconds)) + IPERF_OVERHEAD;
        // The first two always run (a second of grace), the two-stream ones only in time.
        let grace = if streams == 1 {
            Duration::from_secs(1)
        } else {
            Duration::ZERO
        };
        if !out.is_empty() && Instant::now() + cost > end + grace {
            skipped.push(format!("{direction} -P {streams}"));
            continue;
        }
        let cfg = iperf_config(host, port, seconds, reverse, true);
        let params = Params {
            protocol: Protocol::Tcp,
            duration_s: seconds,
            reverse,
            parallel: streams,
            len: 0,
            ..Params::default()
        };
        // A stock server closes its listener for a moment between tests, and discovery's
        // handshake may still be on its mind: pause, and retry a refusal twice.
        if !out.is_empty() {
            std::thread::sleep(IPERF_PAUSE);
        }
        let mut result = sweep::step::run_test(&cfg, params);
        for _ in 0..2 {
            match &result {
                Err(e) if sweep::step::is_resetting(e) => {
                    std::thread::sleep(Duration::from_millis(500));
                    result = sweep::step::run_test(&cfg, params);
                }
                _ => break,
            }
        }
        let report = match result {
            Ok(r) => r,
            Err(error) => {
                return Outcome {
                    value: out,
                    error: Some(error),
                    detail: format!("{seconds} s per test"),
                }
            }
        };
        let Some(d) = (if reverse {
            report.reverse
        } else {
            report.forward
        }) else {
            return Outcome {
                value: out,
                error: Some(anyhow::anyhow!(
                    "iperf3 server {host}:{port}: the TCP test reported no data for its direction"
                )),
                detail: String::new(),
            };
        };
        out.push(TcpTest {
            direction: direction.into(),
            streams: u32::from(streams),
            time: Quantity::new(d.seconds, "s"),
            sent: Quantity::new(d.bits_per_second_sent, "bit/s"),
            received: Quantity::new(d.bits_per_second_received, "bit/s"),
            retransmits: d.retransmits,
        });
    }
    let mut detail = format!("{} tests of {seconds} s", out.len());
    if !skipped.is_empty() {
        detail += &format!(" ({} skipped: out of time)", skipped.join(", "));
    }
    Outcome {
        value: out,
        error: None,
        detail,
    }
}

/// A UDP sweep one way, its coarse rates around `anchor_bps` (the TCP rate that way: UDP
/// usually tracks at least that far), as many 1-second steps as `time` allows, stopping once
/// two steps in a row hit a limit, halving the rate while no step tracked (a device whose
/// UDP path is slower than its TCP one), then bisecting toward the knee.
pub fn sweep_one_way(
    host: &str,
    port: u16,
    reverse: bool,
    anchor_bps: Option<f64>,
    time: Duration,
) -> Outcome<Option<SweepReport>> {
    let per_step = Duration::from_secs(1) + SWEEP_PAUSE + IPERF_OVERHEAD;
    let n = (time.as_secs_f64() / per_step.as_secs_f64()) as usize;
    let multipliers: &[f64] = if n >= 8 {
        &[0.5, 0.75, 1.0, 1.25, 1.5, 2.0]
    } else if n >= 5 {
        &[0.75, 1.0, 1.25, 1.5]
    } else {
        &[1.0, 1.3]
    };
    let rates: Vec<f64> = match anchor_bps.filter(|r| *r > 0.0) {
        Some(a) => multipliers
            .iter()
            .map(|m| (a * m / 1e5).round() * 1e5)
            .filter(|r| *r >= 1e5)
            .collect(),
        None => vec![1e6, 10e6, 100e6, 1e9],
    };
    let plan = sweep::Plan {
        step: iperf_config(host, port, 1, reverse, false),
        rule: KneeRule {
            loss_pct: KNEE_LOSS_PCT,
            tolerance_pct: DEFAULT_TOLERANCE_PCT,
        },
        rates,
        refine: 3,
        pause: SWEEP_PAUSE,
        stop_after_limited: Some(2),
        search_down: Some(0.5),
        server_was_ours: true,
        deadline: Some(Instant::now() + time + Duration::from_millis(500)),
    };
    std::thread::sleep(IPERF_PAUSE);
    let sweep::Measured { report, error } = sweep::measure(&plan, &mut NoWatch);
    let detail = format!("{} steps of 1 s", report.steps.len());
    let value = (!report.steps.is_empty()).then_some(report);
    Outcome {
        value,
        error,
        detail,
    }
}

/// The probe watches its sweeps through its own progress line.
struct NoWatch;

impl sweep::Observer for NoWatch {}
