//! `linklab sweep`: an offered-rate sweep against any iperf3 server, or (`--iperf 2`) an iperf
//! 2 server that sends UDP reports (the i.MX6 FEC iperf study's `bwtest.sh`).
//!
//! Each step is one iperf3 test run by our own client (`linklab_perf::iperf::host`) at a fixed
//! offered rate, or one iperf 2 UDP test (`linklab_perf::iperf2::host`, `step2`) judged by the
//! server's report (to the device) or by what we received (`-R`, an iperf 2.1 server). The sweep reports per step the offered, sent and received rate, loss, jitter
//! and out-of-order datagrams (TCP: goodput and retransmits) and which limit the step hit
//! (receiver loss, a sender that could not keep up, a received rate that stopped tracking);
//! then the knee (the highest offered rate that hit none), what limited the link above it, the
//! peak received rate, and a collapse when received throughput falls while the offered rate
//! rises. After the coarse steps, `--refine` bisects between the knee and the next step to
//! place the knee more precisely. A rate whose limit would bound the knee is measured again
//! (`--confirm`) before the limit counts: one spoilt second on a busy host is not the link's
//! limit (`analysis`); the order of the steps is `search`'s, without I/O.

mod progress;
pub mod search;
pub mod step;
pub mod step2;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;

use linklab_results::sweep::analysis;
use linklab_results::sweep::text::{header_line, row_line, summary};
use linklab_results::sweep::{limited_at, KneeRule, Step, SweepReport};
use linklab_results::units::format_rate;
use linklab_results::{bail_usage, values};

/// Lowest offered rate accepted, bit/s.
const MIN_BPS: f64 = 1e3;
/// Highest offered rate accepted, bit/s.
const MAX_BPS: f64 = 100e9;

/// Pause between steps against an iperf3 server (its queues drain, it reopens its listener).
const IPERF3_PAUSE: Duration = Duration::from_millis(300);

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

/// Options of `linklab sweep`.
#[derive(clap::Args)]
pub struct Args {
    /// iperf server to test against (stock `iperf3 -s`, `linklab iperf -s`; with `--iperf
    /// 2`, stock `iperf -s -u`, `linklab iperf2 -s -u`, a device's iperf 2 server).
    #[arg(short = 'c', long, value_name = "HOST")]
    client: String,
    /// Server port (default 5201 for iperf3, 5001 for iperf 2).
    #[arg(short = 'p', long)]
    port: Option<u16>,
    /// Which iperf the server speaks: 3, or 2 (UDP only: each step's loss and jitter from
    /// the server's report; `-R` needs an iperf 2.1 server).
    #[arg(long, value_name = "3|2", default_value_t = 3, value_parser = clap::value_parser!(u8).range(2..=3))]
    iperf: u8,
    /// First offered rate (bit/s, k/M/G suffix).
    #[arg(long, value_name = "RATE", default_value = "50M", value_parser = values::bit_rate(MIN_BPS, MAX_BPS))]
    from: f64,
    /// Last offered rate (bit/s, k/M/G suffix).
    #[arg(long, value_name = "RATE", default_value = "1G", value_parser = values::bit_rate(MIN_BPS, MAX_BPS))]
    to: f64,
    /// Rate increment between steps (bit/s, k/M/G suffix).
    #[arg(long, value_name = "RATE", default_value = "50M", value_parser = values::bit_rate(MIN_BPS, MAX_BPS))]
    step: f64,
    /// Seconds per step.
    #[arg(short = 't', long, value_name = "SECONDS", default_value_t = 2,
          value_parser = clap::value_parser!(u32).range(1..=3600))]
    time: u32,
    /// UDP datagram payload / TCP write size in bytes (default: the client's, as iperf3).
    #[arg(short = 'l', long, value_name = "LEN", value_parser = clap::value_parser!(u32).range(16..=65507))]
    length: Option<u32>,
    /// Reverse: the server sends, we receive.
    #[arg(short = 'R', long)]
    reverse: bool,
    /// Sweep TCP (paced at the offered rate) instead of UDP.
    #[arg(long)]
    tcp: bool,
    /// A step tracks its offered rate while the received rate is within PCT percent of it
    /// (and loss stays below 0.1 %); the knee is the highest offered rate that tracks.
    #[arg(long, value_name = "PCT", default_value_t = linklab_results::sweep::DEFAULT_TOLERANCE_PCT,
          value_parser = values::ranged(0.5, 50.0))]
    tolerance: f64,
    /// Attempts at one offered rate that must all hit a limit before it counts: a rate that
    /// would bound the knee is measured again until it tracks once or hits a limit N times
    /// (1 = every rate measured once).
    #[arg(long, value_name = "N", default_value_t = linklab_results::sweep::DEFAULT_CONFIRM,
          value_parser = clap::value_parser!(u32).range(1..=5))]
    confirm: u32,
    /// Extra bisection steps between the knee and the next step (0 = none).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(0..=10))]
    refine: u32,
    /// Pause between steps in milliseconds (lets queues drain and the server get ready;
    /// default 300, with `--iperf 2` 2000: stock iperf 2.1.8's UDP server crashed when a test
    /// began 0.2 s after its last, and hung when one began 1 s after).
    #[arg(long, value_name = "MS", value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pause: Option<u64>,
    /// Also write the results as JSON to FILE (input of `linklab report`).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Runs `linklab sweep`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let (from, to, step) = (args.from, args.to, args.step);
    if from > to {
        bail_usage!(
            "--from ({}) is above --to ({})",
            format_rate(from),
            format_rate(to)
        );
    }
    let rates = step_rates(from, to, step)?;
    let iperf2 = args.iperf == 2;
    if iperf2 && args.tcp {
        bail_usage!("--tcp: not with --iperf 2 (an iperf 2 server reports nothing on TCP; the sweep judges UDP steps by the server's report)");
    }
    let port = args.port.unwrap_or(if iperf2 { 5001 } else { 5201 });

    let protocol = if args.tcp { "tcp" } else { "udp" };
    let direction = if args.reverse {
        "server -> client (-R)"
    } else {
        "client -> server"
    };
    println!(
        "linklab sweep: {}:{port} {}{protocol}, {direction}, {} s per step, {} step{} from {} to {}",
        args.client,
        if iperf2 { "iperf 2 " } else { "" },
        args.time,
        rates.len(),
        if rates.len() == 1 { "" } else { "s" },
        format_rate(from),
        format_rate(to)
    );
    let rule = KneeRule {
        loss_pct: linklab_results::sweep::KNEE_LOSS_PCT,
        tolerance_pct: args.tolerance,
        confirm: args.confirm,
    };
    println!("{}", header_line(args.tcp));

    let plan = Plan {
        step: step::StepConfig {
            host: args.client.clone(),
            port,
            iperf2,
            tcp: args.tcp,
            reverse: args.reverse,
            seconds: args.time,
            length: args.length,
            watchdog: Duration::from_secs(u64::from(args.time) + 10),
        },
        rule,
        rates,
        refine: args.refine,
        pause: args.pause.map_or(
            if iperf2 { IPERF2_PAUSE } else { IPERF3_PAUSE },
            Duration::from_millis,
        ),
        climb: false,
        search_down: None,
        deadline: None,
        server_was_ours: false,
    };
    // Each refinement step may be repeated once or more, and so may one coarse rate.
    let total = plan.rates.len() + (args.refine as usize + 1) * args.confirm as usize;
    let mut rows = Rows {
        bar: progress::Progress::new(std::io::stderr().is_terminal(), total),
        tcp: args.tcp,
    };
    let Measured { report, error } = measure(&plan, &mut rows);
    if let Some(e) = error {
        return Err(e);
    }
    print!("{}", summary(&report));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).expect("report serializes");
        std::fs::write(path, text + "\n")
            .with_context(|| format!("--json: cannot write {}", path.display()))?;
    }
    Ok(())
}

/// What one sweep measures: the steps' shape, the rule, the coarse rates and the refinement.
pub struct Plan {
    /// The server and the test shape every step shares.
    pub step: step::StepConfig,
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

/// The CLI's observer: the progress bar on a terminal, a table row per step on stdout.
struct Rows {
    bar: progress::Progress,
    tcp: bool,
}

impl Observer for Rows {
    fn starting(&mut self, done: usize, offered: f64) {
        self.bar.show(done, offered);
    }
    fn finished(&mut self, step: &Step) {
        self.bar.clear();
        println!("{}", row_line(step, self.tcp));
    }
}

impl Drop for Rows {
    fn drop(&mut self) {
        self.bar.clear();
    }
}

/// Runs a sweep in the order `search::Search` gives: the coarse rates, a repeat of any limit
/// that bounds the knee, the way down when nothing tracked, the bisection toward the knee.
/// Returns what was measured even when a step fails (with the error).
pub fn measure(plan: &Plan, obs: &mut dyn Observer) -> Measured {
    let cfg = &plan.step;
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
    while let Some(next) = search.next() {
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
            let r = step::run_step(cfg, next.offered);
            match &r {
                Err(e) if step::is_resetting(e) && ours && tries < BUSY_RETRIES => {
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

/// The offered rates of the coarse sweep: `from`, `from + step`, ... up to `to` (inclusive).
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
