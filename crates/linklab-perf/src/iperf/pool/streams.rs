//! The test's TCP data streams: what arrives is counted and dropped in place, keeping the
//! receive buffer's read position on a word; what is sent is claimed without writing it.

use super::PoolServer;
use crate::socket::TcpOps;
use crate::time::Micros;

impl<'a, E: Copy + PartialEq, const N: usize, const S: usize> PoolServer<'a, E, N, S> {
    /// Counts what arrived on data stream `idx` (socket `i`) and consumes it, keeping the
    /// buffer's read position on a word: up to three bytes already counted stay until more
    /// arrive ([`word_aligned_take`]), or until the data runs on past the buffer's end.
    pub(super) fn read_stream(
        &mut self,
        sock: &mut impl TcpOps,
        i: usize,
        idx: usize,
        now: Micros,
    ) {
        let held = &mut self.held[i];
        let keep_word = sock.may_leave_bytes();
        loop {
            let queued = sock.queues().0;
            let mut fresh = 0;
            let taken = sock.recv(|buf| {
                let len = buf.len();
                fresh = len.saturating_sub(usize::from(*held));
                if fresh == 0 {
                    // Only bytes already counted: leave them, unless more wait past the
                    // buffer's end, where this run stops.
                    if queued > len {
                        *held = 0;
                        return len;
                    }
                    return 0;
                }
                let take = if keep_word {
                    word_aligned_take(buf.as_ptr(), len)
                } else {
                    len
                };
                *held = (len - take) as u8;
                take
            });
            if fresh > 0 {
                self.session.on_tcp_received(idx, fresh, now);
            }
            if taken == 0 {
                break;
            }
        }
    }

    pub(super) fn send_tcp(&mut self, sock: &mut impl TcpOps, idx: usize, now: Micros) {
        while sock.can_send() {
            let budget = self.session.tcp_send_budget(idx, now);
            if budget == 0 {
                break;
            }
            // Claim send-buffer space without writing: the payload content is irrelevant to
            // iperf3 (it never checks it), only its length counts.
            match sock.send(|buf| buf.len().min(budget)) {
                0 => break,
                n => self.session.on_tcp_sent(idx, n, now),
            }
        }
    }
}

/// Of `len` received bytes lent at `start`, how many to consume so that the read position
/// stays on a word: all but those past the last word boundary (at most three), or all when
/// that would consume nothing.
pub(super) fn word_aligned_take(start: *const u8, len: usize) -> usize {
    let past = (start as usize).wrapping_add(len) % 4;
    if len > past {
        len - past
    } else {
        len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_position_stays_on_a_word() {
        let buf = [0u32; 8];
        let at = buf.as_ptr().cast::<u8>();
        // From a word: whole words taken, the rest kept.
        assert_eq!(word_aligned_take(at, 10), 8);
        assert_eq!(word_aligned_take(at, 12), 12);
        // From the cookie's end (37 bytes in): up to the next word.
        assert_eq!(word_aligned_take(at.wrapping_add(1), 9), 7);
        // Nothing would be taken: all is.
        assert_eq!(word_aligned_take(at, 3), 3);
    }
}
