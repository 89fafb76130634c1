//! The JSON document of one `linklab probe` run (`"kind": "probe"`), versioned by
//! [`SCHEMA_VERSION`] and described by `schema/probe.schema.json` of this crate.
//!
//! New figures carry their unit beside their value (`{"value": 94.1e6, "unit": "bit/s"}`);
//! the embedded `sweep` and `rtt` results are the documents of those subcommands, whose field
//! names end in their unit (`_bps`, `_us`, `_ms`, `_pct`), so `linklab report` renders them
//! with the same sections.
//!
//! Version 2 measures every figure several times: each headline figure carries its range
//! (`low`, `high`) and its samples, the TCP tests are listed round by round, each HTTP path's
//! samples are batches of downloads, and the sweeps keep every attempt at a rate. Version 1
//! documents (one measurement per figure) still deserialize: the new fields default to none.
//!
//! Version 3 gives a figure only where bytes moved and were checked: an HTTP path carries its
//! state (`done`, `absent` for a 404, `failed`, `out_of_time`), status line and announced
//! length, and a rate only when done; every figure says what measured it (`via`); what could
//! not be measured is listed in `not_measured` with the reason; a baseline figure this run
//! found absent or failed is worse (`Compared::missing`).
//!
//! Version 4 says how fast the device's own clock ran against real time, where probe read
//! one (`conditions.device_clock`, `--device-clock`): an emulated device slower than real
//! time is named as such.

use serde::{Deserialize, Serialize};

use super::conditions::Conditions;
use super::figure::{Better, Figure, NotMeasured};
use super::http::HttpDownload;
use super::latency::LatencyUnderLoad;
use super::repeat::Repeat;
use crate::quantity::Quantity;
use crate::rtt::RttReport;
use crate::sweep::SweepReport;

/// The version of this document's schema.
pub const SCHEMA_VERSION: u32 = 4;

/// The oldest version `linklab report` and `--baseline` read (its figures are one sample each).
pub const OLDEST_SCHEMA_VERSION: u32 = 1;

/// One probe run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProbeReport {
    /// Always `"probe"`.
    pub kind: String,
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema_version: u32,
    /// The linklab version that measured.
    pub linklab_version: String,
    /// The host as given.
    pub host: String,
    /// The address it resolved to.
    pub address: String,
    /// Start of the run, Unix seconds.
    pub started_unix_s: u64,
    /// The time budget (`--duration`).
    pub budget: Quantity,
    /// How long the run took.
    pub wall: Quantity,
    /// What discovery found, one entry per service.
    pub services: Vec<Service>,
    /// Each measurement step: done, skipped (and why) or failed.
    pub steps: Vec<StepRecord>,
    /// The headline figures, the ones a baseline compares.
    pub figures: Vec<Figure>,
    /// The figures a step could not make, each with the reason (a 404, a failed download, a
    /// direction or report the device's iperf does not give); none in documents before
    /// version 3.
    #[serde(default)]
    pub not_measured: Vec<NotMeasured>,
    /// ICMP echo round trips per size.
    pub icmp: Option<RttReport>,
    /// UDP echo (port 7) round trips per size.
    pub echo_udp: Option<RttReport>,
    /// TCP echo (port 7) round trips per size.
    pub echo_tcp: Option<RttReport>,
    /// HTTP downloads.
    pub http: Vec<HttpDownload>,
    /// iperf3 TCP tests, each way, one and two streams.
    pub tcp: Vec<TcpTest>,
    /// UDP offered-rate sweep from this host to the device.
    pub sweep_to_device: Option<SweepReport>,
    /// UDP offered-rate sweep from the device to this host (iperf3 -R).
    pub sweep_from_device: Option<SweepReport>,
    /// What failed, one sentence each (empty for a clean run).
    pub failures: Vec<String>,
    /// The comparison with `--baseline`, when one was given.
    pub baseline: Option<Comparison>,
    /// Round trips idle and under TCP load each way, with their time series and stalls (none
    /// before linklab 0.2's latency step, or when it did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyUnderLoad>,
    /// What the run was measured under: linklab, the host, its link, the iperf, the device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Conditions>,
    /// `--repeat N`: each figure over the N runs (this document's figures are the first run's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<Repeat>,
}

/// A service and what discovery found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Service {
    /// `icmp`, `iperf3`, `iperf2`, `http`, `echo-udp` or `echo-tcp`.
    pub name: String,
    /// Its port (none for ICMP).
    pub port: Option<u16>,
    /// `present`, `absent` or `failed`.
    pub state: ServiceState,
    /// What it answered, or why it counts as absent or failed.
    pub detail: String,
    /// The server's version when it said it (an iperf 2.1 server's reply); none before
    /// version 3.
    #[serde(default)]
    pub version: Option<String>,
}

/// What discovery found on a service's port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceState {
    /// It answers its protocol.
    Present,
    /// Nothing answers there (refused, unreachable, silent): skipped, not an error.
    Absent,
    /// Something answers but not as the protocol should (garbage, busy, a stall): an error.
    Failed,
}

impl ServiceState {
    /// The state in a line for people (`present`, `absent`, `failed`).
    pub fn word(self) -> &'static str {
        match self {
            ServiceState::Present => "present",
            ServiceState::Absent => "absent",
            ServiceState::Failed => "failed",
        }
    }
}

/// One measurement step.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepRecord {
    /// `icmp`, `echo-udp`, `echo-tcp`, `http`, `tcp`, `sweep`.
    pub name: String,
    /// `done`, `skipped` or `failed`.
    pub state: StepState,
    /// Why it was skipped, how it failed, or what it measured.
    pub detail: String,
    /// Its wall time.
    pub wall: Quantity,
}

/// How a step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepState {
    /// Measured.
    Done,
    /// Not run: its service is absent or failed, or the budget ran out.
    Skipped,
    /// Started and failed (what it measured before is kept).
    Failed,
}

fn one() -> u32 {
    1
}

fn iperf3() -> String {
    "iperf3".into()
}

/// One TCP test (iperf3, or iperf 2 since version 3).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TcpTest {
    /// `iperf3` or `iperf2` (`iperf3` in documents before version 3).
    #[serde(default = "iperf3")]
    pub iperf: String,
    /// How it ran: `iperf3`, `iperf3 -R`, `iperf 2`, `iperf 2 -R`, `iperf 2 -r (the device
    /// connected back)` (none before version 3).
    #[serde(default)]
    pub via: Option<String>,
    /// `to_device` (we send) or `from_device` (iperf3 -R; iperf 2 -R or -r).
    pub direction: String,
    /// Parallel streams (iperf3 -P).
    pub streams: u32,
    /// The round it ran in, from 1: each round runs every test once, so a busy moment of the
    /// host spoils one sample of each figure rather than every sample of one (1 in version 1
    /// documents).
    #[serde(default = "one")]
    pub round: u32,
    /// Test length.
    pub time: Quantity,
    /// What the sender sent.
    pub sent: Quantity,
    /// What the receiver got (goodput): the figure. iperf 2 to the device: our count of
    /// what we sent, which the server read to the end before it closed (it reports nothing
    /// back on TCP).
    pub received: Quantity,
    /// Sender retransmits, when the sender reports them.
    pub retransmits: Option<u64>,
    /// The rate in each quarter second of the test, bit/s, as this side counted it (what it
    /// sent, or with `-R` received): how much one test varied while it ran, the spread of a
    /// TCP figure (none in documents before linklab 0.1's slices).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slices: Vec<f64>,
}

/// This run against a baseline.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline file as given.
    pub file: String,
    /// When the baseline was measured, Unix seconds.
    pub baseline_started_unix_s: u64,
    /// The baseline's schema version (1: each of its figures is one measurement).
    #[serde(default = "one")]
    pub baseline_schema_version: u32,
    /// `--tolerance`, percent.
    pub tolerance_pct: f64,
    /// Round-trip medians must also be worse by more than this to count, milliseconds.
    pub rtt_slack_ms: f64,
    /// Every figure of either run.
    pub figures: Vec<Compared>,
}

/// One figure, old beside new.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Compared {
    /// The figure's id.
    pub id: String,
    /// For people.
    pub label: String,
    /// Its unit.
    pub unit: String,
    /// Which way is better.
    pub better: Better,
    /// The baseline's value (`None`: not in the baseline).
    pub old: Option<f64>,
    /// This run's value (`None`: not measured this time).
    pub new: Option<f64>,
    /// The baseline's range: lowest seen (version 1 comparisons: none).
    #[serde(default)]
    pub old_low: Option<f64>,
    /// The baseline's range: highest seen (`None`: unbounded, a knee with no confirmed limit).
    #[serde(default)]
    pub old_high: Option<f64>,
    /// This run's range: lowest seen.
    #[serde(default)]
    pub new_low: Option<f64>,
    /// This run's range: highest seen (`None`: unbounded).
    #[serde(default)]
    pub new_high: Option<f64>,
    /// `(new - old) / old`, percent.
    pub change_pct: Option<f64>,
    /// Worse than the baseline beyond the tolerance and both runs' ranges, or missing from
    /// this run because the device answered otherwise (`missing`).
    pub worse: bool,
    /// A baseline figure this run could not make because the device's answer changed (a 404,
    /// a failed download): the state and reason (none before version 3).
    #[serde(default)]
    pub missing: Option<String>,
}

impl ProbeReport {
    /// The figure `id`, if measured.
    pub fn figure(&self, id: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.id == id)
    }

    /// Why the figure `id` was not measured, if a step said.
    pub fn not_measured(&self, id: &str) -> Option<&NotMeasured> {
        self.not_measured.iter().find(|f| f.id == id)
    }

    /// The two sweeps with their direction's name.
    pub fn sweeps(&self) -> [(&'static str, Option<&SweepReport>); 2] {
        [
            ("to_device", self.sweep_to_device.as_ref()),
            ("from_device", self.sweep_from_device.as_ref()),
        ]
    }

    /// The three round-trip results with their name.
    pub fn round_trips(&self) -> [(&'static str, Option<&RttReport>); 3] {
        [
            ("icmp", self.icmp.as_ref()),
            ("echo_udp", self.echo_udp.as_ref()),
            ("echo_tcp", self.echo_tcp.as_ref()),
        ]
    }
}
