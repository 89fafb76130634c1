//! The document of `linklab bench --json` (`"kind": "bench"`): the experiment of Niccle's MAC
//! write-up (pings, then HTTP downloads of the bench files) on the simulated link — the
//! configuration it ran with, every ping and download, and the counters of each side —
//! versioned by [`SCHEMA_VERSION`] and described by `schema/bench.schema.json` of this crate.
//!
//! Version 1 puts `kind` and `schema_version` in front of the members `bench` wrote before
//! it had a version. A file from before (no `kind`, read as version 0) still reads, and so
//! does a partial one: a member it lacks reads as its default (zero, empty, none), and a
//! block of counters it lacks as none.
//!
//! ```
//! use linklab_results::bench::BenchReport;
//! let text = r#"{"kind": "bench", "schema_version": 1, "profile": "ideal",
//!   "link": {"rate": "10M", "duplex": "half"}, "pings": [{"seq": 0, "rtt_ms": 1.5}],
//!   "downloads": [], "counters": {"rx_packets": 12}}"#;
//! let report: BenchReport = serde_json::from_str(text)?;
//! assert_eq!(report.pings[0].rtt_ms, Some(1.5));
//! assert_eq!(report.counters.get("rx_packets"), Some(12));
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::fmt;

use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The document's `kind`.
pub const KIND: &str = "bench";

/// The version of this document's schema.
pub const SCHEMA_VERSION: u32 = 1;

/// One `linklab bench` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BenchReport {
    /// Always `"bench"`: tells `linklab report` what this file is.
    pub kind: String,
    /// [`SCHEMA_VERSION`] of the writer; 0 for a file from before versions.
    pub schema_version: u32,
    /// The device profile (linklab-sim's name of it, e.g. `niccle-optimized`).
    pub profile: String,
    /// What each part of the device's work costs in time.
    pub cost_model: CostModel,
    /// The simulated link.
    pub link: Link,
    /// The impairments applied to every transmission, both ways.
    pub impairments: Impairments,
    /// The random seed: the same seed gives the same run.
    pub seed: u64,
    /// Full-size frames the device's receive queue holds.
    pub rx_frames: u64,
    /// The receive queue's capacity, bytes.
    pub rx_queue_bytes: u64,
    /// The TCP window the device advertised, bytes.
    pub tcp_window: u64,
    /// The window linklab-mac computes for this queue, bytes.
    pub tcp_window_auto: u64,
    /// `--tcp-window` as given (`auto`, or bytes).
    pub tcp_window_option: String,
    /// The theoretical TCP goodput limit of the link, payload bytes per second.
    pub limit_bytes_per_s: Option<f64>,
    /// Every ping, in order.
    pub pings: Vec<Ping>,
    /// Every download (or, with `--device-sends`, every send), in order.
    pub downloads: Vec<Download>,
    /// The counters after the transfers of each file.
    pub file_stats: Vec<FileStats>,
    /// The device MAC's counters at the end (linklab-mac's names: netdev's where it has one).
    pub counters: Counters,
    /// The simulated PHY's counters at the end.
    pub phy_counters: Option<PhyCounters>,
    /// The host NIC's counters at the end.
    pub host_counters: Option<HostCounters>,
    /// What the impairments did, each way.
    pub impairment_counters: Option<ImpairmentCounters>,
    /// Virtual time at the end, seconds.
    pub virtual_seconds: f64,
    /// Virtual time the device's CPU spent working, seconds.
    pub cpu_busy_seconds: f64,
    /// Main-loop passes the device ran.
    pub main_passes: u64,
    /// The device's send buffer with `--device-sends`, bytes.
    pub send_buffer: u64,
    /// Whether the device keeps the MAC's burst cap on its window (a counted profile's
    /// image does).
    pub burst_cap: bool,
    /// Events the simulator processed.
    pub events: u64,
    /// Why a watchdog stopped the run before the application finished; none when it did.
    pub stopped: Option<String>,
    /// `ok` when every transmission is accounted for by the counters, else which law broke.
    pub conservation: Option<String>,
    /// Frames written to `--pcap`; none without it.
    pub pcap_frames: Option<u64>,
}

impl Default for BenchReport {
    /// An empty document of kind `bench`, version 0 (what a file lacking its members reads as).
    fn default() -> BenchReport {
        BenchReport {
            kind: KIND.into(),
            schema_version: 0,
            profile: String::new(),
            cost_model: CostModel::default(),
            link: Link::default(),
            impairments: Impairments::default(),
            seed: 0,
            rx_frames: 0,
            rx_queue_bytes: 0,
            tcp_window: 0,
            tcp_window_auto: 0,
            tcp_window_option: String::new(),
            limit_bytes_per_s: None,
            pings: Vec::new(),
            downloads: Vec::new(),
            file_stats: Vec::new(),
            counters: Counters::default(),
            phy_counters: None,
            host_counters: None,
            impairment_counters: None,
            virtual_seconds: 0.0,
            cpu_busy_seconds: 0.0,
            main_passes: 0,
            send_buffer: 0,
            burst_cap: false,
            events: 0,
            stopped: None,
            conservation: None,
            pcap_frames: None,
        }
    }
}

/// The device's cost model: times in nanoseconds, per-byte costs in picoseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CostModel {
    /// How the PHY moves bits: `bit-banged` (the CPU samples the line) or `dma`.
    pub phy: String,
    /// From a transmission's first edge to the receive interrupt's first instruction.
    pub irq_latency_ns: u64,
    /// Receive interrupt after the frame's last bit: fixed part.
    pub isr_fixed_ns: u64,
    /// Receive interrupt: per captured byte.
    pub isr_per_byte_ps: u64,
    /// Main loop per received frame or timer poll: fixed part.
    pub main_fixed_ns: u64,
    /// Main loop per received frame on top of the fixed part.
    pub main_rx_frame_ns: u64,
    /// Main loop per received byte.
    pub main_per_byte_ps: u64,
    /// Per transmitted frame.
    pub tx_frame_ns: u64,
    /// Per transmitted byte.
    pub tx_per_byte_ps: u64,
    /// One main-loop pass takes in every frame committed when it starts.
    pub rx_batch: bool,
    /// When what the apps queue leaves: `main-loop` (the same pass) or `executor` (the next).
    pub shape: String,
}

/// The simulated link.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Link {
    /// The line rate's name: `10M`, `100M` or `1G`.
    pub rate: String,
    /// The line rate, bit/s.
    pub rate_bps: u64,
    /// `half` or `full`.
    pub duplex: String,
    /// One-way delay between the device and the host, ns.
    pub propagation_ns: u64,
    /// How frames cross the wire.
    pub phy: Wire,
}

/// How frames cross the simulated wire (`"model"` says which).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "WireMembers", into = "WireMembers")]
pub enum Wire {
    /// Byte images of the transmissions.
    #[default]
    Bytes,
    /// Manchester samples through linklab-phy10.
    Samples {
        /// Receiver samples per bit time.
        oversample: u8,
        /// Transmitter clock offset, ppm.
        drift_ppm: i32,
        /// Peak edge jitter, samples.
        jitter_samples: u8,
        /// Probability that a sample is flipped.
        noise: f64,
    },
}

/// [`Wire`]'s members as the document has them. Read as a plain object rather than an
/// internally tagged enum: serde reads those through a buffer, where serde_json's
/// arbitrary-precision numbers (a crate of the build may turn them on) are objects, not
/// numbers.
#[derive(Serialize, Deserialize)]
struct WireMembers {
    model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    oversample: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    drift_ppm: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    jitter_samples: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    noise: Option<f64>,
}

impl From<Wire> for WireMembers {
    fn from(wire: Wire) -> WireMembers {
        match wire {
            Wire::Bytes => WireMembers {
                model: "bytes".into(),
                oversample: None,
                drift_ppm: None,
                jitter_samples: None,
                noise: None,
            },
            Wire::Samples {
                oversample,
                drift_ppm,
                jitter_samples,
                noise,
            } => WireMembers {
                model: "samples".into(),
                oversample: Some(oversample),
                drift_ppm: Some(drift_ppm),
                jitter_samples: Some(jitter_samples),
                noise: Some(noise),
            },
        }
    }
}

impl TryFrom<WireMembers> for Wire {
    type Error = String;

    fn try_from(m: WireMembers) -> Result<Wire, String> {
        match (
            m.model.as_str(),
            m.oversample,
            m.drift_ppm,
            m.jitter_samples,
            m.noise,
        ) {
            ("bytes", ..) => Ok(Wire::Bytes),
            ("samples", Some(oversample), Some(drift_ppm), Some(jitter_samples), Some(noise)) => {
                Ok(Wire::Samples {
                    oversample,
                    drift_ppm,
                    jitter_samples,
                    noise,
                })
            }
            ("samples", ..) => {
                Err("a sample wire has oversample, drift_ppm, jitter_samples and noise".into())
            }
            (other, ..) => Err(format!("no wire model {other:?} (bytes or samples)")),
        }
    }
}

/// The impairments applied to every transmission, both ways.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Impairments {
    /// Probability that a transmission is lost.
    pub loss: f64,
    /// Bit error rate.
    pub ber: f64,
    /// Probability that a transmission is cut short.
    pub truncate: f64,
}

/// One ping.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Ping {
    /// Sequence number.
    pub seq: u16,
    /// Round trip, ms; none when no reply came within the interval.
    pub rtt_ms: Option<f64>,
}

/// One download (or send).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Download {
    /// The file's URL path.
    pub path: String,
    /// Response bytes received, head and body.
    pub bytes: u64,
    /// Body bytes.
    pub body_bytes: u64,
    /// From connecting to the last body byte, seconds of virtual time.
    pub seconds: f64,
    /// `bytes / seconds`.
    pub bytes_per_s: f64,
    /// CRC32 of the body.
    pub crc32: Option<u32>,
    /// CRC32 of the file as served.
    pub expected_crc32: Option<u32>,
    /// HTTP status (0 when it failed before a status line).
    pub status: u16,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

impl Download {
    /// Whether the body's CRC32 is the one the file has (false when either is missing).
    pub fn crc_ok(&self) -> bool {
        self.crc32.is_some() && self.crc32 == self.expected_crc32
    }
}

/// The counters after the transfers of one file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FileStats {
    /// The file's URL path.
    pub path: String,
    /// The simulated PHY's counters.
    pub phy: PhyCounters,
    /// The device MAC's counters.
    pub counters: Counters,
}

/// Named counts in their order: a JSON object of unsigned integers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counters(pub Vec<(String, u64)>);

impl Counters {
    /// The count named `name`.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.0.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }
}

impl Serialize for Counters {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, count) in &self.0 {
            map.serialize_entry(name, count)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Counters {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Counters, D::Error> {
        /// Reads the object's entries in their order.
        struct InOrder;
        impl<'de> Visitor<'de> for InOrder {
            type Value = Counters;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of unsigned integer counts")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Counters, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(entry) = map.next_entry::<String, u64>()? {
                    entries.push(entry);
                }
                Ok(Counters(entries))
            }
        }
        deserializer.deserialize_map(InOrder)
    }
}

/// The simulated PHY's counters (the "PHY TX/RX" lines of Niccle's MAC write-up).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PhyCounters {
    /// Device transmissions.
    pub tx_packets: u64,
    /// Device link test pulses sent.
    pub tx_ltps: u64,
    /// Host transmissions that reached the device's PHY.
    pub rx_packets: u64,
    /// ... of which the interrupt entered after the preamble.
    pub rx_truncated: u64,
    /// Link test pulses that woke the receive interrupt.
    pub rx_ltps: u64,
    /// Transmissions lost because the queue had no room for a grant.
    pub rx_queue_full: u64,
    /// Byte wire: captures delivered at a bit offset other than 0.
    pub rx_bit_offset: u64,
    /// Byte wire: captures delivered with inverted polarity.
    pub rx_inverted: u64,
    /// Sample wire: host transmissions the device decoded as no frame.
    pub rx_sample_errors: u64,
    /// Sample wire: host transmissions the device decoded cut short.
    pub rx_sample_truncated: u64,
    /// Sample wire: device transmissions the host decoded as no frame.
    pub tx_sample_errors: u64,
    /// Sample wire: device transmissions the host decoded cut short.
    pub tx_sample_truncated: u64,
    /// Transmissions the interrupt entered too late to see at all.
    pub rx_idle_line: u64,
    /// Empty wake-ups that found no grant to cancel (the queue was full).
    pub rx_empty_without_grant: u64,
}

impl PhyCounters {
    /// Every count with its name, in the document's order.
    pub fn fields(&self) -> [(&'static str, u64); 14] {
        [
            ("tx_packets", self.tx_packets),
            ("tx_ltps", self.tx_ltps),
            ("rx_packets", self.rx_packets),
            ("rx_truncated", self.rx_truncated),
            ("rx_ltps", self.rx_ltps),
            ("rx_queue_full", self.rx_queue_full),
            ("rx_bit_offset", self.rx_bit_offset),
            ("rx_inverted", self.rx_inverted),
            ("rx_sample_errors", self.rx_sample_errors),
            ("rx_sample_truncated", self.rx_sample_truncated),
            ("tx_sample_errors", self.tx_sample_errors),
            ("tx_sample_truncated", self.tx_sample_truncated),
            ("rx_idle_line", self.rx_idle_line),
            ("rx_empty_without_grant", self.rx_empty_without_grant),
        ]
    }
}

/// What the host's NIC saw.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct HostCounters {
    /// Frames received with a good FCS.
    pub rx_packets: u64,
    /// No SFD found.
    pub rx_frame_errors: u64,
    /// FCS mismatch.
    pub rx_crc_errors: u64,
    /// Too short or too long.
    pub rx_length_errors: u64,
    /// Frames sent.
    pub tx_packets: u64,
    /// HTTP responses completed.
    pub http_responses: u64,
}

impl HostCounters {
    /// Every count with its name, in the document's order.
    pub fn fields(&self) -> [(&'static str, u64); 6] {
        [
            ("rx_packets", self.rx_packets),
            ("rx_frame_errors", self.rx_frame_errors),
            ("rx_crc_errors", self.rx_crc_errors),
            ("rx_length_errors", self.rx_length_errors),
            ("tx_packets", self.tx_packets),
            ("http_responses", self.http_responses),
        ]
    }
}

/// What the impairments did, each way.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ImpairmentCounters {
    /// Host to device.
    pub to_device: Impaired,
    /// Device to host.
    pub to_host: Impaired,
}

/// What the impairments did to the transmissions one way.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Impaired {
    /// Transmissions put on the wire.
    pub transmissions: u64,
    /// Lost entirely.
    pub lost: u64,
    /// With at least one flipped bit.
    pub corrupted: u64,
    /// Bits flipped.
    pub bits_flipped: u64,
    /// Cut short.
    pub truncated: u64,
}

impl Impaired {
    /// Every count with its name, in the document's order.
    pub fn fields(&self) -> [(&'static str, u64); 5] {
        [
            ("transmissions", self.transmissions),
            ("lost", self.lost),
            ("corrupted", self.corrupted),
            ("bits_flipped", self.bits_flipped),
            ("truncated", self.truncated),
        ]
    }
}
