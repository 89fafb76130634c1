//! What a client asks of a server, decoded from its test header (and encoded by our
//! client): which test (plain, `-r`, `-d`, `-R`, `--full-duplex`), for how long or how many
//! bytes, where to connect back, at what rate. Decoding follows iperf 2.1.8's
//! `Listener::apply_client_settings_tcp/_udp` and `Settings_ReadClientSettingsV1`;
//! encoding follows its `Settings_GenerateClientHdr`.
//!
//! Every field comes from the peer: nothing here is trusted as a count or an address.
//! [`TestRequest::connect_back_port`] refuses port 0 and ports above 65535; the address
//! to connect back to is never in the header (the host supplies the peer's own address).

use super::wire::datagram::DatagramFormat;
use super::wire::header::{self, HeaderLen, V1_LEN};
use super::wire::{flags, upper, ClientHeader};
use crate::time::Micros;

/// How long a test runs, as `mAmount` carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Amount {
    /// `-t`: a time in units of 10 ms (`-t 10` is 1000).
    Time(u32),
    /// `-n`: a byte count (31 bits on the wire).
    Bytes(u64),
}

impl Amount {
    /// Decodes `mAmount`: bit 31 set is a time of `-(word as i32)` × 10 ms, else bytes.
    pub fn from_wire(word: u32) -> Self {
        if word & 0x8000_0000 != 0 {
            Amount::Time(word.wrapping_neg())
        } else {
            Amount::Bytes(u64::from(word))
        }
    }

    /// Encodes as 2.1.8 does: a time negated, bytes masked to 31 bits.
    pub fn to_wire(self) -> u32 {
        match self {
            Amount::Time(t) => t.min(0x7FFF_FFFF).wrapping_neg(),
            Amount::Bytes(n) => (n as u32) & 0x7FFF_FFFF,
        }
    }

    /// A time from microseconds (rounded to 10 ms units, at least one).
    pub fn from_us(us: Micros) -> Self {
        Amount::Time((us.div_ceil(10_000)).clamp(1, 0x7FFF_FFFF) as u32)
    }

    /// The time in microseconds, `None` for a byte count.
    pub fn time_us(self) -> Option<Micros> {
        match self {
            Amount::Time(t) => Some(u64::from(t) * 10_000),
            Amount::Bytes(_) => None,
        }
    }
}

/// Which test the header asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Mode {
    /// The client sends, the server receives.
    Normal,
    /// `-r`: after the client's test, the server connects back and sends.
    Tradeoff,
    /// `-d`: the server connects back at once and sends while it receives.
    Dual,
    /// `-R`: the server sends on the client's own connection (or to its UDP port).
    Reverse,
    /// `--full-duplex`: both send on the one connection.
    FullDuplex,
}

impl Mode {
    /// True if the server connects back to the client (`-r`, `-d`).
    pub fn connects_back(self) -> bool {
        matches!(self, Mode::Tradeoff | Mode::Dual)
    }

    /// True if the server sends on the client's own connection or flow (`-R`,
    /// `--full-duplex`).
    pub fn server_sends_inline(self) -> bool {
        matches!(self, Mode::Reverse | Mode::FullDuplex)
    }

    /// True if the server receives the client's data on this connection.
    pub fn server_receives(self) -> bool {
        self != Mode::Reverse
    }
}

/// TCP or UDP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Protocol {
    /// A TCP test.
    Tcp,
    /// A UDP test.
    Udp,
}

/// What the header of a TCP client looks like (our client's choice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeaderStyle {
    /// iperf 2.1's 60 bytes (v1 and extension, length in the flags).
    V21,
    /// iperf 2.0's 24 bytes (`client_hdr_v1` alone); no `-R`, `--full-duplex` or `-X`.
    V20,
    /// No header (`-C`, compatibility mode): a plain test, nothing to connect back.
    None,
}

/// A decoded test request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TestRequest {
    /// TCP or UDP.
    pub protocol: Protocol,
    /// Which test.
    pub mode: Mode,
    /// `-t` or `-n` of the client (the server's own sending uses it for `-r`/`-d`/`-R`).
    pub amount: Amount,
    /// `mPort`, raw: where the client listens for a connect-back (see
    /// [`connect_back_port`](Self::connect_back_port)).
    pub port: u32,
    /// `numThreads`: the client's `-P` (informative only).
    pub threads: u32,
    /// `mBufLen`: the client's `-l`, 0 if it set none.
    pub buf_len: u32,
    /// The client's rate (`-b`) in bit/s, from the extension; 0 if none.
    pub rate_bps: u64,
    /// `-X`: the client waits for the version reply before sending.
    pub peer_detect: bool,
    /// UDP: the client asks for no FIN exchange and no report.
    pub no_udp_fin: bool,
    /// UDP: ids are 64-bit.
    pub seqno_64: bool,
    /// TCP: a 2.1 server writes the version reply (EXTEND without VERSION2, or `-X`).
    pub wants_ack: bool,
    /// The client's version words, from the extension.
    pub version: Option<(u32, u32)>,
    /// Header bytes (TCP: how many to read; UDP: the length the flags announce).
    pub header_len: usize,
    /// Something we do not serve (`--permit-key`, `--bounceback`): refuse the test.
    pub unsupported: Option<&'static str>,
}

impl TestRequest {
    /// A plain test of `amount` (what a header-less client gets).
    pub fn plain(protocol: Protocol) -> Self {
        Self {
            protocol,
            mode: Mode::Normal,
            amount: Amount::Time(1000),
            port: 0,
            threads: 1,
            buf_len: 0,
            rate_bps: 0,
            peer_detect: false,
            no_udp_fin: false,
            seqno_64: false,
            wants_ack: false,
            version: None,
            header_len: 0,
            unsupported: None,
        }
    }

    /// The port to connect back to for `-r`/`-d`: `mPort` if it is a real port (1..=65535),
    /// `None` for 0 or anything larger (iperf 2.1.8 would truncate it to 16 bits; we
    /// refuse it). The address is never from the header: it is the peer's own.
    pub fn connect_back_port(&self) -> Option<u16> {
        u16::try_from(self.port).ok().filter(|p| *p != 0)
    }

    /// Decodes the flags and fields of a header view (TCP: at the connection's start; UDP:
    /// 16 bytes into a datagram). `header_len` is what the flags announced.
    fn from_view(protocol: Protocol, h: &ClientHeader<&[u8]>, header_len: usize) -> Self {
        let f = h.flags();
        let mut r = Self::plain(protocol);
        r.header_len = header_len;
        r.threads = h.num_threads();
        r.port = h.port();
        r.buf_len = h.buf_len();
        r.amount = Amount::from_wire(h.amount());
        r.seqno_64 = f & flags::SEQNO64B != 0;
        r.peer_detect = f & flags::V2PEERDETECT != 0;
        if f & flags::VERSION1 != 0 && f & flags::VERSION2 == 0 {
            r.mode = if f & flags::RUN_NOW != 0 {
                Mode::Dual
            } else {
                Mode::Tradeoff
            };
        }
        if f & flags::EXTEND != 0 && h.has_ext() {
            let up = h.upper_flags();
            r.version = Some(h.version());
            r.rate_bps = h.rate();
            if protocol == Protocol::Udp && f & flags::UDPTESTS != 0 {
                r.no_udp_fin = up & upper::NOUDPFIN != 0;
            }
            if f & flags::VERSION2 != 0 {
                if up & upper::FULLDUPLEX != 0 {
                    r.mode = Mode::FullDuplex;
                } else if up & upper::REVERSE != 0 {
                    r.mode = Mode::Reverse;
                }
            }
        }
        if protocol == Protocol::Udp && r.mode == Mode::Reverse {
            // 2.1.8 runs a UDP -R without the FIN exchange (no report).
            r.no_udp_fin = true;
        }
        r.wants_ack = protocol == Protocol::Tcp
            && ((f & flags::EXTEND != 0 && f & flags::VERSION2 == 0)
                || f & flags::V2PEERDETECT != 0);
        if f & flags::KEYCHECK != 0 {
            r.unsupported = Some("--permit-key");
        } else if f & flags::BOUNCEBACK != 0 {
            r.unsupported = Some("--bounceback");
        }
        r
    }

    /// Decodes a complete TCP header (`bytes` holds at least the length
    /// [`header_len`](header::header_len) announced; more is ignored). `None` if the first
    /// word announces no header or an unusable one (such a connection is a plain test whose
    /// first bytes are data), or if `bytes` is shorter than announced.
    pub fn from_tcp_header(bytes: &[u8]) -> Option<Self> {
        let first = super::wire::get_u32(bytes, 0);
        let HeaderLen::Bytes(n) = header::header_len(first) else {
            return None;
        };
        let hdr = bytes.get(..n)?;
        let view = ClientHeader::new_checked(hdr).ok()?;
        Some(Self::from_view(Protocol::Tcp, &view, n))
    }

    /// Decodes the first bytes of a TCP header that may be longer than we keep (a
    /// trip-times header is 80 bytes; we keep 60): the fields in `kept` (at least 24
    /// bytes), `header_len` as announced. `None` if the first word announces no usable
    /// header or `kept` is shorter than 24.
    pub fn from_tcp_header_prefix(kept: &[u8]) -> Option<Self> {
        let first = super::wire::get_u32(kept, 0);
        let HeaderLen::Bytes(n) = header::header_len(first) else {
            return None;
        };
        let hdr = kept.get(..n.min(kept.len()))?;
        let view = ClientHeader::new_checked(hdr).ok()?;
        Some(Self::from_view(Protocol::Tcp, &view, n))
    }

    /// Decodes the client header inside a UDP datagram (after its `format` datagram
    /// header). A datagram without header flags (or too short for one) is a plain test
    /// with 32-bit ids, as 2.1.8 takes it.
    pub fn from_udp_datagram(datagram: &[u8], format: DatagramFormat) -> Self {
        let at = format.header_len();
        let Some(view) = datagram
            .get(at..)
            .and_then(|b| ClientHeader::new_checked(b).ok())
        else {
            return Self::plain(Protocol::Udp);
        };
        let f = view.flags();
        if f & flags::SMALL_TRIPTIMES != 0 || f & flags::ANY_HEADER == 0 {
            let mut r = Self::plain(Protocol::Udp);
            r.seqno_64 = f & flags::SEQNO64B != 0;
            return r;
        }
        let len = match header::header_len(f) {
            HeaderLen::Bytes(n) => n,
            _ => at + V1_LEN,
        };
        Self::from_view(Protocol::Udp, &view, len)
    }

    /// The flags word our client sends for this request in `style`.
    pub fn flags(&self, style: HeaderStyle) -> u32 {
        let mut f = match self.mode {
            Mode::Tradeoff => flags::VERSION1,
            Mode::Dual => flags::VERSION1 | flags::RUN_NOW,
            Mode::Reverse | Mode::FullDuplex => flags::VERSION2,
            Mode::Normal => 0,
        };
        if style == HeaderStyle::V21 {
            f |= flags::EXTEND | flags::LEN_BIT;
            let len = match self.protocol {
                Protocol::Tcp => header::TCP_LEN,
                Protocol::Udp => super::wire::datagram::LEN + header::TCP_LEN,
            };
            f |= (len as u32) << 1;
            if self.protocol == Protocol::Udp {
                f |= flags::SEQNO64B;
                if self.mode.server_sends_inline() || self.no_udp_fin {
                    f |= flags::UDPTESTS;
                }
            }
            if self.peer_detect {
                f |= flags::VERSION2 | flags::V2PEERDETECT;
            }
        }
        f
    }

    /// The extension's `upperflags` our client sends (a rate goes in `lRate`/`uRate`
    /// alone: 2.1.8 sets no `BWSET` bit for it, and its server reads the rate without one).
    pub fn upper_flags(&self) -> u16 {
        let mut u = match self.mode {
            Mode::Reverse => upper::REVERSE,
            Mode::FullDuplex => upper::FULLDUPLEX,
            _ => 0,
        };
        if self.no_udp_fin && self.protocol == Protocol::Udp {
            u |= upper::NOUDPFIN;
        }
        u
    }

    /// Writes the header in `style` at the start of `buf` (for UDP: the client header part,
    /// put it after the datagram header). Returns its length (0 for
    /// [`HeaderStyle::None`], or if `buf` is too short).
    pub fn write(&self, style: HeaderStyle, buf: &mut [u8]) -> usize {
        let len = match style {
            HeaderStyle::None => return 0,
            HeaderStyle::V20 => V1_LEN,
            HeaderStyle::V21 => header::TCP_LEN,
        };
        let Some(b) = buf.get_mut(..len) else {
            return 0;
        };
        b.fill(0);
        let mut h = ClientHeader::new_unchecked(b);
        h.set_flags(self.flags(style));
        h.set_num_threads(self.threads);
        h.set_port(self.port);
        h.set_buf_len(self.buf_len);
        h.set_amount(self.amount.to_wire());
        if style == HeaderStyle::V21 {
            h.set_ext(self.upper_flags(), self.rate_bps);
        }
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(mode: Mode) -> TestRequest {
        TestRequest {
            mode,
            port: 5001,
            amount: Amount::Time(1000),
            ..TestRequest::plain(Protocol::Tcp)
        }
    }

    #[test]
    fn flags_as_2_1_8_sends_them() {
        // shared/notes/iperf2.md §2 and §4: the flags of each stock command.
        assert_eq!(tcp(Mode::Normal).flags(HeaderStyle::V21), 0x4001_0078);
        assert_eq!(tcp(Mode::Tradeoff).flags(HeaderStyle::V21), 0xC001_0078);
        assert_eq!(tcp(Mode::Dual).flags(HeaderStyle::V21), 0xC001_0079);
        assert_eq!(tcp(Mode::Reverse).flags(HeaderStyle::V21), 0x4401_0078);
        assert_eq!(tcp(Mode::Reverse).upper_flags(), 0x0400);
        assert_eq!(tcp(Mode::FullDuplex).upper_flags(), 0x0800);
        let x = TestRequest {
            peer_detect: true,
            ..tcp(Mode::Normal)
        };
        assert_eq!(x.flags(HeaderStyle::V21), 0x4601_0078);
        assert_eq!(tcp(Mode::Dual).flags(HeaderStyle::V20), 0x8000_0001);
        let udp = |mode| TestRequest {
            mode,
            ..TestRequest::plain(Protocol::Udp)
        };
        assert_eq!(udp(Mode::Normal).flags(HeaderStyle::V21), 0x4801_0098);
        assert_eq!(udp(Mode::Tradeoff).flags(HeaderStyle::V21), 0xC801_0098);
        assert_eq!(udp(Mode::Dual).flags(HeaderStyle::V21), 0xC801_0099);
        assert_eq!(udp(Mode::Reverse).flags(HeaderStyle::V21), 0x6C01_0098);
    }

    #[test]
    fn amounts() {
        assert_eq!(Amount::from_wire(0xFFFF_FC18), Amount::Time(1000));
        assert_eq!(Amount::Time(1000).to_wire(), 0xFFFF_FC18);
        assert_eq!(Amount::from_wire(1_000_000), Amount::Bytes(1_000_000));
        assert_eq!(Amount::Bytes(0x1_8000_0001).to_wire(), 1);
        // The most negative word: 2^31 units of 10 ms, no overflow.
        assert_eq!(Amount::from_wire(0x8000_0000), Amount::Time(0x8000_0000));
        assert_eq!(Amount::from_us(1_500_000), Amount::Time(150));
        assert_eq!(Amount::Time(150).time_us(), Some(1_500_000));
    }

    #[test]
    fn decode_what_we_encode() {
        for mode in [
            Mode::Normal,
            Mode::Tradeoff,
            Mode::Dual,
            Mode::Reverse,
            Mode::FullDuplex,
        ] {
            let r = TestRequest {
                threads: 3,
                buf_len: 1000,
                rate_bps: 10_000_000,
                ..tcp(mode)
            };
            let mut b = [0u8; 60];
            assert_eq!(r.write(HeaderStyle::V21, &mut b), 60);
            let d = TestRequest::from_tcp_header(&b).unwrap();
            assert_eq!(d.mode, mode);
            assert_eq!((d.threads, d.buf_len, d.port), (3, 1000, 5001));
            assert_eq!(d.amount, Amount::Time(1000));
            assert_eq!(d.rate_bps, 10_000_000);
            assert_eq!(d.header_len, 60);
            assert_eq!(
                d.wants_ack,
                !matches!(mode, Mode::Reverse | Mode::FullDuplex)
            );
            assert_eq!(d.version, Some((0x0002_0001, 0x0008_0003)));
        }
        // A 2.0 -r header: 24 bytes, no ack.
        let mut b = [0u8; 24];
        tcp(Mode::Tradeoff).write(HeaderStyle::V20, &mut b);
        let d = TestRequest::from_tcp_header(&b).unwrap();
        assert_eq!(
            (d.mode, d.header_len, d.wants_ack),
            (Mode::Tradeoff, 24, false)
        );
        // Cut short: no request yet.
        assert_eq!(TestRequest::from_tcp_header(&b[..20]), None);
        // The pattern is data.
        assert_eq!(
            TestRequest::from_tcp_header(b"0123456789012345678901234"),
            None
        );
    }

    #[test]
    fn hostile_ports_refused() {
        for (port, ok) in [
            (0u32, None),
            (5001, Some(5001)),
            (65_536, None),
            (u32::MAX, None),
        ] {
            let r = TestRequest {
                port,
                ..tcp(Mode::Tradeoff)
            };
            assert_eq!(r.connect_back_port(), ok);
        }
    }

    #[test]
    fn udp_header_inside_datagram() {
        let r = TestRequest {
            rate_bps: 10_485_760,
            ..TestRequest {
                mode: Mode::Dual,
                port: 6001,
                ..TestRequest::plain(Protocol::Udp)
            }
        };
        let mut d = [0u8; 1470];
        r.write(HeaderStyle::V21, &mut d[16..]);
        let got = TestRequest::from_udp_datagram(&d, DatagramFormat::Current);
        assert_eq!(
            (got.mode, got.port, got.rate_bps),
            (Mode::Dual, 6001, 10_485_760)
        );
        assert!(got.seqno_64 && !got.wants_ack);
        // -R over UDP runs without the FIN exchange.
        let rev = TestRequest {
            mode: Mode::Reverse,
            ..r
        };
        rev.write(HeaderStyle::V21, &mut d[16..]);
        let got = TestRequest::from_udp_datagram(&d, DatagramFormat::Current);
        assert_eq!(got.mode, Mode::Reverse);
        assert!(got.no_udp_fin);
        // Too short for a header: plain, 32-bit ids.
        let got = TestRequest::from_udp_datagram(&d[..30], DatagramFormat::Current);
        assert_eq!((got.mode, got.seqno_64), (Mode::Normal, false));
    }
}
