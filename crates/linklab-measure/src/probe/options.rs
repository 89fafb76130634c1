//! What a probe run is asked for: the device, the time budget, the ports, the HTTP paths and
//! the steps.

use std::time::Duration;

use linklab_results::bail_usage;

use super::plan::{IperfChoice, Step};

/// The paths always downloaded: two of linklab's bench files.
pub const DEFAULT_HTTP_PATHS: [&str; 2] = ["/100kB.txt", "/1MB.txt"];

/// What to probe and how.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeOptions {
    /// The device: a host name or an address.
    pub host: String,
    /// How long the whole run may take (discovery and every step share it).
    pub duration: Duration,
    /// Which iperf measures TCP and UDP.
    pub iperf: IperfChoice,
    /// The iperf server's port (`None`: 5201 for iperf3, 5001 for iperf 2; with
    /// [`IperfChoice::Auto`], iperf3's).
    pub iperf_port: Option<u16>,
    /// The HTTP port.
    pub http_port: u16,
    /// The echo port (UDP and TCP, RFC 862).
    pub echo_port: u16,
    /// Paths to download over HTTP besides [`DEFAULT_HTTP_PATHS`] (asked always: a device
    /// without them shows them absent).
    pub http_paths: Vec<String>,
    /// Run only these steps (empty: every step). Discovery always runs.
    pub only: Vec<Step>,
    /// Skip the latency-under-load step.
    pub no_latency: bool,
    /// Runs of the whole probe, each in `duration`: every figure keeps its spread across the
    /// runs (the document's figures are the first run's).
    pub repeat: u32,
    /// The run's name in side-by-side reports (`None`: the host and the start time).
    pub label: Option<String>,
    /// The command line that asked for the run, kept in the document's conditions (the
    /// arguments after the program's name; empty from a program).
    pub command_line: Vec<String>,
    /// A file with the device's own clock (an emulator's status line with `emulated_ns`,
    /// rewritten as it runs): the document then says how fast that clock ran against real
    /// time (`conditions.device_clock`).
    pub device_clock: Option<std::path::PathBuf>,
}

impl ProbeOptions {
    /// The options of `linklab probe HOST` with nothing else given: 60 s, iperf3 else iperf 2
    /// on their ports, HTTP on 80, echo on 7, every step, one run.
    pub fn new(host: &str) -> ProbeOptions {
        ProbeOptions {
            host: host.into(),
            duration: Duration::from_secs(60),
            iperf: IperfChoice::Auto,
            iperf_port: None,
            http_port: 80,
            echo_port: 7,
            http_paths: Vec::new(),
            only: Vec::new(),
            no_latency: false,
            repeat: 1,
            label: None,
            command_line: Vec::new(),
            device_clock: None,
        }
    }

    /// The paths to download: [`DEFAULT_HTTP_PATHS`], then `http_paths`, each once; a usage
    /// error for a path that is not one.
    pub fn paths(&self) -> anyhow::Result<Vec<String>> {
        let mut paths: Vec<String> = Vec::new();
        let given = self.http_paths.iter().map(String::as_str);
        for p in DEFAULT_HTTP_PATHS.into_iter().chain(given) {
            if !paths.iter().any(|q| q == p) {
                paths.push(p.to_string());
            }
        }
        for p in &paths {
            if linklab_perf::http::Client::new("h", p).is_err() {
                bail_usage!("--http {p:?}: a path starts with / and has only printable characters");
            }
        }
        Ok(paths)
    }

    /// The time budget in seconds, as the document and the texts give it.
    pub(crate) fn budget_s(&self) -> f64 {
        self.duration.as_secs_f64()
    }
}
