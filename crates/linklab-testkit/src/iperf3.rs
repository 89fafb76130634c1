//! iperf3's `-J` document, typed: the fields the tests read of a report from stock iperf3 or
//! from `linklab iperf -J` (which writes iperf3's schema). The schema is iperf3's, not ours
//! to pin, so these types ignore the fields they do not name; a field they name that the
//! report may lack is an `Option` (a sum's bytes, span and rate are always there), and the
//! accessors ([`End::sum`], [`Report::end_bytes`]) fail naming what is missing.

use serde::{Deserialize, Deserializer};

/// One `-J` report: `start`, `intervals`, `end`, and what `--title`, `--extra-data` and
/// `--get-server-output` add.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Report {
    /// What was set up.
    #[serde(default)]
    pub start: Start,
    /// One entry per `-i` interval.
    #[serde(default)]
    pub intervals: Vec<Interval>,
    /// The test's totals.
    #[serde(default)]
    pub end: End,
    /// `--title`.
    pub title: Option<String>,
    /// `--extra-data`.
    pub extra_data: Option<String>,
    /// The server's own report (`--get-server-output` with `-J`).
    pub server_output_json: Option<Box<Report>>,
    /// The server's text output (`--get-server-output` without `-J` on the server).
    pub server_output_text: Option<String>,
    /// Why the test failed, when it did.
    pub error: Option<String>,
}

/// `start`: connections and parameters.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Start {
    /// One entry per connected stream.
    #[serde(default)]
    pub connected: Vec<Connected>,
    /// The client the server accepted (a server's report).
    pub accepted_connection: Option<HostPort>,
    /// The test's parameters.
    pub test_start: Option<TestStart>,
}

/// `start.connected[]`: one stream's addresses.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Connected {
    /// The peer's address.
    pub remote_host: String,
}

/// A host and port.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct HostPort {
    /// The host's address.
    pub host: String,
}

/// `start.test_start`: the parameters of the test.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct TestStart {
    /// `TCP` or `UDP`.
    #[serde(default)]
    pub protocol: String,
    /// The block (datagram) size.
    #[serde(default)]
    pub blksize: u64,
    /// 1 for `-R`.
    #[serde(default)]
    pub reverse: u64,
}

/// `intervals[]`: one interval's sum.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Interval {
    /// The interval's totals over its streams.
    pub sum: Option<Sum>,
}

/// `end`: the totals.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct End {
    /// Per stream.
    pub streams: Option<Vec<EndStream>>,
    /// TCP: what the sender sent.
    pub sum_sent: Option<Sum>,
    /// TCP: what the receiver received.
    pub sum_received: Option<Sum>,
    /// UDP: the datagram totals.
    pub sum: Option<Sum>,
    /// `--bidir`: what the reverse direction's sender sent.
    pub sum_sent_bidir_reverse: Option<Sum>,
    /// `--bidir`: what the reverse direction's receiver received.
    pub sum_received_bidir_reverse: Option<Sum>,
    /// CPU use, measured on both ends.
    pub cpu_utilization_percent: Option<CpuUtilization>,
}

/// `end.streams[]`: one stream's totals.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct EndStream {
    /// TCP: the sender's side.
    pub sender: Option<Sum>,
    /// TCP: the receiver's side.
    pub receiver: Option<Sum>,
    /// UDP: the stream.
    pub udp: Option<Sum>,
}

/// A sum (or one stream's side): bytes over a span, and for UDP the datagrams.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Sum {
    /// Bytes moved.
    pub bytes: u64,
    /// The span's length.
    #[serde(deserialize_with = "null_as_default")]
    pub seconds: f64,
    /// The span's end, from the test's start.
    #[serde(deserialize_with = "null_as_default")]
    pub end: f64,
    /// The rate.
    #[serde(deserialize_with = "null_as_default")]
    pub bits_per_second: f64,
    /// TCP sender: retransmitted segments.
    pub retransmits: Option<u64>,
    /// UDP: datagrams.
    pub packets: Option<u64>,
    /// UDP: datagrams lost.
    pub lost_packets: Option<u64>,
    /// UDP: the share lost, in percent.
    pub lost_percent: Option<f64>,
    /// UDP: the receiver's jitter.
    pub jitter_ms: Option<f64>,
}

/// `end.cpu_utilization_percent`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct CpuUtilization {
    /// This end's CPU use.
    pub host_total: f64,
    /// The peer's, when it could tell.
    pub remote_total: Option<f64>,
}

impl End {
    /// The sum named `key` (`sum_sent`, `sum_received`, `sum`, or a `_bidir_reverse` one);
    /// panics when the report has none.
    pub fn sum(&self, key: &str) -> &Sum {
        let sum = match key {
            "sum_sent" => &self.sum_sent,
            "sum_received" => &self.sum_received,
            "sum" => &self.sum,
            "sum_sent_bidir_reverse" => &self.sum_sent_bidir_reverse,
            "sum_received_bidir_reverse" => &self.sum_received_bidir_reverse,
            _ => panic!("iperf3's end has no sum named {key}"),
        };
        sum.as_ref()
            .unwrap_or_else(|| panic!("no end.{key}: {self:?}"))
    }

    /// The number of streams in `end.streams` (none when it is absent).
    pub fn stream_count(&self) -> Option<usize> {
        self.streams.as_ref().map(Vec::len)
    }
}

impl Report {
    /// Reads a report from iperf3's `-J` output; panics when it is not one.
    pub fn parse(json: &[u8]) -> Report {
        serde_json::from_slice(json).unwrap_or_else(|e| {
            panic!(
                "not an iperf3 -J report ({e}): {}",
                String::from_utf8_lossy(json)
            )
        })
    }

    /// Bytes of the end's sum `key` (`sum_received`, `sum_sent`, ...); panics when absent.
    pub fn end_bytes(&self, key: &str) -> u64 {
        self.end.sum(key).bytes
    }
}

/// A number iperf3 may write as `null` (its JSON writer's NaN or infinity) read as 0.
fn null_as_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(
    d: D,
) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}
