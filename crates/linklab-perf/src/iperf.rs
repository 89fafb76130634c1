//! iperf3, sans-IO: a client and a server that speak stock iperf3's wire contract (3.12's
//! and older UDP hellos), in `#![no_std]` without `alloc`, with adapters for std::net
//! (feature `std`, [`host`]) and smoltcp (feature `smoltcp`, [`device`]).
//!
//! # Layers
//! - [`wire`]: constants, cookie, control framing ([`wire::ControlReader`]), UDP header.
//! - [`json`]: parameter and results documents (serde-json-core, bounded).
//! - [`stream`]: per-stream counters; UDP loss / out-of-order / RFC 1889 jitter exactly as
//!   iperf3's `iperf_udp_recv` computes them.
//! - [`session`]: the state machine ([`Session`]) for both roles: bytes and time in,
//!   control bytes, send permissions and deadlines out. Pacing (`-b`), `-t/-n/-k`, `-O`,
//!   `-i`, `-R`, `--bidir`, `-P 1..=8`, `--udp-counters-64bit`, and a watchdog.
//! - [`report`]: per-direction results ([`TestReport`]) and intervals.
//!
//! # Host client (feature `std`)
//! ```no_run
//! # #[cfg(feature = "std")] {
//! use linklab_perf::iperf::{host, Params, Protocol};
//! let mut cfg = host::ClientConfig::new("127.0.0.1");
//! cfg.params = Params { protocol: Protocol::Udp, rate_bps: 50_000_000, duration_s: 2, len: 1448, ..Params::default() };
//! let report = host::run_client(&cfg).unwrap();
//! let fwd = report.forward.unwrap();
//! println!("{} bit/s, lost {} of {} ({:.2}%), jitter {:.3} ms",
//!          fwd.bits_per_second_received, fwd.lost, fwd.packets, fwd.lost_percent, fwd.jitter_ms);
//! # }
//! ```
//! [`host::run_client`] runs one test against any iperf3 server and returns a
//! [`TestReport`]: `forward` is client→server, `reverse` server→client (`-R`; `--bidir`
//! fills both), each a [`DirectionReport`] with bytes sent/received, seconds, bit/s, and for
//! UDP packets, lost, lost_percent, jitter_ms, out_of_order (known when we received), for
//! TCP retransmits (when the sender could read them). [`host::Server`] is the std server.
//!
//! # Device server (feature `smoltcp`)
//! [`device::SmoltcpIperfServer`] serves one client at a time from a caller-owned
//! `smoltcp::iface::SocketSet`: call `poll(&mut sockets, now)` after each
//! `Interface::poll` and sleep until `poll_at()`. See [`device`] for the sockets and
//! buffers it needs.

pub mod errors;
pub mod json;
pub mod pool;
pub mod report;
pub mod session;
pub mod stream;
pub mod wire;

#[cfg(feature = "smoltcp")]
pub mod device;
#[cfg(feature = "std")]
pub mod host;

pub use json::{ParamStrings, Params, Protocol, Results, StreamResult};
pub use report::{DirectionReport, Interval, IntervalStream, TestReport};
pub use session::{ClientOptions, Failure, PeerSummary, Phase, Role, Session};
pub use stream::{Micros, Stream};
