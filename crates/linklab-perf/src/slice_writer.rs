//! `core::fmt::Write` into a byte slice, failing instead of overflowing: how the no-heap apps
//! format text (HTTP heads, the firmware's `/stats`).

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
}

impl core::fmt::Write for SliceWriter<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(core::fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(core::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
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
}
