//! `linklab emu blast`'s document (`"kind": "emu-blast"`): the packet blaster's frames per
//! second and instructions per frame, raw and through the stack, and the frames with wrong
//! checksums. Schema: `schema/emu-blast.schema.json`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::document::unversioned;

/// The document's kind.
pub const KIND: &str = "emu-blast";
/// The version of the shape written now.
pub const SCHEMA_VERSION: u32 = 1;

/// The blasts and the checksum probes of one boot.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlastReport {
    /// [`KIND`].
    #[serde(default = "kind")]
    pub kind: String,
    /// [`SCHEMA_VERSION`] of the writer (0: written before documents carried one).
    #[serde(default = "unversioned")]
    pub schema_version: u32,
    /// The board.
    pub board: String,
    /// Its instruction set.
    pub isa: String,
    /// QEMU's `-icount` options.
    pub icount: String,
    /// What the device's work counters count.
    pub work_unit: Option<String>,
    /// Milliseconds of the device's clock each blast lasted.
    pub duration_ms: u16,
    /// Per payload size: raw against the stack (written as `payload_N` members).
    #[serde(serialize_with = "ceiling_out", deserialize_with = "ceiling_in")]
    pub ceiling: Vec<Ceiling>,
    /// Every blast.
    pub runs: Vec<BlastRun>,
    /// Bad requests sent, which the device must refuse.
    pub requests_refused_sent: u64,
    /// Refusals the device counted.
    pub requests_refused_counted: u64,
    /// Blasts the device counted.
    pub blasts_counted: u64,
    /// The frames with wrong checksums.
    pub bad_checksums: BadChecksums,
}

fn kind() -> String {
    KIND.into()
}

/// One payload size, raw against the stack.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// The payload's bytes (the member's name: `payload_N`).
    #[serde(skip)]
    pub payload_bytes: u16,
    /// Instructions per frame handed straight to the driver.
    pub blast_instr_per_frame: f64,
    /// Instructions per frame through smoltcp's UDP socket.
    pub stack_udp_instr_per_frame: f64,
    /// The second over the first.
    pub stack_over_raw: f64,
    /// Raw frames per second of the device's clock.
    pub blast_frames_per_s: f64,
    /// UDP frames per second of the device's clock.
    pub stack_udp_frames_per_s: f64,
}

fn ceiling_out<S: Serializer>(ceiling: &[Ceiling], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut map = s.serialize_map(Some(ceiling.len()))?;
    for c in ceiling {
        map.serialize_entry(&format!("payload_{}", c.payload_bytes), c)?;
    }
    map.end()
}

fn ceiling_in<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Ceiling>, D::Error> {
    let map = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
    map.into_iter()
        .map(|(key, value)| {
            let payload_bytes = key
                .strip_prefix("payload_")
                .and_then(|n| n.parse().ok())
                .ok_or_else(|| serde::de::Error::custom(format!("ceiling: member {key}")))?;
            let c: Ceiling = serde_json::from_value(value).map_err(serde::de::Error::custom)?;
            Ok(Ceiling { payload_bytes, ..c })
        })
        .collect()
}

/// One blast: what the device sent and what arrived.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlastRun {
    /// `raw` (straight to the driver) or `stack_udp`.
    pub way: String,
    /// The payload's bytes.
    pub payload_bytes: u16,
    /// Frames the device handed to its driver.
    pub frames_to_driver: u32,
    /// Frames the driver dropped.
    pub driver_drops: u32,
    /// Datagrams the host's UDP layer dropped.
    pub host_drops: u64,
    /// Datagrams that arrived intact, each once.
    pub received: u64,
    /// Payloads with a broken pattern.
    pub pattern_errors: u64,
    /// Payloads that arrived twice.
    pub duplicates: u64,
    /// The blast's length in the device's clock, ns.
    pub device_ns: u64,
    /// The device's work over the blast.
    pub work: u64,
    /// Its work sending.
    pub send_work: u64,
    /// Frames arrived per second of the device's clock.
    pub frames_per_s: f64,
    /// Sending work per frame.
    pub instr_per_frame: f64,
    /// All work per frame.
    pub busy_instr_per_frame: f64,
}

/// The frames with a wrong checksum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BadChecksums {
    /// Frames with a wrong checksum sent.
    pub sent_wrong: u64,
    /// Checksum errors the device counted.
    pub counted: u64,
    /// Each case.
    pub cases: Vec<ChecksumCase>,
}

/// One wrong checksum, and its right twin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChecksumCase {
    /// Which checksum was spoiled.
    pub case: String,
    /// The device answered the wrong frame (it must not).
    pub wrong_answered: bool,
    /// The device answered the right one (it must).
    pub right_answered: bool,
}
