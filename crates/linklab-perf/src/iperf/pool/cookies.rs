//! A would-be data stream's 37-byte cookie: read and checked where it lies, then the
//! connection becomes the test's stream or is denied.

use super::streams::word_aligned_take;
use super::{PoolServer, Slot, COOKIE_TIMEOUT_US};
use crate::iperf::wire::COOKIE_SIZE;
use crate::socket::TcpOps;
use crate::time::Micros;

impl<'a, E: Copy + PartialEq, const N: usize, const S: usize> PoolServer<'a, E, N, S> {
    /// Reads more of socket `i`'s cookie (`got` bytes so far, since `since`, `ok` while they
    /// match the test's): a matching cookie makes it a data stream, another is denied, a
    /// connection that sends none in time is reset.
    pub(super) fn read_cookie(
        &mut self,
        sock: &mut impl TcpOps,
        i: usize,
        got: usize,
        since: Micros,
        ok: bool,
        now: Micros,
    ) {
        let cookie = *self.session.cookie();
        let (mut got, mut ok, mut held) = (got, ok, 0);
        let keep_word = sock.may_leave_bytes();
        // Checked where it lies; its last bytes stay in the buffer when that keeps
        // the read position on a word (see the pool's module docs).
        while got < COOKIE_SIZE {
            let mut seen = 0;
            let taken = sock.recv(|buf| {
                seen = buf.len().min(COOKIE_SIZE - got);
                ok &= buf[..seen] == cookie[got..got + seen];
                let take = if got + seen == COOKIE_SIZE && keep_word {
                    word_aligned_take(buf.as_ptr(), seen)
                } else {
                    seen
                };
                held = (seen - take) as u8;
                take
            });
            got += seen;
            if taken == 0 {
                break;
            }
        }
        if got == COOKIE_SIZE && ok {
            match self.session.accept_tcp_stream(&cookie, now) {
                Some(idx) => {
                    self.slots[i] = Slot::Data(idx);
                    self.held[i] = held;
                }
                None => {
                    self.slots[i] = Slot::Denying;
                    self.service_slot(sock, i, now);
                }
            }
        } else if got == COOKIE_SIZE {
            self.slots[i] = Slot::Denying;
            self.service_slot(sock, i, now);
        } else if !sock.may_recv() || now.saturating_sub(since) > COOKIE_TIMEOUT_US {
            sock.abort();
            self.slots[i] = Slot::Closing { since: now };
        } else {
            self.slots[i] = Slot::Pending { got, since, ok };
        }
    }
}
