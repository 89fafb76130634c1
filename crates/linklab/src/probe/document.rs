//! The JSON document of one `linklab probe` run (`"kind": "probe"`), versioned by
//! [`SCHEMA_VERSION`] and described by `crates/linklab/schema/probe.schema.json`.
//!
//! New figures carry their unit beside their value (`{"value": 94.1e6, "unit": "bit/s"}`);
//! the embedded `sweep` and `rtt` results are the documents of those subcommands, whose field
//! names end in their unit (`_bps`, `_us`, `_ms`, `_pct`), so `linklab report` renders them
//! with the same sections.

use serde::{Deserialize, Serialize};

use crate::rtt::RttReport;
use crate::sweep::SweepReport;

/// The version of this document's schema; a baseline of another version is refused.
pub const SCHEMA_VERSION: u32 = 1;

/// A number and its unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quantity {
    /// The number.
    pub value: f64,
    /// Its unit: `s`, `bit/s`, `bytes`, `us`.
    pub unit: String,
}

impl Quantity {
    /// `value` in `unit`.
    pub fn new(value: f64, unit: &str) -> Quantity {
        Quantity {
            value,
            unit: unit.into(),
        }
    }
}

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
}

/// A service and what discovery found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Service {
    /// `icmp`, `iperf3`, `http`, `echo-udp` or `echo-tcp`.
    pub name: String,
    /// Its port (none for ICMP).
    pub port: Option<u16>,
    /// `present`, `absent` or `failed`.
    pub state: ServiceState,
    /// What it answered, or why it counts as absent or failed.
    pub detail: String,
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

/// Which way a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Throughput: lower is worse.
    Higher,
    /// Round-trip time: higher is worse.
    Lower,
}

/// A headline figure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Figure {
    /// Stable name, e.g. `tcp.to_device`, `udp.knee.from_device`, `icmp.rtt_p50.64B`.
    pub id: String,
    /// For people.
    pub label: String,
    /// The figure.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// Which way is better.
    pub better: Better,
}

impl Figure {
    /// A figure in bit/s (throughput: higher is better).
    pub fn rate(id: String, label: String, bps: f64) -> Figure {
        Figure {
            id,
            label,
            value: bps,
            unit: "bit/s".into(),
            better: Better::Higher,
        }
    }

    /// A round-trip time in µs (lower is better).
    pub fn round_trip(id: String, label: String, us: f64) -> Figure {
        Figure {
            id,
            label,
            value: us,
            unit: "us".into(),
            better: Better::Lower,
        }
    }
}

/// One HTTP download.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HttpDownload {
    /// The path requested.
    pub path: String,
    /// The response status.
    pub status: u16,
    /// Body bytes received.
    pub body: Quantity,
    /// Request sent to last byte.
    pub time: Quantity,
    /// Body bits over that time.
    pub rate: Quantity,
    /// False when the time budget cut it short.
    pub complete: bool,
    /// For linklab's bench files downloaded whole: whether the CRC32 is right.
    pub crc_ok: Option<bool>,
}

/// One iperf3 TCP test.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TcpTest {
    /// `to_device` (we send) or `from_device` (iperf3 -R).
    pub direction: String,
    /// Parallel streams (iperf3 -P).
    pub streams: u32,
    /// Test length.
    pub time: Quantity,
    /// What the sender sent.
    pub sent: Quantity,
    /// What the receiver got (goodput): the figure.
    pub received: Quantity,
    /// Sender retransmits, when the sender reports them.
    pub retransmits: Option<u64>,
}

/// This run against a baseline.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    /// The baseline file as given.
    pub file: String,
    /// When the baseline was measured, Unix seconds.
    pub baseline_started_unix_s: u64,
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
    /// `(new - old) / old`, percent.
    pub change_pct: Option<f64>,
    /// Worse than the baseline by more than the tolerance.
    pub worse: bool,
}

impl ProbeReport {
    /// The figure `id`, if measured.
    pub fn figure(&self, id: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.id == id)
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
