//! One loop that drives any [`TcpFlow`] over a non-blocking `TcpStream`: reads until the
//! socket is empty, writes control bytes then data bytes while the flow allows, shuts
//! the write side when asked, and sleeps in `ppoll(2)` until the socket or the flow's next
//! deadline (or the next `-i` boundary) wakes it. The data bytes come from a [`Payload`]
//! built once from the flow's own fill, so no write fills a buffer again.

use std::io::{self, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use crate::clock::now_us;
use crate::sys;
use linklab_perf::iperf2::client::TcpClientFlow;
use linklab_perf::iperf2::flow::TcpFlow;
use linklab_perf::iperf2::pattern;
use linklab_perf::time::Micros;
use nix::poll::PollFlags;

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

/// Largest write a [`Payload`] allows (`-l` is cut to it).
const MAX_WRITE: usize = 1 << 22;

/// A flow's data bytes, built once: they repeat every `period` bytes, and `bytes` holds
/// them from the stream's offset 0 through one write past a period, so the bytes at any
/// offset are one slice.
pub(super) struct Payload {
    bytes: Vec<u8>,
    period: usize,
    write_len: usize,
}

impl Payload {
    /// Data that repeats every `period` bytes, written at most `write_len` at a time;
    /// `fill(buf)` gives the bytes from offset 0.
    pub(super) fn new(period: usize, write_len: usize, fill: impl FnOnce(&mut [u8])) -> Self {
        let period = period.max(1);
        let write_len = write_len.clamp(1, MAX_WRITE);
        let mut bytes = vec![0; period + write_len];
        fill(&mut bytes);
        Self {
            bytes,
            period,
            write_len,
        }
    }

    /// iperf's digits running on (what our servers send), in writes of `write_len`.
    pub(super) fn digits(write_len: usize) -> Self {
        Self::new(10, write_len, |b| pattern::fill(b, 0))
    }

    /// A client's data as stock iperf 2 writes it: blocks of `-l` (`block_len`), each
    /// beginning with the header (see [`TcpClientFlow::fill_at`]), one block a write.
    pub(super) fn client(flow: &TcpClientFlow, block_len: usize) -> Self {
        let block = block_len.clamp(1, MAX_WRITE);
        Self::new(block, block, |b| flow.fill_at(0, b))
    }

    /// The next write's bytes: at most `n` (and at most one write) from `offset`.
    fn at(&self, offset: u64, n: usize) -> &[u8] {
        let from = (offset % self.period as u64) as usize;
        let n = n.min(self.write_len);
        self.bytes.get(from..from + n).unwrap_or(&[])
    }
}

/// Runs `flow` on `stream` until it is finished, its data from `payload`.
/// `on_turn(now, flow)` runs after each turn (interval reports, connect-backs).
pub(super) fn drive<F: TcpFlow>(
    stream: &mut TcpStream,
    flow: &mut F,
    payload: &Payload,
    mut wake_at: impl FnMut() -> Option<Micros>,
    mut on_turn: impl FnMut(Micros, &mut F),
) {
    let _ = stream.set_nonblocking(true);
    let mut rbuf: Vec<u8> = vec![0; 256 * 1024];
    let mut eof = false;
    let mut sent_data: u64 = 0;
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
                let data = payload.at(sent_data, flow.send_allowance(now));
                if data.is_empty() {
                    break;
                }
                stream.write(data).inspect(|k| {
                    flow.on_sent(*k, now);
                    sent_data += *k as u64;
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
        let mut events = PollFlags::empty();
        if !eof {
            events |= PollFlags::POLLIN;
        }
        if write_blocked || !flow.control_output().is_empty() {
            events |= PollFlags::POLLOUT;
        }
        let wait = Duration::from_micros(until.saturating_sub(now));
        if events.is_empty() {
            if !wait.is_zero() {
                std::thread::sleep(wait);
            }
        } else {
            sys::wait_fd(&*stream, events, wait);
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

#[cfg(test)]
mod tests {
    use super::*;
    use linklab_perf::iperf2::client::TcpClientConfig;
    use linklab_perf::iperf2::request::{Amount, Mode, Protocol, TestRequest};

    #[test]
    fn a_client_payload_is_the_flows_own_stream() {
        let request = TestRequest {
            mode: Mode::Tradeoff,
            amount: Amount::Time(100),
            port: 5001,
            ..TestRequest::plain(Protocol::Tcp)
        };
        let mut cfg = TcpClientConfig::new(request);
        cfg.block_len = 1_000;
        let flow = TcpClientFlow::new(cfg, 0);
        let payload = Payload::client(&flow, 1_000);
        let mut want = vec![0u8; 1_000];
        for offset in [0u64, 1, 59, 60, 999, 1_000, 1_001, 123_456_789] {
            flow.fill_at(offset, &mut want);
            assert_eq!(payload.at(offset, 5_000), &want[..], "at {offset}");
        }
        // A write never passes `-l`, and a shorter allowance is honoured.
        flow.fill_at(0, &mut want);
        assert_eq!(payload.at(10, 7), &want[10..17]);
        // Our servers' digits run on across writes.
        let digits = Payload::digits(4);
        assert_eq!(digits.at(8, 4), b"8901");
    }
}
