//! The parameter document (iperf3 `send_parameters` / `get_parameters`): every key a 3.12
//! client sends, read tolerantly and written as a 3.12 client writes it.

use serde::Serialize;

use super::{parse_object, Decimal, JsonError, Protocol};
use crate::iperf::wire::DEFAULT_TCP_BLOCK_LEN;

/// Test parameters as the client announces them (iperf3 `send_parameters`), without the
/// free-text ones ([`ParamStrings`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// TCP or UDP.
    pub protocol: Protocol,
    /// The client asked for SCTP (`--sctp`), which we do not run.
    pub sctp: bool,
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
    /// Blocks sent back to back before the rate is checked again (`-b RATE/BURST`), 0 = none.
    pub burst: u32,
    /// Pacing timer in microseconds (`--pacing-timer`): how often a paced sender checks.
    pub pacing_timer_us: u32,
    /// Fair-queuing socket pacing in bit/s (`--fq-rate`), 0 = none.
    pub fq_rate_bps: u64,
    /// 64-bit UDP sequence numbers (`--udp-counters-64bit`).
    pub udp_counters_64bit: bool,
    /// Socket buffer size (`-w`), 0 = system default.
    pub window: u32,
    /// TCP maximum segment size (`-M`), 0 = system default.
    pub mss: u32,
    /// TCP_NODELAY (`-N`).
    pub nodelay: bool,
    /// IP type of service (`-S`, `--dscp`), 0 = default.
    pub tos: u8,
    /// IPv6 flow label (`-L`), 0 = none.
    pub flowlabel: u32,
    /// The CPU the server should run on (`-A n,m`).
    pub server_affinity: Option<u16>,
    /// The client wants the server's output in the results (`--get-server-output`).
    pub get_server_output: bool,
    /// Fill the payload with a repeating pattern (`--repeating-payload`).
    pub repeating_payload: bool,
    /// Send with sendfile (`-Z`).
    pub zerocopy: bool,
    /// Set IPv4 Don't Fragment on UDP (`--dont-fragment`).
    pub dont_fragment: bool,
}

impl Default for Params {
    fn default() -> Self {
        Self {
            protocol: Protocol::Tcp,
            sctp: false,
            omit_s: 0,
            duration_s: 10,
            bytes: 0,
            blocks: 0,
            parallel: 1,
            reverse: false,
            bidirectional: false,
            len: DEFAULT_TCP_BLOCK_LEN as u32,
            rate_bps: 0,
            burst: 0,
            pacing_timer_us: 1000,
            fq_rate_bps: 0,
            udp_counters_64bit: false,
            window: 0,
            mss: 0,
            nodelay: false,
            tos: 0,
            flowlabel: 0,
            server_affinity: None,
            get_server_output: false,
            repeating_payload: false,
            zerocopy: false,
            dont_fragment: false,
        }
    }
}

/// The free-text parameters a client may add (`-T`, `--extra-data`, `-C`), borrowed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParamStrings<'a> {
    /// `-T`: prefix of every output line.
    pub title: Option<&'a str>,
    /// `--extra-data`: copied into both sides' JSON output.
    pub extra_data: Option<&'a str>,
    /// `-C`: TCP congestion control algorithm.
    pub congestion: Option<&'a str>,
}

/// The flag members of a parameter document (they count when present and not `null`).
/// (`tcp`, the default, is read like any member not named here.)
const FLAG_KEYS: [(&[u8], Flag); 8] = [
    (b"udp", Flag::Udp),
    (b"sctp", Flag::Sctp),
    (b"nodelay", Flag::Nodelay),
    (b"reverse", Flag::Reverse),
    (b"bidirectional", Flag::Bidirectional),
    (b"get_server_output", Flag::GetServerOutput),
    (b"udp_counters_64bit", Flag::UdpCounters64bit),
    (b"repeating_payload", Flag::RepeatingPayload),
];

/// A flag member: its index in [`ParamsIn::flags`].
#[derive(Clone, Copy)]
enum Flag {
    Udp,
    Sctp,
    Nodelay,
    Reverse,
    Bidirectional,
    GetServerOutput,
    UdpCounters64bit,
    RepeatingPayload,
}

/// The number members of a parameter document.
const NUMBER_KEYS: [(&[u8], Number); 17] = [
    (b"omit", Number::Omit),
    (b"server_affinity", Number::ServerAffinity),
    (b"time", Number::Time),
    (b"num", Number::Num),
    (b"blockcount", Number::Blockcount),
    (b"MSS", Number::Mss),
    (b"parallel", Number::Parallel),
    (b"window", Number::Window),
    (b"len", Number::Len),
    (b"bandwidth", Number::Bandwidth),
    (b"fqrate", Number::Fqrate),
    (b"pacing_timer", Number::PacingTimer),
    (b"burst", Number::Burst),
    (b"TOS", Number::Tos),
    (b"flowlabel", Number::Flowlabel),
    (b"zerocopy", Number::Zerocopy),
    (b"dont_fragment", Number::DontFragment),
];

/// A number member: its index in [`ParamsIn::numbers`].
#[derive(Clone, Copy)]
enum Number {
    Omit,
    ServerAffinity,
    Time,
    Num,
    Blockcount,
    Mss,
    Parallel,
    Window,
    Len,
    Bandwidth,
    Fqrate,
    PacingTimer,
    Burst,
    Tos,
    Flowlabel,
    Zerocopy,
    DontFragment,
}

/// The members of a parameter document as read: flags (present and not `null`) and numbers
/// (`None` when absent or `null`). Kept in arrays indexed by key, not one field per key: a
/// device's flash pays once for the lookup instead of once per key.
#[derive(Default)]
struct ParamsIn {
    flags: [bool; FLAG_KEYS.len()],
    numbers: [Option<Decimal>; NUMBER_KEYS.len()],
}

impl ParamsIn {
    fn read(json: &[u8]) -> Result<ParamsIn, JsonError> {
        let mut p = ParamsIn::default();
        parse_object(json, |key, r| {
            if let Some(&(_, f)) = FLAG_KEYS.iter().find(|(k, _)| *k == key) {
                p.flags[f as usize] = r.skip()?;
            } else if let Some(&(_, n)) = NUMBER_KEYS.iter().find(|(k, _)| *k == key) {
                p.numbers[n as usize] = r.opt_number()?;
            } else {
                r.skip()?;
            }
            Ok(())
        })?;
        Ok(p)
    }

    fn flag(&self, f: Flag) -> bool {
        self.flags[f as usize]
    }

    fn number(&self, n: Number) -> Option<Decimal> {
        self.numbers[n as usize]
    }

    /// Number `n` clamped to `0..=max` ([`Decimal::to_uint`]), `absent` when absent or
    /// `null`. Not inlined: one copy serves every member.
    #[inline(never)]
    fn uint(&self, n: Number, absent: u64, max: u64) -> u64 {
        self.number(n).map_or(absent, |v| v.to_uint(max))
    }
}

#[derive(Serialize)]
struct ParamsOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    tcp: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    udp: Option<bool>,
    omit: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    server_affinity: Option<u16>,
    time: u32,
    num: u64,
    blockcount: u64,
    #[serde(rename = "MSS", skip_serializing_if = "Option::is_none")]
    mss: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    nodelay: Option<bool>,
    parallel: u8,
    #[serde(skip_serializing_if = "Option::is_none")]
    reverse: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bidirectional: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    window: Option<u32>,
    len: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    bandwidth: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fqrate: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pacing_timer: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    burst: Option<u32>,
    #[serde(rename = "TOS", skip_serializing_if = "Option::is_none")]
    tos: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flowlabel: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra_data: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    congestion: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    get_server_output: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    udp_counters_64bit: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    repeating_payload: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    zerocopy: Option<u8>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dont_fragment: Option<u8>,
    client_version: &'a str,
}

/// `Some(v)` if `v` is not zero (iperf3 writes most keys only when set).
fn nonzero<T: PartialEq + Default>(v: T) -> Option<T> {
    (v != T::default()).then_some(v)
}

impl Params {
    /// Reads the client's parameter JSON the way iperf3's `get_parameters` does.
    pub fn from_json(json: &[u8]) -> Result<Self, JsonError> {
        let p = ParamsIn::read(json)?;
        let d = Params::default();
        let protocol = if p.flag(Flag::Udp) {
            Protocol::Udp
        } else {
            Protocol::Tcp
        };
        let max32 = u64::from(u32::MAX);
        Ok(Self {
            protocol,
            sctp: p.flag(Flag::Sctp),
            omit_s: p.uint(Number::Omit, 0, 3600) as u32,
            duration_s: p.uint(Number::Time, d.duration_s.into(), 86_400) as u32,
            bytes: p.uint(Number::Num, 0, u64::MAX),
            blocks: p.uint(Number::Blockcount, 0, u64::MAX),
            parallel: p.uint(Number::Parallel, 1, 255) as u8,
            reverse: p.flag(Flag::Reverse),
            bidirectional: p.flag(Flag::Bidirectional),
            len: p.uint(Number::Len, d.len.into(), max32) as u32,
            rate_bps: p.uint(Number::Bandwidth, 0, u64::MAX),
            burst: p.uint(Number::Burst, 0, max32) as u32,
            pacing_timer_us: p.uint(Number::PacingTimer, d.pacing_timer_us.into(), 1_000_000)
                as u32,
            fq_rate_bps: p.uint(Number::Fqrate, 0, u64::MAX),
            udp_counters_64bit: p.flag(Flag::UdpCounters64bit),
            window: p.uint(Number::Window, 0, max32) as u32,
            mss: p.uint(Number::Mss, 0, max32) as u32,
            nodelay: p.flag(Flag::Nodelay),
            tos: p.uint(Number::Tos, 0, 255) as u8,
            flowlabel: p.uint(Number::Flowlabel, 0, 0xf_ffff) as u32,
            server_affinity: p
                .number(Number::ServerAffinity)
                .filter(|v| !v.negative)
                .map(|v| v.to_uint(u64::from(u16::MAX)) as u16),
            get_server_output: p.flag(Flag::GetServerOutput),
            repeating_payload: p.flag(Flag::RepeatingPayload),
            zerocopy: p.number(Number::Zerocopy).is_some_and(Decimal::is_nonzero),
            dont_fragment: p
                .number(Number::DontFragment)
                .is_some_and(Decimal::is_nonzero),
        })
    }

    /// Writes the parameter JSON a 3.12 client sends; returns its length.
    pub fn to_json(&self, out: &mut [u8]) -> Result<usize, JsonError> {
        self.to_json_with(&ParamStrings::default(), out)
    }

    /// Writes the parameter JSON a 3.12 client sends, with the free-text parameters.
    pub fn to_json_with(&self, text: &ParamStrings, out: &mut [u8]) -> Result<usize, JsonError> {
        let tcp = self.protocol == Protocol::Tcp;
        let flag = |on: bool| on.then_some(1u8);
        let doc = ParamsOut {
            tcp: tcp.then_some(true),
            udp: (!tcp).then_some(true),
            omit: self.omit_s,
            server_affinity: self.server_affinity,
            time: self.duration_s,
            num: self.bytes,
            blockcount: self.blocks,
            mss: nonzero(self.mss),
            nodelay: self.nodelay.then_some(true),
            parallel: self.parallel,
            reverse: self.reverse.then_some(true),
            bidirectional: self.bidirectional.then_some(true),
            window: nonzero(self.window),
            len: self.len,
            bandwidth: nonzero(self.rate_bps),
            fqrate: nonzero(self.fq_rate_bps),
            pacing_timer: nonzero(self.pacing_timer_us),
            burst: nonzero(self.burst),
            tos: nonzero(self.tos),
            flowlabel: nonzero(self.flowlabel),
            title: text.title,
            extra_data: text.extra_data,
            congestion: text.congestion,
            get_server_output: flag(self.get_server_output),
            udp_counters_64bit: flag(self.udp_counters_64bit),
            repeating_payload: flag(self.repeating_payload),
            zerocopy: flag(self.zerocopy),
            dont_fragment: flag(self.dont_fragment),
            client_version: "3.12",
        };
        serde_json_core::to_slice(&doc, out).map_err(|_| JsonError::BufferTooSmall)
    }
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

    /// Every socket and test option a 3.12 client can send, as cJSON prints them.
    #[test]
    fn params_with_every_option() {
        let j = br#"{"tcp":true,"omit":0,"server_affinity":1,"time":1,"num":0,"blockcount":0,"MSS":1000,"nodelay":true,"parallel":1,"window":65536,"len":1000,"bandwidth":1000000,"fqrate":5000000,"pacing_timer":500,"burst":10,"TOS":32,"flowlabel":7,"title":"t","extra_data":"x","congestion":"reno","get_server_output":1,"repeating_payload":1,"zerocopy":1,"dont_fragment":1,"client_version":"3.12"}"#;
        let p = Params::from_json(j).unwrap();
        assert_eq!((p.mss, p.window, p.tos, p.flowlabel), (1000, 65536, 32, 7));
        assert_eq!(
            (p.fq_rate_bps, p.burst, p.pacing_timer_us),
            (5_000_000, 10, 500)
        );
        assert_eq!(p.server_affinity, Some(1));
        assert!(p.nodelay && p.get_server_output && p.repeating_payload);
        assert!(p.zerocopy && p.dont_fragment && !p.sctp);
        assert!(Params::from_json(br#"{"sctp":true}"#).unwrap().sctp);
    }

    /// Each flag member sets its own field and no other.
    #[test]
    fn each_flag_sets_its_own_field() {
        let fields = |p: Params| {
            [
                p.protocol == Protocol::Udp,
                p.sctp,
                p.nodelay,
                p.reverse,
                p.bidirectional,
                p.get_server_output,
                p.udp_counters_64bit,
                p.repeating_payload,
            ]
        };
        let keys = [
            "udp",
            "sctp",
            "nodelay",
            "reverse",
            "bidirectional",
            "get_server_output",
            "udp_counters_64bit",
            "repeating_payload",
        ];
        for (i, key) in keys.iter().enumerate() {
            let doc = std::format!(r#"{{"{key}":1}}"#);
            let set = fields(Params::from_json(doc.as_bytes()).unwrap());
            let want: [bool; 8] = core::array::from_fn(|j| j == i);
            assert_eq!(set, want, "{key}");
            let doc = std::format!(r#"{{"{key}":null}}"#);
            assert_eq!(
                fields(Params::from_json(doc.as_bytes()).unwrap()),
                [false; 8]
            );
        }
    }

    #[test]
    fn params_roundtrip_with_strings() {
        let p = Params {
            protocol: Protocol::Udp,
            bytes: 7,
            rate_bps: 123,
            burst: 4,
            reverse: true,
            mss: 1200,
            nodelay: true,
            tos: 0x34,
            server_affinity: Some(0),
            get_server_output: true,
            ..Params::default()
        };
        let text = ParamStrings {
            title: Some("a \"quoted\"\ttitle"),
            extra_data: Some("x"),
            congestion: Some("reno"),
        };
        let mut b = [0u8; 1024];
        let n = p.to_json_with(&text, &mut b).unwrap();
        let doc = core::str::from_utf8(&b[..n]).unwrap();
        assert!(doc.contains(r#""title":"a \"quoted\"\ttitle""#), "{doc}");
        assert!(doc.contains(r#""congestion":"reno""#), "{doc}");
        assert_eq!(Params::from_json(&b[..n]).unwrap(), p);
        let n = Params::default().to_json(&mut b).unwrap();
        assert_eq!(Params::from_json(&b[..n]).unwrap(), Params::default());
    }

    #[test]
    fn hostile_documents_are_refused() {
        assert_eq!(Params::from_json(b"{\"tcp\":"), Err(JsonError::Malformed));
        assert_eq!(
            Params::from_json(b"[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]"),
            Err(JsonError::Malformed)
        );
        assert_eq!(Params::from_json(b"}}}"), Err(JsonError::Malformed));
    }
}
