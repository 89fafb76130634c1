//! The JSON documents of the control connection — test parameters (client to server) and
//! results (both ways) — read and written with serde-json-core into caller buffers.
//!
//! Reading is tolerant like iperf3's cJSON lookups: unknown keys are ignored, numbers may be
//! integers or floats, flags count when present (and not `null`). Nesting deeper than
//! [`MAX_DEPTH`] is refused before parsing so hostile input cannot exhaust a device's stack.
//! Documents are read by a small pull reader (`reader`) and written by serde-json-core;
//! numbers go through neither `f64::from_str` nor ryu (`number`): on a device those cost
//! ~25 KB of flash.
//!
//! - `params`: [`Params`], what the client asks for, and the strings it may add;
//! - `results`: [`Results`], what each side measured.

mod number;
mod params;
mod reader;
mod results;

pub use params::{ParamStrings, Params};
pub use results::{CongestionName, Results, StreamResult};

use number::Decimal;
use reader::{Reader, Scalar};

/// Deepest object/array nesting accepted (iperf3 documents use 3; a results document that
/// carries the server's `-J` output uses 6).
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

/// A member that may be absent, `null` or a number (cJSON lookups tell absent from
/// present; a `null` is how a side says "unknown").
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) enum Reported {
    /// The member is not in the document.
    #[default]
    Absent,
    /// The member is `null`.
    Null,
    /// The member is a number.
    Number(Decimal),
}

impl From<Scalar> for Reported {
    fn from(s: Scalar) -> Self {
        match s {
            Scalar::Null => Reported::Null,
            Scalar::Number(d) => Reported::Number(d),
        }
    }
}

/// A finite number or 0.
pub(crate) fn finite(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
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

/// Reads the top-level object of `json` with `member` (see [`Reader::object`]) after
/// checking its nesting depth; nothing but whitespace may follow it.
fn parse_object<'a>(
    json: &'a [u8],
    member: impl FnMut(&'a [u8], &mut Reader<'a>) -> Result<(), JsonError>,
) -> Result<(), JsonError> {
    if nesting_depth(json) > MAX_DEPTH {
        return Err(JsonError::Malformed);
    }
    let mut r = Reader::new(json);
    r.object(member)?;
    r.end()
}

/// Appends raw JSON object members (`"a":1,"b":"x"`) to the object `json[..len]` that
/// `out` holds, before its closing brace; returns the new length.
pub fn append_members(out: &mut [u8], len: usize, members: &[u8]) -> Result<usize, JsonError> {
    if members.is_empty() {
        return Ok(len);
    }
    let close = len.checked_sub(1).ok_or(JsonError::Malformed)?;
    if out.get(close) != Some(&b'}') {
        return Err(JsonError::Malformed);
    }
    let empty = close >= 1 && out[close - 1] == b'{';
    let extra = usize::from(!empty) + members.len();
    let end = len + extra;
    let dst = out.get_mut(close..end).ok_or(JsonError::BufferTooSmall)?;
    let mut at = 0;
    if !empty {
        dst[0] = b',';
        at = 1;
    }
    dst[at..at + members.len()].copy_from_slice(members);
    dst[at + members.len()] = b'}';
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_appended_before_the_closing_brace() {
        let mut b = [0u8; 32];
        b[..7].copy_from_slice(br#"{"a":1}"#);
        let n = append_members(&mut b, 7, br#""b":2"#).unwrap();
        assert_eq!(&b[..n], br#"{"a":1,"b":2}"#);
        b[..2].copy_from_slice(b"{}");
        let n = append_members(&mut b, 2, br#""b":2"#).unwrap();
        assert_eq!(&b[..n], br#"{"b":2}"#);
        assert_eq!(
            append_members(&mut b[..8], 7, b"\"zzzz\":1"),
            Err(JsonError::BufferTooSmall)
        );
        assert_eq!(
            append_members(&mut b, 3, b"\"x\":1"),
            Err(JsonError::Malformed)
        );
    }
}
