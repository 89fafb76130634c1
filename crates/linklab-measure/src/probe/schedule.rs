//! The steps in their order, each in its share of what is left of `--duration`: a step whose
//! service is absent, or failed in discovery or an earlier step, is skipped and says why; one
//! left with too little time is skipped as out of time; the others run and store their figures.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use linklab_results::probe::{figures, Figure, NotMeasured, Service, ServiceState};
use linklab_results::probe::{StepRecord, StepState};
use linklab_results::quantity::Quantity;

use super::options::ProbeOptions;
use super::plan::{self, Iperf, Step, IPERF};
use super::shared_document::{lock, SharedDocument};
use super::watch::{Event, Watch};
use super::{downloads, iperf2, latency, steps};
use crate::rtt::Transport;

/// Time kept at the end of the budget for writing the outputs.
pub const RESERVE: Duration = Duration::from_millis(800);

/// How many steps a run counts: discovery, then each of [`Step::ALL`].
pub const TOTAL_STEPS: usize = Step::ALL.len() + 1;

/// What the steps share: the options, the device, the deadline, what discovery found, the
/// document they write into and who watches.
pub struct Schedule<'a> {
    /// The options.
    pub options: &'a ProbeOptions,
    /// The HTTP paths to download.
    pub http_paths: &'a [String],
    /// The device's address.
    pub addr: IpAddr,
    /// When the budget ends.
    pub end: Instant,
    /// The iperf that measures, if any answered.
    pub iperf: Option<&'a Iperf>,
    /// What discovery found.
    pub services: &'a [Service],
    /// The document.
    pub doc: &'a SharedDocument,
    /// Who watches.
    pub watch: &'a dyn Watch,
}

impl Schedule<'_> {
    /// Whether the step's service answered (`iperf`: whichever iperf measures).
    fn usable(&self, name: &str) -> bool {
        if name == IPERF {
            return self.iperf.is_some();
        }
        self.services
            .iter()
            .find(|s| s.name == name)
            .is_some_and(|s| s.state == ServiceState::Present)
    }

    /// The iperf steps' service as people read it.
    fn shown(&self, name: &str) -> String {
        match (self.iperf, name) {
            (Some(i), IPERF) if i.is_iperf2() => "iperf2".to_string(),
            (Some(_), IPERF) => "iperf3".to_string(),
            _ => name.to_string(),
        }
    }

    /// Why a step whose service is not usable is skipped: what discovery said of it.
    fn absent_reason(&self, service: &str) -> String {
        self.services
            .iter()
            .filter(|s| s.name == service || (service == IPERF && s.name.starts_with("iperf")))
            .map(|s| format!("{} {}: {}", s.name, s.state.word(), s.detail))
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// The round-trip transports that answered in discovery, with their names.
    fn rtt_transports(&self) -> Vec<(Transport, &'static str)> {
        [
            (Transport::Icmp, "icmp", "icmp"),
            (Transport::Udp, "echo-udp", "echo_udp"),
            (Transport::Tcp, "echo-tcp", "echo_tcp"),
        ]
        .into_iter()
        .filter(|(_, service, _)| self.usable(service))
        .map(|(t, _, name)| (t, name))
        .collect()
    }

    /// Why `step` does not run: not asked for (`--only`, `--no-latency`), its service absent,
    /// or failed in discovery or an earlier step (`failed`); `None` when it runs.
    fn skip_reason(&self, step: Step, failed: &[String]) -> Option<String> {
        let options = self.options;
        if !options.only.is_empty() && !options.only.contains(&step) {
            return Some("not asked for (--only)".into());
        }
        if step == Step::Latency && options.no_latency {
            return Some("not asked for (--no-latency)".into());
        }
        let service = step.service();
        if !self.usable(service) {
            return Some(self.absent_reason(service));
        }
        if failed.iter().any(|f| f == service) {
            return Some(format!("{} failed in an earlier step", self.shown(service)));
        }
        if step == Step::Latency && self.iperf.is_some_and(Iperf::is_iperf2) {
            return Some(
                "its loads run through iperf3 (-R, --bidir); the device serves iperf 2 only".into(),
            );
        }
        if step == Step::Latency && self.rtt_transports().is_empty() {
            return Some("no round trip to sample: neither ICMP nor echo answered".into());
        }
        None
    }

    /// Why the latency step, when it would run among `to_run`, cannot: its share of what is
    /// left of the budget is shorter than an idle second and three 1-second loads.
    fn latency_short(&self, to_run: &[Step]) -> Option<String> {
        if !to_run.contains(&Step::Latency) {
            return None;
        }
        let total: f64 = to_run.iter().map(|s| s.weight()).sum();
        let left = self
            .end
            .saturating_duration_since(Instant::now())
            .saturating_sub(RESERVE);
        let share = left.mul_f64(Step::Latency.weight() / total);
        latency::plan(share).is_none().then(|| {
            format!(
                "out of time: its share of --duration {} s is {:.1} s, too short for an idle second and three 1-second loads ({:.1} s; a longer --duration or --only latency gives it one)",
                self.options.budget_s(),
                share.as_secs_f64(),
                latency::least_time().as_secs_f64()
            )
        })
    }

    /// Runs every step in order; returns what failed, one sentence each (discovery's failed
    /// services first).
    pub fn run_steps(&self) -> Vec<String> {
        // Services that failed (in discovery, or in a step since): their other steps are skipped.
        let mut failed_services: Vec<String> = self
            .services
            .iter()
            .filter(|s| s.state == ServiceState::Failed)
            .map(|s| s.name.clone())
            .collect();
        let mut failures: Vec<String> = self
            .services
            .iter()
            .filter(|s| s.state == ServiceState::Failed)
            .map(|s| format!("{} at {}: {}", s.name, target(self.addr, s.port), s.detail))
            .collect();
        let mut to_run: Vec<Step> = Step::ALL
            .into_iter()
            .filter(|&s| self.skip_reason(s, &[]).is_none())
            .collect();
        // A latency step its share of the budget cannot hold is skipped from the start, so it
        // takes no time from the others.
        let latency_short = self.latency_short(&to_run);
        if latency_short.is_some() {
            to_run.retain(|&s| s != Step::Latency);
        }
        for (i, &step) in Step::ALL.iter().enumerate() {
            let began = Instant::now();
            let record = |state, detail: String| StepRecord {
                name: step.name().into(),
                state,
                detail,
                wall: Quantity::new(began.elapsed().as_secs_f64(), "s"),
            };
            let short = latency_short.clone().filter(|_| step == Step::Latency);
            if let Some(why) = short.or_else(|| self.skip_reason(step, &failed_services)) {
                self.record(record(StepState::Skipped, why));
                continue;
            }
            // This step's share of what is left: its weight over that of the steps still to run.
            let remaining: f64 = to_run
                .iter()
                .filter(|s| Step::ALL[i..].contains(s))
                .filter(|s| !failed_services.iter().any(|f| f == s.service()))
                .map(|s| s.weight())
                .sum();
            let left = self
                .end
                .saturating_duration_since(Instant::now())
                .saturating_sub(RESERVE);
            let time = left.mul_f64(step.weight() / remaining.max(step.weight()));
            let too_short = match step {
                Step::Latency => latency::plan(time).is_none(),
                _ => time < Duration::from_millis(300),
            };
            if too_short {
                self.record(record(StepState::Skipped, "out of time".into()));
                continue;
            }
            self.watch.event(Event::StepBegins {
                index: i + 2,
                name: step.name(),
            });
            let (detail, error) = self.run_step(step, time);
            let state = if error.is_some() {
                StepState::Failed
            } else {
                StepState::Done
            };
            let detail = match &error {
                Some(e) => format!("{detail}; failed: {e:#}"),
                None => detail,
            };
            if let Some(e) = error {
                failures.push(format!("{e:#}"));
                failed_services.push(step.service().into());
            }
            self.record(record(state, detail));
        }
        failures
    }

    /// Tells the watcher how a step ended, and keeps it in the document.
    fn record(&self, record: StepRecord) {
        self.watch.event(Event::StepEnded(&record));
        lock(self.doc).steps.push(record);
    }

    /// Runs one step, storing what it measured and its figures in the document; returns its
    /// detail and error.
    fn run_step(&self, step: Step, time: Duration) -> (String, Option<anyhow::Error>) {
        let host = self.options.host.as_str();
        let (figures, not_measured, detail, error) = match step {
            Step::Icmp | Step::EchoUdp | Step::EchoTcp => self.round_trips(step, time),
            Step::Http => {
                let o = downloads::downloads(
                    host,
                    SocketAddr::new(self.addr, self.options.http_port),
                    self.http_paths,
                    time,
                );
                lock(self.doc).http = o.value;
                (o.figures, o.not_measured, o.detail, o.error)
            }
            Step::Tcp => {
                let o = match self.iperf {
                    Some(i) if i.is_iperf2() => iperf2::tcp_tests(host, i, time),
                    _ => steps::tcp_tests(host, self.iperf_port(), time),
                };
                lock(self.doc).tcp = o.value;
                (o.figures, o.not_measured, o.detail, o.error)
            }
            Step::SweepTo | Step::SweepFrom => self.sweep(step == Step::SweepFrom, time),
            Step::Latency => {
                let target = latency::Target {
                    host,
                    addr: self.addr,
                    iperf_port: self.iperf_port(),
                    echo_port: self.options.echo_port,
                    transports: self.rtt_transports(),
                };
                let o = latency::latency_under_load(&target, time);
                lock(self.doc).latency = o.value;
                (o.figures, o.not_measured, o.detail, o.error)
            }
        };
        let prefix = step.figure_prefix(self.iperf.is_some_and(Iperf::is_iperf2));
        let mut d = lock(self.doc);
        d.figures.retain(|f| !f.id.starts_with(prefix));
        d.figures.extend(figures);
        d.figures.sort_by_key(|f| figures::rank(&f.id));
        d.not_measured.retain(|f| !f.id.starts_with(prefix));
        d.not_measured.extend(not_measured);
        (detail, error)
    }

    /// The iperf3 port in use.
    fn iperf_port(&self) -> u16 {
        self.iperf.map_or(plan::IPERF3_PORT, |i| i.port)
    }

    /// ICMP, UDP or TCP echo round trips per size.
    fn round_trips(&self, step: Step, time: Duration) -> StepResult {
        let host = self.options.host.as_str();
        let echo = self.options.echo_port;
        let rtt = |transport, port, sizes: &[usize], kind| {
            steps::round_trips(
                host,
                SocketAddr::new(self.addr, port),
                transport,
                sizes,
                time,
                kind,
            )
        };
        let o = match step {
            Step::Icmp => rtt(Transport::Icmp, 0, &[64, 512, 1472], "icmp"),
            Step::EchoUdp => rtt(Transport::Udp, echo, &[64, 512, 1472], "echo_udp"),
            _ => rtt(Transport::Tcp, echo, &[64, 512, 1460], "echo_tcp"),
        };
        let mut d = lock(self.doc);
        let slot = match step {
            Step::Icmp => &mut d.icmp,
            Step::EchoUdp => &mut d.echo_udp,
            _ => &mut d.echo_tcp,
        };
        *slot = o.value;
        (o.figures, o.not_measured, o.detail, o.error)
    }

    /// A UDP sweep one way, its rates around the TCP figure that way.
    fn sweep(&self, reverse: bool, time: Duration) -> StepResult {
        let host = self.options.host.as_str();
        let iperf2 = self.iperf.is_some_and(Iperf::is_iperf2);
        // The TCP figures that way (their medians), one or two streams, whichever is higher.
        let anchor = {
            let d = lock(self.doc);
            let id = format!(
                "{}{}",
                Step::Tcp.figure_prefix(iperf2),
                if reverse { "from_device" } else { "to_device" }
            );
            d.figures
                .iter()
                .filter(|f| f.id == id || f.id.starts_with(&format!("{id}.")))
                .map(|f| f.value)
                .reduce(f64::max)
        };
        let o = match self.iperf {
            Some(i) if i.is_iperf2() => {
                // No UDP report to the device: the way back has no UDP server either.
                let no_udp = lock(self.doc)
                    .not_measured(Step::SweepTo.figure_prefix(true))
                    .map(|m| m.reason.clone());
                iperf2::sweep_one_way(host, i, reverse, anchor, no_udp, time)
            }
            _ => steps::sweep_one_way(host, self.iperf_port(), false, reverse, anchor, time),
        };
        let mut d = lock(self.doc);
        if reverse {
            d.sweep_from_device = o.value;
        } else {
            d.sweep_to_device = o.value;
        }
        (o.figures, o.not_measured, o.detail, o.error)
    }
}

/// What a step gives back: its figures, those it could not make, its detail and its error.
type StepResult = (Vec<Figure>, Vec<NotMeasured>, String, Option<anyhow::Error>);

/// `ADDR:PORT`, or the address alone.
fn target(addr: IpAddr, port: Option<u16>) -> String {
    match port {
        Some(p) => SocketAddr::new(addr, p).to_string(),
        None => addr.to_string(),
    }
}
