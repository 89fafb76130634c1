//! The header at the start of every iperf 2 UDP datagram (`UDP_datagram`):
//!
//! ```text
//!  0 id (low 32 bits of the signed sequence number)  4 tv_sec  8 tv_usec  12 id2 (high 32)
//! ```
//!
//! 16 bytes since iperf 2.0.10; iperf 2.0.9 and older send 12 (no `id2`, a signed 32-bit
//! id) and put the client header at offset 12 instead of 16. Ids start at 1; the client
//! ends a test with a datagram whose id is negative (the FIN). The time is the sender's
//! wall clock when it sent the datagram.

use super::{get_u32, put_u32, WireError};

/// Length of the datagram header since iperf 2.0.10.
pub const LEN: usize = 16;
/// Length of the datagram header of iperf 2.0.9 and older.
pub const LEGACY_LEN: usize = 12;

/// Which datagram header a peer uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum DatagramFormat {
    /// 16 bytes (2.0.10 and newer, zperf since 2025).
    #[default]
    Current,
    /// 12 bytes (2.0.9 and older, zperf's legacy option).
    Legacy,
}

impl DatagramFormat {
    /// The header's length, which is also where the client header starts.
    pub const fn header_len(self) -> usize {
        match self {
            Self::Current => LEN,
            Self::Legacy => LEGACY_LEN,
        }
    }
}

/// A read/write view of a UDP datagram header.
#[derive(Clone, Copy, Debug)]
pub struct UdpDatagram<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpDatagram<T> {
    /// A view over a datagram of at least [`LEGACY_LEN`] bytes (the 12 that every iperf 2
    /// datagram starts with; `id2` reads 0 when the datagram is shorter than 16).
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < LEGACY_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Self { buffer })
    }

    /// A view without a length check (the getters still never panic).
    pub fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// The low word of the id.
    pub fn id_lo(&self) -> u32 {
        get_u32(self.buffer.as_ref(), 0)
    }

    /// The high word of the id (`id2`), 0 for a 12-byte header.
    pub fn id_hi(&self) -> u32 {
        get_u32(self.buffer.as_ref(), 12)
    }

    /// The signed sequence number as iperf 2.1.8's `ReadPacketID` reads it: `id | id2 <<
    /// 32` when the client announced 64-bit ids ([`super::flags::SEQNO64B`]), else the
    /// signed 32-bit `id`.
    pub fn seq(&self, seqno_64: bool) -> i64 {
        if seqno_64 {
            (u64::from(self.id_lo()) | (u64::from(self.id_hi()) << 32)) as i64
        } else {
            i64::from(self.id_lo() as i32)
        }
    }

    /// Send time, seconds.
    pub fn tv_sec(&self) -> u32 {
        get_u32(self.buffer.as_ref(), 4)
    }

    /// Send time, microseconds.
    pub fn tv_usec(&self) -> u32 {
        get_u32(self.buffer.as_ref(), 8)
    }

    /// The send time in microseconds (a hostile `tv_usec` above 10^6 simply adds).
    pub fn sent_us(&self) -> u64 {
        u64::from(self.tv_sec()) * 1_000_000 + u64::from(self.tv_usec())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpDatagram<T> {
    /// Writes the sequence number: the low 32 bits in `id`, the high in `id2` (when the
    /// buffer holds 16 bytes).
    pub fn set_seq(&mut self, seq: i64) {
        let v = seq as u64;
        put_u32(self.buffer.as_mut(), 0, v as u32);
        put_u32(self.buffer.as_mut(), 12, (v >> 32) as u32);
    }

    /// Writes the send time from microseconds.
    pub fn set_sent_us(&mut self, us: u64) {
        put_u32(self.buffer.as_mut(), 4, (us / 1_000_000) as u32);
        put_u32(self.buffer.as_mut(), 8, (us % 1_000_000) as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_signed_as_2_1_8_reads_them() {
        let mut b = [0u8; LEN];
        let mut d = UdpDatagram::new_checked(&mut b[..]).unwrap();
        d.set_seq(-5);
        d.set_sent_us(3_000_250);
        let d = UdpDatagram::new_checked(&b[..]).unwrap();
        assert_eq!(d.seq(true), -5);
        assert_eq!(d.seq(false), -5);
        assert_eq!((d.tv_sec(), d.tv_usec(), d.sent_us()), (3, 250, 3_000_250));
        let mut b = [0u8; LEN];
        UdpDatagram::new_checked(&mut b[..])
            .unwrap()
            .set_seq(1 << 32 | 7);
        let d = UdpDatagram::new_checked(&b[..]).unwrap();
        assert_eq!(d.seq(true), (1 << 32) | 7);
        // A 32-bit peer's id past 2^31 reads negative: a FIN, as 2.1.8 takes it.
        assert_eq!(d.seq(false), 7);
        b[0] = 0x80;
        assert!(UdpDatagram::new_checked(&b[..]).unwrap().seq(false) < 0);
        assert!(UdpDatagram::new_checked(&b[..11]).is_err());
        assert_eq!(UdpDatagram::new_checked(&b[..12]).unwrap().id_hi(), 0);
    }
}
