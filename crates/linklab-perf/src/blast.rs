//! The packet blaster's messages: what the host asks a device to blast, what the device
//! reports back, and the datagrams' payload pattern. Sans-IO; the firmware
//! (`firmware/common/src/blast.rs`) and `linklab emu blast` speak it over UDP port
//! [`PORT`].
//!
//! A blast sends UDP datagrams back to the requester for a bounded time, one of two ways:
//! [`Way::Raw`] builds each frame itself and hands it straight to the NIC driver's transmit
//! path (no smoltcp), [`Way::Stack`] sends them through a smoltcp UDP socket. Each datagram's
//! payload is a 32-bit big-endian sequence number followed by [`pattern_byte`]s, which the
//! receiver checks.
//!
//! Request (16 bytes): `LLBQ`, version 1, way (0 raw, 1 stack), payload length (u16, big
//! endian, 18..=1472), duration in milliseconds of the device's clock (u16, 1..=2000), and
//! the requester's Ethernet address (6 bytes; the raw way builds its frames with it). Anything
//! else is refused ([`Refusal`]), never obeyed.
//!
//! Report (40 bytes, the device's answer when a blast is over): `LLBR`, version, way, payload
//! length, then u32 frames handed to the driver, u32 frames the driver dropped, u64 work over
//! the whole blast and u64 work spent sending (the board's work counter: instructions, or ns
//! awake at `-icount shift=0`; the difference is the main loop waiting for the driver to have
//! room), u64 nanoseconds from the request to the last frame.

/// The device's UDP port for blast requests.
pub const PORT: u16 = 5202;
/// Length of a request.
pub const REQUEST_LEN: usize = 16;
/// Length of a report.
pub const REPORT_LEN: usize = 40;
/// Smallest payload (a 60-byte Ethernet frame without FCS).
pub const MIN_PAYLOAD: u16 = 18;
/// Largest payload (a full 1514-byte Ethernet frame).
pub const MAX_PAYLOAD: u16 = 1472;
/// Longest blast, in milliseconds of the device's clock.
pub const MAX_DURATION_MS: u16 = 2000;
/// Bytes of Ethernet, IPv4 and UDP headers before the payload.
pub const HEADERS_LEN: usize = 14 + 20 + 8;

const REQUEST_MAGIC: &[u8; 4] = b"LLBQ";
const REPORT_MAGIC: &[u8; 4] = b"LLBR";
const VERSION: u8 = 1;

/// How a blast sends its datagrams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Way {
    /// Frames built by the blaster and handed straight to the driver's transmit path.
    Raw,
    /// Datagrams sent through a smoltcp UDP socket.
    Stack,
}

impl Way {
    fn code(self) -> u8 {
        match self {
            Way::Raw => 0,
            Way::Stack => 1,
        }
    }

    fn from_code(c: u8) -> Option<Way> {
        match c {
            0 => Some(Way::Raw),
            1 => Some(Way::Stack),
            _ => None,
        }
    }
}

/// A blast request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Request {
    /// How to send.
    pub way: Way,
    /// UDP payload bytes per datagram, [`MIN_PAYLOAD`]..=[`MAX_PAYLOAD`].
    pub payload_len: u16,
    /// How long to blast, 1..=[`MAX_DURATION_MS`] ms of the device's clock.
    pub duration_ms: u16,
    /// The requester's Ethernet address.
    pub mac: [u8; 6],
}

/// Why a request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Refusal {
    /// Not [`REQUEST_LEN`] bytes.
    Length,
    /// Not a blast request (magic) or another version.
    Unknown,
    /// A way, payload length or duration out of range.
    OutOfRange,
}

impl Request {
    /// Reads a request; anything that is not exactly a valid one is refused.
    pub fn parse(b: &[u8]) -> Result<Request, Refusal> {
        let b: &[u8; REQUEST_LEN] = b.try_into().map_err(|_| Refusal::Length)?;
        if &b[..4] != REQUEST_MAGIC || b[4] != VERSION {
            return Err(Refusal::Unknown);
        }
        let way = Way::from_code(b[5]).ok_or(Refusal::OutOfRange)?;
        let payload_len = u16::from_be_bytes([b[6], b[7]]);
        let duration_ms = u16::from_be_bytes([b[8], b[9]]);
        if !(MIN_PAYLOAD..=MAX_PAYLOAD).contains(&payload_len)
            || !(1..=MAX_DURATION_MS).contains(&duration_ms)
        {
            return Err(Refusal::OutOfRange);
        }
        let mut mac = [0; 6];
        mac.copy_from_slice(&b[10..16]);
        Ok(Request {
            way,
            payload_len,
            duration_ms,
            mac,
        })
    }

    /// The request's bytes.
    pub fn to_bytes(&self) -> [u8; REQUEST_LEN] {
        let mut b = [0; REQUEST_LEN];
        b[..4].copy_from_slice(REQUEST_MAGIC);
        b[4] = VERSION;
        b[5] = self.way.code();
        b[6..8].copy_from_slice(&self.payload_len.to_be_bytes());
        b[8..10].copy_from_slice(&self.duration_ms.to_be_bytes());
        b[10..16].copy_from_slice(&self.mac);
        b
    }
}

/// A device's report of one blast.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Report {
    /// True if the blast went through smoltcp ([`Way::Stack`]), false if raw.
    pub stack: bool,
    /// UDP payload bytes per datagram.
    pub payload_len: u16,
    /// Datagrams handed to the driver (raw) or queued in the UDP socket (stack).
    pub frames: u32,
    /// Frames the driver dropped during the blast (no free transmit buffer or FIFO room).
    pub driver_drops: u32,
    /// The board's work counter over the blast.
    pub work: u64,
    /// The part of `work` spent sending: building and handing frames to the driver (raw), or
    /// queueing them in the socket and polling the interface (stack).
    pub send_work: u64,
    /// Nanoseconds of the device's clock from the first frame to the last.
    pub duration_ns: u64,
}

impl Report {
    /// The report's bytes.
    pub fn to_bytes(&self) -> [u8; REPORT_LEN] {
        let mut b = [0; REPORT_LEN];
        b[..4].copy_from_slice(REPORT_MAGIC);
        b[4] = VERSION;
        b[5] = u8::from(self.stack);
        b[6..8].copy_from_slice(&self.payload_len.to_be_bytes());
        b[8..12].copy_from_slice(&self.frames.to_be_bytes());
        b[12..16].copy_from_slice(&self.driver_drops.to_be_bytes());
        b[16..24].copy_from_slice(&self.work.to_be_bytes());
        b[24..32].copy_from_slice(&self.send_work.to_be_bytes());
        b[32..40].copy_from_slice(&self.duration_ns.to_be_bytes());
        b
    }

    /// Reads a report; None if `b` is not one.
    pub fn parse(b: &[u8]) -> Option<Report> {
        let b: &[u8; REPORT_LEN] = b.try_into().ok()?;
        if &b[..4] != REPORT_MAGIC || b[4] != VERSION || b[5] > 1 {
            return None;
        }
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| (u64::from(u32_at(i)) << 32) | u64::from(u32_at(i + 4));
        Some(Report {
            stack: b[5] == 1,
            payload_len: u16::from_be_bytes([b[6], b[7]]),
            frames: u32_at(8),
            driver_drops: u32_at(12),
            work: u64_at(16),
            send_work: u64_at(24),
            duration_ns: u64_at(32),
        })
    }
}

/// The payload byte at `offset` (4 and up; 0..4 hold the sequence number): the same in every
/// datagram, so a device sends it without a per-byte loop.
pub fn pattern_byte(offset: usize) -> u8 {
    (offset as u8).wrapping_mul(37).wrapping_add(11)
}

/// Writes a datagram's payload: sequence number and pattern.
pub fn fill_payload(seq: u32, payload: &mut [u8]) {
    for (i, b) in payload.iter_mut().enumerate().skip(4) {
        *b = pattern_byte(i);
    }
    set_seq(seq, payload);
}

/// Writes the sequence number into the first four bytes of a payload (if it has them).
pub fn set_seq(seq: u32, payload: &mut [u8]) {
    if let Some(head) = payload.get_mut(..4) {
        head.copy_from_slice(&seq.to_be_bytes());
    }
}

/// The sequence number of a received payload if the rest holds the pattern.
pub fn check_payload(payload: &[u8]) -> Option<u32> {
    let head = payload.get(..4)?;
    let intact = payload
        .iter()
        .enumerate()
        .skip(4)
        .all(|(i, &b)| b == pattern_byte(i));
    intact.then(|| u32::from_be_bytes([head[0], head[1], head[2], head[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_the_rest_is_refused() {
        let r = Request {
            way: Way::Stack,
            payload_len: 1472,
            duration_ms: 200,
            mac: [0x0a, 0x0b, 0, 0, 0, 0],
        };
        assert_eq!(Request::parse(&r.to_bytes()), Ok(r));
        let b = r.to_bytes();
        assert_eq!(Request::parse(&b[..15]), Err(Refusal::Length));
        let mut long = [0u8; 17];
        long[..16].copy_from_slice(&b);
        assert_eq!(Request::parse(&long), Err(Refusal::Length));
        for (i, v, why) in [
            (0, b'X', Refusal::Unknown),
            (4, 2, Refusal::Unknown),
            (5, 2, Refusal::OutOfRange),
            (6, 0x06, Refusal::OutOfRange),
            (8, 0xff, Refusal::OutOfRange),
        ] {
            let mut bad = b;
            bad[i] = v;
            assert_eq!(Request::parse(&bad), Err(why), "byte {i}");
        }
        let mut short = b;
        short[6..8].copy_from_slice(&17u16.to_be_bytes());
        assert_eq!(Request::parse(&short), Err(Refusal::OutOfRange));
        let mut zero = b;
        zero[8..10].copy_from_slice(&0u16.to_be_bytes());
        assert_eq!(Request::parse(&zero), Err(Refusal::OutOfRange));
    }

    #[test]
    fn reports_round_trip() {
        let r = Report {
            stack: true,
            payload_len: 18,
            frames: 70_000,
            driver_drops: 3,
            work: 1 << 40,
            send_work: 1 << 39,
            duration_ns: 200_000_123,
        };
        assert_eq!(Report::parse(&r.to_bytes()), Some(r));
        assert_eq!(Report::parse(&r.to_bytes()[..39]), None);
    }

    #[test]
    fn payloads_carry_their_number_and_the_pattern() {
        let mut p = [0u8; 18];
        fill_payload(7, &mut p);
        assert_eq!(check_payload(&p), Some(7));
        set_seq(8, &mut p);
        assert_eq!(check_payload(&p), Some(8));
        p[17] ^= 1;
        assert_eq!(check_payload(&p), None);
        assert_eq!(check_payload(&p[..3]), None);
    }
}
