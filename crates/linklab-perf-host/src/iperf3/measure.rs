//! What the host measures besides bytes: CPU use over the test (iperf3's `cpu_util`,
//! `getrusage` against wall time) and TCP_INFO samples per interval (retransmits,
//! congestion window, send window, round-trip time, path MTU).

use std::time::Instant;

use crate::sys::{self, TcpInfo};

/// CPU use of this process since [`CpuMeter::start`], as iperf3 reports it: percent of
/// wall time spent in user + system, user, system.
#[derive(Clone, Copy, Debug)]
pub(super) struct CpuMeter {
    wall: Instant,
    user_us: u64,
    sys_us: u64,
}

impl CpuMeter {
    /// Starts measuring now.
    pub(super) fn start() -> Self {
        let (user_us, sys_us) = sys::cpu_times_us();
        Self {
            wall: Instant::now(),
            user_us,
            sys_us,
        }
    }

    /// `[total, user, system]` percent since the start.
    pub(super) fn percent(&self) -> [f64; 3] {
        let wall = self.wall.elapsed().as_secs_f64() * 1e6;
        if wall <= 0.0 {
            return [0.0; 3];
        }
        let (u, s) = sys::cpu_times_us();
        let user = u.saturating_sub(self.user_us) as f64 * 100.0 / wall;
        let system = s.saturating_sub(self.sys_us) as f64 * 100.0 / wall;
        [user + system, user, system]
    }
}

/// One TCP sending stream's TCP_INFO over the test: the latest sample and the extremes
/// iperf3 reports in its `-J` summary.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpStats {
    /// The latest sample.
    pub last: TcpInfo,
    /// Retransmits counted at the previous interval (for the per-interval figure).
    pub retrans_at_interval: u64,
    /// Largest congestion window seen, bytes.
    pub max_snd_cwnd: u64,
    /// Largest send window seen, bytes.
    pub max_snd_wnd: u64,
    /// Largest RTT seen, µs.
    pub max_rtt_us: u32,
    /// Smallest RTT seen, µs (0: none).
    pub min_rtt_us: u32,
    /// Sum of the RTT samples, µs.
    pub sum_rtt_us: u64,
    /// RTT samples taken.
    pub count_rtt: u64,
}

/// The TCP figures of one stream for one interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInterval {
    /// Retransmits in the interval.
    pub retransmits: u64,
    /// Congestion window at the end of the interval, bytes.
    pub snd_cwnd: u64,
    /// Send window at the end of the interval, bytes.
    pub snd_wnd: u64,
    /// RTT, µs.
    pub rtt_us: u32,
    /// RTT variance, µs.
    pub rttvar_us: u32,
    /// Path MTU.
    pub pmtu: u32,
}

impl TcpStats {
    /// Takes an interval sample (iperf3's `iperf_stats_callback`).
    pub(super) fn sample(&mut self, info: TcpInfo) -> TcpInterval {
        let iv = TcpInterval {
            retransmits: info.total_retrans.saturating_sub(self.retrans_at_interval),
            snd_cwnd: info.snd_cwnd,
            snd_wnd: info.snd_wnd,
            rtt_us: info.rtt_us,
            rttvar_us: info.rttvar_us,
            pmtu: info.pmtu,
        };
        self.retrans_at_interval = info.total_retrans;
        self.last = info;
        self.max_snd_cwnd = self.max_snd_cwnd.max(info.snd_cwnd);
        self.max_snd_wnd = self.max_snd_wnd.max(info.snd_wnd);
        self.max_rtt_us = self.max_rtt_us.max(info.rtt_us);
        if self.min_rtt_us == 0 || info.rtt_us < self.min_rtt_us {
            self.min_rtt_us = info.rtt_us;
        }
        self.sum_rtt_us += u64::from(info.rtt_us);
        self.count_rtt += 1;
        iv
    }

    /// Mean RTT over the samples, µs.
    pub fn mean_rtt_us(&self) -> u64 {
        self.sum_rtt_us.checked_div(self.count_rtt).unwrap_or(0)
    }
}
