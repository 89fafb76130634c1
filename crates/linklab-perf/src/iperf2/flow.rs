//! The socket-facing face every iperf 2 TCP flow shares ([`TcpFlow`]): the server's
//! connection ([`TcpServerConn`](super::TcpServerConn)), the client's
//! ([`TcpClientFlow`](super::TcpClientFlow)) and a connect-back sender
//! ([`SendFlow`]). A host drives any of them with one loop: bytes in, control bytes then
//! pattern bytes out, shut the write side when asked, poll by the time it asks for.

use super::tcp_sender::TcpSender;
use crate::time::Micros;

/// One TCP flow, sans-IO.
pub trait TcpFlow {
    /// Bytes arrived (all consumed).
    fn on_received(&mut self, data: &[u8], now: Micros);
    /// The peer's FIN arrived.
    fn on_peer_closed(&mut self, now: Micros);
    /// The connection was reset or failed.
    fn on_reset(&mut self, now: Micros);
    /// Bytes to write before any pattern (a header, a version reply).
    fn control_output(&self) -> &[u8];
    /// `n` bytes of [`control_output`](Self::control_output) were written.
    fn control_sent(&mut self, n: usize, now: Micros);
    /// Pattern bytes that may be written now.
    fn send_allowance(&mut self, now: Micros) -> usize;
    /// Fills `buf` with the pattern bytes that come next.
    fn fill(&self, buf: &mut [u8]);
    /// `n` pattern bytes were written.
    fn on_sent(&mut self, n: usize, now: Micros);
    /// True when the write side should be shut now.
    fn wants_close_write(&self) -> bool;
    /// The host shut the write side.
    fn write_closed(&mut self, now: Micros);
    /// Checks the clocks.
    fn poll(&mut self, now: Micros);
    /// When to poll next.
    fn poll_at(&self, now: Micros) -> Option<Micros>;
    /// True once the flow is over: close the socket.
    fn is_finished(&self) -> bool;
    /// Bytes received and sent so far (for interval reports).
    fn byte_counts(&self) -> (u64, u64);
}

/// A flow that only sends (a `-r`/`-d` connect-back, sending no header): pattern for its
/// amount, then shut the write side, then wait for the peer to close (what it sends, if
/// anything, is counted and dropped). Ends at the peer's FIN or after `linger_us` with the
/// write side shut, or by the watchdog.
#[derive(Clone, Copy, Debug)]
pub struct SendFlow {
    sender: TcpSender,
    received: u64,
    write_closed_at: Option<Micros>,
    peer_closed: bool,
    failed: bool,
    linger_us: Micros,
    idle_timeout_us: Micros,
    last_activity: Micros,
}

impl SendFlow {
    /// A flow sending as `sender` says, from `now`.
    pub fn new(sender: TcpSender, now: Micros) -> Self {
        Self {
            sender,
            received: 0,
            write_closed_at: None,
            peer_closed: false,
            failed: false,
            linger_us: 2_000_000,
            idle_timeout_us: 10_000_000,
            last_activity: now,
        }
    }

    /// The sender (bytes sent, start and end times).
    pub fn sender(&self) -> &TcpSender {
        &self.sender
    }

    /// True if the flow ended by a reset or the watchdog.
    pub fn failed(&self) -> bool {
        self.failed
    }
}

impl TcpFlow for SendFlow {
    fn on_received(&mut self, data: &[u8], now: Micros) {
        self.received = self.received.saturating_add(data.len() as u64);
        self.last_activity = now;
    }
    fn on_peer_closed(&mut self, _now: Micros) {
        self.peer_closed = true;
    }
    fn on_reset(&mut self, _now: Micros) {
        self.sender.stop();
        self.failed = !self.sender.is_done() || self.write_closed_at.is_none();
        self.peer_closed = true;
        self.write_closed_at.get_or_insert(0);
    }
    fn control_output(&self) -> &[u8] {
        &[]
    }
    fn control_sent(&mut self, _n: usize, _now: Micros) {}
    fn send_allowance(&mut self, now: Micros) -> usize {
        if self.write_closed_at.is_some() {
            return 0;
        }
        self.sender.allowance(now)
    }
    fn fill(&self, buf: &mut [u8]) {
        self.sender.fill(buf);
    }
    fn on_sent(&mut self, n: usize, now: Micros) {
        self.sender.on_sent(n, now);
        if n > 0 {
            self.last_activity = now;
        }
    }
    fn wants_close_write(&self) -> bool {
        self.write_closed_at.is_none() && self.sender.is_done()
    }
    fn write_closed(&mut self, now: Micros) {
        self.write_closed_at = Some(now);
    }
    fn poll(&mut self, now: Micros) {
        self.sender.poll(now);
        if let Some(t) = self.write_closed_at {
            if now >= t.saturating_add(self.linger_us) {
                // The peer keeps its side open: done all the same.
                self.peer_closed = true;
            }
        } else if now.saturating_sub(self.last_activity) >= self.idle_timeout_us
            && now.saturating_sub(self.last_activity) >= self.idle_timeout_us
        {
            self.sender.stop();
            self.failed = true;
            self.peer_closed = true;
            self.write_closed_at = Some(now);
        }
    }
    fn poll_at(&self, now: Micros) -> Option<Micros> {
        match self.write_closed_at {
            Some(t) => Some(t.saturating_add(self.linger_us)),
            None => {
                let dog = self.last_activity.saturating_add(self.idle_timeout_us);
                Some(self.sender.poll_at(now).map_or(dog, |s| s.min(dog)))
            }
        }
    }
    fn is_finished(&self) -> bool {
        self.write_closed_at.is_some() && self.peer_closed
    }
    fn byte_counts(&self) -> (u64, u64) {
        (self.received, self.sender.sent())
    }
}

impl TcpFlow for super::TcpServerConn {
    fn on_received(&mut self, data: &[u8], now: Micros) {
        super::TcpServerConn::on_received(self, data, now)
    }
    fn on_peer_closed(&mut self, now: Micros) {
        super::TcpServerConn::on_peer_closed(self, now)
    }
    fn on_reset(&mut self, now: Micros) {
        super::TcpServerConn::on_reset(self, now)
    }
    fn control_output(&self) -> &[u8] {
        super::TcpServerConn::control_output(self)
    }
    fn control_sent(&mut self, n: usize, now: Micros) {
        super::TcpServerConn::control_sent(self, n, now)
    }
    fn send_allowance(&mut self, now: Micros) -> usize {
        super::TcpServerConn::send_allowance(self, now)
    }
    fn fill(&self, buf: &mut [u8]) {
        super::TcpServerConn::fill(self, buf)
    }
    fn on_sent(&mut self, n: usize, now: Micros) {
        super::TcpServerConn::on_sent(self, n, now)
    }
    fn wants_close_write(&self) -> bool {
        super::TcpServerConn::wants_close_write(self)
    }
    fn write_closed(&mut self, _now: Micros) {
        super::TcpServerConn::write_closed(self)
    }
    fn poll(&mut self, now: Micros) {
        super::TcpServerConn::poll(self, now)
    }
    fn poll_at(&self, now: Micros) -> Option<Micros> {
        super::TcpServerConn::poll_at(self, now)
    }
    fn is_finished(&self) -> bool {
        super::TcpServerConn::is_finished(self)
    }
    fn byte_counts(&self) -> (u64, u64) {
        let o = self.outcome();
        (o.bytes_received, o.bytes_sent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iperf2::request::Amount;

    #[test]
    fn send_flow_sends_closes_and_lingers() {
        let mut f = SendFlow::new(TcpSender::new(Amount::Bytes(100), 0, 1_000_000), 0);
        assert_eq!(f.send_allowance(0), 100);
        f.on_sent(100, 1);
        assert!(f.wants_close_write());
        f.write_closed(2);
        assert!(!f.is_finished());
        f.poll(2_000_002);
        assert!(f.is_finished() && !f.failed());
        assert_eq!(f.byte_counts(), (0, 100));
    }

    #[test]
    fn send_flow_reset_midway_is_a_failure() {
        let mut f = SendFlow::new(TcpSender::new(Amount::Bytes(100), 0, 1_000_000), 0);
        f.on_sent(10, 1);
        f.on_reset(2);
        assert!(f.is_finished() && f.failed());
    }
}
