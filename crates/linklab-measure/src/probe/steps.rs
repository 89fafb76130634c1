//! The measurement steps, each a call into the crate's other measurements (`rtt::measure`,
//! `sweep::measure`, `sweep::run_test_sliced`) or the HTTP adapter, sized to the time it is
//! given. Every figure is made of several samples: hundreds of round-trip probes per size, TCP
//! tests in rounds, HTTP paths in batches of downloads, and the sweeps measure a limit again
//! before it counts.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use linklab_perf::iperf::{Params, Protocol};

use linklab_results::probe::figures;
use linklab_results::probe::{Figure, NotMeasured, TcpTest, Unmeasured};
use linklab_results::quantity::Quantity;
use linklab_results::rtt::RttReport;
use linklab_results::sweep::SweepReport;
use linklab_results::sweep::{KneeRule, DEFAULT_CONFIRM, DEFAULT_TOLERANCE_PCT, KNEE_LOSS_PCT};

use crate::rtt::{self, Transport};
use crate::sweep::{self, is_resetting, run_test_sliced, NoReport, StepConfig};

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
/// What a TCP test costs besides its seconds when planning rounds: its setup, the results
/// exchange and the pause before it.
const TCP_TEST_OVERHEAD: Duration = Duration::from_millis(400);
/// Rounds of the four TCP tests, at most (each test a sample of its figure).
const TCP_ROUNDS: u32 = 5;
/// Each TCP test's rate is also taken in slices this long: its figure's spread.
const TCP_SLICE: Duration = Duration::from_millis(250);
/// A test fails when the server says nothing for this long beyond its seconds.
const IPERF_STALL: Duration = Duration::from_secs(3);
/// Pause between sweep steps.
const SWEEP_PAUSE: Duration = Duration::from_millis(200);
/// Pause between two iperf3 tests (a stock server closes and reopens its listener).
const IPERF_PAUSE: Duration = Duration::from_millis(300);

/// The outcome of a step: what it measured, its figures, and the error that ended it, if any.
pub struct Outcome<T> {
    /// What was measured (all of it when `error` is `None`).
    pub value: T,
    /// The headline figures of what was measured.
    pub figures: Vec<Figure>,
    /// The figures it could not make, with the reason.
    pub not_measured: Vec<NotMeasured>,
    /// Why it stopped early.
    pub error: Option<anyhow::Error>,
    /// What it did, for the step record.
    pub detail: String,
}

/// Round trips over `transport` for each of `sizes`, as many probes per size as `time` allows;
/// `kind` names the figures (`icmp`, `echo_udp`, `echo_tcp`).
pub fn round_trips(
    host: &str,
    peer: SocketAddr,
    transport: Transport,
    sizes: &[usize],
    time: Duration,
    kind: &str,
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
    let figures = value
        .as_ref()
        .map_or_else(Vec::new, |r| figures::round_trips(kind, r));
    let not_measured = value
        .as_ref()
        .map_or_else(Vec::new, |r| figures::round_trips_not_measured(kind, r));
    // A size where no probe came back makes no figure: the step says so.
    let error = error.or_else(|| {
        (!not_measured.is_empty()).then(|| {
            let what: Vec<&str> = not_measured.iter().map(|m| m.reason.as_str()).collect();
            anyhow::anyhow!("{kind} at {host}: {}", what.join("; "))
        })
    });
    Outcome {
        value,
        figures,
        not_measured,
        error,
        detail,
    }
}

/// The iperf server (iperf3, or iperf 2 when `iperf2`) both TCP tests and sweeps use.
pub fn iperf_config(
    host: &str,
    port: u16,
    iperf2: bool,
    seconds: u32,
    reverse: bool,
    tcp: bool,
) -> StepConfig {
    StepConfig {
        host: host.into(),
        port,
        iperf2,
        tcp,
        reverse,
        seconds,
        length: None,
        watchdog: Duration::from_secs(u64::from(seconds)) + IPERF_STALL,
    }
}

/// The TCP tests in rounds: how many rounds of `tests` tests (iperf3: four; iperf 2: its two
/// directions) and how long each test, for `time`. As many rounds as fit with 1-second
/// tests, up to [`TCP_ROUNDS`]; longer tests only when even that many rounds leave time over.
pub fn tcp_plan(time: Duration, tests: u32) -> (u32, u32) {
    let round =
        |seconds: u32| (Duration::from_secs(u64::from(seconds)) + TCP_TEST_OVERHEAD) * tests;
    let rounds = (time.as_secs_f64() / round(1).as_secs_f64()).floor() as u32;
    let rounds = rounds.clamp(1, TCP_ROUNDS);
    let per_test = time.as_secs_f64() / f64::from(rounds * tests) - TCP_TEST_OVERHEAD.as_secs_f64();
    (rounds, (per_test.floor() as u32).max(1))
}

/// iperf3 TCP to and from the device, then with two streams each way, in rounds as `time`
/// allows (each round runs the four once: a busy moment spoils one sample of each figure,
/// not every sample of one). The first round's single-stream tests always run.
pub fn tcp_tests(host: &str, port: u16, time: Duration) -> Outcome<Vec<TcpTest>> {
    let end = Instant::now() + time;
    let (rounds, seconds) = tcp_plan(time, 4);
    let mut out: Vec<TcpTest> = Vec::new();
    let mut skipped = 0;
    let fail = |out: Vec<TcpTest>, error: anyhow::Error| {
        let figures = figures::tcp(&out);
        Outcome {
            value: out,
            figures,
            not_measured: Vec::new(),
            error: Some(error),
            detail: format!("{seconds} s per test"),
        }
    };
    for round in 1..=rounds {
        for (reverse, streams) in [(false, 1), (true, 1), (false, 2), (true, 2)] {
            let direction = if reverse { "from_device" } else { "to_device" };
            let cost = Duration::from_secs(u64::from(seconds)) + TCP_TEST_OVERHEAD;
            // The first round's single-stream tests always run (a second of grace).
            let grace = if round == 1 && streams == 1 {
                Duration::from_secs(1)
            } else {
                Duration::ZERO
            };
            if !out.is_empty() && Instant::now() + cost > end + grace {
                skipped += 1;
                continue;
            }
            let cfg = iperf_config(host, port, false, seconds, reverse, true);
            let params = Params {
                protocol: Protocol::Tcp,
                duration_s: seconds,
                reverse,
                parallel: streams,
                len: 0,
                ..Params::default()
            };
            // A stock server closes its listener for a moment between tests, and discovery's
            // handshake may still be on its mind (with no step between them, the first test
            // once met a control connection the server closed at once): pause before every
            // test, and retry a refusal twice.
            std::thread::sleep(IPERF_PAUSE);
            let mut result = run_test_sliced(&cfg, params, TCP_SLICE);
            for _ in 0..2 {
                match &result {
                    Err(e) if is_resetting(e) => {
                        std::thread::sleep(Duration::from_millis(500));
                        result = run_test_sliced(&cfg, params, TCP_SLICE);
                    }
                    _ => break,
                }
            }
            let (report, slices) = match result {
                Ok(r) => r,
                Err(error) => return fail(out, error),
            };
            let Some(d) = (if reverse {
                report.reverse
            } else {
                report.forward
            }) else {
                return fail(
                    out,
                    anyhow::anyhow!(
                        "iperf3 server {host}:{port}: the TCP test reported no data for its direction"
                    ),
                );
            };
            // A figure only where bytes moved: the receiver's count (ours with -R, the
            // server's results otherwise).
            if d.bytes_received == 0 {
                return fail(
                    out,
                    anyhow::anyhow!(
                        "iperf3 server {host}:{port}: the TCP test {} moved nothing (the receiver counted 0 bytes of {} sent)",
                        if reverse { "from the device (-R)" } else { "to the device" },
                        d.bytes_sent
                    ),
                );
            }
            out.push(TcpTest {
                iperf: "iperf3".into(),
                via: Some(if reverse { "iperf3 -R" } else { "iperf3" }.into()),
                direction: direction.into(),
                streams: u32::from(streams),
                round,
                time: Quantity::new(d.seconds, "s"),
                sent: Quantity::new(d.bits_per_second_sent, "bit/s"),
                received: Quantity::new(d.bits_per_second_received, "bit/s"),
                retransmits: d.retransmits,
                slices,
            });
        }
    }
    let ran = out.iter().map(|t| t.round).max().unwrap_or(0);
    let mut detail = format!("{} tests of {seconds} s in {ran} rounds", out.len());
    if skipped > 0 {
        detail += &format!(" ({skipped} skipped: out of time)");
    }
    Outcome {
        figures: figures::tcp(&out),
        not_measured: Vec::new(),
        value: out,
        error: None,
        detail,
    }
}

/// The knee sweep's plan for one way, and how long one of its steps takes: rates around
/// the TCP rate `anchor_bps` (or decades without one), as many as `time` allows.
fn sweep_plan(
    host: &str,
    port: u16,
    iperf2: bool,
    reverse: bool,
    anchor_bps: Option<f64>,
    time: Duration,
) -> (sweep::Plan, Duration) {
    let pause = if iperf2 {
        sweep::IPERF2_PAUSE
    } else {
        SWEEP_PAUSE
    };
    let per_step = Duration::from_secs(1) + pause + IPERF_OVERHEAD;
    let n = (time.as_secs_f64() / per_step.as_secs_f64()) as usize;
    // At the TCP rate itself a link-bound UDP stream is at its limit to within the headers:
    // the climb starts just below it (a slower UDP path is found by going down from there).
    let multipliers: &[f64] = if n >= 4 {
        &[0.9, 1.1, 1.5, 2.0]
    } else {
        &[0.9, 1.2]
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
        step: iperf_config(host, port, iperf2, 1, reverse, false),
        rule: KneeRule {
            loss_pct: KNEE_LOSS_PCT,
            tolerance_pct: DEFAULT_TOLERANCE_PCT,
            confirm: DEFAULT_CONFIRM,
        },
        rates,
        refine: 3,
        pause,
        climb: true,
        search_down: Some(0.5),
        server_was_ours: true,
        deadline: Some(Instant::now() + time + Duration::from_millis(500)),
    };
    (plan, per_step)
}

/// A UDP sweep one way, its coarse rates around `anchor_bps` (the TCP rate that way: UDP
/// usually tracks about that far), as many 1-second steps as `time` allows: it climbs from
/// just under the TCP rate until a limit is confirmed by a repeat (`sweep::analysis`); while
/// no rate tracked it goes down, to just under what the link received and at least by half;
/// then it bisects toward the knee.
pub fn sweep_one_way(
    host: &str,
    port: u16,
    iperf2: bool,
    reverse: bool,
    anchor_bps: Option<f64>,
    time: Duration,
) -> Outcome<Option<SweepReport>> {
    let (plan, per_step) = sweep_plan(host, port, iperf2, reverse, anchor_bps, time);
    let pause = plan.pause;
    // The sweep pauses between its own steps; this is the pause after the test before it
    // (for iperf 2, the other way's sweep on the same server).
    std::thread::sleep(pause.max(IPERF_PAUSE));
    let sweep::Measured { report, error } = sweep::measure(&plan, &mut NoWatch);
    // An iperf 2 server that sends no UDP report has no knee to give: a plain line. One that
    // reported and then stopped has failed.
    let (error, no_report) = match error {
        Some(e) if e.downcast_ref::<NoReport>().is_some() && report.steps.is_empty() => {
            (None, e.downcast_ref::<NoReport>().map(|n| n.0.clone()))
        }
        Some(e) if e.downcast_ref::<NoReport>().is_some() => (
            Some(e.context(format!(
                "the iperf 2 server stopped sending UDP reports after {} steps",
                report.steps.len()
            ))),
            None,
        ),
        e => (e, None),
    };
    let repeats = report.steps.iter().filter(|s| s.attempt > 1).count();
    let detail = match &no_report {
        Some(_) => "no UDP report from the iperf 2 server: no knee".to_string(),
        None => format!(
            "{} steps of 1 s ({repeats} of them repeats of a limit)",
            report.steps.len()
        ),
    };
    let value = (!report.steps.is_empty()).then_some(report);
    let direction = if reverse { "from_device" } else { "to_device" };
    // A knee only where something arrived: a sweep whose every step delivered nothing is a
    // UDP path that does not work, not a knee of 0.
    let delivered = |s: &SweepReport| s.steps.iter().any(|x| x.received_bps > 0.0);
    let error = match &value {
        Some(s) if !delivered(s) => Some(error.unwrap_or_else(|| {
            anyhow::anyhow!(
                "UDP {} ({host}:{port}): nothing arrived at any of {} offered rates",
                if reverse {
                    "from the device (-R)"
                } else {
                    "to the device"
                },
                s.steps.len()
            )
        })),
        _ => error,
    };
    let figures = value
        .iter()
        .filter(|s| delivered(s))
        .map(|s| figures::knee(direction, s))
        .collect();
    // No step and nothing wrong: the sweep's share of the time ran out before its first.
    let not_measured = match (no_report, &value, &error) {
        (Some(reason), _, _) => vec![figures::knee_not_measured(
            direction,
            iperf2,
            Unmeasured::Absent,
            reason,
        )],
        (None, None, None) => vec![figures::knee_not_measured(
            direction,
            iperf2,
            Unmeasured::OutOfTime,
            format!(
                "no time for a step: {:.1} s of the run's time for this sweep, a step takes {:.1} s",
                time.as_secs_f64(),
                per_step.as_secs_f64()
            ),
        )],
        _ => Vec::new(),
    };
    Outcome {
        value,
        figures,
        not_measured,
        error,
        detail,
    }
}

/// The probe watches its sweeps through its own progress line.
struct NoWatch;

impl sweep::Observer for NoWatch {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_rounds_fit_the_time() {
        // 4 tests of 1 s + 0.4 s each make a 5.6 s round.
        assert_eq!(tcp_plan(Duration::from_secs(4), 4), (1, 1));
        assert_eq!(tcp_plan(Duration::from_secs(12), 4), (2, 1));
        assert_eq!(tcp_plan(Duration::from_secs(23), 4), (4, 1));
        assert_eq!(tcp_plan(Duration::from_secs(28), 4), (5, 1));
        // Beyond five rounds, longer tests.
        assert_eq!(tcp_plan(Duration::from_secs(60), 4), (5, 2));
        // iperf 2's two directions a round.
        assert_eq!(tcp_plan(Duration::from_secs(12), 2), (4, 1));
        assert_eq!(tcp_plan(Duration::from_secs(30), 2), (5, 2));
    }
}
