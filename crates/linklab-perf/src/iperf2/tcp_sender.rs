//! The sending side of an iperf 2 TCP flow, sans-IO: how many pattern bytes may be written
//! now (`-t` time or `-n` bytes, a `-b` rate), and when the flow is done (then the host
//! shuts the socket's write side). Used by the server for `-R`, `--full-duplex` and the
//! `-r`/`-d` connect-back, and by the client.

use super::pattern;
use super::request::Amount;
use crate::time::Micros;

/// Most bytes one [`TcpSender::allowance`] grants (the host writes what its socket takes).
pub const MAX_GRANT: usize = 1 << 30;

/// One TCP flow's sender.
#[derive(Clone, Copy, Debug)]
pub struct TcpSender {
    amount: Amount,
    rate_bps: u64,
    start: Option<Micros>,
    end_at: Option<Micros>,
    sent: u64,
    done: bool,
    last_send: Option<Micros>,
}

impl TcpSender {
    /// A sender of `amount` (a time is cut to `max_us`) at `rate_bps` (0: as fast as the
    /// socket takes). Starts at the first [`start`](Self::start).
    pub fn new(amount: Amount, rate_bps: u64, max_us: Micros) -> Self {
        let amount = match amount {
            Amount::Time(_) => {
                Amount::from_us(amount.time_us().unwrap_or(0).min(max_us.max(10_000)))
            }
            bytes => bytes,
        };
        Self {
            amount,
            rate_bps,
            start: None,
            end_at: None,
            sent: 0,
            done: matches!(amount, Amount::Bytes(0)),
            last_send: None,
        }
    }

    /// Starts the clock (a second call does nothing).
    pub fn start(&mut self, now: Micros) {
        if self.start.is_none() {
            self.start = Some(now);
            self.end_at = self.amount.time_us().map(|t| now.saturating_add(t));
        }
    }

    /// The amount being sent (a time already cut to the cap).
    pub fn amount(&self) -> Amount {
        self.amount
    }

    /// When the clock started.
    pub fn started_at(&self) -> Option<Micros> {
        self.start
    }

    /// When the last bytes were sent (the sender's end of the flow).
    pub fn last_send(&self) -> Option<Micros> {
        self.last_send
    }

    /// Bytes sent so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// True once the amount is sent (or the time is up): shut down the write side.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Ends the flow early (the peer went away, the host gave up).
    pub fn stop(&mut self) {
        self.done = true;
    }

    /// Checks the clock: a timed flow is done once its time is up.
    pub fn poll(&mut self, now: Micros) {
        if let Some(end) = self.end_at {
            if now >= end {
                self.done = true;
            }
        }
    }

    /// Pattern bytes that may be written now (0 when done or held back by the rate).
    pub fn allowance(&mut self, now: Micros) -> usize {
        self.start(now);
        self.poll(now);
        if self.done {
            return 0;
        }
        let mut left = match self.amount {
            Amount::Bytes(n) => n.saturating_sub(self.sent),
            Amount::Time(_) => MAX_GRANT as u64,
        };
        if self.rate_bps > 0 {
            let elapsed = now.saturating_sub(self.start.unwrap_or(now));
            // The rate's bits so far, by whole seconds and the rest (64-bit: the 128-bit
            // product was 746 B of the compact image's flash; exact up to 18 Tbit/s, fewer
            // bytes past it), in bytes, plus one 1 ms burst so a slow rate starts at once.
            let bits = self
                .rate_bps
                .saturating_mul(elapsed / 1_000_000)
                .saturating_add(self.rate_bps.saturating_mul(elapsed % 1_000_000) / 1_000_000);
            let allowed = (bits / 8).saturating_add((self.rate_bps / 8_000).max(1));
            left = left.min(allowed.saturating_sub(self.sent));
        }
        left.min(MAX_GRANT as u64) as usize
    }

    /// Fills `buf` with the pattern bytes that come next (write them, then call
    /// [`on_sent`](Self::on_sent) with what the socket took).
    pub fn fill(&self, buf: &mut [u8]) {
        pattern::fill(buf, self.sent);
    }

    /// Accounts `n` bytes written.
    pub fn on_sent(&mut self, n: usize, now: Micros) {
        if n == 0 {
            return;
        }
        self.sent = self.sent.saturating_add(n as u64);
        self.last_send = Some(now);
        if let Amount::Bytes(total) = self.amount {
            if self.sent >= total {
                self.done = true;
            }
        }
    }

    /// When the sender next wants a poll: the end of a timed flow, or (paced) when more
    /// bytes become allowed (1 ms steps).
    pub fn poll_at(&self, now: Micros) -> Option<Micros> {
        if self.done {
            return None;
        }
        let pace = (self.rate_bps > 0).then(|| now.saturating_add(1_000));
        match (self.end_at, pace) {
            (Some(e), Some(p)) => Some(e.min(p)),
            (e, p) => e.or(p),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_amount_ends_exactly() {
        let mut s = TcpSender::new(Amount::Bytes(1000), 0, 10_000_000);
        assert_eq!(s.allowance(0), 1000);
        s.on_sent(600, 1);
        assert_eq!(s.allowance(2), 400);
        s.on_sent(400, 3);
        assert!(s.is_done());
        assert_eq!(s.allowance(4), 0);
    }

    #[test]
    fn time_amount_capped_and_ends() {
        // A hostile 2^31 × 10 ms is cut to the cap.
        let mut s = TcpSender::new(Amount::Time(0x8000_0000), 0, 2_000_000);
        assert_eq!(s.amount(), Amount::Time(200));
        assert!(s.allowance(100) > 0);
        assert_eq!(s.poll_at(100), Some(2_000_100));
        s.poll(2_000_100);
        assert!(s.is_done());
    }

    #[test]
    fn rate_paces() {
        // 8 Mbit/s = 1 byte per µs; one ms burst up front.
        let mut s = TcpSender::new(Amount::Time(100), 8_000_000, 10_000_000);
        assert_eq!(s.allowance(0), 1000);
        s.on_sent(1000, 0);
        assert_eq!(s.allowance(0), 0);
        assert_eq!(s.allowance(500), 500);
    }

    #[test]
    fn rate_over_seconds_and_any_rate() {
        // floor(elapsed × rate / 8 000 000) + the 1 ms burst (rate / 8 000, at least 1).
        let at = |rate: u64, elapsed: u64| {
            let mut s = TcpSender::new(Amount::Bytes(u64::MAX), rate, 20_000_000);
            s.start(0);
            s.allowance(elapsed)
        };
        // 1 Mbit/s for 2.5 s: 312 500 bytes and 125.
        assert_eq!(at(1_000_000, 2_500_000), 312_625);
        // Rates that are not whole bytes per second: 7 bit/s for 8 s is 7 bytes (and 1);
        // 1 000 001 bit/s for 8 s is 1 000 001 bytes (and 125).
        assert_eq!(at(7, 8_000_000), 8);
        assert_eq!(at(1_000_001, 8_000_000), 1_000_126);
        // A hostile rate and clock neither overflow nor grant past the cap.
        assert_eq!(at(u64::MAX, 0), MAX_GRANT);
        assert_eq!(at(u64::MAX, u64::MAX), MAX_GRANT);
        assert_eq!(at(1, u64::MAX), MAX_GRANT);
    }
}
