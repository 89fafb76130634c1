//! The bench payload files (`/10kB.txt` ... `/3MB.txt`): deterministic text generated on the
//! fly from the offset, so a device can serve megabytes without storing them and both ends
//! of a test can check what arrived.

/// One bench file: its URL path and its content length in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchFile {
    /// The URL path, e.g. `/1MB.txt`.
    pub path: &'static str,
    /// Content length in bytes.
    pub len: u64,
}

/// The files Niccle's MAC write-up downloaded, by the sizes the bench uses.
pub const BENCH_FILES: [BenchFile; 4] = [
    BenchFile {
        path: "/10kB.txt",
        len: 10_000,
    },
    BenchFile {
        path: "/100kB.txt",
        len: 100_000,
    },
    BenchFile {
        path: "/1MB.txt",
        len: 1_000_000,
    },
    BenchFile {
        path: "/3MB.txt",
        len: 3_000_000,
    },
];

/// Looks up a bench file by its URL path.
pub fn find(path: &str) -> Option<BenchFile> {
    BENCH_FILES.iter().copied().find(|f| f.path == path)
}

/// Bytes per line of payload text, the newline included.
const LINE: u64 = 64;

/// The payload byte at `offset`: 63 printable characters then a newline, varying by line so
/// that a shifted or repeated block changes the CRC.
pub fn byte_at(offset: u64) -> u8 {
    let col = offset % LINE;
    if col == LINE - 1 {
        return b'\n';
    }
    let line = offset / LINE;
    b'!' + ((col + line.wrapping_mul(7)) % 94) as u8
}

/// Fills `buf` with the payload bytes starting at `offset`.
pub fn fill(offset: u64, buf: &mut [u8]) {
    for (i, b) in buf.iter_mut().enumerate() {
        *b = byte_at(offset + i as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_found_by_path() {
        assert_eq!(find("/1MB.txt").map(|f| f.len), Some(1_000_000));
        assert_eq!(find("/nope.txt"), None);
    }

    #[test]
    fn fill_matches_byte_at_at_any_offset() {
        let mut a = [0u8; 300];
        fill(1000, &mut a);
        for (i, b) in a.iter().enumerate() {
            assert_eq!(*b, byte_at(1000 + i as u64));
        }
        assert!(a.iter().all(|b| b.is_ascii_graphic() || *b == b'\n'));
    }

    #[test]
    fn lines_differ_so_shifts_change_the_crc() {
        let mut a = [0u8; 128];
        fill(0, &mut a);
        assert_ne!(crc32fast::hash(&a[..64]), crc32fast::hash(&a[64..]));
    }
}
