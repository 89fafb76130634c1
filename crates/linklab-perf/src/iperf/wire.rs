//! iperf3 wire constants and typed views: control states, the cookie, the UDP "connect"
//! hello, the UDP payload header (32- and 64-bit counters) and length-prefixed control
//! messages. Everything here is pure, bounded and never panics on input.

/// The TCP (control) and UDP port iperf3 listens on by default.
pub const DEFAULT_PORT: u16 = 5201;
/// Length of the cookie that opens the control connection and every TCP data stream:
/// 36 characters from [`COOKIE_ALPHABET`] and a terminating NUL.
pub const COOKIE_SIZE: usize = 37;
/// The characters iperf3 draws cookies from.
pub const COOKIE_ALPHABET: &[u8; 32] = b"abcdefghijklmnopqrstuvwxyz234567";

/// Largest JSON document accepted on the control connection (iperf3's parameter cap).
pub const MAX_JSON_LEN: usize = 8 * 1024;
/// Most parallel streams (`-P`) we run; `--bidir` doubles the stream count.
pub const MAX_PARALLEL: usize = 8;
/// Most data streams in one test (`-P 8 --bidir`).
pub const MAX_STREAMS: usize = 2 * MAX_PARALLEL;
/// Largest block (`-l`) we send or receive in one call.
pub const MAX_BLOCK_LEN: usize = 1024 * 1024;
/// Largest UDP block (iperf3's MAX_UDP_BLOCKSIZE).
pub const MAX_UDP_BLOCK_LEN: usize = 65507;
/// Default TCP block length (128 KiB, iperf3's DEFAULT_TCP_BLKSIZE).
pub const DEFAULT_TCP_BLOCK_LEN: usize = 128 * 1024;
/// Default UDP block length when no MSS is known (iperf3's DEFAULT_UDP_BLKSIZE).
pub const DEFAULT_UDP_BLOCK_LEN: usize = 1460;
/// Default UDP target rate: 1 Mbit/s (iperf3's UDP_RATE).
pub const DEFAULT_UDP_RATE: u64 = 1024 * 1024;

/// Whether `c` is in [`COOKIE_ALPHABET`], by its two ranges (no table in flash).
pub fn is_cookie_char(c: u8) -> bool {
    c.is_ascii_lowercase() || (b'2'..=b'7').contains(&c)
}

/// The one-byte states iperf3 exchanges on the control connection (signed char on the wire).
pub mod state {
    /// Server to client: streams are set up, the test clock starts.
    pub const TEST_START: i8 = 1;
    /// Server to client: data may flow.
    pub const TEST_RUNNING: i8 = 2;
    /// Client to server: the sending side is finished.
    pub const TEST_END: i8 = 4;
    /// Server to client: send your parameters.
    pub const PARAM_EXCHANGE: i8 = 9;
    /// Server to client: open the data streams now.
    pub const CREATE_STREAMS: i8 = 10;
    /// Server to client: the server is shutting down.
    pub const SERVER_TERMINATE: i8 = 11;
    /// Client to server: the client is shutting down.
    pub const CLIENT_TERMINATE: i8 = 12;
    /// Server to client: exchange results JSON (client first).
    pub const EXCHANGE_RESULTS: i8 = 13;
    /// Server to client: print results and finish.
    pub const DISPLAY_RESULTS: i8 = 14;
    /// Client to server: the test is over.
    pub const IPERF_DONE: i8 = 16;
    /// Server to client: another test is running.
    pub const ACCESS_DENIED: i8 = -1;
    /// Server to client: followed by two 4-byte big-endian codes (i_errno, errno).
    pub const SERVER_ERROR: i8 = -2;
}

/// iperf3 3.12+ UDP stream hello ("9876" on a little-endian sender).
pub const UDP_CONNECT_MSG: u32 = 0x3637_3839;
/// iperf3 3.12+ UDP hello reply ("6789" on a little-endian sender).
pub const UDP_CONNECT_REPLY: u32 = 0x3938_3736;
/// Hello of iperf3 before 3.12.
pub const LEGACY_UDP_CONNECT_MSG: u32 = 123_456_789;
/// Hello reply of iperf3 before 3.12.
pub const LEGACY_UDP_CONNECT_REPLY: u32 = 987_654_321;

/// The 4-byte UDP hello a client sends, as a little-endian host running iperf3 writes it.
pub const fn udp_hello() -> [u8; 4] {
    UDP_CONNECT_MSG.to_le_bytes()
}

/// The 4-byte UDP hello reply a server sends, as a little-endian host running iperf3 writes it.
pub const fn udp_hello_reply() -> [u8; 4] {
    UDP_CONNECT_REPLY.to_le_bytes()
}

/// iperf3 writes these integers in host byte order, so accept both byte orders.
fn is_one_of(datagram: &[u8], values: [u32; 2]) -> bool {
    let Ok(bytes) = <[u8; 4]>::try_from(datagram) else {
        return false;
    };
    let le = u32::from_le_bytes(bytes);
    let be = u32::from_be_bytes(bytes);
    values.iter().any(|v| *v == le || *v == be)
}

/// True if `datagram` is a UDP stream hello (3.12+ or legacy magic, either byte order).
pub fn is_udp_hello(datagram: &[u8]) -> bool {
    is_one_of(datagram, [UDP_CONNECT_MSG, LEGACY_UDP_CONNECT_MSG])
}

/// True if `datagram` is a UDP hello reply (3.12+ or legacy magic, either byte order).
pub fn is_udp_hello_reply(datagram: &[u8]) -> bool {
    is_one_of(datagram, [UDP_CONNECT_REPLY, LEGACY_UDP_CONNECT_REPLY])
}

/// Makes a cookie from a seed: 36 characters from [`COOKIE_ALPHABET`] and a NUL, like
/// iperf3's `make_cookie`. The seed should differ per test (time, address, counter).
pub fn make_cookie(seed: u64) -> [u8; COOKIE_SIZE] {
    let mut cookie = [0u8; COOKIE_SIZE];
    // xorshift64*: enough to make cookies distinct; they are not a security measure.
    let mut x = seed ^ 0x9E37_79B9_7F4A_7C15;
    if x == 0 {
        x = 1;
    }
    for c in cookie.iter_mut().take(COOKIE_SIZE - 1) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
        *c = COOKIE_ALPHABET[(r >> 59) as usize & 31];
    }
    cookie
}

/// The header at the start of every iperf3 UDP datagram: send time and sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpHeader {
    /// Send time, seconds part (sender's clock).
    pub sec: u32,
    /// Send time, microseconds part.
    pub usec: u32,
    /// Sequence number, starting at 1.
    pub count: u64,
}

impl UdpHeader {
    /// Header length: 12 bytes with 32-bit counters, 16 with `--udp-counters-64bit`.
    pub const fn len(counters_64bit: bool) -> usize {
        if counters_64bit {
            16
        } else {
            12
        }
    }

    /// Parses the header at the start of `datagram`; `None` if it is too short.
    pub fn parse(datagram: &[u8], counters_64bit: bool) -> Option<Self> {
        let be32 = |at: usize| -> Option<u32> {
            let b = datagram.get(at..at + 4)?;
            Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        };
        let sec = be32(0)?;
        let usec = be32(4)?;
        let count = if counters_64bit {
            let b = datagram.get(8..16)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            u64::from_be_bytes(a)
        } else {
            u64::from(be32(8)?)
        };
        Some(Self { sec, usec, count })
    }

    /// Writes the header at the start of `buf`; returns its length, `None` if `buf` is too
    /// short. With 32-bit counters the sequence number wraps like iperf3's.
    pub fn write(&self, buf: &mut [u8], counters_64bit: bool) -> Option<usize> {
        let len = Self::len(counters_64bit);
        let out = buf.get_mut(..len)?;
        out[0..4].copy_from_slice(&self.sec.to_be_bytes());
        out[4..8].copy_from_slice(&self.usec.to_be_bytes());
        if counters_64bit {
            out[8..16].copy_from_slice(&self.count.to_be_bytes());
        } else {
            out[8..12].copy_from_slice(&(self.count as u32).to_be_bytes());
        }
        Some(len)
    }

    /// The send time in microseconds.
    pub fn micros(&self) -> u64 {
        u64::from(self.sec) * 1_000_000 + u64::from(self.usec)
    }
}

/// What the control reader expects next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The 37-byte cookie (server, first bytes of a control connection).
    Cookie,
    /// One state byte.
    State,
    /// A 4-byte big-endian length, then that many bytes of JSON.
    Json,
    /// The two 4-byte codes after SERVER_ERROR.
    ErrorCodes,
}

/// A complete control message; JSON and cookie bytes are read with [`ControlReader::payload`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlMsg {
    /// The cookie is in `payload()`.
    Cookie,
    /// A state byte.
    State(i8),
    /// A JSON document of this length is in `payload()`.
    Json(usize),
    /// iperf3's `i_errno` and `errno` after SERVER_ERROR.
    ErrorCodes(i32, i32),
}

/// Why a control stream was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ControlError {
    /// The announced JSON length exceeds the limit or the buffer.
    JsonTooLong(u32),
    /// The reader's buffer cannot hold a cookie or a length prefix.
    BufferTooSmall,
}

/// Incremental reader of the control byte stream: cookie, state bytes, length-prefixed
/// JSON. Bytes are pushed as they arrive; a message completes when all its bytes are in.
/// Uses a caller-provided buffer; never reads past it.
pub struct ControlReader<'a> {
    buf: &'a mut [u8],
    filled: usize,
    expect: Expect,
    json_len: Option<usize>,
    max_json: usize,
}

impl<'a> ControlReader<'a> {
    /// A reader over `buf`; JSON longer than `min(max_json, buf.len())` is rejected.
    pub fn new(buf: &'a mut [u8], max_json: usize) -> Self {
        let max_json = max_json.min(buf.len());
        Self {
            buf,
            filled: 0,
            expect: Expect::State,
            json_len: None,
            max_json,
        }
    }

    /// Accepts JSON documents up to `max` bytes (never more than the buffer holds).
    pub fn set_max_json(&mut self, max: usize) {
        self.max_json = max.min(self.buf.len());
    }

    /// Sets what comes next and drops any partial message.
    pub fn expect(&mut self, what: Expect) {
        self.expect = what;
        self.filled = 0;
        self.json_len = None;
    }

    /// What the reader waits for.
    pub fn expecting(&self) -> Expect {
        self.expect
    }

    /// True if part of a message has been read.
    pub fn is_partial(&self) -> bool {
        self.filled > 0 || (self.expect == Expect::Json && self.json_len.is_some())
    }

    /// The bytes of the last cookie or JSON message.
    pub fn payload(&self) -> &[u8] {
        match self.expect {
            Expect::Cookie => self.buf.get(..COOKIE_SIZE).unwrap_or(&[]),
            _ => self.buf.get(..self.json_len.unwrap_or(0)).unwrap_or(&[]),
        }
    }

    /// Takes bytes from `data` until one message is complete. Returns how many bytes were
    /// consumed and the message, if one completed. After a message the reader expects a
    /// state byte unless [`expect`](Self::expect) is called.
    pub fn push(&mut self, data: &[u8]) -> Result<(usize, Option<ControlMsg>), ControlError> {
        let mut used = 0;
        while used < data.len() {
            let rest = &data[used..];
            match self.expect {
                Expect::State => {
                    self.filled = 0;
                    return Ok((used + 1, Some(ControlMsg::State(rest[0] as i8))));
                }
                Expect::Cookie | Expect::ErrorCodes => {
                    let want = if self.expect == Expect::Cookie {
                        COOKIE_SIZE
                    } else {
                        8
                    };
                    let n = self.fill(rest, want);
                    if n == 0 {
                        return Err(ControlError::BufferTooSmall);
                    }
                    used += n;
                    if self.filled == want {
                        self.filled = 0;
                        let msg = if self.expect == Expect::Cookie {
                            ControlMsg::Cookie
                        } else {
                            let b = &self.buf[..8];
                            let a = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                            let e = i32::from_be_bytes([b[4], b[5], b[6], b[7]]);
                            self.expect = Expect::State;
                            ControlMsg::ErrorCodes(a, e)
                        };
                        return Ok((used, Some(msg)));
                    }
                }
                Expect::Json => match self.json_len {
                    None => {
                        let n = self.fill(rest, 4);
                        if n == 0 {
                            return Err(ControlError::BufferTooSmall);
                        }
                        used += n;
                        if self.filled == 4 {
                            let b = &self.buf[..4];
                            let len = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
                            if len as usize > self.max_json {
                                return Err(ControlError::JsonTooLong(len));
                            }
                            self.json_len = Some(len as usize);
                            self.filled = 0;
                            if len == 0 {
                                return Ok((used, Some(self.finish_json(0))));
                            }
                        }
                    }
                    Some(len) => {
                        let n = self.fill(rest, len);
                        if n == 0 {
                            return Err(ControlError::BufferTooSmall);
                        }
                        used += n;
                        if self.filled == len {
                            return Ok((used, Some(self.finish_json(len))));
                        }
                    }
                },
            }
        }
        Ok((used, None))
    }

    fn finish_json(&mut self, len: usize) -> ControlMsg {
        self.filled = 0;
        // Keep json_len so payload() can return the document; State comes next.
        self.expect = Expect::State;
        self.json_len = Some(len);
        ControlMsg::Json(len)
    }

    /// Copies up to `want - filled` bytes into the buffer; returns how many were taken.
    fn fill(&mut self, data: &[u8], want: usize) -> usize {
        let want = want.min(self.buf.len());
        let n = (want.saturating_sub(self.filled)).min(data.len());
        if let (Some(dst), Some(src)) = (
            self.buf.get_mut(self.filled..self.filled + n),
            data.get(..n),
        ) {
            dst.copy_from_slice(src);
        }
        self.filled += n;
        n
    }
}

/// Writes a length-prefixed control message (4-byte big-endian length + body) into `out`;
/// `body` is called with the space after the prefix and returns the body length.
pub fn frame_json(out: &mut [u8], body: impl FnOnce(&mut [u8]) -> Option<usize>) -> Option<usize> {
    let (prefix, rest) = out.split_at_mut_checked(4)?;
    let n = body(rest)?;
    prefix.copy_from_slice(&u32::try_from(n).ok()?.to_be_bytes());
    Some(4 + n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn udp_header_roundtrip_32_and_64() {
        let h = UdpHeader {
            sec: 7,
            usec: 999_999,
            count: 0x1_0000_0005,
        };
        let mut b = [0u8; 16];
        assert_eq!(h.write(&mut b, true), Some(16));
        assert_eq!(UdpHeader::parse(&b, true), Some(h));
        assert_eq!(h.write(&mut b, false), Some(12));
        assert_eq!(UdpHeader::parse(&b, false).map(|p| p.count), Some(5));
        assert_eq!(UdpHeader::parse(&b[..11], false), None);
        assert_eq!(UdpHeader::parse(&b[..15], true), None);
    }

    #[test]
    fn hello_magic_both_versions_and_orders() {
        assert!(is_udp_hello(&udp_hello()));
        assert_eq!(&udp_hello(), b"9876");
        assert_eq!(&udp_hello_reply(), b"6789");
        assert!(is_udp_hello(&LEGACY_UDP_CONNECT_MSG.to_le_bytes()));
        assert!(is_udp_hello(&LEGACY_UDP_CONNECT_MSG.to_be_bytes()));
        assert!(!is_udp_hello(&[1, 2, 3, 4]));
        assert!(!is_udp_hello(b"98765"));
        assert!(is_udp_hello_reply(&udp_hello_reply()));
        assert!(is_udp_hello_reply(&LEGACY_UDP_CONNECT_REPLY.to_le_bytes()));
    }

    #[test]
    fn cookie_shape() {
        let c = make_cookie(42);
        assert_eq!(c[36], 0);
        assert!(c[..36].iter().all(|b| COOKIE_ALPHABET.contains(b)));
        assert_ne!(make_cookie(1), make_cookie(2));
    }

    #[test]
    fn cookie_chars_are_the_alphabet_and_nothing_else() {
        for c in 0..=255u8 {
            assert_eq!(is_cookie_char(c), COOKIE_ALPHABET.contains(&c), "{c}");
        }
    }

    #[test]
    fn reader_byte_by_byte() {
        let mut buf = [0u8; 64];
        let mut r = ControlReader::new(&mut buf, 64);
        r.expect(Expect::Json);
        let msg = [0, 0, 0, 2, b'{', b'}', 9];
        let mut got = None;
        for (i, b) in msg.iter().enumerate() {
            let (n, m) = r.push(core::slice::from_ref(b)).unwrap();
            assert_eq!(n, 1);
            if let Some(m) = m {
                assert_eq!(i, 5);
                got = Some(m);
                assert_eq!(r.payload(), b"{}");
                break;
            }
        }
        assert_eq!(got, Some(ControlMsg::Json(2)));
        assert_eq!(r.push(&[9]).unwrap(), (1, Some(ControlMsg::State(9))));
        r.expect(Expect::Json);
        assert_eq!(r.push(&[0, 0, 1, 0]), Err(ControlError::JsonTooLong(256)));
        // A buffer too small for a cookie is an error, not a stall.
        let mut tiny = [0u8; 8];
        let mut r = ControlReader::new(&mut tiny, 8);
        r.expect(Expect::Cookie);
        assert_eq!(r.push(&[b'a'; 40]), Err(ControlError::BufferTooSmall));
    }
}
