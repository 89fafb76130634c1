//! `linklab serve`: the soft NIC on a Linux TAP (linklab-serve).

use std::net::Ipv4Addr;
use std::time::Duration;

use linklab_results::values::{self, TcpWindow};
use linklab_serve::serve::{config, Config};

/// Options of `linklab serve`; every value is checked by a typed parser, so a bad one gets
/// one line naming the option and what it accepts (exit 2).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// TAP interface to create (removed again at exit) or attach to.
    #[arg(long, value_name = "NAME", value_parser = values::interface_name)]
    tap: String,
    /// The soft NIC's IPv4 address and prefix, e.g. 198.18.0.2/24.
    #[arg(long, value_name = "ADDR/PREFIX", value_parser = values::ipv4_with_prefix)]
    ip: (Ipv4Addr, u8),
    /// The soft NIC's MAC address.
    #[arg(long, value_name = "MAC", default_value = "02:4c:4c:00:00:01",
          value_parser = values::mac_address)]
    mac: [u8; 6],
    /// RX queue capacity in full-size frames (2..=1024).
    #[arg(long, value_name = "N", default_value_t = config::DEFAULT_RX_FRAMES,
          value_parser = values::ranged(*config::RX_FRAMES_RANGE.start(), *config::RX_FRAMES_RANGE.end()))]
    rx_frames: usize,
    /// TCP receive window: `auto` (derived from the RX queue so a peer cannot overrun it)
    /// or a number of bytes (536..=1048576).
    #[arg(long, value_name = "auto|BYTES", default_value = "auto",
          value_parser = values::tcp_window(config::TCP_WINDOW.0, config::TCP_WINDOW.1))]
    tcp_window: TcpWindow,
    /// Print the counters every S seconds, 1..=3600 (they are always printed at exit).
    #[arg(long, value_name = "S",
          value_parser = values::ranged(config::STATS_INTERVAL.0, config::STATS_INTERVAL.1))]
    stats_interval: Option<u64>,
}

impl Args {
    /// The configuration these (already validated) options describe.
    fn config(&self) -> Config {
        let (ip, prefix) = self.ip;
        Config {
            tap: self.tap.clone(),
            ip,
            prefix,
            mac: self.mac,
            rx_frames: self.rx_frames,
            tcp_window: self.tcp_window,
            stats_interval: self.stats_interval.map(Duration::from_secs),
        }
    }
}

/// Runs `linklab serve` until SIGINT or SIGTERM.
pub fn run(args: Args) -> anyhow::Result<()> {
    linklab_serve::serve::run(&args.config())
}
