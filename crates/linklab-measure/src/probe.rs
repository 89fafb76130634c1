//! `linklab probe HOST`: one command that characterises a network device into one report.
//!
//! Discovery asks which of ICMP echo, an iperf server (iperf3, else iperf 2), HTTP and echo
//! (UDP/TCP 7) the host answers; then each step runs where its service answered, sharing
//! `--duration`: ICMP, UDP and TCP echo round trips per size (`rtt`), HTTP downloads, TCP
//! each way (iperf3 with one and two streams; iperf 2 with what the server answers), and a
//! UDP offered-rate sweep each way (`sweep`) where the server reports. Every figure is made of
//! several samples, carries its range and says what measured it; a figure a step could not
//! make is a line saying why, never a zero. The result is one JSON document (`document`,
//! schema in `schema/probe.schema.json`) and one HTML page (the `report` renderer);
//! `--baseline` compares with an earlier run (`baseline`) and exits 3 when a figure got worse
//! beyond the tolerance and both runs' ranges, or went missing because the device answered
//! otherwise.
//!
//! - `discover`: which services answer; `plan`: the steps and the iperf in use;
//! - `steps`, `downloads`, `iperf2`: each measurement, sized to its share of the time;
//! - `figures`: each step's headline figures from its samples;
//! - `http`: HTTP over std sockets with linklab-perf's client;
//! - `document`: the JSON; `baseline`: old beside new; `summary`: the text; `outputs`: the
//!   files; `progress`: the terminal line.

mod conditions;
mod discover;
mod downloads;
mod flows;
mod http;
mod iperf2;
mod latency;
mod outputs;
mod plan;
mod progress;
mod schedule;
mod steps;

use std::io::{IsTerminal, Write as _};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::anyhow;

use linklab_results::probe::{
    baseline, figures, summary, ProbeReport, Service, ServiceState, SCHEMA_VERSION,
};
use linklab_results::Quantity;
use linklab_results::{bail_usage, values};
use outputs::{watchdog, Outputs};
use plan::{Iperf, IperfChoice, Step};

/// Exit code when a figure is worse than the baseline by more than the tolerance.
pub const EXIT_WORSE: i32 = 3;

/// Time kept at the end of the budget for writing the outputs.
const RESERVE: Duration = Duration::from_millis(800);

/// How far past `--duration` the watchdog lets a step run before it stops the run.
const OVERRUN: Duration = Duration::from_secs(6);

/// Options of `linklab probe`.
#[derive(clap::Args)]
#[command(after_help = "\
Services absent on the host are skipped and named in the report; a service that answers but \
does not speak its protocol (garbage, a busy iperf3 server, a stall) ends the run with an \
error (exit 1) after the other steps, with the report of what was measured.

A figure exists only where bytes moved whole and were checked: an HTTP path counts with a \
2xx status and the body it announced (or the body to the close when it announced none); a \
404 is the path absent (a plain line, exit 0), any other status, a short or long body, a \
stall or wrong bytes is the path failed (exit 1), both with the status line and no rate. \
Where no iperf3 server answers, iperf 2 (lwIP's lwiperf, ESP-IDF, Zephyr, NuttX, stock \
iperf -s) measures TCP to the device, and from it with -R (a server that sends its version) \
or -r (the device connects back); UDP where the server sends reports. What it cannot give \
is a plain line: absent, with the reason, never a zero.

Every figure is several samples with their range: TCP tests in rounds, each in quarter-second \
slices, and HTTP paths in batches of downloads (range: lowest to highest slice or sample), round trips over hundreds of probes \
(range: their middle half, p25 to p75), a UDP knee from the lowest rate where the sweep saw \
the link fail up to the most it delivered above a limit confirmed by a repeat.

--baseline: a figure is worse when the two runs' ranges lie apart, the bad way, by more than \
--tolerance and by more than either range is wide (the runs differ by more than each varied \
within itself): a throughput (TCP each way and with 2 streams, the UDP knee each way, each \
HTTP path's rate) whose range lies below the baseline's; a round-trip median (ICMP, UDP and \
TCP echo, per size) whose range lies above, also by more than 0.2 ms; a figure the baseline \
had that this run found absent or failed (a path now answering 404). Exit 3 names each worse \
figure.")]
pub struct Args {
    /// The device to probe: a host name or an address.
    #[arg(value_name = "HOST")]
    host: String,
    /// The HTML report to write.
    #[arg(short = 'o', long, value_name = "FILE", default_value = "probe.html")]
    output: PathBuf,
    /// Also write the JSON document (the input of `linklab report` and of --baseline).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Seconds the whole run may take (discovery and every step share it).
    #[arg(long, value_name = "SECONDS", default_value_t = 60,
          value_parser = clap::value_parser!(u64).range(5..=3600))]
    duration: u64,
    /// An earlier probe's JSON: its figures beside this run's; exit 3 if any is worse.
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Percent of the baseline's figure by which the two runs' ranges must lie apart (and by
    /// more than their widths) before a figure counts as worse.
    #[arg(long, value_name = "PCT", default_value_t = 10.0, value_parser = values::ranged(0.0, 1000.0))]
    tolerance: f64,
    /// Which iperf measures TCP and UDP: `auto` (iperf3 on --iperf-port or 5201, else
    /// iperf 2 on 5001), `3` or `2` (only that one).
    #[arg(long, value_name = "auto|3|2", default_value = "auto")]
    iperf: IperfChoice,
    /// The iperf server's port (default 5201 for iperf3, 5001 for iperf 2; with `--iperf
    /// auto`, iperf3's).
    #[arg(long, value_name = "N")]
    iperf_port: Option<u16>,
    /// The HTTP port.
    #[arg(long, value_name = "N", default_value_t = 80)]
    http_port: u16,
    /// The echo port (UDP and TCP, RFC 862).
    #[arg(long, value_name = "N", default_value_t = 7)]
    echo_port: u16,
    /// A path to download over HTTP, besides /100kB.txt and /1MB.txt (two of linklab's bench
    /// files, always asked: a device without them shows them absent); repeat for more.
    #[arg(long = "http", value_name = "PATH")]
    http: Vec<String>,
    /// Run only these steps (comma separated or repeated): icmp, echo-udp, echo-tcp, http,
    /// tcp, sweep-to-device, sweep-from-device, latency. Discovery always runs.
    #[arg(long, value_name = "STEP", value_delimiter = ',')]
    only: Vec<Step>,
    /// Skip the latency-under-load step (round trips while TCP runs each way).
    #[arg(long)]
    no_latency: bool,
    /// Run the whole probe N times (each in --duration): every figure keeps its spread across
    /// the runs (the document's figures are the first run's).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    repeat: u32,
    /// The run's name in side-by-side reports (default: the host and the start time).
    #[arg(long, value_name = "TEXT")]
    label: Option<String>,
    /// The old spelling of --http (comma separated); kept for one round, it says so.
    #[arg(
        long = "http-path",
        value_name = "PATH",
        value_delimiter = ',',
        hide = true
    )]
    http_path: Vec<String>,
}

impl Args {
    /// The paths to download: the defaults, then `--http` and the old `--http-path`, each
    /// once.
    fn http_paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = Vec::new();
        let given = self.http.iter().chain(&self.http_path).map(String::as_str);
        for p in DEFAULT_HTTP_PATHS.into_iter().chain(given) {
            if !paths.iter().any(|q| q == p) {
                paths.push(p.to_string());
            }
        }
        paths
    }
}

/// The paths always downloaded: two of linklab's bench files.
const DEFAULT_HTTP_PATHS: [&str; 2] = ["/100kB.txt", "/1MB.txt"];

/// Runs `linklab probe`: discovery, then each step in its share of `--duration` (`--repeat`
/// times), then the outputs, the summary and the baseline's verdict.
pub fn run(args: Args) -> anyhow::Result<()> {
    let http_paths = checked_http_paths(&args)?;
    let baseline = match &args.baseline {
        Some(path) => Some(load_baseline(path)?),
        None => None,
    };
    let addr = resolve(&args.host)?;
    let outputs = Outputs {
        html: args.output.clone(),
        json: args.json.clone(),
    };
    let started = Instant::now();
    let mut runs: Vec<ProbeReport> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for k in 1..=args.repeat {
        if args.repeat > 1 {
            println!("run {k} of {}", args.repeat);
        }
        let report = measure(&args, &http_paths, addr, &outputs)?;
        failures.extend(report.failures.iter().map(|f| match args.repeat {
            1 => f.clone(),
            _ => format!("run {k}: {f}"),
        }));
        runs.push(report);
    }
    let mut report = runs[0].clone();
    if args.repeat > 1 {
        report.repeat = Some(figures::across(&runs));
        report.failures = failures.clone();
        report.wall = Quantity::new(started.elapsed().as_secs_f64(), "s");
        if let Some(c) = report.conditions.as_mut() {
            c.runs = args.repeat;
        }
    }
    finish(&args, report, &outputs, failures, baseline.as_ref())
}

/// One whole probe run within `--duration`: discovery, the conditions, every step; the
/// document with its failures. An error only when the device answered nothing.
fn measure(
    args: &Args,
    http_paths: &[String],
    addr: IpAddr,
    outputs: &Outputs,
) -> anyhow::Result<ProbeReport> {
    let started = Instant::now();
    let end = started + Duration::from_secs(args.duration);
    let doc = Arc::new(Mutex::new(new_document(args, addr)));
    let watch = watchdog(Arc::clone(&doc), outputs.clone(), started, end + OVERRUN);
    let mut progress = progress::Progress::new(std::io::stderr().is_terminal(), end, 9);
    progress.step(1, "discovery");
    progress.println(&format!(
        "linklab probe: {} ({addr}), {} s",
        args.host, args.duration
    ));
    let services = match discover_services(args, addr, &mut progress) {
        Ok(s) => s,
        Err(e) => {
            progress.finish();
            return Err(e);
        }
    };
    let iperf = plan::choose(&services);
    if let Some(i) = &iperf {
        progress.println(&iperf_line(i));
    }
    let http = services
        .iter()
        .find(|s| s.name == "http" && s.state == ServiceState::Present)
        .and_then(|s| s.port);
    let started_unix_s = lock(&doc).started_unix_s;
    let conditions = conditions::gather(
        args.label.as_deref(),
        &args.host,
        addr,
        http,
        iperf.as_ref(),
        &services,
        started_unix_s,
    );
    {
        let mut d = lock(&doc);
        d.services = services.clone();
        d.conditions = Some(conditions);
    }
    let schedule = schedule::Schedule {
        args,
        http_paths,
        addr,
        end,
        iperf: iperf.as_ref(),
        services: &services,
        doc: &doc,
    };
    let failures = schedule.run_steps(&mut progress);
    progress.finish();
    watch.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut d = lock(&doc);
    d.failures = failures;
    d.wall = Quantity::new(started.elapsed().as_secs_f64(), "s");
    Ok(d.clone())
}

/// The HTTP paths to download, each checked: one clear line for a path that is not one.
fn checked_http_paths(args: &Args) -> anyhow::Result<Vec<String>> {
    let http_paths = args.http_paths();
    for p in &http_paths {
        if linklab_perf::http::Client::new("h", p).is_err() {
            bail_usage!("--http {p:?}: a path starts with / and has only printable characters");
        }
    }
    if !args.http_path.is_empty() {
        eprintln!("linklab: note: --http-path is now --http PATH (repeat it for more paths); --http-path goes in the next release");
    }
    Ok(http_paths)
}

/// The document before anything is measured: who, when, the budget.
fn new_document(args: &Args, addr: IpAddr) -> ProbeReport {
    ProbeReport {
        kind: "probe".into(),
        schema_version: SCHEMA_VERSION,
        linklab_version: env!("CARGO_PKG_VERSION").into(),
        host: args.host.clone(),
        address: addr.to_string(),
        started_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        budget: Quantity::new(args.duration as f64, "s"),
        wall: Quantity::new(0.0, "s"),
        services: Vec::new(),
        steps: Vec::new(),
        figures: Vec::new(),
        not_measured: Vec::new(),
        icmp: None,
        echo_udp: None,
        echo_tcp: None,
        http: Vec::new(),
        tcp: Vec::new(),
        sweep_to_device: None,
        sweep_from_device: None,
        failures: Vec::new(),
        baseline: None,
        latency: None,
        conditions: None,
        repeat: None,
    }
}

/// Asks every service and prints what answered; an error naming each when none did.
fn discover_services(
    args: &Args,
    addr: IpAddr,
    progress: &mut progress::Progress,
) -> anyhow::Result<Vec<Service>> {
    let (iperf3_port, iperf2_port) = args.iperf.ports(args.iperf_port);
    let ports = discover::Ports {
        iperf3: iperf3_port,
        iperf2: iperf2_port,
        http: args.http_port,
        echo: args.echo_port,
    };
    let services = discover::discover(&args.host, addr, &ports);
    for s in &services {
        let port = s.port.map_or(String::new(), |p| format!(" ({p})"));
        progress.println(&format!(
            "  {:<9}{port:<8} {:<8} {}",
            s.name,
            state_word(s.state),
            s.detail
        ));
    }
    if services.iter().all(|s| s.state == ServiceState::Absent) {
        let iperfs: Vec<String> = [("iperf3", iperf3_port), ("iperf 2", iperf2_port)]
            .iter()
            .filter_map(|(n, p)| p.map(|p| format!("{n} ({p})")))
            .collect();
        return Err(anyhow!(
            "{} ({addr}) answered none of ICMP echo, {}, HTTP ({}), echo ({}): unreachable or down ({})",
            args.host,
            iperfs.join(", "),
            args.http_port,
            args.echo_port,
            services
                .iter()
                .map(|s| format!("{}: {}", s.name, s.detail))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    Ok(services)
}

/// The line saying which iperf measures TCP and UDP.
fn iperf_line(i: &Iperf) -> String {
    format!(
        "  TCP and UDP through {} on port {}{}",
        if i.is_iperf2() { "iperf 2" } else { "iperf3" },
        i.port,
        match (i.is_iperf2(), i.replies) {
            (false, _) => "",
            (true, true) => " (it sends its version: -R for the way back)",
            (true, false) =>
                " (no version reply: -r, the device connecting back, for the way back)",
        }
    )
}

/// Writes the outputs, prints the summary; the run's error when a step failed, exit 3 when a
/// figure is worse than the baseline.
fn finish(
    args: &Args,
    mut report: ProbeReport,
    outputs: &Outputs,
    failures: Vec<String>,
    baseline: Option<&ProbeReport>,
) -> anyhow::Result<()> {
    if let (Some(old), Some(path)) = (baseline, &args.baseline) {
        report.baseline = Some(baseline::compare(
            old,
            &report,
            &path.display().to_string(),
            args.tolerance,
        ));
    }
    outputs.write(&report)?;
    print!("{}", summary::summary(&report));
    println!(
        "wrote {}{} in {:.1} s",
        outputs.html.display(),
        outputs
            .json
            .as_ref()
            .map_or(String::new(), |j| format!(" and {}", j.display())),
        report.wall.value
    );
    if !failures.is_empty() {
        return Err(anyhow!("{}", failures.join("; ")));
    }
    exit_if_worse(&report);
    Ok(())
}

/// Exits with [`EXIT_WORSE`], naming each figure, when the baseline comparison found any worse.
fn exit_if_worse(report: &ProbeReport) {
    let Some(c) = &report.baseline else {
        return;
    };
    let worse: Vec<String> = c
        .figures
        .iter()
        .filter(|f| f.worse)
        .map(|f| match &f.missing {
            Some(m) => format!("{} {}", f.id, m.split(':').next().unwrap_or(m)),
            None => format!("{} {:+.1} %", f.id, f.change_pct.unwrap_or(0.0)),
        })
        .collect();
    if !worse.is_empty() {
        let _ = std::io::stdout().flush();
        eprintln!(
            "linklab: worse than the baseline (ranges apart by more than {} % and their widths): {}",
            c.tolerance_pct,
            worse.join(", ")
        );
        std::process::exit(EXIT_WORSE);
    }
}

/// Reads `--baseline`: one clear sentence for a file that cannot be read or is not a probe
/// document this linklab reads.
fn load_baseline(path: &std::path::Path) -> anyhow::Result<ProbeReport> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow!("--baseline {name}: cannot read: {e}"))?;
    baseline::parse(&text, &name)
}

/// The first address `host` resolves to (IPv4 first).
fn resolve(host: &str) -> anyhow::Result<IpAddr> {
    let addrs: Vec<SocketAddr> = (host, 0)
        .to_socket_addrs()
        .map_err(|e| anyhow!("cannot resolve {host:?}: {e}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .map(|a| a.ip())
        .ok_or_else(|| anyhow!("cannot resolve {host:?}: no address"))
}

/// A service state as the text output says it.
fn state_word(state: ServiceState) -> &'static str {
    match state {
        ServiceState::Present => "present",
        ServiceState::Absent => "absent",
        ServiceState::Failed => "failed",
    }
}

/// `ADDR:PORT`, or the address alone.
fn target(addr: IpAddr, port: Option<u16>) -> String {
    match port {
        Some(p) => SocketAddr::new(addr, p).to_string(),
        None => addr.to_string(),
    }
}

fn lock(doc: &Mutex<ProbeReport>) -> std::sync::MutexGuard<'_, ProbeReport> {
    doc.lock().unwrap_or_else(|e| e.into_inner())
}
