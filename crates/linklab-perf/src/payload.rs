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

/// Printable characters a line's text is drawn from (`!` to `~`).
const CHARS: usize = 94;

/// How much of the printable set, repeated, a line's text may span: it starts at one of the
/// [`CHARS`] and runs [`LINE`] − 1 characters on.
const SPAN: usize = CHARS - 1 + (LINE as usize - 1);

/// The printable characters over [`SPAN`] (a line's text is [`LINE`] − 1 consecutive ones of
/// it, from where the line starts), four times: row `k` starts `k` bytes into its
/// word-aligned row, so that some row puts any character at the same address mod 4 as the
/// byte it is copied to. The copies are then word by word: from the one row, `memcpy` took
/// its misaligned path (3.6 instructions per byte on riscv32imac).
#[repr(C, align(4))]
struct Text([[u8; 4 + SPAN]; 4]);

// Each row starts on a word, as the one before it.
const _: () = assert!((4 + SPAN).is_multiple_of(4));

static TEXT: Text = {
    let mut t = [[0u8; 4 + SPAN]; 4];
    let mut k = 0;
    while k < 4 {
        let mut i = 0;
        while i < SPAN {
            t[k][k + i] = b'!' + (i % CHARS) as u8;
            i += 1;
        }
        k += 1;
    }
    Text(t)
};

/// The characters `from..from + n` of the repeated printable set, from the row of [`TEXT`]
/// that holds them at `dst`'s address mod 4.
fn text(dst: *const u8, from: usize, n: usize) -> &'static [u8] {
    let k = (dst as usize).wrapping_sub(from) % 4;
    &TEXT.0[k][k + from..k + from + n]
}

/// Fills `buf` with the payload bytes starting at `offset` ([`byte_at`] for each): a copy
/// per line's text, where a byte at a time took a 64-bit division and remainder per byte
/// (~58 instructions per byte on riscv32imac).
pub fn fill(offset: u64, buf: &mut [u8]) {
    let text_len = (LINE - 1) as usize;
    let mut col = (offset % LINE) as usize;
    // Where the line's text starts in the repeated set: 7 × line mod 94, without overflow.
    let mut start = ((offset / LINE) % CHARS as u64 * 7 % CHARS as u64) as usize;
    let mut rest = buf;
    while !rest.is_empty() {
        if col < text_len {
            let n = (text_len - col).min(rest.len());
            let (now, later) = core::mem::take(&mut rest).split_at_mut(n);
            now.copy_from_slice(text(now.as_ptr(), start + col, n));
            rest = later;
            col += n;
        } else {
            let (newline, later) = core::mem::take(&mut rest).split_at_mut(1);
            newline[0] = b'\n';
            rest = later;
            col = 0;
            start = (start + 7) % CHARS;
        }
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
    fn fill_matches_byte_at_for_every_start_and_length() {
        let mut buf = [0u8; 200];
        for offset in (0..200).chain([6_000 * 64 - 5, 999_937, 2_999_990]) {
            for len in [0, 1, 62, 63, 64, 65, 130, 200] {
                fill(offset, &mut buf[..len]);
                for (i, b) in buf[..len].iter().enumerate() {
                    assert_eq!(*b, byte_at(offset + i as u64), "{offset} + {i} of {len}");
                }
            }
        }
    }

    #[test]
    fn every_line_start_fills_at_every_alignment() {
        // 94 lines start at each of the 94 characters once (7 × line mod 94); each line's
        // text whole, from each column, into a destination at each address mod 4: the rows
        // of TEXT hold every span a line can take.
        #[repr(align(4))]
        struct Words([u8; 80]);
        let mut buf = Words([0; 80]);
        for line in 0..94u64 {
            for col in [0, 1, 30, 62] {
                for shift in 0..4 {
                    let offset = line * LINE + col;
                    let len = (LINE - col) as usize;
                    let bytes = &mut buf.0[shift..shift + len];
                    fill(offset, bytes);
                    for (i, b) in bytes.iter().enumerate() {
                        assert_eq!(
                            *b,
                            byte_at(offset + i as u64),
                            "line {line} col {col} +{shift}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn lines_differ_so_shifts_change_the_crc() {
        let mut a = [0u8; 128];
        fill(0, &mut a);
        assert_ne!(crc32fast::hash(&a[..64]), crc32fast::hash(&a[64..]));
    }
}
