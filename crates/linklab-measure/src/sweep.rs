//! An offered-rate sweep against any iperf3 server, or an iperf 2 server that sends UDP
//! reports (the i.MX6 FEC iperf study's `bwtest.sh`): `linklab sweep`.
//!
//! Each step is one iperf3 test run by our own client (`linklab_perf_host::iperf3`) at a fixed
//! offered rate ([`Iperf3`]), or one iperf 2 UDP test (`linklab_perf_host::iperf2`,
//! [`Iperf2`]) judged by the server's report (to the device) or by what we received (`-R`, an
//! iperf 2.1 server). The sweep reports per step the offered, sent and received rate, loss,
//! jitter and out-of-order datagrams (TCP: goodput and retransmits) and which limit the step
//! hit (receiver loss, a sender that could not keep up, a received rate that stopped
//! tracking); then the knee (the highest offered rate that hit none), what limited the link
//! above it, the peak received rate, and a collapse when received throughput falls while the
//! offered rate rises. After the coarse steps, `refine` bisects between the knee and the next
//! step to place the knee more precisely. A rate whose limit would bound the knee is measured
//! again (`confirm`) before the limit counts: one spoilt second on a busy host is not the
//! link's limit (`linklab_results::sweep::analysis`); the order of the steps is `search`'s,
//! without I/O.
//!
//! ```no_run
//! use linklab_measure::sweep::{self, SweepOptions};
//! let mut options = SweepOptions::new("192.0.2.10");
//! options.from = 10e6;
//! options.to = 100e6;
//! options.step = 10e6;
//! let report = sweep::run(&options)?;
//! println!("knee: {:?} bit/s", report.knee_bps);
//! # Ok::<(), anyhow::Error>(())
//! ```

mod iperf2;
mod iperf3;
pub mod search;
mod step;

use std::time::{Duration, Instant};

use anyhow::Context;

use linklab_results::bail_usage;
use linklab_results::sweep::analysis;
use linklab_results::sweep::{limited_at, KneeRule, Step, SweepReport};
use linklab_results::units::format_rate;

pub use iperf2::{Iperf2, NoReport};
pub use iperf3::{client_config, client_error, run_test, run_test_sliced, Iperf3};
pub use step::{is_resetting, Busy, NotListening, StepConfig, StepRunner};

/// Lowest offered rate accepted, bit/s.
pub const MIN_BPS: f64 = 1e3;
/// Highest offered rate accepted, bit/s.
pub const MAX_BPS: f64 = 100e9;

/// Pause between steps against an iperf3 server (its queues drain, it reopens its listener).
pub const IPERF3_PAUSE: Duration = Duration::from_millis(300);

/// Pause between steps against an iperf 2 server. Stock iperf 2.1.8's UDP server aborted
/// (glibc's `tpp.c` assertion) or crashed when a test began 0.2 s after its last, and at 1 s
/// it hung now and then (one sweep in seven beside a build: the next flow never reported,
/// not even "connected"). Its table of active hosts is the likely cause: a flow from an
/// address whose last flow the server is still closing (up to 1 s, its reporter's timed
/// wait) shares that flow's summary as it is freed (iperf 2.1.8's `active_hosts.cpp`,
/// reworked in later releases).
pub const IPERF2_PAUSE: Duration = Duration::from_millis(2000);

/// How often a step is retried when the server is busy mid-sweep (1 s apart, or the pause
/// between steps when longer).
const BUSY_RETRIES: u32 = 3;

/// What to sweep: the server, the offered rates, the test shape and the knee's rule.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepOptions {
    /// The iperf server: stock `iperf3 -s`, `linklab iperf -s`; an iperf 2 server with
    /// `iperf2` (stock `iperf -s -u`, `linklab iperf2 -s -u`, a device's).
    pub host: String,
    /// Its port (`None`: 5201 for iperf3, 5001 for iperf 2).
    pub port: Option<u16>,
    /// The server speaks iperf 2 (UDP only: each step's loss and jitter from the server's
    /// report; `reverse` needs an iperf 2.1 server).
    pub iperf2: bool,
    /// First offered rate, bit/s.
    pub from: f64,
    /// Last offered rate, bit/s.
    pub to: f64,
    /// Rate increment between the coarse steps, bit/s.
    pub step: f64,
    /// Seconds per step.
    pub seconds: u32,
    /// UDP datagram payload / TCP write size in bytes (`None`: the client's, as iperf3).
    pub length: Option<u32>,
    /// The server sends, we receive.
    pub reverse: bool,
    /// Sweep TCP (paced at the offered rate) instead of UDP.
    pub tcp: bool,
    /// A step tracks its offered rate while the received rate is within this many percent
    /// of it (and loss stays below 0.1 %); the knee is the highest offered rate that tracks.
    pub tolerance_pct: f64,
    /// Attempts at one offered rate that must all hit a limit before it counts (1: every rate
    /// measured once).
    pub confirm: u32,
    /// Extra bisection steps between the knee and the next step (0: none).
    pub refine: u32,
    /// Pause between steps (`None`: [`IPERF3_PAUSE`], or [`IPERF2_PAUSE`] against iperf 2).
    pub pause: Option<Duration>,
}

impl SweepOptions {
    /// The options of `linklab sweep -c HOST` with nothing else given: UDP through iperf3, 50
    /// to 1000 Mbit/s in steps of 50, 2 s each, refined three times.
    pub fn new(host: &str) -> SweepOptions {
        SweepOptions {
            host: host.into(),
            port: None,
            iperf2: false,
            from: 50e6,
            to: 1e9,
            step: 50e6,
            seconds: 2,
            length: None,
            reverse: false,
            tcp: false,
            tolerance_pct: linklab_results::sweep::DEFAULT_TOLERANCE_PCT,
            confirm: linklab_results::sweep::DEFAULT_CONFIRM,
            refine: 3,
            pause: None,
        }
    }

    /// The sweep these options ask for: the coarse rates, the steps' shape, the rule. A usage
    /// error for rates out of order or too many, and for TCP through iperf 2.
    pub fn plan(&self) -> anyhow::Result<Plan> {
        let (from, to, step) = (self.from, self.to, self.step);
        for (name, rate) in [("--from", from), ("--to", to), ("--step", step)] {
            if !(MIN_BPS..=MAX_BPS).contains(&rate) {
                bail_usage!(
                    "{name}: {} is out of range ({} to {})",
                    format_rate(rate),
                    format_rate(MIN_BPS),
                    format_rate(MAX_BPS)
                );
            }
        }
        if from > to {
            bail_usage!(
                "--from ({}) is above --to ({})",
                format_rate(from),
                format_rate(to)
            );
        }
        let rates = step_rates(from, to, step)?;
        if self.iperf2 && self.tcp {
            bail_usage!("--tcp: not with --iperf 2 (an iperf 2 server reports nothing on TCP; the sweep judges UDP steps by the server's report)");
        }
        Ok(Plan {
            step: StepConfig {
                host: self.host.clone(),
                port: self.port.unwrap_or(if self.iperf2 { 5001 } else { 5201 }),
                iperf2: self.iperf2,
                tcp: self.tcp,
                reverse: self.reverse,
                seconds: self.seconds,
                length: self.length,
                watchdog: Duration::from_secs(u64::from(self.seconds) + 10),
            },
            rule: KneeRule {
                loss_pct: linklab_results::sweep::KNEE_LOSS_PCT,
                tolerance_pct: self.tolerance_pct,
                confirm: self.confirm,
            },
            rates,
            refine: self.refine,
            pause: self.pause.unwrap_or(if self.iperf2 {
                IPERF2_PAUSE
            } else {
                IPERF3_PAUSE
            }),
            climb: false,
            search_down: None,
            deadline: None,
            server_was_ours: false,
        })
    }
}

/// Sweeps what `options` ask for. An error when the options are wrong or a step failed (see
/// [`measure`] for the steps measured before the error).
pub fn run(options: &SweepOptions) -> anyhow::Result<SweepReport> {
    let Measured { report, error } = measure(&options.plan()?, &mut Unwatched);
    match error {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// An observer that does nothing.
struct Unwatched;

impl Observer for Unwatched {}

/// What one sweep measures: the steps' shape, the rule, the coarse rates and the refinement.
pub struct Plan {
    /// The server and the test shape every step shares.
    pub step: StepConfig,
    /// The thresholds each step is judged by, and how many attempts confirm a limit.
    pub rule: KneeRule,
    /// The coarse offered rates, bit/s, measured in this order.
    pub rates: Vec<f64>,
    /// Bisection steps between the knee and the next step above it, at most.
    pub refine: u32,
    /// Pause between steps (lets queues drain and the server get ready).
    pub pause: Duration,
    /// Climb: offer the coarse rates above the knee, lowest first, only until a limit above
    /// the knee is confirmed (`false`: measure every coarse rate).
    pub climb: bool,
    /// When no rate tracked, keep going down until one does: each time to 90 % of what the
    /// lowest rate received, between a quarter and this fraction of it (`None`: do not search
    /// down). Climbing, the first coarse rate hitting a limit sends the search down at once.
    pub search_down: Option<f64>,
    /// Start no step that could not end by then (`None`: no deadline).
    pub deadline: Option<Instant>,
    /// The server ran a test of ours a moment ago: retry a busy or not-yet-listening server
    /// from the first step on (otherwise only from the second: busy at first means someone
    /// else is testing).
    pub server_was_ours: bool,
}

impl Plan {
    /// The most steps the sweep may take: the coarse rates, and the refinement's steps and one
    /// coarse rate each measured up to `confirm` times.
    pub fn steps_at_most(&self) -> usize {
        self.rates.len() + (self.refine as usize + 1) * self.rule.confirm as usize
    }
}

/// A sweep's outcome: the report of the steps measured, and the error that ended it early.
pub struct Measured {
    /// Everything measured (all steps when `error` is `None`).
    pub report: SweepReport,
    /// Why the sweep stopped before its plan was done, if it did.
    pub error: Option<anyhow::Error>,
}

/// Who watches a sweep: told before each step starts and after it ends.
pub trait Observer {
    /// Step `done + 1` at `offered` bit/s is starting.
    fn starting(&mut self, _done: usize, _offered: f64) {}
    /// A step ended (its limits are set).
    fn finished(&mut self, _step: &Step) {}
}

/// Runs a sweep in the order `search::Search` gives: the coarse rates, a repeat of any limit
/// that bounds the knee, the way down when nothing tracked, the bisection toward the knee.
/// Returns what was measured even when a step fails (with the error).
pub fn measure(plan: &Plan, obs: &mut dyn Observer) -> Measured {
    let cfg = &plan.step;
    let runner: &dyn StepRunner = if cfg.iperf2 { &Iperf2 } else { &Iperf3 };
    let mut search = search::Search::new(search::Strategy {
        rule: plan.rule,
        tcp: cfg.tcp,
        rates: plan.rates.clone(),
        refine: plan.refine,
        climb: plan.climb,
        search_down: plan.search_down,
    });
    let mut step_time = Duration::from_secs(u64::from(cfg.seconds)) + Duration::from_millis(300);
    let mut error = None;
    while let Some(next) = search.next_rate() {
        let done = search.steps().len();
        // No pause before the first step: whoever ran the test before it waited.
        let pause = if done > 0 { plan.pause } else { Duration::ZERO };
        if let Some(deadline) = plan.deadline {
            if Instant::now() + pause + step_time > deadline {
                break;
            }
        }
        std::thread::sleep(pause);
        obs.starting(done, next.offered);
        let began = Instant::now();
        // A server that was ours a moment ago may still be tearing down the last test: retry
        // a busy server mid-sweep a few times. Busy at the first step means someone else.
        let mut tries = 0;
        let ours = plan.server_was_ours || done > 0;
        let result = loop {
            let r = runner.run_step(cfg, next.offered);
            match &r {
                Err(e) if is_resetting(e) && ours && tries < BUSY_RETRIES => {
                    tries += 1;
                    std::thread::sleep(plan.pause.max(Duration::from_secs(1)));
                }
                _ => break r,
            }
        };
        match result.with_context(|| format!("step at {}", format_rate(next.offered))) {
            Ok(s) => {
                step_time = step_time.max(began.elapsed());
                obs.finished(search.record(next, s));
            }
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let mut steps = search.into_steps();
    // By offered rate; a rate's attempts stay in the order measured (the sort is stable).
    steps.sort_by(|a, b| a.offered_bps.total_cmp(&b.offered_bps));
    let knee_bps = analysis::knee(&steps, &plan.rule, cfg.tcp);
    let report = SweepReport {
        kind: "sweep".into(),
        host: cfg.host.clone(),
        port: cfg.port,
        protocol: if cfg.tcp { "tcp" } else { "udp" }.into(),
        iperf: if cfg.iperf2 { "iperf2" } else { "iperf3" }.into(),
        reverse: cfg.reverse,
        duration_s: cfg.seconds,
        length: cfg.length,
        knee_rule: Some(plan.rule),
        knee_bps,
        limited_at: limited_at(&steps, knee_bps, &plan.rule, cfg.tcp),
        peak: analysis::peak(&steps),
        collapse: analysis::collapse(&steps),
        steps,
    };
    Measured { report, error }
}

/// The offered rates of the coarse sweep: `from`, `from + step`, ... up to `to` (inclusive); a
/// usage error beyond 1000 of them.
pub fn step_rates(from: f64, to: f64, step: f64) -> anyhow::Result<Vec<f64>> {
    let n = ((to - from) / step + 1e-9).floor() as u64 + 1;
    if n > 1000 {
        bail_usage!(
            "--step: {} from {} to {} makes {n} steps (accepted: at most 1000)",
            format_rate(step),
            format_rate(from),
            format_rate(to)
        );
    }
    Ok((0..n).map(|i| from + step * i as f64).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarse_rates_include_both_ends() {
        let r = step_rates(50e6, 400e6, 50e6).unwrap();
        assert_eq!(r.len(), 8);
        assert_eq!(r[0], 50e6);
        assert!((r[7] - 400e6).abs() < 1.0);
        assert_eq!(step_rates(1e6, 1e6, 1e6).unwrap(), vec![1e6]);
        assert!(step_rates(1e3, 100e9, 1e3).is_err());
    }
}
