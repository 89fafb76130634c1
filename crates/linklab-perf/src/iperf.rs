//! iperf3, sans-IO: a client and a server that speak stock iperf3's wire contract (3.12's
//! and older UDP hellos), in `#![no_std]` without `alloc`, with an adapter for smoltcp
//! (feature `smoltcp`, [`device`]); the std::net client and server are the crate
//! `linklab-perf-host`'s.
//!
//! # Layers
//! - [`wire`]: constants, cookie, control framing ([`wire::ControlReader`]), UDP header.
//! - [`json`]: parameter and results documents (serde-json-core, bounded).
//! - [`stream`]: per-stream counters; UDP loss / out-of-order / RFC 1889 jitter exactly as
//!   iperf3's `iperf_udp_recv` computes them.
//! - [`session`]: the state machine ([`Session`]) for both roles: bytes and time in,
//!   control bytes, send permissions and deadlines out. Pacing (`-b`), `-t/-n/-k`, `-O`,
//!   `-i`, `-R`, `--bidir`, `-P 1..=8`, `--udp-counters-64bit`, and a watchdog.
//! - [`report`]: per-direction results ([`TestReport`]) and intervals: `forward` is
//!   client→server, `reverse` server→client (`-R`; `--bidir` fills both), each a
//!   [`DirectionReport`] with bytes sent/received, seconds, bit/s, and for UDP packets,
//!   lost, lost_percent, jitter_ms, out_of_order (known when we received), for TCP
//!   retransmits (when the sender could read them).
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

pub use crate::time::Micros;
pub use json::{ParamStrings, Params, Protocol, Results, StreamResult};
pub use report::{DirectionReport, Interval, IntervalStream, TestReport};
pub use session::{ClientOptions, Failure, PeerSummary, Phase, Role, Session};
pub use stream::Stream;
