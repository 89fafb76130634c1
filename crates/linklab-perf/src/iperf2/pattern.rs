//! The payload iperf 2 sends: ASCII digits '0'..'9' repeating (its `pattern()`), so a
//! header-less stream never looks like a test header (0x30 has none of the header bits).
//!
//! Two layouts of it:
//! - [`fill`]: the digits running on across the whole stream (what our servers send for
//!   `-R`, `--full-duplex` and the connect-backs; nothing reads their content);
//! - [`fill_blocks`]: a client's stream as stock iperf 2 writes it. 2.1.8 fills its `-l`
//!   write buffer once with the digit of each byte's index in the buffer (`compat/string.c`
//!   `pattern`, `buf[i] = '0' + i % 10`), then clears the room of its header structure at
//!   the buffer's start, writes the test header there and sends that header alone, then
//!   writes the whole buffer again and again (`Client.cpp` `SendFirstPayload`, `RunTCP`;
//!   `Settings.cpp` `Settings_GenerateClientHdr`; 2.0.x's `InitiateServer` does the same
//!   with its 24 bytes and clears nothing). So after the header every `-l` block begins
//!   with the header's bytes — which lwIP's lwiperf checks for a `-r`/`-d` test — and
//!   zeros to the end of that room, and the digits restart at each block.

/// Fills `buf` with the pattern as it continues at `offset` bytes into a stream.
pub fn fill(buf: &mut [u8], offset: u64) {
    let mut d = (offset % 10) as u8;
    for b in buf.iter_mut() {
        *b = b'0' + d;
        d = if d == 9 { 0 } else { d + 1 };
    }
}

/// The start of each block of [`fill_blocks`]: the header, then zeros to `room` bytes
/// (2.1.8 clears its whole header structure, 244 bytes, before it writes the 60 it sends).
#[derive(Clone, Copy, Debug)]
pub struct BlockHead<'a> {
    /// The header's bytes.
    pub header: &'a [u8],
    /// How many bytes from the block's start are header or zero (at least the header's).
    pub room: usize,
}

/// Fills `buf` with the bytes at `offset` of a stream of back-to-back `block`-byte write
/// buffers, each beginning with `head` (cut to `block`) and holding the digit of its index
/// (`'0' + i % 10`) after it: stock iperf 2's client data after its header (see the
/// module docs). A `block` of 0 is taken as 1.
pub fn fill_blocks(buf: &mut [u8], offset: u64, block: usize, head: BlockHead<'_>) {
    let block = block.max(1);
    let header = head.header.get(..block).unwrap_or(head.header);
    let room = head.room.max(header.len()).min(block);
    let mut at = (offset % block as u64) as usize;
    let mut rest = buf;
    while !rest.is_empty() {
        // The rest of this block, or of `buf`.
        let n = (block - at).min(rest.len());
        let (chunk, tail) = rest.split_at_mut(n);
        let from_header = header.get(at..).unwrap_or(&[]);
        let h = from_header.len().min(n);
        let (hp, after) = chunk.split_at_mut(h);
        hp.copy_from_slice(&from_header[..h]);
        let z = room.saturating_sub(at + h).min(after.len());
        let (zeros, digits) = after.split_at_mut(z);
        zeros.fill(0);
        fill(digits, (at + h + z) as u64);
        rest = tail;
        at = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digits_continue_across_calls() {
        let mut a = [0u8; 7];
        fill(&mut a, 0);
        assert_eq!(&a, b"0123456");
        fill(&mut a, 7);
        assert_eq!(&a, b"7890123");
    }

    /// The byte at `i` of the block layout, byte by byte (the reference).
    fn reference(i: u64, block: usize, header: &[u8], room: usize) -> u8 {
        let k = (i % block as u64) as usize;
        match header.get(k) {
            Some(b) => *b,
            None if k < room => 0,
            None => b'0' + (k % 10) as u8,
        }
    }

    fn head(header: &[u8], room: usize) -> BlockHead<'_> {
        BlockHead { header, room }
    }

    #[test]
    fn blocks_begin_with_the_head_and_restart_the_digits() {
        let mut a = [0u8; 30];
        fill_blocks(&mut a, 0, 12, head(b"HDR", 3));
        assert_eq!(&a, b"HDR345678901HDR345678901HDR345");
        // From the middle of a block, across two boundaries.
        let mut b = [0u8; 16];
        fill_blocks(&mut b, 10, 12, head(b"HDR", 0));
        assert_eq!(&b, b"01HDR345678901HD");
        // Zeros after the header, to its room.
        let mut z = [0xffu8; 14];
        fill_blocks(&mut z, 0, 12, head(b"HD", 5));
        assert_eq!(&z, b"HD\0\0\x005678901HD");
        // A block shorter than the head holds the head's start only.
        let mut c = [0u8; 7];
        fill_blocks(&mut c, 1, 3, head(b"HEADER", 244));
        assert_eq!(&c, b"EAHEAHE");
        // No head: the digits of each block's index.
        let mut d = [0u8; 14];
        fill_blocks(&mut d, 0, 12, head(b"", 0));
        assert_eq!(&d, b"01234567890101");
    }

    #[test]
    fn blocks_match_the_reference_at_any_offset_and_length() {
        let header: [u8; 60] = core::array::from_fn(|i| 0xC0 ^ i as u8);
        for room in [0, 60, 244] {
            for block in [1, 7, 24, 59, 60, 61, 243, 245, 1000, 131_072] {
                for offset in [
                    0u64,
                    1,
                    59,
                    60,
                    61,
                    999,
                    131_071,
                    131_072,
                    262_200,
                    u64::MAX - 5,
                ] {
                    let mut buf = [0u8; 300];
                    fill_blocks(&mut buf, offset, block, head(&header, room));
                    for (k, b) in buf.iter().enumerate() {
                        let Some(i) = offset.checked_add(k as u64) else {
                            break;
                        };
                        let want = reference(i, block, &header, room);
                        assert_eq!(*b, want, "block {block}, room {room}, at {i}");
                    }
                }
            }
        }
    }
}
