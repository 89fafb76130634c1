//! The validated configuration of `linklab serve` and its defaults and limits (the CLI checks
//! each option with linklab-results' `values` parsers).

use std::net::Ipv4Addr;
use std::time::Duration;

use linklab_results::values::TcpWindow;

/// RX queue sizes in frames that `--rx-frames` accepts (the simulator's device takes the same).
pub use linklab_sim::device::RX_FRAMES_RANGE;

/// Default RX queue size in frames.
pub const DEFAULT_RX_FRAMES: usize = 32;
/// Smallest and largest explicit TCP receive window in bytes (`--tcp-window`).
pub const TCP_WINDOW: (usize, usize) = (536, 1 << 20);
/// Smallest and largest stats interval in seconds (`--stats-interval`).
pub const STATS_INTERVAL: (u64, u64) = (1, 3600);

/// Everything `linklab serve` needs to know, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// TAP interface name.
    pub tap: String,
    /// The soft NIC's IPv4 address.
    pub ip: Ipv4Addr,
    /// Prefix length of the soft NIC's subnet.
    pub prefix: u8,
    /// The soft NIC's MAC address.
    pub mac: [u8; 6],
    /// RX queue capacity in frames.
    pub rx_frames: usize,
    /// TCP receive window policy.
    pub tcp_window: TcpWindow,
    /// Print counters this often, if set.
    pub stats_interval: Option<Duration>,
}
