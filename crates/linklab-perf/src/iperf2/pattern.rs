//! The payload iperf 2 sends: ASCII digits '0'..'9' repeating (its `pattern()`), so a
//! header-less stream never looks like a test header (0x30 has none of the header bits).

/// Fills `buf` with the pattern as it continues at `offset` bytes into a stream.
pub fn fill(buf: &mut [u8], offset: u64) {
    let mut d = (offset % 10) as u8;
    for b in buf.iter_mut() {
        *b = b'0' + d;
        d = if d == 9 { 0 } else { d + 1 };
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn digits_continue_across_calls() {
        let mut a = [0u8; 7];
        super::fill(&mut a, 0);
        assert_eq!(&a, b"0123456");
        super::fill(&mut a, 7);
        assert_eq!(&a, b"7890123");
    }
}
