//! The results document (iperf3 `send_results` / `get_results`): CPU use, whether the
//! sender counts retransmits, the congestion control in use, and one entry per stream.

use super::number::Fixed;
use super::reader::Reader;
use super::MAX_DEPTH;
use super::{
    count_stream_objects, finite, nesting_depth, parse_object, Decimal, JsonError, Reported,
};
use crate::iperf::wire::MAX_STREAMS;

/// A TCP congestion control algorithm's name (Linux `TCP_CA_NAME_MAX` is 16 bytes).
pub type CongestionName = heapless::String<16>;

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
    /// Microseconds from test start to the stream's start (always 0; iperf3's
    /// `start_time`, in seconds on the wire).
    pub start_us: u64,
    /// Microseconds from the stream's start to its end (iperf3's `end_time`).
    pub end_us: u64,
}

/// A results document (iperf3 `send_results` / `get_results`), with at most `S` stream
/// entries (a document with more is refused as too long).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Results<const S: usize = MAX_STREAMS> {
    /// CPU use, percent (total, user, system); `None` where it cannot be known (written as
    /// `null`, which stock iperf3 reads as 0).
    pub cpu_util: Option<[f64; 3]>,
    /// 1 if the sender reports TCP retransmits, 0 if not, -1 if this side only received.
    pub sender_has_retransmits: i64,
    /// The TCP congestion control algorithm this side's streams use, if known.
    pub congestion_used: Option<CongestionName>,
    /// Per-stream entries.
    pub streams: heapless::Vec<StreamResult, S>,
}

/// A congestion control name as sent (raw, escapes not decoded, as serde-json-core lent
/// it); longer names than Linux allows are cut.
fn congestion_name(raw: &[u8]) -> Result<CongestionName, JsonError> {
    let text = core::str::from_utf8(raw).map_err(|_| JsonError::Malformed)?;
    let mut name = CongestionName::new();
    for c in text.chars() {
        if name.push(c).is_err() {
            break;
        }
    }
    Ok(name)
}

/// One stream entry as read.
#[derive(Clone, Copy, Default)]
struct StreamIn {
    id: Option<Decimal>,
    bytes: Option<Decimal>,
    retransmits: Option<Decimal>,
    jitter: Option<Decimal>,
    errors: Option<Decimal>,
    omitted_errors: Option<Decimal>,
    packets: Option<Decimal>,
    omitted_packets: Option<Decimal>,
    start_time: Option<Decimal>,
    end_time: Option<Decimal>,
}

impl StreamIn {
    fn read(r: &mut Reader<'_>) -> Result<StreamIn, JsonError> {
        let mut st = StreamIn::default();
        r.object(|key, r| {
            let field = match key {
                b"id" => &mut st.id,
                b"bytes" => &mut st.bytes,
                b"retransmits" => &mut st.retransmits,
                b"jitter" => &mut st.jitter,
                b"errors" => &mut st.errors,
                b"omitted_errors" => &mut st.omitted_errors,
                b"packets" => &mut st.packets,
                b"omitted_packets" => &mut st.omitted_packets,
                b"start_time" => &mut st.start_time,
                b"end_time" => &mut st.end_time,
                _ => return r.skip().map(drop),
            };
            *field = r.opt_number()?;
            Ok(())
        })?;
        Ok(st)
    }

    /// The entry, or None if a member iperf3 requires is missing.
    fn result(&self) -> Option<StreamResult> {
        let (Some(id), Some(bytes), Some(retr), Some(jitter), Some(errors), Some(packets)) = (
            self.id,
            self.bytes,
            self.retransmits,
            self.jitter,
            self.errors,
            self.packets,
        ) else {
            return None;
        };
        Some(StreamResult {
            id: id.to_uint(u32::MAX as u64) as u32,
            bytes: bytes.to_uint(u64::MAX),
            retransmits: retr.to_int(),
            jitter: if jitter.negative {
                0.0
            } else {
                jitter.to_f64()
            },
            errors: errors.to_uint(u64::MAX),
            omitted_errors: self.omitted_errors.map_or(0, |v| v.to_uint(u64::MAX)),
            packets: packets.to_uint(u64::MAX),
            omitted_packets: self.omitted_packets.map_or(0, |v| v.to_uint(u64::MAX)),
            start_us: self.start_time.map_or(0, Decimal::to_micros),
            end_us: self.end_time.map_or(0, Decimal::to_micros),
        })
    }
}

/// The members of a results document as read.
#[derive(Default)]
struct ResultsIn<const S: usize> {
    cpu_util_total: Reported,
    cpu_util_user: Reported,
    cpu_util_system: Reported,
    sender_has_retransmits: Option<Decimal>,
    congestion_used: Option<CongestionName>,
    /// The stream entries, converted as they are read (one entry's raw members at a time
    /// on the stack, not all of them); `missing` if one lacked a required member.
    streams: Option<heapless::Vec<StreamResult, S>>,
    missing: bool,
}

impl<const S: usize> ResultsIn<S> {
    fn read(json: &[u8]) -> Result<ResultsIn<S>, JsonError> {
        let mut doc = ResultsIn::default();
        parse_object(json, |key, r| {
            match key {
                b"cpu_util_total" => doc.cpu_util_total = r.scalar()?.into(),
                b"cpu_util_user" => doc.cpu_util_user = r.scalar()?.into(),
                b"cpu_util_system" => doc.cpu_util_system = r.scalar()?.into(),
                b"sender_has_retransmits" => doc.sender_has_retransmits = r.opt_number()?,
                b"congestion_used" if r.at_null() => {
                    r.skip()?;
                    doc.congestion_used = None;
                }
                b"congestion_used" => doc.congestion_used = Some(congestion_name(r.string()?)?),
                b"streams" if r.at_null() => {
                    r.skip()?;
                    doc.streams = None;
                }
                b"streams" => {
                    let mut streams = heapless::Vec::new();
                    r.array(|r| match StreamIn::read(r)?.result() {
                        Some(st) => streams.push(st).map_err(|_| JsonError::TooManyStreams),
                        None => {
                            doc.missing = true;
                            Ok(())
                        }
                    })?;
                    doc.streams = Some(streams);
                }
                _ => r.skip().map(drop)?,
            }
            Ok(())
        })?;
        Ok(doc)
    }
}

/// A results document being written, without serde or floating point where the values are
/// integers (every TCP figure): text, integers, microseconds as seconds, and `f64`s only
/// where a host or a UDP stream has them.
struct Out<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl Out<'_> {
    /// Not inlined: one copy serves the ~30 places that write text.
    #[inline(never)]
    fn raw(&mut self, text: &[u8]) -> Result<&mut Self, JsonError> {
        let end = self.len + text.len();
        let dst = self
            .buf
            .get_mut(self.len..end)
            .ok_or(JsonError::BufferTooSmall)?;
        dst.copy_from_slice(text);
        self.len = end;
        Ok(self)
    }

    fn uint(&mut self, mut v: u64) -> Result<&mut Self, JsonError> {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.raw(&digits[i..])
    }

    fn int(&mut self, v: i64) -> Result<&mut Self, JsonError> {
        if v < 0 {
            self.raw(b"-")?;
        }
        self.uint(v.unsigned_abs())
    }

    /// Microseconds as seconds with six decimals (`2.000104`).
    fn seconds(&mut self, us: u64) -> Result<&mut Self, JsonError> {
        let frac = us % 1_000_000;
        self.uint(us / 1_000_000)?.raw(b".")?;
        let mut digits = [b'0'; 6];
        let mut f = frac;
        for d in digits.iter_mut().rev() {
            *d = b'0' + (f % 10) as u8;
            f /= 10;
        }
        self.raw(&digits)
    }

    /// A finite `f64` as [`Fixed`] writes it (`null` if it is not finite).
    fn float(&mut self, v: f64) -> Result<&mut Self, JsonError> {
        if !v.is_finite() {
            return self.raw(b"null");
        }
        let mut text = [0u8; 32];
        let n = Fixed(v).write(&mut text);
        self.raw(&text[..n])
    }

    /// A string, quoted and escaped.
    fn string(&mut self, s: &str) -> Result<&mut Self, JsonError> {
        self.raw(b"\"")?;
        for &b in s.as_bytes() {
            match b {
                b'"' => self.raw(b"\\\"")?,
                b'\\' => self.raw(b"\\\\")?,
                0..=0x1f => {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    self.raw(&[
                        b'\\',
                        b'u',
                        b'0',
                        b'0',
                        HEX[usize::from(b >> 4)],
                        HEX[usize::from(b & 15)],
                    ])?
                }
                _ => self.raw(&[b])?,
            };
        }
        self.raw(b"\"")
    }
}

impl<const S: usize> Results<S> {
    /// Reads a results document; fields iperf3 requires must be present (the CPU figures
    /// may be `null`).
    pub fn from_json(json: &[u8]) -> Result<Self, JsonError> {
        let r = match ResultsIn::read(json) {
            Ok(r) => r,
            Err(_) if nesting_depth(json) <= MAX_DEPTH && count_stream_objects(json) > S => {
                return Err(JsonError::TooManyStreams)
            }
            Err(_) => return Err(JsonError::Malformed),
        };
        let cpu = [r.cpu_util_total, r.cpu_util_user, r.cpu_util_system];
        let (Some(h), Some(streams)) = (r.sender_has_retransmits, r.streams) else {
            return Err(JsonError::MissingField);
        };
        let cpu_util = match cpu {
            [Reported::Number(t), Reported::Number(u), Reported::Number(s)] => {
                Some([t.to_f64(), u.to_f64(), s.to_f64()])
            }
            _ if cpu.contains(&Reported::Absent) => return Err(JsonError::MissingField),
            _ => None,
        };
        if r.missing {
            return Err(JsonError::MissingField);
        }
        Ok(Results {
            cpu_util,
            sender_has_retransmits: h.to_int(),
            congestion_used: r.congestion_used,
            streams,
        })
    }

    /// Writes the results document; returns its length. CPU figures are known only on a
    /// host (feature `iperf-host`; a device writes `null`), jitter only on UDP streams
    /// (feature `iperf-udp`; TCP's is 0): a device's TCP server writes integers only.
    pub fn to_json(&self, out: &mut [u8]) -> Result<usize, JsonError> {
        let mut o = Out { buf: out, len: 0 };
        let cpu = self.cpu_util.filter(|_| cfg!(feature = "iperf-host"));
        for (i, key) in [
            &b"{\"cpu_util_total\":"[..],
            b",\"cpu_util_user\":",
            b",\"cpu_util_system\":",
        ]
        .into_iter()
        .enumerate()
        {
            o.raw(key)?;
            match cpu {
                Some(c) => o.float(finite(c[i]))?,
                None => o.raw(b"null")?,
            };
        }
        o.raw(b",\"sender_has_retransmits\":")?
            .int(self.sender_has_retransmits)?;
        if let Some(cc) = &self.congestion_used {
            o.raw(b",\"congestion_used\":")?.string(cc)?;
        }
        o.raw(b",\"streams\":[")?;
        for (i, st) in self.streams.iter().enumerate() {
            if i > 0 {
                o.raw(b",")?;
            }
            o.raw(b"{\"id\":")?
                .uint(st.id.into())?
                .raw(b",\"bytes\":")?
                .uint(st.bytes)?
                .raw(b",\"retransmits\":")?
                .int(st.retransmits)?
                .raw(b",\"jitter\":")?;
            if cfg!(feature = "iperf-udp") && st.jitter.to_bits() != 0 {
                o.float(finite(st.jitter))?;
            } else {
                o.raw(b"0")?;
            }
            o.raw(b",\"errors\":")?
                .uint(st.errors)?
                .raw(b",\"omitted_errors\":")?
                .uint(st.omitted_errors)?
                .raw(b",\"packets\":")?
                .uint(st.packets)?
                .raw(b",\"omitted_packets\":")?
                .uint(st.omitted_packets)?
                .raw(b",\"start_time\":")?
                .seconds(st.start_us)?
                .raw(b",\"end_time\":")?
                .seconds(st.end_us)?
                .raw(b"}")?;
        }
        o.raw(b"]}")?;
        Ok(o.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_roundtrip_and_cjson_shape() {
        let j = br#"{"cpu_util_total":1.5,"cpu_util_user":0.5,"cpu_util_system":1,"sender_has_retransmits":0,"congestion_used":"cubic","streams":[{"id":1,"bytes":1.2e9,"retransmits":-1,"jitter":1.5e-05,"errors":3,"packets":100,"start_time":0,"end_time":2.000104}]}"#;
        let r = Results::<MAX_STREAMS>::from_json(j).unwrap();
        assert_eq!(r.streams.len(), 1);
        assert_eq!(r.streams[0].bytes, 1_200_000_000);
        assert_eq!(r.streams[0].errors, 3);
        assert_eq!(r.cpu_util, Some([1.5, 0.5, 1.0]));
        assert_eq!(r.congestion_used.as_deref(), Some("cubic"));
        let mut b = [0u8; 1024];
        let n = r.to_json(&mut b).unwrap();
        assert_eq!(Results::<MAX_STREAMS>::from_json(&b[..n]).unwrap(), r);
    }

    /// A side that cannot know its CPU use writes `null`; absent members stay an error
    /// (stock iperf3 refuses such a document).
    #[test]
    fn unknown_cpu_is_null_not_zero() {
        let r: Results = Results {
            cpu_util: None,
            sender_has_retransmits: 0,
            ..Results::default()
        };
        let mut b = [0u8; 256];
        let n = r.to_json(&mut b).unwrap();
        let doc = core::str::from_utf8(&b[..n]).unwrap();
        assert!(
            doc.starts_with(r#"{"cpu_util_total":null,"cpu_util_user":null,"#),
            "{doc}"
        );
        assert_eq!(
            Results::<MAX_STREAMS>::from_json(&b[..n]).unwrap().cpu_util,
            None
        );
        assert_eq!(
            Results::<MAX_STREAMS>::from_json(br#"{"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[]}"#),
            Err(JsonError::MissingField)
        );
    }

    /// A server's `-J` output rides along in its results; it is skipped, not refused.
    #[test]
    fn server_output_members_are_skipped() {
        let j = br#"{"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":1,"sender_has_retransmits":-1,"congestion_used":"a-name-longer-than-sixteen","server_output_json":{"start":{"connected":[{"socket":5}]},"intervals":[{"streams":[{"socket":5,"omitted":false}],"sum":{"bytes":1}}],"end":{"streams":[{"receiver":{"bytes":1}}]}},"server_output_text":"line \"one\"\nline two\n","streams":[]}"#;
        let r = Results::<MAX_STREAMS>::from_json(j).unwrap();
        assert_eq!(r.congestion_used.as_deref(), Some("a-name-longer-th"));
        assert_eq!(r.cpu_util, Some([1.0, 0.0, 1.0]));
    }

    #[test]
    fn hostile_documents_are_refused() {
        assert_eq!(
            Results::<MAX_STREAMS>::from_json(br#"{"streams":[]}"#),
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
        assert_eq!(
            Results::<MAX_STREAMS>::from_json(&big),
            Err(JsonError::TooManyStreams)
        );
    }
}
