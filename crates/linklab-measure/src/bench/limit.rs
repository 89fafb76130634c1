//! The theoretical TCP goodput limit of the configured link, the yardstick of every download.

use linklab_sim::limit::tcp_goodput_limit;
use linklab_sim::sim::SimConfig;

/// The MSS of a 1500-byte Ethernet MTU.
pub const MSS: u64 = 1460;

/// The limit for this configuration, payload bytes per second.
pub fn limit(cfg: &SimConfig) -> f64 {
    tcp_goodput_limit(cfg.link.rate, cfg.link.duplex, MSS)
}
