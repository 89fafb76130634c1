//! The apps' counters by name, as every home of the apps reports them (`/stats`, the
//! console): the smoltcp `DeviceApps::counters` and the embassy `AppCounters::snapshot` both
//! name their values with [`named`], so the two sides cannot drift apart.

/// One app counter: (app, counter name, value).
pub type AppCounter = (&'static str, &'static str, u64);

/// Number of app counters.
pub const APP_COUNTERS: usize = 47;

/// Each counter's app and name, in the order the values come: echo's (the core's six, then
/// its TCP socket's lifetime), HTTP's, iperf3's, iperf 2's (`iperf2`: tests started, done and
/// failed — `tests` is `tests_done + tests_failed`, plus one while a test runs —, the
/// connections and UDP flows taken into tests, connect-backs opened, clients turned away
/// while busy, datagrams dropped, payload bytes each way, then the socket lifetime's). Per service, `reclaimed` counts spent or
/// half-open sockets freed for a new client, `reclaimed_answered` those of them our SYN-ACK
/// had answered (a peer that believed it was connected would have been reset; the rules
/// allow it only after the grace with no answer), `evicted` idle connections reset; and what
/// became of every SYN it saw ([`crate::syns`]): `syns` (every one), of them `syns_held`
/// (held in the device until a socket was freed for it) and `listen_drops` (dropped
/// unanswered — every socket busy, or a handshake we answered could complete — Linux's name
/// for SYNs a listener dropped; the client sends its SYN again), the rest passed at once.
/// No service refuses a SYN with a RST; a protocol's own refusal is counted as the
/// protocol's (iperf3's `denied`).
pub const NAMES: [(&str, &str); APP_COUNTERS] = [
    ("echo", "udp_rx_datagrams"),
    ("echo", "udp_tx_datagrams"),
    ("echo", "udp_dropped"),
    ("echo", "udp_unsent"),
    ("echo", "tcp_connections"),
    ("echo", "tcp_bytes"),
    ("echo", "tcp_idle_closed"),
    ("echo", "tcp_reclaimed"),
    ("echo", "tcp_evicted"),
    ("echo", "tcp_reclaimed_answered"),
    ("echo", "tcp_syns"),
    ("echo", "tcp_syns_held"),
    ("echo", "tcp_listen_drops"),
    ("http", "responses"),
    ("http", "idle_closed"),
    ("http", "reclaimed"),
    ("http", "evicted"),
    ("http", "reclaimed_answered"),
    ("http", "syns"),
    ("http", "syns_held"),
    ("http", "listen_drops"),
    ("iperf", "tests_done"),
    ("iperf", "tests_failed"),
    ("iperf", "denied"),
    ("iperf", "open_streams"),
    ("iperf", "reclaimed"),
    ("iperf", "evicted"),
    ("iperf", "reclaimed_answered"),
    ("iperf", "syns"),
    ("iperf", "syns_held"),
    ("iperf", "listen_drops"),
    ("iperf2", "tests"),
    ("iperf2", "tests_done"),
    ("iperf2", "tests_failed"),
    ("iperf2", "streams"),
    ("iperf2", "open_streams"),
    ("iperf2", "connect_backs"),
    ("iperf2", "refused"),
    ("iperf2", "datagrams_dropped"),
    ("iperf2", "bytes_received"),
    ("iperf2", "bytes_sent"),
    ("iperf2", "reclaimed"),
    ("iperf2", "evicted"),
    ("iperf2", "reclaimed_answered"),
    ("iperf2", "syns"),
    ("iperf2", "syns_held"),
    ("iperf2", "listen_drops"),
];

/// A service's SYN counters in [`NAMES`]' order: `syns`, `syns_held`, `listen_drops`.
pub fn syn_values(c: &crate::syns::SynCounts) -> [u64; 3] {
    [c.syns, c.held, c.listen_drops].map(u64::from)
}

/// iperf 2's counters in [`NAMES`]' order (all zero in a build without feature `iperf2-tcp`),
/// its SYN counters from `syns`.
#[cfg(feature = "iperf2-tcp")]
pub fn iperf2_values(
    c: &crate::iperf2::pool::Iperf2Counters,
    open_streams: usize,
    syns: &crate::syns::SynCounts,
) -> [u64; 16] {
    let [s, held, dropped] = syn_values(syns);
    [
        u64::from(c.tests),
        u64::from(c.tests_done),
        u64::from(c.tests_failed),
        u64::from(c.streams),
        open_streams as u64,
        u64::from(c.connect_backs),
        u64::from(c.refused),
        u64::from(c.datagrams_dropped),
        c.bytes_received,
        c.bytes_sent,
        u64::from(c.reclaimed),
        u64::from(c.evicted),
        u64::from(c.reclaimed_answered),
        s,
        held,
        dropped,
    ]
}

/// The counters, named: `values` in [`NAMES`]' order.
pub fn named(values: [u64; APP_COUNTERS]) -> [AppCounter; APP_COUNTERS] {
    core::array::from_fn(|i| (NAMES[i].0, NAMES[i].1, values[i]))
}
