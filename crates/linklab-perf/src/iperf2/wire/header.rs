//! The client's test header: `client_hdr_v1` (24 bytes, unchanged since iperf 1.7) and the
//! extension `client_hdrext` (36 bytes) that iperf 2.0.10+ appends. A TCP client sends it
//! once, as the first bytes of the connection; a UDP client puts it after the 16-byte
//! datagram header of every datagram.
//!
//! ```text
//!  v1   0 flags  4 numThreads  8 mPort  12 mBufLen  16 mWinBand  20 mAmount
//!  ext 24 type  28 length  32 upperflags(16) lowerflags(16)  36 version_u  40 version_l
//!      44 reserved(16) tos(16)  48 lRate  52 uRate  56 TCPWritePrefetch
//! ```

use super::{flags, get_u16, get_u32, put_u16, put_u32, WireError};

/// Length of `client_hdr_v1`.
pub const V1_LEN: usize = 24;
/// Length of `client_hdrext`.
pub const EXT_LEN: usize = 36;
/// Length of the header a 2.1 TCP client sends: v1 and the extension.
pub const TCP_LEN: usize = V1_LEN + EXT_LEN;

mod field {
    pub const FLAGS: usize = 0;
    pub const THREADS: usize = 4;
    pub const PORT: usize = 8;
    pub const BUF_LEN: usize = 12;
    pub const WIN_BAND: usize = 16;
    pub const AMOUNT: usize = 20;
    pub const EXT_TYPE: usize = 24;
    pub const EXT_LENGTH: usize = 28;
    pub const UPPER: usize = 32;
    pub const LOWER: usize = 34;
    pub const VERSION_U: usize = 36;
    pub const VERSION_L: usize = 40;
    pub const TOS: usize = 46;
    pub const RATE_LO: usize = 48;
    pub const RATE_HI: usize = 52;
    pub const PREFETCH: usize = 56;
}

/// What the first word of a TCP connection says about the header that starts with it
/// (iperf 2.1.8's `Settings_ClientTestHdrLen`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum HeaderLen {
    /// No header: the word is test data (a `-C` client, an ESP-IDF or NuttX client, the
    /// '0'..'9' pattern).
    None,
    /// A header of this many bytes, the flags word included (24 ..= 255: the length bits
    /// cannot say more, so 2.1.8's `MAX_HEADER_LEN` of 256 never bites).
    Bytes(usize),
    /// The length bits announce fewer bytes than `client_hdr_v1`: not a header any
    /// iperf 2 sends.
    TooShort(usize),
}

/// The header length that TCP `flags` announce. With [`flags::LEN_BIT`] the length is in
/// the flags; without it, 24 bytes for [`flags::VERSION1`] or [`flags::EXTEND`], plus 36
/// for [`flags::VERSION2`] or [`flags::EXTEND`].
pub fn header_len(first_word: u32) -> HeaderLen {
    if first_word & flags::ANY_HEADER == 0 {
        return HeaderLen::None;
    }
    if first_word & flags::LEN_BIT != 0 {
        let n = ((first_word & flags::LEN_MASK) >> 1) as usize;
        return if n < V1_LEN {
            HeaderLen::TooShort(n)
        } else {
            HeaderLen::Bytes(n)
        };
    }
    let mut n = 0;
    if first_word & (flags::VERSION1 | flags::EXTEND) != 0 {
        n += V1_LEN;
    }
    if first_word & (flags::VERSION2 | flags::EXTEND) != 0 {
        n += EXT_LEN;
    }
    if n < V1_LEN {
        // VERSION2 alone: 36 bytes, which 2.1.8 reads as a (short) v1 header.
        return HeaderLen::Bytes(EXT_LEN);
    }
    HeaderLen::Bytes(n)
}

/// A read/write view of a client test header. `new_checked` needs the 24 bytes of v1; the
/// extension's getters read 0 unless [`has_ext`](Self::has_ext) (the buffer holds 60).
#[derive(Clone, Copy, Debug)]
pub struct ClientHeader<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ClientHeader<T> {
    /// A view without a length check (the getters still never panic).
    pub fn new_unchecked(buffer: T) -> Self {
        Self { buffer }
    }

    /// A view over a buffer of at least [`V1_LEN`] bytes.
    pub fn new_checked(buffer: T) -> Result<Self, WireError> {
        if buffer.as_ref().len() < V1_LEN {
            return Err(WireError::Truncated);
        }
        Ok(Self { buffer })
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    fn word(&self, at: usize) -> u32 {
        get_u32(self.buffer.as_ref(), at)
    }

    /// The flags word ([`flags`]).
    pub fn flags(&self) -> u32 {
        self.word(field::FLAGS)
    }

    /// `numThreads`: the client's `-P` (only informative; never trusted as a count).
    pub fn num_threads(&self) -> u32 {
        self.word(field::THREADS)
    }

    /// `mPort`: the port the client listens on for a `-r`/`-d` connect-back (its `-L`,
    /// else its `-p`). The raw word: a hostile one may be 0 or above 65535.
    pub fn port(&self) -> u32 {
        self.word(field::PORT)
    }

    /// `mBufLen`: the client's `-l` if it set one, else 0.
    pub fn buf_len(&self) -> u32 {
        self.word(field::BUF_LEN)
    }

    /// `mWinBand`: `-w` (TCP) or the UDP rate in 2.0.5; 0 from 2.1.8.
    pub fn win_band(&self) -> u32 {
        self.word(field::WIN_BAND)
    }

    /// `mAmount`, raw: bit 31 set means a time of `-(word as i32)` × 10 ms, else a byte
    /// count (31 bits). See [`Amount::from_wire`](crate::iperf2::Amount::from_wire).
    pub fn amount(&self) -> u32 {
        self.word(field::AMOUNT)
    }

    /// True if the buffer holds the 36-byte extension.
    pub fn has_ext(&self) -> bool {
        self.buffer.as_ref().len() >= TCP_LEN
    }

    /// The extension's `upperflags` ([`super::upper`]), 0 without an extension.
    pub fn upper_flags(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::UPPER)
    }

    /// The peer's version, major and minor words (`0x00020001`, `0x00080003` for 2.1.8).
    pub fn version(&self) -> (u32, u32) {
        (self.word(field::VERSION_U), self.word(field::VERSION_L))
    }

    /// The IP TOS byte the client asked for (`-S`).
    pub fn tos(&self) -> u16 {
        get_u16(self.buffer.as_ref(), field::TOS)
    }

    /// The client's `-b` in bit/s: `lRate | (uRate >> 8) << 32`, as 2.1.8 reads it.
    pub fn rate(&self) -> u64 {
        u64::from(self.word(field::RATE_LO)) | (u64::from(self.word(field::RATE_HI) >> 8) << 32)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ClientHeader<T> {
    fn set_word(&mut self, at: usize, v: u32) {
        put_u32(self.buffer.as_mut(), at, v);
    }

    /// Sets the flags word.
    pub fn set_flags(&mut self, v: u32) {
        self.set_word(field::FLAGS, v);
    }

    /// Sets `numThreads`.
    pub fn set_num_threads(&mut self, v: u32) {
        self.set_word(field::THREADS, v);
    }

    /// Sets `mPort`.
    pub fn set_port(&mut self, v: u32) {
        self.set_word(field::PORT, v);
    }

    /// Sets `mBufLen`.
    pub fn set_buf_len(&mut self, v: u32) {
        self.set_word(field::BUF_LEN, v);
    }

    /// Sets `mWinBand`.
    pub fn set_win_band(&mut self, v: u32) {
        self.set_word(field::WIN_BAND, v);
    }

    /// Sets the raw `mAmount`.
    pub fn set_amount(&mut self, v: u32) {
        self.set_word(field::AMOUNT, v);
    }

    /// Writes the extension as 2.1.8 does: type and length 0, `upperflags`, our version,
    /// TOS 0, the rate split into `lRate` and `uRate`, no write prefetch. Nothing without
    /// room for it.
    pub fn set_ext(&mut self, upper_flags: u16, rate_bps: u64) {
        if !self.has_ext() {
            return;
        }
        self.set_word(field::EXT_TYPE, 0);
        self.set_word(field::EXT_LENGTH, 0);
        put_u16(self.buffer.as_mut(), field::UPPER, upper_flags);
        put_u16(self.buffer.as_mut(), field::LOWER, 0);
        self.set_word(field::VERSION_U, super::VERSION_U);
        self.set_word(field::VERSION_L, super::VERSION_L);
        put_u16(self.buffer.as_mut(), field::TOS - 2, 0);
        put_u16(self.buffer.as_mut(), field::TOS, 0);
        self.set_word(field::RATE_LO, rate_bps as u32);
        self.set_word(field::RATE_HI, ((rate_bps >> 32) as u32) << 8);
        self.set_word(field::PREFETCH, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_as_iperf_2_1_8_reads_them() {
        // A plain 2.1.8 TCP client: EXTEND | LEN_BIT | 60 << 1.
        assert_eq!(header_len(0x4001_0078), HeaderLen::Bytes(60));
        // A 2.1.8 UDP header (datagram header included): 76.
        assert_eq!(header_len(0x4801_0098), HeaderLen::Bytes(76));
        // 2.0.5's -r: VERSION1 alone, 24 bytes.
        assert_eq!(header_len(0x8000_0000), HeaderLen::Bytes(24));
        // EXTEND without the length bits: 60.
        assert_eq!(header_len(0x4000_0000), HeaderLen::Bytes(60));
        // The pattern, a -C client, an ESP-IDF counter: data.
        assert_eq!(header_len(u32::from_be_bytes(*b"0123")), HeaderLen::None);
        assert_eq!(header_len(0), HeaderLen::None);
        // Hostile lengths.
        assert_eq!(header_len(0x4001_01FE), HeaderLen::Bytes(255));
        assert_eq!(header_len(0x4001_0008), HeaderLen::TooShort(4));
    }

    #[test]
    fn fields_round_trip() {
        let mut b = [0u8; TCP_LEN];
        let mut h = ClientHeader::new_checked(&mut b[..]).unwrap();
        h.set_flags(0x4001_0078);
        h.set_num_threads(3);
        h.set_port(5001);
        h.set_amount((-1000i32) as u32);
        h.set_ext(0x0400, (5u64 << 32) | 7);
        let h = ClientHeader::new_checked(&b[..]).unwrap();
        assert_eq!(h.flags(), 0x4001_0078);
        assert_eq!(
            (h.num_threads(), h.port(), h.amount()),
            (3, 5001, 0xFFFF_FC18)
        );
        assert_eq!(h.upper_flags(), 0x0400);
        assert_eq!(h.version(), (0x0002_0001, 0x0008_0003));
        assert_eq!(h.rate(), (5u64 << 32) | 7);
        assert!(ClientHeader::new_checked(&b[..23]).is_err());
        assert!(!ClientHeader::new_checked(&b[..24]).unwrap().has_ext());
        assert_eq!(
            ClientHeader::new_checked(&b[..24]).unwrap().upper_flags(),
            0
        );
    }
}
