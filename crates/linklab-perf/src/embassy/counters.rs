//! The embassy apps' counters, shared between their tasks and whoever reports them (a
//! `/stats` route): the same names and meanings as the smoltcp `DeviceApps::counters`
//! ([`crate::app_counters`]), held in 32-bit atomics (these MCUs have no 64-bit ones), so
//! they wrap after 2^32.

use portable_atomic::{AtomicU32, Ordering};

use crate::echo::EchoCounters;
use crate::iperf::pool::ServerCounters;
use crate::socket::TcpState;
use crate::syns::SynCounts;

/// TCP sockets whose port and state the apps publish (2 HTTP, 1 echo, up to 13 iperf3 and
/// iperf 2).
pub const SOCKET_VIEWS: usize = 20;

/// The states by code, for the packed socket views.
const STATES: [TcpState; 11] = [
    TcpState::Closed,
    TcpState::Listen,
    TcpState::SynSent,
    TcpState::SynReceived,
    TcpState::Established,
    TcpState::FinWait1,
    TcpState::FinWait2,
    TcpState::CloseWait,
    TcpState::Closing,
    TcpState::LastAck,
    TcpState::TimeWait,
];

pub use crate::app_counters::{AppCounter, APP_COUNTERS};

/// Every counter of the embassy apps, and the port and state of each of their TCP sockets.
/// Lock-free; put it in a `static` and lend it to each app.
#[derive(Debug, Default)]
pub struct AppCounters {
    echo: [AtomicU32; 13],
    http: [AtomicU32; 8],
    iperf: [AtomicU32; 10],
    iperf2: [AtomicU32; 16],
    /// Per socket: port << 8 | state code, 0 while unused.
    views: [AtomicU32; SOCKET_VIEWS],
    claimed: AtomicU32,
}

// The four arrays, chained, are the named counters.
const _: () = assert!(13 + 8 + 10 + 16 == APP_COUNTERS);

/// Index of an HTTP counter.
#[cfg_attr(not(feature = "http"), allow(dead_code))]
pub(crate) enum Http {
    Responses = 0,
    IdleClosed = 1,
    Reclaimed = 2,
    Evicted = 3,
    ReclaimedAnswered = 4,
}

/// Where an HTTP service's SYN counters start (`syns`, `syns_held`, `listen_drops`).
const HTTP_SYNS: usize = 5;

/// Index of an echo counter the adapter keeps itself (the rest come from the core): TCP's.
#[cfg_attr(not(feature = "echo"), allow(dead_code))]
pub(crate) enum EchoTcp {
    IdleClosed = 6,
    Reclaimed = 7,
    Evicted = 8,
    ReclaimedAnswered = 9,
}

/// Where TCP echo's SYN counters start.
const ECHO_SYNS: usize = 10;

impl AppCounters {
    /// All zero.
    pub const fn new() -> AppCounters {
        AppCounters {
            echo: [const { AtomicU32::new(0) }; 13],
            http: [const { AtomicU32::new(0) }; 8],
            iperf: [const { AtomicU32::new(0) }; 10],
            iperf2: [const { AtomicU32::new(0) }; 16],
            views: [const { AtomicU32::new(0) }; SOCKET_VIEWS],
            claimed: AtomicU32::new(0),
        }
    }

    /// A socket view for an app (None once all [`SOCKET_VIEWS`] are taken).
    pub(crate) fn claim_view(&self) -> Option<usize> {
        let i = self.claimed.fetch_add(1, Ordering::Relaxed) as usize;
        (i < SOCKET_VIEWS).then_some(i)
    }

    /// Publishes the port and state of the socket behind view `i`.
    pub(crate) fn set_view(&self, i: Option<usize>, port: u16, state: TcpState) {
        // The declaration order, as STATES lists them (checked by a test).
        let code = state as u32;
        if let Some(v) = i.and_then(|i| self.views.get(i)) {
            v.store(u32::from(port) << 8 | code | 0x80, Ordering::Relaxed);
        }
    }

    /// Calls `f` with the port and state of every socket the apps published.
    pub fn sockets(&self, mut f: impl FnMut(u16, TcpState)) {
        for v in &self.views {
            let v = v.load(Ordering::Relaxed);
            if v & 0x80 != 0 {
                f((v >> 8) as u16, STATES[(v & 0x7f) as usize % STATES.len()]);
            }
        }
    }

    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn add_http(&self, which: Http) {
        self.http[which as usize].fetch_add(1, Ordering::Relaxed);
    }

    #[cfg_attr(not(feature = "echo"), allow(dead_code))]
    pub(crate) fn add_echo(&self, which: EchoTcp) {
        self.echo[which as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Publishes what became of the SYNs to HTTP's port.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn set_http_syns(&self, c: &SynCounts) {
        store(&self.http[HTTP_SYNS..], syn_values(c));
    }

    /// Publishes what became of the SYNs to TCP echo's port.
    #[cfg_attr(not(feature = "echo"), allow(dead_code))]
    pub(crate) fn set_echo_syns(&self, c: &SynCounts) {
        store(&self.echo[ECHO_SYNS..], syn_values(c));
    }

    #[cfg_attr(not(feature = "echo"), allow(dead_code))]
    pub(crate) fn set_echo_core(&self, c: &EchoCounters) {
        let values = [
            c.udp_rx_datagrams,
            c.udp_tx_datagrams,
            c.udp_dropped,
            c.udp_unsent,
            c.tcp_connections,
            c.tcp_bytes,
        ];
        for (slot, v) in self.echo.iter().zip(values) {
            slot.store(v as u32, Ordering::Relaxed);
        }
    }

    pub(crate) fn set_iperf(&self, c: ServerCounters, open_streams: usize) {
        let values = [
            c.tests_done,
            c.tests_failed,
            c.denied,
            open_streams as u32,
            c.reclaimed,
            c.evicted,
            c.reclaimed_answered,
        ];
        for (slot, v) in self.iperf.iter().zip(values) {
            slot.store(v, Ordering::Relaxed);
        }
        store(&self.iperf[values.len()..], syn_values(&c.syns));
    }

    /// Publishes iperf 2's counters (bytes wrap at 2^32, as every counter here).
    #[cfg(feature = "iperf2")]
    pub(crate) fn set_iperf2(
        &self,
        c: &crate::iperf2::pool::Iperf2Counters,
        open_streams: usize,
        syns: &SynCounts,
    ) {
        let values = crate::app_counters::iperf2_values(c, open_streams, syns);
        for (slot, v) in self.iperf2.iter().zip(values) {
            slot.store(v as u32, Ordering::Relaxed);
        }
    }

    /// Every counter now, named as the smoltcp `DeviceApps::counters` names them.
    pub fn snapshot(&self) -> [AppCounter; APP_COUNTERS] {
        let mut values = [0u64; APP_COUNTERS];
        let all = self
            .echo
            .iter()
            .chain(&self.http)
            .chain(&self.iperf)
            .chain(&self.iperf2);
        for (slot, v) in values.iter_mut().zip(all) {
            *slot = u64::from(v.load(Ordering::Relaxed));
        }
        crate::app_counters::named(values)
    }
}

/// A service's SYN counters, as [`crate::app_counters::syn_values`] orders them.
fn syn_values(c: &SynCounts) -> [u64; 3] {
    crate::app_counters::syn_values(c)
}

/// Stores `values` in the first of `slots` (32 bits each, as every counter here).
fn store<const K: usize>(slots: &[AtomicU32], values: [u64; K]) {
    for (slot, v) in slots.iter().zip(values) {
        slot.store(v as u32, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_s_code_is_its_place_in_the_list() {
        for (i, s) in STATES.iter().enumerate() {
            assert_eq!(*s as usize, i);
        }
    }

    #[test]
    fn views_read_back_as_published() {
        let c = AppCounters::new();
        let (a, b) = (c.claim_view(), c.claim_view());
        c.set_view(a, 80, TcpState::Established);
        c.set_view(b, 5201, TcpState::TimeWait);
        let mut seen = [(0, TcpState::Closed); 2];
        let mut n = 0;
        c.sockets(|port, state| {
            seen[n] = (port, state);
            n += 1;
        });
        assert_eq!(n, 2);
        assert_eq!(
            seen,
            [(80, TcpState::Established), (5201, TcpState::TimeWait)]
        );
    }
}
