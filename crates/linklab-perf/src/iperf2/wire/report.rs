//! The UDP server report (`server_hdr`): what an iperf 2 server sends back after a UDP
//! client's FIN. On the wire it follows a 16-byte datagram header (left zero by 2.1.8), so
//! the whole report datagram is [`DATAGRAM_LEN`] = 128 bytes.
//!
//! ```text
//!  v1    0 flags  4 total_len1 (bytes >> 32)  8 total_len2  12 stop_sec  16 stop_usec
//!       20 error_cnt  24 outorder_cnt  28 datagrams  32 jitter1 (s)  36 jitter2 (µs)
//!  ext  40 min  48 max  56 sum  64 mean  72 m2  80 vd   (transit, each sec + µs)
//!       88 cntTransit  92 cntIPG  96 IPGsum
//!  ext2 100 error_cnt2  104 outorder_cnt2  108 datagrams2   (high words, with SEQNO64B)
//! ```

use super::{flags, get_u32, put_u32, split_seconds, WireError};

/// Length of `server_hdr_v1`, the part every iperf 2 reads.
pub const V1_LEN: usize = 40;
/// Length of the whole `server_hdr` (v1, extension, extension 2).
pub const LEN: usize = 112;
/// Length of the report datagram: 16 header bytes, then [`LEN`].
pub const DATAGRAM_LEN: usize = super::datagram::LEN + LEN;

/// One transit-time statistic as two words: whole seconds, microseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TransitStats {
    /// Smallest one-way transit, seconds.
    pub min_s: f64,
    /// Largest one-way transit, seconds.
    pub max_s: f64,
    /// Mean one-way transit, seconds.
    pub mean_s: f64,
    /// Transit samples counted.
    pub count: u32,
}

/// A server report's contents, decoded (what the client prints as "Server Report").
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ReportInfo {
    /// The flags word ([`flags::VERSION1`] | [`flags::SEQNO64B`], + [`flags::EXTEND`] with
    /// transit statistics).
    pub flags: u32,
    /// Bytes the server received.
    pub bytes: u64,
    /// Seconds from the test's first datagram to its end, as the server measured.
    pub duration_s: f64,
    /// Datagrams lost (iperf 2's lost minus out-of-order, never negative).
    pub lost: u64,
    /// Datagrams that arrived out of order.
    pub out_of_order: u64,
    /// Datagrams the client sent, as the server counts them: the highest id seen.
    pub datagrams: u64,
    /// RFC 1889 jitter, seconds.
    pub jitter_s: f64,
    /// Transit statistics, when the server sent them ([`flags::EXTEND`]).
    pub transit: Option<TransitStats>,
}

/// A read/write view of a `server_hdr` (start it 16 bytes into the report datagram).
#[derive(Clone, Copy, Debug)]
pub struct ServerReport<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ServerReport<T> {
    /// A view over at least the 40 bytes of `server_hdr_v1`.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < V1_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Self { buffer })
    }

    fn word(&self, at: usize) -> u32 {
        get_u32(self.buffer.as_ref(), at)
    }

    fn seconds(&self, at: usize) -> f64 {
        f64::from(self.word(at) as i32) + f64::from(self.word(at + 4) as i32) / 1e6
    }

    /// True if the buffer holds the whole report (extensions included).
    pub fn is_whole(&self) -> bool {
        self.buffer.as_ref().len() >= LEN
    }

    /// The flags word.
    pub fn flags(&self) -> u32 {
        self.word(0)
    }

    /// Decodes the report as iperf 2.1.8's client does (`InitServerRelayUDPReport`): the
    /// high count words only with [`flags::SEQNO64B`] (and when present), transit
    /// statistics only with [`flags::EXTEND`]. Never fails; hostile values decode as what
    /// they say.
    pub fn info(&self) -> ReportInfo {
        let f = self.flags();
        let whole = self.is_whole();
        let wide = f & flags::SEQNO64B != 0 && whole;
        let count = |lo: usize, hi: usize| {
            let h = if wide { u64::from(self.word(hi)) } else { 0 };
            (h << 32) | u64::from(self.word(lo))
        };
        let transit = (f & flags::EXTEND != 0 && whole).then(|| TransitStats {
            min_s: self.seconds(40),
            max_s: self.seconds(48),
            mean_s: self.seconds(64),
            count: self.word(88),
        });
        ReportInfo {
            flags: f,
            bytes: (u64::from(self.word(4)) << 32) | u64::from(self.word(8)),
            duration_s: self.seconds(12),
            lost: count(20, 100),
            out_of_order: count(24, 104),
            datagrams: count(28, 108),
            jitter_s: self.seconds(32),
            transit,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ServerReport<T> {
    fn put(&mut self, at: usize, v: u32) {
        put_u32(self.buffer.as_mut(), at, v);
    }

    fn put_seconds(&mut self, at: usize, s: f64) {
        let (whole, us) = split_seconds(s);
        self.put(at, whole);
        self.put(at + 4, us);
    }

    /// Writes `info` as iperf 2.1.8's `write_UDP_AckFIN` does: counts split into low words
    /// and (with [`flags::SEQNO64B`]) high words, seconds as whole + µs; the transit words
    /// from `info.transit`, or zero. Needs the whole [`LEN`] bytes (writes what fits).
    pub fn emit(&mut self, info: &ReportInfo) {
        if let Some(b) = self.buffer.as_mut().get_mut(..LEN) {
            b.fill(0);
        }
        self.put(0, info.flags);
        self.put(4, (info.bytes >> 32) as u32);
        self.put(8, info.bytes as u32);
        self.put_seconds(12, info.duration_s);
        self.put(20, info.lost as u32);
        self.put(24, info.out_of_order as u32);
        self.put(28, info.datagrams as u32);
        self.put_seconds(32, info.jitter_s);
        if let Some(t) = info.transit {
            self.put_seconds(40, t.min_s);
            self.put_seconds(48, t.max_s);
            self.put_seconds(64, t.mean_s);
            self.put(88, t.count);
        }
        if info.flags & flags::SEQNO64B != 0 {
            self.put(100, (info.lost >> 32) as u32);
            self.put(104, (info.out_of_order >> 32) as u32);
            self.put(108, (info.datagrams >> 32) as u32);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_with_64_bit_counts() {
        let info = ReportInfo {
            flags: flags::VERSION1 | flags::SEQNO64B,
            bytes: (3u64 << 32) | 5,
            duration_s: 10.000_25,
            lost: (1u64 << 32) + 2,
            out_of_order: 4,
            datagrams: 8_925,
            jitter_s: 0.000_123,
            transit: None,
        };
        let mut b = [0xAAu8; LEN];
        ServerReport::new_checked(&mut b[..]).unwrap().emit(&info);
        let got = ServerReport::new_checked(&b[..]).unwrap().info();
        assert_eq!(got.bytes, info.bytes);
        assert_eq!(
            (got.lost, got.out_of_order, got.datagrams),
            (info.lost, 4, 8_925)
        );
        // 0.00025 s reads back as 249 µs: the C cast truncates 249.999…, as ours does.
        assert!((got.duration_s - 10.000_249).abs() < 1e-9);
        assert!((got.jitter_s - 0.000_123).abs() < 1e-9);
        assert_eq!(got.transit, None);
        // Without SEQNO64B the high words are ignored, as 2.1.8 ignores them.
        b[0] = 0x80;
        assert_eq!(ServerReport::new_checked(&b[..]).unwrap().info().lost, 2);
        // A v1-only (40-byte) report, as zperf sends: counts from the low words.
        let v1 = ServerReport::new_checked(&b[..V1_LEN]).unwrap().info();
        assert_eq!(v1.datagrams, 8_925);
        assert!(ServerReport::new_checked(&b[..39]).is_err());
    }
}
