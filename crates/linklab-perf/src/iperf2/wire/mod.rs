//! iperf 2 on the wire: constants and typed views over byte buffers, in the manner of
//! smoltcp's `wire` module (a view checks its length once in `new_checked`; its getters
//! and setters never panic). Every multi-byte field is a big-endian 32-bit word unless
//! said otherwise. Facts from iperf 2.1.8's `include/payloads.h` and `src/Listener.cpp`
//! (see `shared/notes/iperf2.md` for file and line).
//!
//! - [`header`]: the client's test header — `client_hdr_v1` (24 bytes) and its extension
//!   `client_hdrext` (36 bytes) — and the rule for its length;
//! - [`datagram`]: the UDP datagram header (16 bytes; 12 in iperf 2.0.9 and older);
//! - [`report`]: the UDP server report (`server_hdr`, 112 bytes, sent after 16 bytes);
//! - [`ack`]: the version reply a 2.1 server sends on TCP (`client_hdr_ack`, 28 bytes).

pub mod ack;
pub mod datagram;
pub mod header;
pub mod report;

pub use ack::HeaderAck;
pub use datagram::UdpDatagram;
pub use header::{header_len, ClientHeader};
pub use report::ServerReport;

/// The TCP and UDP port iperf 2 listens on by default.
pub const DEFAULT_PORT: u16 = 5001;
/// iperf 2's default TCP write/read length (`-l`): 128 KiB.
pub const DEFAULT_TCP_LEN: usize = 128 * 1024;
/// iperf 2's default UDP datagram length (`-l`) over IPv4.
pub const DEFAULT_UDP_LEN: usize = 1470;
/// iperf 2's default UDP rate (`-b`): 1 Mbit/s as it reads "1M" (2^20 bit/s).
pub const DEFAULT_UDP_RATE: u64 = 1024 * 1024;
/// The longest test header the length bits can announce (2.1.8's `MAX_HEADER_LEN` is 256).
pub const MAX_HEADER_LEN: usize = 255;
/// The smallest UDP datagram iperf 2 sends (`MINIPERFPAYLOAD`): room for the 16-byte
/// datagram header and a little more.
pub const MIN_UDP_LEN: usize = 18;

/// The version iperf 2.1.8 announces (`IPERF_VERSION_MAJORHEX`): 2.1.
pub const VERSION_U: u32 = 0x0002_0001;
/// The version iperf 2.1.8 announces (`IPERF_VERSION_MINORHEX`): .8, final release (3).
pub const VERSION_L: u32 = 0x0008_0003;

/// Bits of the first header word (`flags`).
pub mod flags {
    /// Legacy `-r`/`-d` request: the server connects back to the client.
    pub const VERSION1: u32 = 0x8000_0000;
    /// The extension (`client_hdrext`) follows; in a server report: transit statistics.
    pub const EXTEND: u32 = 0x4000_0000;
    /// UDP special tests (isochronous, no FIN, trip times, reverse) are described.
    pub const UDPTESTS: u32 = 0x2000_0000;
    /// A `--permit-key` follows the header.
    pub const KEYCHECK: u32 = 0x1000_0000;
    /// UDP datagram ids are 64 bits (`id` low word, `id2` high word).
    pub const SEQNO64B: u32 = 0x0800_0000;
    /// A 2.0.14+ test (`-R`, `--full-duplex`, `-X`): turns off [`VERSION1`]'s meaning.
    pub const VERSION2: u32 = 0x0400_0000;
    /// `-X`: the client waits for the server's version reply before it sends.
    pub const V2PEERDETECT: u32 = 0x0200_0000;
    /// `--bounceback`: a different header (not served).
    pub const BOUNCEBACK: u32 = 0x0080_0000;
    /// The small trip-times UDP header (not served; read as no header).
    pub const SMALL_TRIPTIMES: u32 = 0x0002_0000;
    /// Bits 1..=8 carry the header's length ([`LEN_MASK`]).
    pub const LEN_BIT: u32 = 0x0001_0000;
    /// Where the header length sits when [`LEN_BIT`] is set: `len = (flags & LEN_MASK) >> 1`.
    pub const LEN_MASK: u32 = 0x0000_01FE;
    /// With [`VERSION1`]: set for `-d` (dual, at once), clear for `-r` (tradeoff, after).
    pub const RUN_NOW: u32 = 0x0000_0001;
    /// Any of these makes the first word a header (else it is test data).
    pub const ANY_HEADER: u32 = VERSION1 | VERSION2 | EXTEND;
}

/// Bits of the extension's 16-bit `upperflags`.
pub mod upper {
    /// Isochronous test (not served).
    pub const ISOCH: u16 = 0x0001;
    /// UDP: no FIN exchange and no server report.
    pub const NOUDPFIN: u16 = 0x0008;
    /// `--trip-times`: a 20-byte start-time block follows the extension.
    pub const TRIPTIME: u16 = 0x0010;
    /// `-b` was set (the rate words are meaningful).
    pub const BWSET: u16 = 0x0100;
    /// `--fq-rate` was set.
    pub const FQRATESET: u16 = 0x0200;
    /// `-R`: the server sends on the client's connection.
    pub const REVERSE: u16 = 0x0400;
    /// `--full-duplex`: both send on the one connection.
    pub const FULLDUPLEX: u16 = 0x0800;
    /// `--txstart-time`.
    pub const EPOCH_START: u16 = 0x1000;
    /// Periodic bursts (not served).
    pub const PERIODICBURST: u16 = 0x2000;
}

/// Why a view could not be made over a buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum WireError {
    /// The buffer is shorter than the structure.
    Truncated,
}

/// The big-endian word at `at`, 0 if `bytes` is too short (views check lengths first, so
/// the 0 is never seen through them; it keeps every read free of a panic).
pub(crate) fn get_u32(bytes: &[u8], at: usize) -> u32 {
    match bytes.get(at..at.wrapping_add(4)) {
        Some(&[a, b, c, d]) => u32::from_be_bytes([a, b, c, d]),
        _ => 0,
    }
}

/// The big-endian 16-bit word at `at`, 0 if `bytes` is too short.
pub(crate) fn get_u16(bytes: &[u8], at: usize) -> u16 {
    match bytes.get(at..at.wrapping_add(2)) {
        Some(&[a, b]) => u16::from_be_bytes([a, b]),
        _ => 0,
    }
}

/// Writes the big-endian word `v` at `at`; nothing if `bytes` is too short.
pub(crate) fn put_u32(bytes: &mut [u8], at: usize, v: u32) {
    if let Some(b) = bytes.get_mut(at..at.wrapping_add(4)) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}

/// Writes the big-endian 16-bit word `v` at `at`; nothing if `bytes` is too short.
pub(crate) fn put_u16(bytes: &mut [u8], at: usize, v: u16) {
    if let Some(b) = bytes.get_mut(at..at.wrapping_add(2)) {
        b.copy_from_slice(&v.to_be_bytes());
    }
}

/// A duration in seconds as iperf 2 splits it on the wire: whole seconds and microseconds
/// (`stop_sec`/`stop_usec`, `jitter1`/`jitter2`), each truncated toward zero as C's
/// `(long)` cast does, negative and huge values saturated.
pub(crate) fn split_seconds(s: f64) -> (u32, u32) {
    if s.is_nan() || s <= 0.0 {
        return (0, 0);
    }
    let whole = s as u64; // saturating, truncates toward zero
    let frac = ((s - whole as f64) * 1e6) as u32;
    (whole.min(u64::from(u32::MAX)) as u32, frac.min(999_999))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_never_panic() {
        let b = [1u8, 2, 3];
        assert_eq!(get_u32(&b, 0), 0);
        assert_eq!(get_u32(&b, usize::MAX), 0);
        assert_eq!(get_u16(&b, 1), 0x0203);
        let mut m = [0u8; 4];
        put_u32(&mut m, 1, 7);
        assert_eq!(m, [0; 4]);
        put_u32(&mut m, 0, 0x0102_0304);
        assert_eq!(m, [1, 2, 3, 4]);
    }

    #[test]
    fn seconds_split_like_a_c_cast() {
        assert_eq!(split_seconds(1.25), (1, 250_000));
        assert_eq!(split_seconds(-3.0), (0, 0));
        assert_eq!(split_seconds(f64::NAN), (0, 0));
        assert_eq!(split_seconds(1e20).0, u32::MAX);
    }
}
