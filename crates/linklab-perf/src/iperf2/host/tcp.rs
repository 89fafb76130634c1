//! One loop that drives any [`TcpFlow`] over a non-blocking `TcpStream`: reads until the
//! socket is empty, writes control bytes then pattern bytes while the flow allows, shuts
//! the write side when asked, and sleeps in `ppoll(2)` until the socket or the flow's next
//! deadline (or the next `-i` boundary) wakes it.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Duration;
use std::vec;
use std::vec::Vec;

use super::now_us;
use crate::iperf::host::sys;
use crate::iperf::stream::Micros;
use crate::iperf2::flow::TcpFlow;
use crate::iperf2::pattern;

/// Longest sleep of one turn (so a flow's clock is checked at least this often).
const MAX_SLEEP_US: Micros = 100_000;

/// `-i` bookkeeping: the byte counts at the start of the current interval.
pub(super) struct Meter {
    interval_us: Micros,
    start: Micros,
    next: Micros,
    base: (u64, u64),
}

impl Meter {
    /// A meter from `start`; `interval_us` 0 reports no intervals.
    pub(super) fn new(interval_us: Micros, start: Micros) -> Self {
        Self {
            interval_us,
            start,
            next: start.saturating_add(interval_us),
            base: (0, 0),
        }
    }

    /// The next boundary, if intervals are on.
    pub(super) fn next(&self) -> Option<Micros> {
        (self.interval_us > 0).then_some(self.next)
    }

    /// Calls `emit(start_s, end_s, received, sent)` for each boundary passed by `now`.
    pub(super) fn tick(
        &mut self,
        now: Micros,
        counts: (u64, u64),
        mut emit: impl FnMut(f64, f64, u64, u64),
    ) {
        while self.interval_us > 0 && now >= self.next {
            let from = self.next - self.interval_us;
            let s = (from - self.start) as f64 / 1e6;
            let e = (self.next - self.start) as f64 / 1e6;
            emit(s, e, counts.0 - self.base.0, counts.1 - self.base.1);
            self.base = counts;
            self.next += self.interval_us;
        }
    }
}

/// Runs `flow` on `stream` until it is finished. `write_len` is the largest write (`-l`).
/// `on_turn(now, flow)` runs after each turn (interval reports, connect-backs).
pub(super) fn drive<F: TcpFlow>(
    stream: &mut TcpStream,
    flow: &mut F,
    write_len: usize,
    mut wake_at: impl FnMut() -> Option<Micros>,
    mut on_turn: impl FnMut(Micros, &mut F),
) {
    let _ = stream.set_nonblocking(true);
    let write_len = write_len.clamp(1, 1 << 22);
    // The pattern once, 10 bytes longer so any offset's write is one slice of it.
    let mut pat: Vec<u8> = vec![0; write_len + 10];
    pattern::fill(&mut pat, 0);
    let mut rbuf: Vec<u8> = vec![0; 256 * 1024];
    let mut eof = false;
    let mut sent_pattern: u64 = 0;
    loop {
        let now = now_us();
        flow.poll(now);
        on_turn(now, flow);
        if flow.is_finished() {
            return;
        }
        // Read what is there.
        let mut read_blocked = eof;
        for _ in 0..64 {
            if eof {
                break;
            }
            match stream.read(&mut rbuf) {
                Ok(0) => {
                    eof = true;
                    flow.on_peer_closed(now_us());
                }
                Ok(n) => flow.on_received(&rbuf[..n], now_us()),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    read_blocked = true;
                    break;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    flow.on_reset(now_us());
                    return;
                }
            }
        }
        // Write what the flow allows.
        let mut write_blocked = false;
        let mut wrote = false;
        let mut yielded = false;
        loop {
            let now = now_us();
            let ctrl = flow.control_output();
            let r = if !ctrl.is_empty() {
                let mut tmp = [0u8; 256];
                let n = ctrl.len().min(tmp.len());
                tmp[..n].copy_from_slice(&ctrl[..n]);
                stream
                    .write(&tmp[..n])
                    .inspect(|k| flow.control_sent(*k, now))
            } else {
                let n = flow.send_allowance(now).min(write_len);
                if n == 0 {
                    break;
                }
                let at = (sent_pattern % 10) as usize;
                stream.write(&pat[at..at + n]).inspect(|k| {
                    flow.on_sent(*k, now);
                    sent_pattern += *k as u64;
                })
            };
            match r {
                Ok(_) => wrote = true,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    write_blocked = true;
                    break;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    flow.on_reset(now);
                    return;
                }
            }
            if wrote && !read_blocked {
                yielded = true; // let reads in between big writes
                break;
            }
        }
        if flow.wants_close_write() {
            let _ = stream.shutdown(Shutdown::Write);
            flow.write_closed(now_us());
        }
        if yielded || (!read_blocked && !eof) || flow.is_finished() {
            continue;
        }
        // Sleep until the socket or a deadline.
        let now = now_us();
        let mut until = now.saturating_add(MAX_SLEEP_US);
        for t in [flow.poll_at(now), wake_at()].into_iter().flatten() {
            until = until.min(t);
        }
        let mut events = 0;
        if !eof {
            events |= libc::POLLIN;
        }
        if write_blocked || !flow.control_output().is_empty() {
            events |= libc::POLLOUT;
        }
        let wait = Duration::from_micros(until.saturating_sub(now));
        if events == 0 {
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
        } else {
            sys::wait_fd(stream.as_raw_fd(), events, wait);
        }
    }
}

/// Connects with a timeout (a connect-back or a client to an unreachable host ends
/// plainly).
pub(super) fn connect(addr: std::net::SocketAddr, timeout: Duration) -> io::Result<TcpStream> {
    let s = TcpStream::connect_timeout(&addr, timeout)?;
    let _ = s.set_nodelay(false);
    Ok(s)
}
