//! The adaptive retransmission timeout: RFC 6298's estimator (smoothed round trip and its
//! variation, RTO = SRTT + 4·RTTVAR within bounds), Karn's rule (the caller samples only
//! frames sent once) and exponential backoff on each timeout.

/// Round-trip estimator and retransmission timeout, in microseconds.
#[derive(Clone, Copy, Debug)]
pub struct Rto {
    srtt: Option<u64>,
    rttvar: u64,
    base: u64,
    backoff: u32,
    min: u64,
    max: u64,
}

impl Rto {
    /// An estimator that starts at `initial` and stays within `min..=max`.
    pub const fn new(initial: u64, min: u64, max: u64) -> Rto {
        Rto {
            srtt: None,
            rttvar: 0,
            base: initial,
            backoff: 0,
            min,
            max,
        }
    }

    /// Takes one round-trip sample (of a frame sent exactly once) and ends any backoff.
    pub fn sample(&mut self, rtt: u64) {
        match self.srtt {
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            Some(srtt) => {
                self.rttvar = (3 * self.rttvar + srtt.abs_diff(rtt)) / 4;
                self.srtt = Some((7 * srtt + rtt) / 8);
            }
        }
        let srtt = self.srtt.unwrap_or(rtt);
        self.base = (srtt + 4 * self.rttvar).clamp(self.min, self.max);
        self.backoff = 0;
    }

    /// A retransmission timer expired: doubles the timeout (up to the maximum).
    pub fn back_off(&mut self) {
        self.backoff = (self.backoff + 1).min(16);
    }

    /// The current timeout.
    pub fn timeout(&self) -> u64 {
        self.base
            .saturating_mul(1 << self.backoff)
            .clamp(self.min, self.max)
    }

    /// The smoothed round-trip time, once sampled.
    pub fn srtt(&self) -> Option<u64> {
        self.srtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_samples_backs_off_and_stays_in_bounds() {
        let mut r = Rto::new(1_000_000, 10_000, 4_000_000);
        assert_eq!(r.timeout(), 1_000_000);
        for _ in 0..50 {
            r.sample(100_000);
        }
        let t = r.timeout();
        assert!((100_000..=120_000).contains(&t), "{t}");
        r.back_off();
        assert_eq!(r.timeout(), 2 * t);
        for _ in 0..10 {
            r.back_off();
        }
        assert_eq!(r.timeout(), 4_000_000);
        r.sample(1);
        assert!(r.timeout() >= 10_000);
    }
}
