//! `linklab sweep`: its options, then one call of `linklab_measure::sweep`; the plan's line
//! and a table row per step as they end (under the progress bar), the summary, and `--json`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use linklab_measure::sweep::{self, Measured, Observer, SweepOptions, MAX_BPS, MIN_BPS};
use linklab_results::sweep::text::{header_line, row_line, summary};
use linklab_results::sweep::Step;
use linklab_results::units::format_rate;
use linklab_results::values;

use crate::progress::StepBar;

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

impl Args {
    /// The library's options.
    fn options(&self) -> SweepOptions {
        SweepOptions {
            host: self.client.clone(),
            port: self.port,
            iperf2: self.iperf == 2,
            from: self.from,
            to: self.to,
            step: self.step,
            seconds: self.time,
            length: self.length,
            reverse: self.reverse,
            tcp: self.tcp,
            tolerance_pct: self.tolerance,
            confirm: self.confirm,
            refine: self.refine,
            pause: self.pause.map(Duration::from_millis),
        }
    }
}

/// Runs `linklab sweep`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let options = args.options();
    let plan = options.plan()?;
    let rates = &plan.rates;
    let protocol = if args.tcp { "tcp" } else { "udp" };
    let direction = if args.reverse {
        "server -> client (-R)"
    } else {
        "client -> server"
    };
    println!(
        "linklab sweep: {}:{} {}{protocol}, {direction}, {} s per step, {} step{} from {} to {}",
        args.client,
        plan.step.port,
        if options.iperf2 { "iperf 2 " } else { "" },
        args.time,
        rates.len(),
        if rates.len() == 1 { "" } else { "s" },
        format_rate(args.from),
        format_rate(args.to)
    );
    println!("{}", header_line(args.tcp));
    let mut rows = Rows {
        bar: StepBar::new(plan.steps_at_most()),
        tcp: args.tcp,
    };
    let Measured { report, error } = sweep::measure(&plan, &mut rows);
    drop(rows);
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

/// The sweep on the terminal: the progress bar while a step runs, a table row per step.
struct Rows {
    bar: StepBar,
    tcp: bool,
}

impl Observer for Rows {
    fn starting(&mut self, done: usize, offered: f64) {
        self.bar.show(done, &format_rate(offered));
    }
    fn finished(&mut self, step: &Step) {
        self.bar.clear();
        println!("{}", row_line(step, self.tcp));
    }
}
