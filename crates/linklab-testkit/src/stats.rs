//! A device's `GET /stats` body, typed as what it is: an open-ended map of named figures,
//! most of them in sections (`mac`, `phy`, `memory`, `conservation`, each app's counters:
//! `echo`, `http`, `iperf`, `iperf2`, ...), a few at the top (`board`, `uptime_s`,
//! `link_up`). Which sections a body holds is the build's (its board, its apps, its MAC), so
//! the view does not pin them; it reads every value as a count, a number, a flag or a text,
//! and its accessors ([`Stats::counter`], [`Stats::flag`], ...) fail naming the figure a body
//! lacks or holds as another kind. Written by linklab-perf (`apps/counters.rs`,
//! `embassy/stats.rs`, with the apps' names from `app_counters.rs`) and by `linklab serve`.
//!
//! The same view reads the other open-ended documents of named figures: a serial link's
//! `/link` and the rp2040js harness's status line ([`crate::emulated_clock::Status::figures`],
//! the fields each device model's `status()` merges in, emulators/rp2040js/machine.mjs).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// One value of the body. (Read through a [`Value`], not as an untagged enum: serde_json's
/// `arbitrary_precision`, on in this workspace, hides numbers from untagged enums.)
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Field {
    /// A whole number (a counter, a size).
    Count(u64),
    /// Any other number (a time, a share, a negative figure).
    Number(f64),
    /// A flag (`link_up`, a law that `holds`).
    Flag(bool),
    /// A text (`board`, a state).
    Text(String),
    /// A section: figures by name.
    Section(BTreeMap<String, Field>),
    /// A list (the TCP sockets).
    List(Vec<Field>),
    /// Anything else (a null, a number past `f64`): kept, never read as a figure.
    Other(Value),
}

impl From<Value> for Field {
    fn from(value: Value) -> Field {
        match value {
            Value::Number(n) => match (n.as_u64(), n.as_f64()) {
                (Some(count), _) => Field::Count(count),
                (None, Some(x)) => Field::Number(x),
                (None, None) => Field::Other(Value::Number(n)),
            },
            Value::Bool(b) => Field::Flag(b),
            Value::String(t) => Field::Text(t),
            Value::Object(m) => Field::Section(m.into_iter().map(|(k, v)| (k, v.into())).collect()),
            Value::Array(a) => Field::List(a.into_iter().map(Field::from).collect()),
            Value::Null => Field::Other(Value::Null),
        }
    }
}

/// One row of the body's `tcp` list: a TCP socket of the device (the firmware writes its port
/// and state, `linklab serve` its buffers too).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Socket {
    /// Its local port.
    pub port: u16,
    /// Its state, in smoltcp's names (`LISTEN`, `ESTABLISHED`, ...).
    pub state: String,
    /// `linklab serve`: bytes waiting in its receive buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_queue: Option<u64>,
    /// `linklab serve`: bytes waiting in its send buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_queue: Option<u64>,
    /// `linklab serve`: its receive buffer's size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rx_capacity: Option<u64>,
}

/// The body: its fields by name.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Stats(pub BTreeMap<String, Field>);

/// A body is a JSON object; each of its values read as a [`Field`].
impl<'de> Deserialize<'de> for Stats {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Stats, D::Error> {
        match Value::deserialize(d)? {
            Value::Object(m) => Ok(Stats(m.into_iter().map(|(k, v)| (k, v.into())).collect())),
            other => Err(D::Error::custom(format!("no JSON object: {other}"))),
        }
    }
}

impl Stats {
    /// Reads a body; panics, with the text, when it is not a JSON object.
    pub fn parse(body: &[u8]) -> Stats {
        serde_json::from_slice(body).unwrap_or_else(|e| {
            panic!(
                "/stats is not a JSON object ({e}): {}",
                String::from_utf8_lossy(body)
            )
        })
    }

    /// The field `name` at the top; panics when there is none.
    pub fn top(&self, name: &str) -> &Field {
        self.0
            .get(name)
            .unwrap_or_else(|| panic!("no {name} in /stats: {self}"))
    }

    /// Section `section`'s figures; panics when the body has no such section.
    pub fn section(&self, section: &str) -> &BTreeMap<String, Field> {
        match self.top(section) {
            Field::Section(s) => s,
            other => panic!("/stats' {section} is no section but {other:?}: {self}"),
        }
    }

    /// Field `name` of section `section`; panics when it is missing.
    pub fn field(&self, section: &str, name: &str) -> &Field {
        self.section(section)
            .get(name)
            .unwrap_or_else(|| panic!("no {section}.{name} in /stats: {self}"))
    }

    /// Counter `section.name`; panics when it is missing or no whole number.
    pub fn counter(&self, section: &str, name: &str) -> u64 {
        match self.field(section, name) {
            Field::Count(n) => *n,
            other => panic!("/stats' {section}.{name} is no count but {other:?}: {self}"),
        }
    }

    /// Number `section.name` (a count read as a number too); panics when it is missing.
    pub fn number(&self, section: &str, name: &str) -> f64 {
        as_number(self.field(section, name))
            .unwrap_or_else(|| panic!("/stats' {section}.{name} is no number: {self}"))
    }

    /// Flag `section.name`; panics when it is missing or no flag.
    pub fn flag(&self, section: &str, name: &str) -> bool {
        match self.field(section, name) {
            Field::Flag(b) => *b,
            other => panic!("/stats' {section}.{name} is no flag but {other:?}: {self}"),
        }
    }

    /// Text `name` at the top (`board`, `device`); panics when it is missing or no text.
    pub fn text(&self, name: &str) -> &str {
        match self.top(name) {
            Field::Text(t) => t,
            other => panic!("/stats' {name} is no text but {other:?}: {self}"),
        }
    }

    /// Flag `name` at the top (`link_up`); panics when it is missing or no flag.
    pub fn top_flag(&self, name: &str) -> bool {
        match self.top(name) {
            Field::Flag(b) => *b,
            other => panic!("/stats' {name} is no flag but {other:?}: {self}"),
        }
    }

    /// Counter `name` at the top (`/link`'s `rx_crc_errors`); panics when it is missing or no
    /// whole number.
    pub fn top_counter(&self, name: &str) -> u64 {
        match self.top(name) {
            Field::Count(n) => *n,
            other => panic!("/stats' {name} is no count but {other:?}: {self}"),
        }
    }

    /// Number `name` at the top (`uptime_s`); panics when it is missing or no number.
    pub fn top_number(&self, name: &str) -> f64 {
        as_number(self.top(name)).unwrap_or_else(|| panic!("/stats' {name} is no number: {self}"))
    }

    /// The `tcp` list: the device's TCP sockets; panics when the body has none.
    pub fn sockets(&self) -> Vec<Socket> {
        let list = self.top("tcp");
        let value = serde_json::to_value(list).expect("a field serializes");
        serde_json::from_value(value)
            .unwrap_or_else(|e| panic!("/stats' tcp is no list of sockets ({e}): {self}"))
    }

    /// Counter `section.name` when the body has it as a count (a bench's snapshot, which
    /// must not fail the run).
    pub fn try_counter(&self, section: &str, name: &str) -> Option<u64> {
        match self.0.get(section) {
            Some(Field::Section(s)) => match s.get(name) {
                Some(Field::Count(n)) => Some(*n),
                _ => None,
            },
            _ => None,
        }
    }

    /// Counter `name` at the top when the body has it as a count (a status line before the
    /// device model wrote it).
    pub fn try_top_counter(&self, name: &str) -> Option<u64> {
        match self.0.get(name) {
            Some(Field::Count(n)) => Some(*n),
            _ => None,
        }
    }

    /// Number `name` at the top when the body has it (a bench's snapshot).
    pub fn try_top_number(&self, name: &str) -> Option<f64> {
        self.0.get(name).and_then(as_number)
    }

    /// Section `section` as JSON text, for a message or a log line.
    pub fn show(&self, section: &str) -> String {
        serde_json::to_string(self.section(section)).expect("a section serializes")
    }
}

/// A count or number field as a number.
fn as_number(field: &Field) -> Option<f64> {
    match field {
        Field::Count(n) => Some(*n as f64),
        Field::Number(x) => Some(*x),
        _ => None,
    }
}

/// The body as JSON text (what a failed assertion prints).
impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &str = r#"{"board": "b", "uptime_s": 1.5, "link_up": true,
        "mac": {"rx_packets": 7}, "conservation": {"holds": true}, "phy": {"skew": -2},
        "tcp": [{"port": 80, "state": "ESTABLISHED"}]}"#;

    #[test]
    fn every_kind_of_figure_is_read() {
        let s = Stats::parse(BODY.as_bytes());
        assert_eq!((s.text("board"), s.top_flag("link_up")), ("b", true));
        assert_eq!(s.top_number("uptime_s"), 1.5);
        assert_eq!(s.counter("mac", "rx_packets"), 7);
        assert!(s.flag("conservation", "holds"));
        assert_eq!(s.number("phy", "skew"), -2.0);
        assert_eq!(s.show("mac"), r#"{"rx_packets":7}"#);
        assert_eq!(s.sockets()[0].port, 80);
    }

    #[test]
    #[should_panic(expected = "no mac.rx_crc_errors in /stats")]
    fn a_missing_counter_fails_naming_it() {
        Stats::parse(BODY.as_bytes()).counter("mac", "rx_crc_errors");
    }

    #[test]
    #[should_panic(expected = "phy.skew is no count")]
    fn a_negative_figure_is_no_count() {
        Stats::parse(BODY.as_bytes()).counter("phy", "skew");
    }
}
