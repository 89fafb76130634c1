//! The apps' counters by name, as every home of the apps reports them (`/stats`, the
//! console): the smoltcp `DeviceApps::counters` and the embassy `AppCounters::snapshot` both
//! name their values with [`named`], so the two sides cannot drift apart.

/// One app counter: (app, counter name, value).
pub type AppCounter = (&'static str, &'static str, u64);

/// Number of app counters.
pub const APP_COUNTERS: usize = 19;

/// Each counter's app and name, in the order the values come: echo's (the core's six, then
/// its TCP socket's lifetime), HTTP's, iperf3's.
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
    ("http", "responses"),
    ("http", "idle_closed"),
    ("http", "reclaimed"),
    ("http", "evicted"),
    ("iperf", "tests_done"),
    ("iperf", "tests_failed"),
    ("iperf", "denied"),
    ("iperf", "open_streams"),
    ("iperf", "reclaimed"),
    ("iperf", "evicted"),
];

/// The counters, named: `values` in [`NAMES`]' order.
pub fn named(values: [u64; APP_COUNTERS]) -> [AppCounter; APP_COUNTERS] {
    core::array::from_fn(|i| (NAMES[i].0, NAMES[i].1, values[i]))
}
