//! `linklab probe HOST`: its options, then one call of `linklab_measure::probe`; what it tells
//! as it goes printed (a line per service and per step under the progress line), the document
//! written (JSON and the HTML page), compared with `--baseline`, summed up, and the exit code:
//! 1 when a step failed, 3 when a figure is worse than the baseline. A step still running
//! past `--duration` and its overrun ends the run with what was measured written.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{anyhow, Context};

use linklab_measure::probe::{self, Event, Iperf, IperfChoice, ProbeOptions, Step, EXIT_WORSE};
use linklab_results::probe::{baseline, summary, ProbeReport, StepState};
use linklab_results::values;

use crate::progress::StepLine;

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
    iperf: IperfArg,
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
    /// The device's own clock, for an emulated device: the status file its emulator rewrites
    /// (`linklab emu w5500-evb-pico --status FILE`); the document then says how fast that
    /// clock ran against real time (budgets and rates stay real time).
    #[arg(long, value_name = "FILE")]
    device_clock: Option<PathBuf>,
    /// The old spelling of --http (comma separated); kept for one round, it says so.
    #[arg(
        long = "http-path",
        value_name = "PATH",
        value_delimiter = ',',
        hide = true
    )]
    http_path: Vec<String>,
}

/// `--iperf`: which iperf to look for.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
enum IperfArg {
    /// iperf3 on its port (5201), else iperf 2 on 5001.
    Auto,
    /// iperf3 only.
    #[value(name = "3")]
    Three,
    /// iperf 2 only.
    #[value(name = "2")]
    Two,
}

impl Args {
    /// The library's options: `--http` and the old `--http-path` in that order, the command
    /// line kept in the document's conditions.
    fn options(&self) -> ProbeOptions {
        ProbeOptions {
            host: self.host.clone(),
            duration: Duration::from_secs(self.duration),
            iperf: match self.iperf {
                IperfArg::Auto => IperfChoice::Auto,
                IperfArg::Three => IperfChoice::Three,
                IperfArg::Two => IperfChoice::Two,
            },
            iperf_port: self.iperf_port,
            http_port: self.http_port,
            echo_port: self.echo_port,
            http_paths: self.http.iter().chain(&self.http_path).cloned().collect(),
            only: self.only.clone(),
            no_latency: self.no_latency,
            repeat: self.repeat,
            label: self.label.clone(),
            command_line: std::env::args().skip(1).collect(),
            device_clock: self.device_clock.clone(),
        }
    }
}

/// Where the outputs go.
struct Outputs {
    /// The page (`-o`).
    html: PathBuf,
    /// The JSON (`--json`), when asked.
    json: Option<PathBuf>,
}

impl Outputs {
    /// Writes the JSON (if asked) and the HTML page of `r`.
    fn write(&self, r: &ProbeReport) -> anyhow::Result<()> {
        if let Some(path) = &self.json {
            let text = serde_json::to_string_pretty(r).expect("the document serializes");
            std::fs::write(path, text + "\n")
                .with_context(|| format!("--json: cannot write {}", path.display()))?;
        }
        let name = self.json.as_deref().map_or_else(
            || format!("linklab probe {}", r.host),
            |p| p.display().to_string(),
        );
        std::fs::write(&self.html, linklab_report::probe_page(r, &name))
            .with_context(|| format!("-o: cannot write {}", self.html.display()))
    }
}

/// Runs `linklab probe`: the options checked, the baseline read, the run watched on the
/// terminal, then the outputs, the summary and the baseline's verdict.
pub fn run(args: Args) -> anyhow::Result<()> {
    let options = args.options();
    options.paths()?;
    if !args.http_path.is_empty() {
        eprintln!("linklab: note: --http-path is now --http PATH (repeat it for more paths); --http-path goes in the next release");
    }
    let baseline = match &args.baseline {
        Some(path) => Some(load_baseline(path)?),
        None => None,
    };
    let outputs = Outputs {
        html: args.output.clone(),
        json: args.json.clone(),
    };
    let terminal = Terminal {
        outputs: &outputs,
        line: Mutex::new(None),
    };
    let mut report = probe::run_watched(&options, &terminal)?;
    if let (Some(old), Some(path)) = (&baseline, &args.baseline) {
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
    if !report.failures.is_empty() {
        return Err(anyhow!("{}", report.failures.join("; ")));
    }
    exit_if_worse(&report);
    Ok(())
}

/// The run on the terminal: the lines on stdout under the progress line; an overrun ends
/// the process with what was measured written.
struct Terminal<'a> {
    outputs: &'a Outputs,
    /// The progress line of the run in progress.
    line: Mutex<Option<StepLine>>,
}

impl Terminal<'_> {
    /// Prints `text` under the progress line (on stdout alone when there is none).
    fn println(&self, text: &str) {
        match &*self.line.lock().unwrap_or_else(|e| e.into_inner()) {
            Some(line) => line.println(text),
            None => {
                println!("{text}");
                let _ = std::io::stdout().flush();
            }
        }
    }
}

impl probe::Watch for Terminal<'_> {
    fn event(&self, event: Event<'_>) {
        match event {
            Event::Begins {
                run,
                runs,
                host,
                address,
                budget,
                end,
                steps,
            } => {
                if runs > 1 {
                    self.println(&format!("run {run} of {runs}"));
                }
                *self.line.lock().unwrap_or_else(|e| e.into_inner()) =
                    Some(StepLine::new(end, steps));
                self.println(&format!(
                    "linklab probe: {host} ({address}), {} s",
                    budget.as_secs()
                ));
            }
            Event::StepBegins { index, name } => {
                if let Some(line) = &*self.line.lock().unwrap_or_else(|e| e.into_inner()) {
                    line.step(index, name);
                }
            }
            Event::Discovered(services) => {
                for s in services {
                    let port = s.port.map_or(String::new(), |p| format!(" ({p})"));
                    self.println(&format!(
                        "  {:<9}{port:<8} {:<8} {}",
                        s.name,
                        s.state.word(),
                        s.detail
                    ));
                }
            }
            Event::IperfChosen(i) => self.println(&iperf_line(i)),
            Event::StepEnded(record) => {
                let text = match record.state {
                    StepState::Skipped => format!("skipped ({})", record.detail),
                    StepState::Done => {
                        format!("done in {:.1} s: {}", record.wall.value, record.detail)
                    }
                    StepState::Failed => {
                        format!("failed in {:.1} s: {}", record.wall.value, record.detail)
                    }
                };
                self.println(&format!("  {:<18} {text}", record.name));
            }
            Event::Ends => {
                if let Some(line) = self.line.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    line.finish();
                }
            }
            Event::Overrun { partial, what } => {
                if let Some(line) = &*self.line.lock().unwrap_or_else(|e| e.into_inner()) {
                    line.finish();
                }
                match self.outputs.write(partial) {
                    Ok(()) => {
                        eprintln!("linklab: error: {what} (the report has what was measured)")
                    }
                    Err(e) => eprintln!("linklab: error: {what}; {e:#}"),
                }
                std::process::exit(1);
            }
        }
    }
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
fn load_baseline(path: &Path) -> anyhow::Result<ProbeReport> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow!("--baseline {name}: cannot read: {e}"))?;
    baseline::parse(&text, &name)
}
