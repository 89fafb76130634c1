//! Prints the RX queue sizing table: for common ring capacities, how many full-size TCP
//! segments the queue always holds and the TCP receive window to configure.
//!
//! ```text
//! cargo run -p linklab-mac --example window_table
//! ```

use linklab_mac::window::{max_burst_frames, queue_frames, smoltcp_max_burst_size, tcp_rx_window};
use linklab_mac::{RxFormat, MIN_QUEUE_CAPACITY};

fn main() {
    println!("capacity  format           frames  window(B)  smoltcp max_burst_size");
    for cap in [MIN_QUEUE_CAPACITY, 8192, 15_280, 16_384, 32_768, 65_536] {
        for (name, f) in [
            ("raw", RxFormat::Raw),
            ("aligned+fcs", RxFormat::Aligned { fcs: true }),
            ("aligned (tap)", RxFormat::Aligned { fcs: false }),
        ] {
            println!(
                "{cap:>8}  {name:<15} {:>7}  {:>9}  {:>3} (burst frames {})",
                queue_frames(cap, f, 1460),
                tcp_rx_window(cap, f, 1460),
                smoltcp_max_burst_size(cap, f),
                max_burst_frames(cap, f, 1460),
            );
        }
    }
}
