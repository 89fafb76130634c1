//! The control output buffer: bytes queued for the control connection, sent from the front,
//! appended at the back. Appending first moves the unsent rest to the start of the buffer,
//! so the whole buffer is available to each message.

use crate::iperf::json::JsonError;
use crate::iperf::wire;

/// The message does not fit in what is left of the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Full;

/// Queued control bytes in a caller-provided buffer: `buf[pos..len]` is still to be sent.
pub(super) struct Output<'a> {
    buf: &'a mut [u8],
    len: usize,
    pos: usize,
}

impl<'a> Output<'a> {
    /// An empty queue over `buf`.
    pub(super) fn new(buf: &'a mut [u8]) -> Self {
        Self {
            buf,
            len: 0,
            pos: 0,
        }
    }

    /// Bytes waiting to be sent.
    pub(super) fn pending(&self) -> &[u8] {
        self.buf.get(self.pos..self.len).unwrap_or(&[])
    }

    /// Marks `n` pending bytes as sent.
    pub(super) fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.len);
        if self.pos == self.len {
            self.clear();
        }
    }

    /// Drops everything queued.
    pub(super) fn clear(&mut self) {
        self.pos = 0;
        self.len = 0;
    }

    /// Moves the unsent bytes to the start of the buffer.
    fn compact(&mut self) {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.len, 0);
            self.len -= self.pos;
            self.pos = 0;
        }
    }

    /// Appends `bytes`.
    pub(super) fn push(&mut self, bytes: &[u8]) -> Result<(), Full> {
        self.compact();
        let dst = self
            .buf
            .get_mut(self.len..self.len + bytes.len())
            .ok_or(Full)?;
        dst.copy_from_slice(bytes);
        self.len += bytes.len();
        Ok(())
    }

    /// Appends a length-prefixed JSON document that `body` writes into the free space.
    pub(super) fn push_json(
        &mut self,
        body: impl FnOnce(&mut [u8]) -> Result<usize, JsonError>,
    ) -> Result<(), Full> {
        self.compact();
        let space = self.buf.get_mut(self.len..).ok_or(Full)?;
        let n = wire::frame_json(space, |b| body(b).ok()).ok_or(Full)?;
        self.len += n;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_after_a_partial_send_and_refuses_what_does_not_fit() {
        let mut b = [0u8; 8];
        let mut o = Output::new(&mut b);
        o.push(b"abcde").unwrap();
        o.consume(3);
        assert_eq!(o.pending(), b"de");
        o.push(b"fghij").unwrap();
        assert_eq!(o.pending(), b"defghij");
        assert_eq!(o.push(b"xy"), Err(Full));
        o.consume(7);
        assert_eq!(o.pending(), b"");
        o.push_json(|b| {
            b[..2].copy_from_slice(b"{}");
            Ok(2)
        })
        .unwrap();
        assert_eq!(o.pending(), &[0, 0, 0, 2, b'{', b'}']);
        assert_eq!(o.push_json(|_| Ok(3)), Err(Full));
    }
}
