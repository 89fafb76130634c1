//! `core::fmt::Write` into a byte slice, failing instead of overflowing: how the no-heap apps
//! format text (HTTP heads, the firmware's `/stats`). [`SliceWriter::text`] and
//! [`SliceWriter::num`] write without `core::fmt`'s formatter (kilobytes of flash a device
//! that writes only text and integers does without).

/// A writer into a byte slice that fails instead of overflowing.
pub struct SliceWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> SliceWriter<'a> {
    /// An empty writer over `buf`.
    pub fn new(buf: &'a mut [u8]) -> SliceWriter<'a> {
        SliceWriter { buf, len: 0 }
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes still free.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.len
    }

    /// Forgets everything after the first `len` bytes (to undo a part that did not fit).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Appends `s`; an error (nothing written) if it does not fit.
    pub fn text(&mut self, s: &str) -> Result<&mut Self, core::fmt::Error> {
        self.bytes(s.as_bytes())
    }

    /// Appends `b`, whole characters only (the writer's content stays text).
    fn bytes(&mut self, b: &[u8]) -> Result<&mut Self, core::fmt::Error> {
        let end = self.len.checked_add(b.len()).ok_or(core::fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(core::fmt::Error)?;
        dst.copy_from_slice(b);
        self.len = end;
        Ok(self)
    }

    /// Appends `n` in decimal; an error (nothing written) if it does not fit.
    pub fn num(&mut self, n: u64) -> Result<&mut Self, core::fmt::Error> {
        let mut digits = [0u8; 20];
        // ASCII digits, each a whole character (not `str::from_utf8`: its validator and
        // table were 624 B of the compact image's flash).
        self.bytes(decimal(n, &mut digits))
    }
}

/// `n` in decimal, written into the end of `digits` (20 bytes hold any `u64`): the digits
/// written, ASCII. The one number writer of the text written without `core::fmt`
/// ([`SliceWriter::num`], the firmware's console lines).
pub fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &digits[i..]
}

impl core::fmt::Write for SliceWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.text(s).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::fmt::Write;

    #[test]
    fn writes_until_full_then_fails_without_partial_overflow() {
        let mut buf = [0u8; 8];
        let mut w = SliceWriter::new(&mut buf);
        write!(w, "abc{}", 12).unwrap();
        assert_eq!(w.len(), 5);
        assert!(write!(w, "xyzw").is_err());
        assert_eq!(w.remaining(), 3);
        w.truncate(2);
        assert_eq!(w.len(), 2);
    }

    #[test]
    fn text_and_numbers_without_the_formatter() {
        let mut buf = [0u8; 32];
        let mut w = SliceWriter::new(&mut buf);
        w.text("n=")
            .unwrap()
            .num(0)
            .unwrap()
            .text(",")
            .unwrap()
            .num(u64::MAX)
            .unwrap();
        assert_eq!(w.len(), 24);
        assert!(w.num(1234567890).is_err());
        assert_eq!(w.len(), 24);
        assert_eq!(&buf[..24], b"n=0,18446744073709551615");
    }

    #[test]
    fn decimal_writes_every_digit_and_only_those() {
        let mut digits = [b'x'; 20];
        assert_eq!(decimal(0, &mut digits), b"0");
        assert_eq!(decimal(907, &mut digits), b"907");
        assert_eq!(decimal(u64::MAX, &mut digits), b"18446744073709551615");
    }
}
