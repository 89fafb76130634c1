//! The link frame before framing: a 10-byte header, the payload, and a CRC-32 over both.
//!
//! ```text
//!  0      kind (low nibble: SYN 1, SYN-ACK 2, DATA 3, ACK 4) | flags (high nibble)
//!  1      seq        sequence number of a DATA frame (mod 256)
//!  2      ack        cumulative ACK: the next sequence number the sender expects
//!  3      credits    frames beyond `ack` the sender can accept now (receiver-granted)
//!  4..6   sack       bit i set: sequence ack + 1 + i is held out of order (little endian)
//!  6..8   src epoch  the sender's incarnation (random, never 0)
//!  8..10  dst epoch  the incarnation the sender believes the receiver has (0: unknown)
//! 10..    payload    up to MAX_PAYLOAD bytes (DATA only)
//!  end    CRC-32     IEEE 802.3 polynomial over header and payload, little endian
//! ```
//!
//! Every frame carries the acknowledgement state, so DATA piggybacks ACKs. The epochs tell a
//! restarted peer from the one we knew: frames of an earlier incarnation are discarded.

/// Header length in bytes.
pub const HEADER_LEN: usize = 10;
/// CRC length in bytes.
pub const CRC_LEN: usize = 4;
/// Largest payload: an Ethernet frame without FCS (1500 + 14).
pub const MAX_PAYLOAD: usize = 1514;
/// Largest link frame before framing: header, payload, CRC.
pub const MAX_FRAME: usize = HEADER_LEN + MAX_PAYLOAD + CRC_LEN;
/// Largest COBS encoding of a link frame (one code byte per 254 bytes, rounded up).
pub const MAX_ENCODED: usize = MAX_FRAME + MAX_FRAME.div_ceil(254);
/// Largest frame on the wire: its encoding between two 0x00 delimiters.
pub const MAX_WIRE: usize = MAX_ENCODED + 2;

/// Flag: the receiver should answer with an ACK now (zero-window probe).
pub const FLAG_POLL: u8 = 0x10;
/// Flag on DATA: a self-test frame; the receiving link sends its payload back itself.
pub const FLAG_ECHO_REQUEST: u8 = 0x20;
/// Flag on DATA: the echo of a self-test frame, for the self-test that sent it.
pub const FLAG_ECHO_REPLY: u8 = 0x40;
const KNOWN_FLAGS: u8 = FLAG_POLL | FLAG_ECHO_REQUEST | FLAG_ECHO_REPLY;

/// What a frame is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Opens a session: "this is my epoch, who are you?".
    Syn = 1,
    /// Answers a SYN: "I know your epoch; here is mine".
    SynAck = 2,
    /// Carries a payload in sequence (and the ACK state).
    Data = 3,
    /// The ACK state alone.
    Ack = 4,
}

/// The decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Frame kind.
    pub kind: Kind,
    /// `FLAG_*` bits.
    pub flags: u8,
    /// Sequence number (DATA).
    pub seq: u8,
    /// Cumulative ACK.
    pub ack: u8,
    /// Credits granted beyond `ack`.
    pub credits: u8,
    /// Selective ACK bitmap.
    pub sack: u16,
    /// The sender's epoch.
    pub src_epoch: u16,
    /// The receiver's epoch as the sender knows it.
    pub dst_epoch: u16,
}

/// Why a decoded frame was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WireError {
    /// Shorter than header plus CRC, or a payload longer than [`MAX_PAYLOAD`].
    Length,
    /// CRC mismatch.
    Crc,
    /// Unknown kind or flags, a payload on a frame that carries none, or epoch 0.
    Header,
}

impl Header {
    /// Parses the first [`HEADER_LEN`] bytes (`buf` must hold them).
    fn parse(buf: &[u8; HEADER_LEN]) -> Result<Header, WireError> {
        let kind = match buf[0] & 0x0F {
            1 => Kind::Syn,
            2 => Kind::SynAck,
            3 => Kind::Data,
            4 => Kind::Ack,
            _ => return Err(WireError::Header),
        };
        let flags = buf[0] & 0xF0;
        let echo = flags & (FLAG_ECHO_REQUEST | FLAG_ECHO_REPLY);
        if flags & !KNOWN_FLAGS != 0
            || (echo != 0 && kind != Kind::Data)
            || echo == FLAG_ECHO_REQUEST | FLAG_ECHO_REPLY
        {
            return Err(WireError::Header);
        }
        let h = Header {
            kind,
            flags,
            seq: buf[1],
            ack: buf[2],
            credits: buf[3],
            sack: u16::from_le_bytes([buf[4], buf[5]]),
            src_epoch: u16::from_le_bytes([buf[6], buf[7]]),
            dst_epoch: u16::from_le_bytes([buf[8], buf[9]]),
        };
        if h.src_epoch == 0 {
            return Err(WireError::Header);
        }
        Ok(h)
    }

    /// Writes the header into the first [`HEADER_LEN`] bytes of `buf`.
    pub fn emit(&self, buf: &mut [u8; HEADER_LEN]) {
        buf[0] = self.kind as u8 | self.flags;
        buf[1] = self.seq;
        buf[2] = self.ack;
        buf[3] = self.credits;
        buf[4..6].copy_from_slice(&self.sack.to_le_bytes());
        buf[6..8].copy_from_slice(&self.src_epoch.to_le_bytes());
        buf[8..10].copy_from_slice(&self.dst_epoch.to_le_bytes());
    }
}

/// Checks a decoded frame (header, payload, CRC) and splits it into header and payload.
pub fn open(frame: &[u8]) -> Result<(Header, &[u8]), WireError> {
    if frame.len() < HEADER_LEN + CRC_LEN || frame.len() > MAX_FRAME {
        return Err(WireError::Length);
    }
    let (body, crc) = frame.split_at(frame.len() - CRC_LEN);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(WireError::Crc);
    }
    let (head, payload) = body.split_at(HEADER_LEN);
    let head: &[u8; HEADER_LEN] = head.try_into().map_err(|_| WireError::Length)?;
    let header = Header::parse(head)?;
    if header.kind != Kind::Data && !payload.is_empty() {
        return Err(WireError::Header);
    }
    Ok((header, payload))
}

/// Writes `header` at the start of `frame`, then the CRC over header and the `payload_len`
/// payload bytes that follow it. Returns the frame's length. `frame` must hold
/// `HEADER_LEN + payload_len + CRC_LEN` bytes.
pub fn seal(frame: &mut [u8], header: &Header, payload_len: usize) -> usize {
    let body = HEADER_LEN + payload_len;
    if let Some(head) = frame.first_chunk_mut::<HEADER_LEN>() {
        header.emit(head);
    }
    let crc = crc32fast::hash(&frame[..body]);
    frame[body..body + CRC_LEN].copy_from_slice(&crc.to_le_bytes());
    body + CRC_LEN
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: Kind) -> Header {
        Header {
            kind,
            flags: 0,
            seq: 7,
            ack: 250,
            credits: 8,
            sack: 0x8001,
            src_epoch: 0x1234,
            dst_epoch: 0xBEEF,
        }
    }

    #[test]
    fn seal_then_open_round_trips() {
        let mut f = [0u8; 64];
        f[HEADER_LEN..HEADER_LEN + 5].copy_from_slice(b"hello");
        let h = Header {
            flags: FLAG_ECHO_REQUEST,
            ..header(Kind::Data)
        };
        let n = seal(&mut f, &h, 5);
        assert_eq!(n, HEADER_LEN + 5 + CRC_LEN);
        let (g, payload) = open(&f[..n]).unwrap();
        assert_eq!((g, payload), (h, &b"hello"[..]));
    }

    #[test]
    fn every_single_bit_flip_is_refused() {
        let mut f = [0u8; 40];
        let n = seal(&mut f, &header(Kind::Data), 20);
        for bit in 0..n * 8 {
            let mut g = f;
            g[bit / 8] ^= 1 << (bit % 8);
            assert!(open(&g[..n]).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn refuses_bad_headers_with_a_good_crc() {
        let mut f = [0u8; 32];
        let n = seal(&mut f, &header(Kind::Ack), 0);
        assert!(open(&f[..n]).is_ok());
        // An ACK with a payload.
        let n = seal(&mut f, &header(Kind::Ack), 3);
        assert_eq!(open(&f[..n]), Err(WireError::Header));
        // Echo flags on a non-DATA frame, both echo flags, unknown kind, epoch 0.
        for h in [
            Header {
                flags: FLAG_ECHO_REPLY,
                ..header(Kind::Syn)
            },
            Header {
                flags: FLAG_ECHO_REPLY | FLAG_ECHO_REQUEST,
                ..header(Kind::Data)
            },
            Header {
                src_epoch: 0,
                ..header(Kind::Data)
            },
        ] {
            let n = seal(&mut f, &h, 0);
            assert_eq!(open(&f[..n]), Err(WireError::Header), "{h:?}");
        }
        let n = seal(&mut f, &header(Kind::Ack), 0);
        f[0] = 9;
        let crc = crc32fast::hash(&f[..n - 4]);
        f[n - 4..n].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(open(&f[..n]), Err(WireError::Header));
        assert_eq!(open(&f[..5]), Err(WireError::Length));
    }
}
