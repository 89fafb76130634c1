//! The JSON documents of the control connection — test parameters (client to server) and
//! results (both ways) — read and written with serde-json-core into caller buffers.
//!
//! Reading is tolerant like iperf3's cJSON lookups: unknown keys are ignored, numbers may be
//! integers or floats, flags count when present. Nesting deeper than [`MAX_DEPTH`] is
//! refused before parsing so hostile input cannot exhaust a device's stack.

use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};

use super::wire::MAX_STREAMS;

/// Deepest object/array nesting accepted (iperf3 documents use 3).
pub const MAX_DEPTH: usize = 6;

/// Why a JSON document was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum JsonError {
    /// Not valid JSON for the expected shape (or nested too deeply).
    Malformed,
    /// A field iperf3 requires is missing.
    MissingField,
    /// More streams than we support.
    TooManyStreams,
    /// The output buffer is too small.
    BufferTooSmall,
}

/// The transport of the data streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Protocol {
    /// TCP streams (iperf3's default).
    #[default]
    Tcp,
    /// UDP streams with the iperf3 datagram header.
    Udp,
}

/// Test parameters as the client announces them (iperf3 `send_parameters`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// TCP or UDP.
    pub protocol: Protocol,
    /// Seconds at the start whose data is not counted (`-O`).
    pub omit_s: u32,
    /// Test length in seconds (`-t`); 0 when `-n` or `-k` ends the test.
    pub duration_s: u32,
    /// Bytes to send (`-n`), 0 if unused.
    pub bytes: u64,
    /// Blocks to send (`-k`), 0 if unused.
    pub blocks: u64,
    /// Parallel streams per direction (`-P`).
    pub parallel: u8,
    /// Server sends (`-R`).
    pub reverse: bool,
    /// Both send (`--bidir`).
    pub bidirectional: bool,
    /// Block length (`-l`): bytes per write (TCP) or datagram size (UDP).
    pub len: u32,
    /// Target rate per stream in bit/s (`-b`), 0 = unlimited.
    pub rate_bps: u64,
    /// Pacing timer in microseconds.
    pub pacing_timer_us: u32,
    /// 64-bit UDP sequence numbers (`--udp-counters-64bit`).
    pub udp_counters_64bit: bool,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            protocol: Protocol::Tcp,
            omit_s: 0,
            duration_s: 10,
            bytes: 0,
            blocks: 0,
            parallel: 1,
            reverse: false,
            bidirectional: false,
            len: super::wire::DEFAULT_TCP_BLOCK_LEN as u32,
            rate_bps: 0,
            pacing_timer_us: 1000,
            udp_counters_64bit: false,
        }
    }
}

#[derive(Deserialize)]
struct ParamsIn {
    tcp: Option<IgnoredAny>,
    udp: Option<IgnoredAny>,
    omit: Option<f64>,
    time: Option<f64>,
    num: Option<f64>,
    blockcount: Option<f64>,
    parallel: Option<f64>,
    reverse: Option<IgnoredAny>,
    bidirectional: Option<IgnoredAny>,
    len: Option<f64>,
    bandwidth: Option<f64>,
    pacing_timer: Option<f64>,
    udp_counters_64bit: Option<IgnoredAny>,
}

#[derive(Serialize)]
struct ParamsOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    tcp: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    udp: Option<bool>,
    omit: u32,
    time: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    num: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blockcount: Option<u64>,
    parallel: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    reverse: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bidirectional: Option<bool>,
    len: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    bandwidth: Option<u64>,
    pacing_timer: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    udp_counters_64bit: Option<u8>,
    client_version: &'a str,
}

/// Converts a JSON number to an integer in `0..=max`, saturating; NaN becomes 0.
fn to_uint(v: f64, max: u64) -> u64 {
    if v.is_nan() || v <= 0.0 {
        0
    } else if v >= max as f64 {
        max
    } else {
        v as u64
    }
}

/// Walks the brackets of `json` that stand outside strings: `f(byte, depth)` for each
/// `{`/`[` with the depth it opens. Returns false at a closer without an opener.
fn walk_brackets(json: &[u8], mut f: impl FnMut(u8, usize)) -> bool {
    let (mut depth, mut in_str, mut esc) = (0usize, false, false);
    for &b in json {
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => in_str = true,
            b'{' | b'[' => {
                depth += 1;
                f(b, depth);
            }
            b'}' | b']' => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => {}
        }
    }
    true
}

/// Largest nesting of `{`/`[` outside strings; `usize::MAX` on unbalanced input.
pub fn nesting_depth(json: &[u8]) -> usize {
    let mut max = 0;
    if walk_brackets(json, |_, depth| max = max.max(depth)) {
        max
    } else {
        usize::MAX
    }
}

fn parse<'de, T: Deserialize<'de>>(json: &'de [u8]) -> Result<T, JsonError> {
    if nesting_depth(json) > MAX_DEPTH {
        return Err(JsonError::Malformed);
    }
    serde_json_core::from_slice::<T>(json)
        .map(|(v, _)| v)
        .map_err(|_| JsonError::Malformed)
}

impl Params {
    /// Reads the client's parameter JSON the way iperf3's `get_parameters` does.
    pub fn from_json(json: &[u8]) -> Result<Self, JsonError> {
        let p: ParamsIn = parse(json)?;
        let d = Params::default();
        let protocol = if p.udp.is_some() {
            Protocol::Udp
        } else {
            let _ = p.tcp;
            Protocol::Tcp
        };
        Ok(Self {
            protocol,
            omit_s: p.omit.map_or(0, |v| to_uint(v, 3600) as u32),
            duration_s: p.time.map_or(d.duration_s, |v| to_uint(v, 86_400) as u32),
            bytes: p.num.map_or(0, |v| to_uint(v, u64::MAX)),
            blocks: p.blockcount.map_or(0, |v| to_uint(v, u64::MAX)),
            parallel: p.parallel.map_or(1, |v| to_uint(v, 255) as u8),
            reverse: p.reverse.is_some(),
            bidirectional: p.bidirectional.is_some(),
            len: p.len.map_or(d.len, |v| to_uint(v, u32::MAX as u64) as u32),
            rate_bps: p.bandwidth.map_or(0, |v| to_uint(v, u64::MAX)),
            pacing_timer_us: p
                .pacing_timer
                .map_or(1000, |v| to_uint(v, 1_000_000) as u32),
            udp_counters_64bit: p.udp_counters_64bit.is_some(),
        })
    }

    /// Writes the parameter JSON a 3.12 client sends; returns its length.
    pub fn to_json(&self, out: &mut [u8]) -> Result<usize, JsonError> {
        let tcp = self.protocol == Protocol::Tcp;
        let doc = ParamsOut {
            tcp: tcp.then_some(true),
            udp: (!tcp).then_some(true),
            omit: self.omit_s,
            time: self.duration_s,
            num: (self.bytes != 0).then_some(self.bytes),
            blockcount: (self.blocks != 0).then_some(self.blocks),
            parallel: self.parallel,
            reverse: self.reverse.then_some(true),
            bidirectional: self.bidirectional.then_some(true),
            len: self.len,
            bandwidth: (self.rate_bps != 0).then_some(self.rate_bps),
            pacing_timer: self.pacing_timer_us,
            udp_counters_64bit: self.udp_counters_64bit.then_some(1),
            client_version: "3.12",
        };
        serde_json_core::to_slice(&doc, out).map_err(|_| JsonError::BufferTooSmall)
    }
}

/// One stream's entry in a results document.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StreamResult {
    /// Stream id (1, 3, 4, 5, ... as iperf3 numbers them).
    pub id: u32,
    /// Bytes this side sent (sender) or received (receiver), omitted data excluded.
    pub bytes: u64,
    /// TCP retransmits, -1 if unknown or receiver.
    pub retransmits: i64,
    /// UDP jitter in seconds.
    pub jitter: f64,
    /// UDP packets lost (iperf3 `cnt_error`).
    pub errors: u64,
    /// Lost packets counted while omitting.
    pub omitted_errors: u64,
    /// Highest UDP sequence number seen (receiver) or sent (sender).
    pub packets: u64,
    /// Packets counted while omitting.
    pub omitted_packets: u64,
    /// Seconds from test start to the stream's start (always 0).
    pub start_time: f64,
    /// Seconds from the stream's start to its end.
    pub end_time: f64,
}

/// A results document (iperf3 `send_results` / `get_results`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Results {
    /// CPU use, percent (total, user, system).
    pub cpu_util: [f64; 3],
    /// 1 if the sender reports TCP retransmits, 0 if not, -1 if this side only received.
    pub sender_has_retransmits: i64,
    /// Per-stream entries.
    pub streams: heapless::Vec<StreamResult, MAX_STREAMS>,
}

#[derive(Deserialize)]
struct StreamIn {
    id: Option<f64>,
    bytes: Option<f64>,
    retransmits: Option<f64>,
    jitter: Option<f64>,
    errors: Option<f64>,
    omitted_errors: Option<f64>,
    packets: Option<f64>,
    omitted_packets: Option<f64>,
    start_time: Option<f64>,
    end_time: Option<f64>,
}

#[derive(Deserialize)]
struct ResultsIn {
    cpu_util_total: Option<f64>,
    cpu_util_user: Option<f64>,
    cpu_util_system: Option<f64>,
    sender_has_retransmits: Option<f64>,
    streams: Option<heapless::Vec<StreamIn, MAX_STREAMS>>,
}

#[derive(Serialize)]
struct StreamOut {
    id: u32,
    bytes: u64,
    retransmits: i64,
    jitter: f64,
    errors: u64,
    omitted_errors: u64,
    packets: u64,
    omitted_packets: u64,
    start_time: f64,
    end_time: f64,
}

#[derive(Serialize)]
struct ResultsOut<'a> {
    cpu_util_total: f64,
    cpu_util_user: f64,
    cpu_util_system: f64,
    sender_has_retransmits: i64,
    streams: &'a [StreamOut],
}

fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

impl Results {
    /// Reads a results document; fields iperf3 requires must be present.
    pub fn from_json(json: &[u8]) -> Result<Self, JsonError> {
        let r: ResultsIn = match parse(json) {
            Ok(r) => r,
            Err(_)
                if nesting_depth(json) <= MAX_DEPTH && count_stream_objects(json) > MAX_STREAMS =>
            {
                return Err(JsonError::TooManyStreams)
            }
            Err(e) => return Err(e),
        };
        let (Some(t), Some(u), Some(s), Some(h), Some(streams)) = (
            r.cpu_util_total,
            r.cpu_util_user,
            r.cpu_util_system,
            r.sender_has_retransmits,
            r.streams,
        ) else {
            return Err(JsonError::MissingField);
        };
        let mut out = Results {
            cpu_util: [finite(t), finite(u), finite(s)],
            sender_has_retransmits: finite(h) as i64,
            streams: heapless::Vec::new(),
        };
        for st in streams.iter() {
            let (Some(id), Some(bytes), Some(retr), Some(jitter), Some(errors), Some(packets)) = (
                st.id,
                st.bytes,
                st.retransmits,
                st.jitter,
                st.errors,
                st.packets,
            ) else {
                return Err(JsonError::MissingField);
            };
            let entry = StreamResult {
                id: to_uint(id, u32::MAX as u64) as u32,
                bytes: to_uint(bytes, u64::MAX),
                retransmits: if retr.is_finite() { retr as i64 } else { -1 },
                jitter: finite(jitter).max(0.0),
                errors: to_uint(errors, u64::MAX),
                omitted_errors: st.omitted_errors.map_or(0, |v| to_uint(v, u64::MAX)),
                packets: to_uint(packets, u64::MAX),
                omitted_packets: st.omitted_packets.map_or(0, |v| to_uint(v, u64::MAX)),
                start_time: st.start_time.map_or(0.0, finite),
                end_time: st.end_time.map_or(0.0, finite),
            };
            out.streams
                .push(entry)
                .map_err(|_| JsonError::TooManyStreams)?;
        }
        Ok(out)
    }

    /// Writes the results document; returns its length.
    pub fn to_json(&self, out: &mut [u8]) -> Result<usize, JsonError> {
        let mut streams: heapless::Vec<StreamOut, MAX_STREAMS> = heapless::Vec::new();
        for s in &self.streams {
            let _ = streams.push(StreamOut {
                id: s.id,
                bytes: s.bytes,
                retransmits: s.retransmits,
                jitter: finite(s.jitter),
                errors: s.errors,
                omitted_errors: s.omitted_errors,
                packets: s.packets,
                omitted_packets: s.omitted_packets,
                start_time: finite(s.start_time),
                end_time: finite(s.end_time),
            });
        }
        let doc = ResultsOut {
            cpu_util_total: finite(self.cpu_util[0]),
            cpu_util_user: finite(self.cpu_util[1]),
            cpu_util_system: finite(self.cpu_util[2]),
            sender_has_retransmits: self.sender_has_retransmits,
            streams: &streams,
        };
        serde_json_core::to_slice(&doc, out).map_err(|_| JsonError::BufferTooSmall)
    }
}

/// Counts `{` at depth 2 inside the top-level object (the stream entries), for a precise
/// error when a peer reports more streams than we hold. Callers check balance first
/// ([`nesting_depth`]).
fn count_stream_objects(json: &[u8]) -> usize {
    let mut n = 0;
    walk_brackets(json, |b, depth| {
        if b == b'{' && depth == 3 {
            n += 1;
        }
    });
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_from_iperf3_client() {
        let j = br#"{"tcp":true,"omit":0,"time":2,"num":10485760,"parallel":4,"reverse":true,"len":131072,"pacing_timer":1000,"client_version":"3.12"}"#;
        let p = Params::from_json(j).unwrap();
        assert_eq!(p.protocol, Protocol::Tcp);
        assert_eq!(
            (p.duration_s, p.bytes, p.parallel, p.reverse, p.len),
            (2, 10485760, 4, true, 131072)
        );
        let j = br#"{"udp":true,"omit":1,"time":1,"parallel":1,"bidirectional":true,"len":1448,"bandwidth":5e7,"pacing_timer":1000,"udp_counters_64bit":1,"title":"a\"b","extra":{"x":[1,2]}}"#;
        let p = Params::from_json(j).unwrap();
        assert_eq!(p.protocol, Protocol::Udp);
        assert!(p.bidirectional && p.udp_counters_64bit);
        assert_eq!((p.rate_bps, p.omit_s, p.len), (50_000_000, 1, 1448));
    }

    #[test]
    fn params_roundtrip() {
        let p = Params {
            protocol: Protocol::Udp,
            bytes: 7,
            rate_bps: 123,
            reverse: true,
            ..Params::default()
        };
        let mut b = [0u8; 512];
        let n = p.to_json(&mut b).unwrap();
        assert_eq!(Params::from_json(&b[..n]).unwrap(), p);
    }

    #[test]
    fn results_roundtrip_and_cjson_shape() {
        let j = br#"{"cpu_util_total":1.5,"cpu_util_user":0.5,"cpu_util_system":1,"sender_has_retransmits":0,"congestion_used":"cubic","streams":[{"id":1,"bytes":1.2e9,"retransmits":-1,"jitter":1.5e-05,"errors":3,"packets":100,"start_time":0,"end_time":2.000104}]}"#;
        let r = Results::from_json(j).unwrap();
        assert_eq!(r.streams.len(), 1);
        assert_eq!(r.streams[0].bytes, 1_200_000_000);
        assert_eq!(r.streams[0].errors, 3);
        let mut b = [0u8; 1024];
        let n = r.to_json(&mut b).unwrap();
        assert_eq!(Results::from_json(&b[..n]).unwrap(), r);
    }

    #[test]
    fn hostile_documents_are_refused() {
        assert_eq!(Params::from_json(b"{\"tcp\":"), Err(JsonError::Malformed));
        assert_eq!(
            Params::from_json(b"[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]"),
            Err(JsonError::Malformed)
        );
        assert_eq!(Params::from_json(b"}}}"), Err(JsonError::Malformed));
        assert_eq!(
            Results::from_json(br#"{"streams":[]}"#),
            Err(JsonError::MissingField)
        );
        let mut big = heapless::Vec::<u8, 4096>::new();
        let _ = big.extend_from_slice(br#"{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":0,"streams":["#);
        for i in 0..17 {
            if i > 0 {
                let _ = big.push(b',');
            }
            let _ = big.extend_from_slice(
                br#"{"id":1,"bytes":1,"retransmits":0,"jitter":0,"errors":0,"packets":0}"#,
            );
        }
        let _ = big.extend_from_slice(b"]}");
        assert_eq!(Results::from_json(&big), Err(JsonError::TooManyStreams));
    }
}
