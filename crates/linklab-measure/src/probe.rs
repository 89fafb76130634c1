//! Characterising a network device into one document: `linklab probe HOST`.
//!
//! Discovery asks which of ICMP echo, an iperf server (iperf3, else iperf 2), HTTP and echo
//! (UDP/TCP 7) the host answers; then each step runs where its service answered, sharing the
//! time budget: ICMP, UDP and TCP echo round trips per size (`rtt`), HTTP downloads, TCP each
//! way (iperf3 with one and two streams; iperf 2 with what the server answers), a UDP
//! offered-rate sweep each way (`sweep`) where the server reports, and round trips while TCP
//! loads the link. Every figure is made of several samples, carries its range and says what
//! measured it; a figure a step could not make is a line saying why, never a zero. The result
//! is one [`ProbeReport`] (linklab-results, with its schema, its baseline comparison and its
//! words).
//!
//! A test of a device reads its figures so (it needs the device, so it is not run here):
//!
//! ```no_run
//! use std::time::Duration;
//! use linklab_measure::probe::{self, ProbeOptions, Step};
//!
//! let mut options = ProbeOptions::new("192.0.2.10");
//! options.duration = Duration::from_secs(20);
//! options.only = vec![Step::Icmp, Step::Tcp];
//! let report = probe::run(&options)?;
//! let tcp = report.figure("tcp.to_device").expect("the device serves iperf3");
//! assert!(tcp.value > 1e6, "TCP to the device: {} {}", tcp.value, tcp.unit);
//! assert!(report.failures.is_empty(), "{:?}", report.failures);
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! - `discover`: which services answer; `plan`: the steps and the iperf in use;
//! - `schedule`: each step in its share of the time; `steps`, `downloads`, `iperf2`,
//!   `latency` (with `flows`): each measurement;
//! - `http`: HTTP over std sockets with linklab-perf's client; `conditions`: what the run
//!   was measured under; `device_clock`: the device's own clock against real time;
//! - `watch`: what a run tells as it goes; `watchdog`: a step overrunning the budget.

mod answer;
mod conditions;
mod device_clock;
mod discover;
mod downloads;
mod flows;
mod http;
mod iperf2;
mod latency;
mod options;
mod plan;
mod schedule;
mod shared_document;
mod steps;
mod watch;
mod watchdog;

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Mutex;
use std::time::Instant;

use anyhow::anyhow;

use linklab_results::bail_usage;
use linklab_results::probe::{figures, Service, ServiceState, SCHEMA_VERSION};
use linklab_results::Quantity;

pub use linklab_results::probe::ProbeReport;
pub use options::{ProbeOptions, DEFAULT_HTTP_PATHS};
pub use plan::{Iperf, IperfChoice, Step, IPERF2_PORT, IPERF3_PORT};
pub use watch::{Event, Watch};
pub use watchdog::OVERRUN;

use schedule::{Schedule, TOTAL_STEPS};
use shared_document::lock;
use watchdog::Watchdog;

/// The exit code of `linklab probe` when a figure is worse than the baseline.
pub const EXIT_WORSE: i32 = 3;

/// Probes the device `options` name, watching nothing: see [`run_watched`].
pub fn run(options: &ProbeOptions) -> anyhow::Result<ProbeReport> {
    run_watched(options, &|_: Event<'_>| {})
}

/// Probes the device `options` name, `options.repeat` times, telling `watch` as it goes.
///
/// The document, with `failures` naming every step that failed (what it measured before is
/// kept), and with `repeat` (the spread across runs) when there were several. An error when
/// the options are wrong, the host does not resolve, or it answered none of the services.
pub fn run_watched(options: &ProbeOptions, watch: &dyn Watch) -> anyhow::Result<ProbeReport> {
    let http_paths = options.paths()?;
    if options.repeat == 0 {
        bail_usage!("--repeat: at least 1 run");
    }
    let addr = resolve(&options.host)?;
    let started = Instant::now();
    let mut runs: Vec<ProbeReport> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    for k in 1..=options.repeat {
        let report = measure(options, &http_paths, addr, k, watch)?;
        failures.extend(report.failures.iter().map(|f| match options.repeat {
            1 => f.clone(),
            _ => format!("run {k}: {f}"),
        }));
        runs.push(report);
    }
    let mut report = runs[0].clone();
    if options.repeat > 1 {
        report.repeat = Some(figures::across(&runs));
        report.failures = failures;
        report.wall = Quantity::new(started.elapsed().as_secs_f64(), "s");
        if let Some(c) = report.conditions.as_mut() {
            c.runs = options.repeat;
        }
    }
    Ok(report)
}

/// One whole probe run within the budget: discovery, the conditions, every step; the
/// document with its failures. An error only when the device answered nothing.
fn measure(
    options: &ProbeOptions,
    http_paths: &[String],
    addr: IpAddr,
    run: u32,
    watch: &dyn Watch,
) -> anyhow::Result<ProbeReport> {
    let started = Instant::now();
    let end = started + options.duration;
    let clock_start = match &options.device_clock {
        Some(path) => Some(device_clock::read(path)?),
        None => None,
    };
    let doc = Mutex::new(new_document(options, addr));
    watch.event(Event::Begins {
        run,
        runs: options.repeat,
        host: &options.host,
        address: addr,
        budget: options.duration,
        end,
        steps: TOTAL_STEPS,
    });
    let watchdog = Watchdog {
        doc: &doc,
        started,
        deadline: end + OVERRUN,
    };
    let failures = watchdog.guard(watch, || {
        watch.event(Event::StepBegins {
            index: 1,
            name: "discovery",
        });
        let services = discover_services(options, addr);
        watch.event(Event::Discovered(&services));
        if let Some(e) = unreachable(options, addr, &services) {
            return Err(e);
        }
        let iperf = plan::choose(&services);
        if let Some(i) = &iperf {
            watch.event(Event::IperfChosen(i));
        }
        let http = services
            .iter()
            .find(|s| s.name == "http" && s.state == ServiceState::Present)
            .and_then(|s| s.port);
        let started_unix_s = lock(&doc).started_unix_s;
        let conditions = conditions::gather(
            options,
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
        let schedule = Schedule {
            options,
            http_paths,
            addr,
            end,
            iperf: iperf.as_ref(),
            services: &services,
            doc: &doc,
            watch,
        };
        Ok(schedule.run_steps())
    });
    watch.event(Event::Ends);
    let failures = failures?;
    let clock = match (&options.device_clock, clock_start) {
        (Some(path), Some(start)) => Some(device_clock::since(start, path)?),
        _ => None,
    };
    let mut d = lock(&doc);
    if let Some(c) = d.conditions.as_mut() {
        c.device_clock = clock;
    }
    d.failures = failures;
    d.wall = Quantity::new(started.elapsed().as_secs_f64(), "s");
    Ok(d.clone())
}

/// The document before anything is measured: who, when, the budget.
fn new_document(options: &ProbeOptions, addr: IpAddr) -> ProbeReport {
    ProbeReport {
        kind: "probe".into(),
        schema_version: SCHEMA_VERSION,
        linklab_version: env!("CARGO_PKG_VERSION").into(),
        host: options.host.clone(),
        address: addr.to_string(),
        started_unix_s: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        budget: Quantity::new(options.budget_s(), "s"),
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

/// Asks every service on the ports of `options`.
fn discover_services(options: &ProbeOptions, addr: IpAddr) -> Vec<Service> {
    let (iperf3, iperf2) = options.iperf.ports(options.iperf_port);
    let ports = discover::Ports {
        iperf3,
        iperf2,
        http: options.http_port,
        echo: options.echo_port,
    };
    discover::discover(&options.host, addr, &ports)
}

/// The error naming each service when none answered.
fn unreachable(
    options: &ProbeOptions,
    addr: IpAddr,
    services: &[Service],
) -> Option<anyhow::Error> {
    if !services.iter().all(|s| s.state == ServiceState::Absent) {
        return None;
    }
    let (iperf3, iperf2) = options.iperf.ports(options.iperf_port);
    let iperfs: Vec<String> = [("iperf3", iperf3), ("iperf 2", iperf2)]
        .iter()
        .filter_map(|(n, p)| p.map(|p| format!("{n} ({p})")))
        .collect();
    Some(anyhow!(
        "{} ({addr}) answered none of ICMP echo, {}, HTTP ({}), echo ({}): unreachable or down ({})",
        options.host,
        iperfs.join(", "),
        options.http_port,
        options.echo_port,
        services
            .iter()
            .map(|s| format!("{}: {}", s.name, s.detail))
            .collect::<Vec<_>>()
            .join("; ")
    ))
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
