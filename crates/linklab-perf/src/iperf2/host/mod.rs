//! std adapter for iperf 2 (feature `std`): a server ([`Server`]: TCP and UDP on one port,
//! `iperf -s` / `iperf -s -u`) and a client ([`run_client`]), on non-blocking std sockets
//! and `ppoll(2)`, a thread per TCP connection, one thread for the UDP socket. They drive
//! the sans-IO flows of [`super`] and tell what happens through [`Event`]s, which the CLI
//! prints as stock iperf 2.1.8 does.
//!
//! - `tcp`: one loop that drives any [`TcpFlow`](super::TcpFlow) over a `TcpStream`;
//! - `udp`: the UDP server's socket loop, the UDP client, the `-R` receiver;
//! - `server`: listeners, accepted connections, connect-backs;
//! - `client`: `-P` connections, UDP flows;
//! - `back`: the client's `-r`/`-d` listener;
//! - `events`: what the host reports.

mod back;
mod client;
mod events;
mod server;
mod tcp;
mod udp;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub use client::{run_client, ClientConfig, ClientError, ClientSummary};
pub use events::{Event, FlowReport, FlowTag, UdpFigures};
pub use server::{serve_handed_over, Server, ServerConfig};

use crate::iperf::stream::Micros;

/// Microseconds on this process's monotonic clock.
pub fn now_us() -> Micros {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_micros() as Micros
}

/// What to add to [`now_us`] to get UNIX time in microseconds (the clock UDP datagrams
/// are stamped with), measured once.
pub fn wall_offset_us() -> i64 {
    static OFFSET: OnceLock<i64> = OnceLock::new();
    *OFFSET.get_or_init(|| {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        wall - now_us() as i64
    })
}

/// The next transfer id (`[  1]`, `[  2]`, ...), shared by every flow of the process as
/// iperf 2 numbers them.
pub(crate) fn next_id() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}
