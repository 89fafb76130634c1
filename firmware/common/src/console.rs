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

    /// Appends `text` (never inlined: a line is many calls, each one a call).
    #[inline(never)]
    pub fn text(&mut self, text: &str) -> &mut Self {
        for &b in text.as_bytes() {
            if self.len < N {
                self.buf[self.len] = b;
                self.len += 1;
            }
        }
        self
    }

    /// Appends `n` in decimal.
    #[inline(never)]
    pub fn num(&mut self, mut n: u64) -> &mut Self {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        // Only ASCII digits were written.
        self.text(core::str::from_utf8(&digits[i..]).unwrap_or("?"))
    }

    /// The line so far.
    pub fn as_str(&self) -> &str {
        // Only whole UTF-8 text was appended, but a cut may split a character.
        match core::str::from_utf8(&self.buf[..self.len]) {
            Ok(s) => s,
            Err(e) => core::str::from_utf8(&self.buf[..e.valid_up_to()]).unwrap_or(""),
        }
    }
}

impl<const N: usize> Default for Line<N> {
    fn default() -> Self {
        Self::new()
    }
}

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
    }
}
