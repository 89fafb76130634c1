//! The Ethernet frame check sequence (FCS): CRC-32 of IEEE 802.3.
//!
//! One API ([`fcs`], [`Fcs`]) with three back ends chosen at build time:
//!
//! * with `std` (hosts): `crc32fast`, which detects PCLMULQDQ/ARM CRC at run time;
//! * without `std`, with feature `fcs-slicing8` (a microcontroller whose MAC computes and
//!   checks the FCS itself, e.g. behind a soft PHY): the portable table-driven [`slicing8`]
//!   in this file: 8 KiB of tables, no unsafe, no CPU features;
//! * without either (a microcontroller whose NIC has its own FCS, where this code is at most
//!   a fallback): [`nibble`], half a byte per step over a 64-byte table.
//!
//! Why these is measured in `benches/mac.rs`; the figures are in the crate README.
//!
//! The FCS is transmitted least significant byte first ([`fcs_bytes`]).

/// The reflected CRC-32 polynomial of IEEE 802.3.
pub const POLY: u32 = 0xEDB8_8320;

/// Eight 256-entry tables for slicing-by-8 (table 0 alone is the classic byte-wise table).
static TABLES: [[u32; 256]; 8] = make_tables();

#[cfg(any(test, feature = "_fcs-backends"))]
/// The classic byte-wise table (table 0 of [`TABLES`], its own static so that a build using
/// only [`bytewise`] links 1 KiB, not 8).
static BYTE_TABLE: [u32; 256] = make_tables()[0];

/// The 16-entry table of the half-byte back end: `NIBBLE_TABLE[i]` is the CRC of the four
/// bits `i` (entry `16 * i` of the byte-wise table).
static NIBBLE_TABLE: [u32; 16] = make_nibble_table();

const fn make_nibble_table() -> [u32; 16] {
    let bytes = make_tables();
    let mut t = [0u32; 16];
    let mut i = 0;
    while i < 16 {
        t[i] = bytes[0][i * 16];
        i += 1;
    }
    t
}

const fn make_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[0][i] = c;
        i += 1;
    }
    let mut s = 1;
    while s < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[s - 1][i];
            t[s][i] = (prev >> 8) ^ t[0][(prev & 0xFF) as usize];
            i += 1;
        }
        s += 1;
    }
    t
}

#[cfg(any(test, feature = "_fcs-backends"))]
#[doc(hidden)]
/// Advances a raw (pre-inverted) CRC state one byte at a time: the reference implementation.
pub fn update_bytewise(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = (crc >> 8) ^ BYTE_TABLE[((crc ^ b as u32) & 0xFF) as usize];
    }
    crc
}

/// Advances a raw CRC state half a byte per step over a 64-byte table.
pub fn update_nibble(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= u32::from(b);
        crc = (crc >> 4) ^ NIBBLE_TABLE[(crc & 0xF) as usize];
        crc = (crc >> 4) ^ NIBBLE_TABLE[(crc & 0xF) as usize];
    }
    crc
}

#[cfg(any(test, feature = "_fcs-backends"))]
#[doc(hidden)]
/// Advances a raw CRC state four bytes per step (slicing-by-4, 4 KiB of tables).
pub fn update_slicing4(mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let x = crc ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        crc = TABLES[3][(x & 0xFF) as usize]
            ^ TABLES[2][((x >> 8) & 0xFF) as usize]
            ^ TABLES[1][((x >> 16) & 0xFF) as usize]
            ^ TABLES[0][(x >> 24) as usize];
    }
    slice_tail(crc, chunks.remainder())
}

/// The last bytes of a slicing back end, over its own table 0 (no second table linked).
fn slice_tail(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc = (crc >> 8) ^ TABLES[0][((crc ^ b as u32) & 0xFF) as usize];
    }
    crc
}

/// Advances a raw CRC state eight bytes per step (slicing-by-8, 8 KiB of tables).
pub fn update_slicing8(mut crc: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let lo = crc ^ u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        let hi = u32::from_le_bytes([c[4], c[5], c[6], c[7]]);
        crc = TABLES[7][(lo & 0xFF) as usize]
            ^ TABLES[6][((lo >> 8) & 0xFF) as usize]
            ^ TABLES[5][((lo >> 16) & 0xFF) as usize]
            ^ TABLES[4][(lo >> 24) as usize]
            ^ TABLES[3][(hi & 0xFF) as usize]
            ^ TABLES[2][((hi >> 8) & 0xFF) as usize]
            ^ TABLES[1][((hi >> 16) & 0xFF) as usize]
            ^ TABLES[0][(hi >> 24) as usize];
    }
    slice_tail(crc, chunks.remainder())
}

#[cfg(any(test, feature = "_fcs-backends"))]
#[doc(hidden)]
/// The FCS of `data` computed byte-wise (reference, 1 KiB table).
pub fn bytewise(data: &[u8]) -> u32 {
    !update_bytewise(!0, data)
}

/// The FCS of `data` computed half a byte per step (64-byte table).
pub fn nibble(data: &[u8]) -> u32 {
    !update_nibble(!0, data)
}

#[cfg(any(test, feature = "_fcs-backends"))]
#[doc(hidden)]
/// The FCS of `data` computed with slicing-by-4.
pub fn slicing4(data: &[u8]) -> u32 {
    !update_slicing4(!0, data)
}

/// The FCS of `data` computed with slicing-by-8: the back end of [`fcs`] with feature
/// `fcs-slicing8`.
pub fn slicing8(data: &[u8]) -> u32 {
    !update_slicing8(!0, data)
}

/// The FCS of `data` computed by `crc32fast` (SIMD where the CPU has it).
pub fn crc32fast(data: &[u8]) -> u32 {
    ::crc32fast::hash(data)
}

/// An incremental FCS computation: `new`, any number of `update`, then `finish`.
#[derive(Clone)]
pub struct Fcs {
    #[cfg(feature = "std")]
    inner: ::crc32fast::Hasher,
    #[cfg(not(feature = "std"))]
    state: u32,
}

impl Default for Fcs {
    fn default() -> Self {
        Self::new()
    }
}

impl Fcs {
    /// Starts a new FCS computation.
    pub fn new() -> Self {
        #[cfg(feature = "std")]
        {
            Fcs {
                inner: ::crc32fast::Hasher::new(),
            }
        }
        #[cfg(not(feature = "std"))]
        {
            Fcs { state: !0 }
        }
    }

    /// Feeds more bytes.
    pub fn update(&mut self, data: &[u8]) {
        #[cfg(feature = "std")]
        self.inner.update(data);
        #[cfg(all(not(feature = "std"), feature = "fcs-slicing8"))]
        {
            self.state = update_slicing8(self.state, data);
        }
        #[cfg(not(any(feature = "std", feature = "fcs-slicing8")))]
        {
            self.state = update_nibble(self.state, data);
        }
    }

    /// The FCS of everything fed so far.
    pub fn finish(self) -> u32 {
        #[cfg(feature = "std")]
        {
            self.inner.finalize()
        }
        #[cfg(not(feature = "std"))]
        {
            !self.state
        }
    }
}

/// The FCS (CRC-32 of IEEE 802.3) of `data`, with the build's fastest back end.
pub fn fcs(data: &[u8]) -> u32 {
    #[cfg(feature = "std")]
    {
        crc32fast(data)
    }
    #[cfg(all(not(feature = "std"), feature = "fcs-slicing8"))]
    {
        slicing8(data)
    }
    #[cfg(not(any(feature = "std", feature = "fcs-slicing8")))]
    {
        nibble(data)
    }
}

/// The four FCS bytes in wire order (least significant byte first).
pub fn fcs_bytes(data: &[u8]) -> [u8; 4] {
    fcs(data).to_le_bytes()
}

/// True if the last four bytes of `frame` are the FCS of the bytes before them.
pub fn check(frame: &[u8]) -> bool {
    match frame.len().checked_sub(4) {
        Some(body) => {
            let (data, tail) = frame.split_at(body);
            tail == fcs(data).to_le_bytes()
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value_of_the_standard() {
        // The CRC-32/ISO-HDLC check value for "123456789".
        for f in [bytewise, nibble, slicing4, slicing8, crc32fast, fcs] {
            assert_eq!(f(b"123456789"), 0xCBF4_3926);
            assert_eq!(f(b""), 0);
        }
    }

    #[test]
    fn back_ends_agree_on_every_length() {
        let data: [u8; 300] = core::array::from_fn(|i| (i * 7 + 3) as u8);
        for n in 0..data.len() {
            let want = bytewise(&data[..n]);
            assert_eq!(nibble(&data[..n]), want, "len {n}");
            assert_eq!(slicing4(&data[..n]), want, "len {n}");
            assert_eq!(slicing8(&data[..n]), want, "len {n}");
            assert_eq!(fcs(&data[..n]), want, "len {n}");
            let mut inc = Fcs::new();
            let (a, b) = data[..n].split_at(n / 3);
            inc.update(a);
            inc.update(b);
            assert_eq!(inc.finish(), want, "len {n}");
        }
    }

    #[test]
    fn check_accepts_good_and_rejects_bad() {
        let mut f = [0u8; 20];
        f[..16].copy_from_slice(b"0123456789abcdef");
        let c = fcs_bytes(&f[..16]);
        f[16..].copy_from_slice(&c);
        assert!(check(&f));
        f[3] ^= 0x10;
        assert!(!check(&f));
        assert!(!check(&[1, 2, 3]));
    }
}
