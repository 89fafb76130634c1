//! Console lines built without `core::fmt` (its formatter machinery is kilobytes of flash a
//! minimal image does without): text and decimal numbers into a fixed buffer.

/// One console line under construction (at most `N` bytes; more is cut).
pub struct Line<const N: usize> {
    buf: [u8; N],
    len: usize,
}

impl<const N: usize> Line<N> {
    /// An empty line.
    pub const fn new() -> Self {
        Line {
            buf: [0; N],
            len: 0,
        }
    }

    /// Appends `text`, cut to whole characters where the line is full (never inlined: a line
    /// is many calls, each one a call).
    #[inline(never)]
    pub fn text(&mut self, text: &str) -> &mut Self {
        let mut take = text.len().min(N - self.len);
        while !text.is_char_boundary(take) {
            take -= 1;
        }
        self.push(&text.as_bytes()[..take]);
        self
    }

    /// Appends `n` in decimal.
    #[inline(never)]
    pub fn num(&mut self, n: u64) -> &mut Self {
        let mut digits = [0u8; 20];
        // ASCII digits (linklab-perf's one number writer): each one a whole character.
        let digits = linklab_perf::slice_writer::decimal(n, &mut digits);
        let take = digits.len().min(N - self.len);
        self.push(&digits[..take]);
        self
    }

    /// Appends bytes that end on a character boundary and fit.
    fn push(&mut self, bytes: &[u8]) {
        self.buf[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    /// The line so far.
    pub fn as_str(&self) -> &str {
        // SAFETY: `text` and `num` append whole characters only (UTF-8 text cut on a
        // character boundary, ASCII digits), so the bytes so far are UTF-8. Not checked
        // again: the check is 0.5 KB of flash in a minimal image.
        unsafe { core::str::from_utf8_unchecked(&self.buf[..self.len]) }
    }
}

impl<const N: usize> Default for Line<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// Every console line of the firmware: one size, so an image links one copy of the line
/// code (two sizes linked two: 244 B of the minimal image).
pub(crate) type ConsoleLine = Line<256>;

#[cfg(test)]
mod tests {
    use super::Line;

    #[test]
    fn text_and_numbers() {
        let mut l = Line::<64>::new();
        l.text("a=").num(0).text(" b=").num(u64::MAX);
        assert_eq!(l.as_str(), "a=0 b=18446744073709551615");
        let mut short = Line::<4>::new();
        short.text("abc").num(12345);
        assert_eq!(short.as_str(), "abc1");
        // A character that does not fit whole is left out.
        let mut cut = Line::<4>::new();
        cut.text("ab").text("!é");
        assert_eq!(cut.as_str(), "ab!");
        cut.text("é").text("c");
        assert_eq!(cut.as_str(), "ab!c");
        let mut digits = Line::<3>::new();
        digits.text("x").num(12345);
        assert_eq!(digits.as_str(), "x12");
    }
}
