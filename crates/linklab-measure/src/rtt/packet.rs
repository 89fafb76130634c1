//! The rtt packet: a typed view over the payload of one echo datagram (or one TCP frame).
//!
//! Layout (big endian), followed by a fill pattern up to the packet size:
//!
//! ```text
//! 0      2      4              8                      16
//! | "LL" | run  |     seq      |   send time (ns)     | fill ...
//! ```
//!
//! `run` tells one measurement run from the next, so a late reply from an earlier run is never
//! counted in a later one; the send time is nanoseconds since the client's start, so the round
//! trip is computed from the reply alone, with any number of packets in flight.

/// Bytes of the packet header; the smallest packet the client sends.
pub const HEADER_LEN: usize = 16;

const MAGIC: [u8; 2] = *b"LL";

/// The header fields of one packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    /// Which measurement run the packet belongs to.
    pub run: u16,
    /// Sequence number within the run, from 0.
    pub seq: u32,
    /// Send time in nanoseconds since the client's start.
    pub sent_ns: u64,
}

/// Why a reply is not a valid packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketError {
    /// Shorter than the header or not the size that was sent.
    Length,
    /// The magic bytes are wrong: not one of our packets.
    Magic,
    /// The fill bytes after the header differ from what was sent: the payload was altered.
    Fill,
}

impl Packet {
    /// Writes this packet into `buf` (its whole length): header, then the fill pattern.
    /// `buf` must be at least [`HEADER_LEN`] bytes long.
    pub fn write(&self, buf: &mut [u8]) {
        buf[0..2].copy_from_slice(&MAGIC);
        buf[2..4].copy_from_slice(&self.run.to_be_bytes());
        buf[4..8].copy_from_slice(&self.seq.to_be_bytes());
        buf[8..16].copy_from_slice(&self.sent_ns.to_be_bytes());
        for (i, b) in buf[HEADER_LEN..].iter_mut().enumerate() {
            *b = fill_byte(self.seq, i);
        }
    }

    /// Reads and checks a reply that should be a packet of `expected_len` bytes.
    pub fn read(buf: &[u8], expected_len: usize) -> Result<Packet, PacketError> {
        if buf.len() < HEADER_LEN || buf.len() != expected_len {
            return Err(PacketError::Length);
        }
        if buf[0..2] != MAGIC {
            return Err(PacketError::Magic);
        }
        let packet = Packet {
            run: u16::from_be_bytes([buf[2], buf[3]]),
            seq: u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]),
            sent_ns: u64::from_be_bytes([
                buf[8], buf[9], buf[10], buf[11], buf[12], buf[13], buf[14], buf[15],
            ]),
        };
        let fill_ok = buf[HEADER_LEN..]
            .iter()
            .enumerate()
            .all(|(i, &b)| b == fill_byte(packet.seq, i));
        if !fill_ok {
            return Err(PacketError::Fill);
        }
        Ok(packet)
    }
}

/// The fill pattern: varies with position and sequence number so shifted or mixed-up payloads show.
fn fill_byte(seq: u32, i: usize) -> u8 {
    (i as u32).wrapping_mul(31).wrapping_add(seq) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let p = Packet {
            run: 3,
            seq: 77,
            sent_ns: 123_456_789,
        };
        let mut buf = [0u8; 64];
        p.write(&mut buf);
        assert_eq!(Packet::read(&buf, 64), Ok(p));
        assert_eq!(Packet::read(&buf[..63], 64), Err(PacketError::Length));
        assert_eq!(Packet::read(&buf[..8], 8), Err(PacketError::Length));
        let mut bad = buf;
        bad[40] ^= 1;
        assert_eq!(Packet::read(&bad, 64), Err(PacketError::Fill));
        bad = buf;
        bad[0] = b'X';
        assert_eq!(Packet::read(&bad, 64), Err(PacketError::Magic));
    }

    #[test]
    fn random_bytes_never_panic_and_never_pass_as_another_packet() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut buf = [0u8; 96];
        for _ in 0..20_000 {
            let len = rng.gen_range(0..=buf.len());
            rng.fill(&mut buf[..len]);
            if rng.gen_bool(0.5) && len >= 2 {
                buf[..2].copy_from_slice(b"LL");
            }
            let expected = rng.gen_range(0..=buf.len());
            if let Ok(p) = Packet::read(&buf[..len], expected) {
                // Only a buffer that is exactly what `write` makes is accepted.
                let mut again = vec![0u8; len];
                p.write(&mut again);
                assert_eq!(&again[..], &buf[..len]);
            }
        }
    }

    #[test]
    fn header_only_packet() {
        let p = Packet {
            run: 0,
            seq: u32::MAX,
            sent_ns: u64::MAX,
        };
        let mut buf = [0u8; HEADER_LEN];
        p.write(&mut buf);
        assert_eq!(Packet::read(&buf, HEADER_LEN), Ok(p));
    }
}
