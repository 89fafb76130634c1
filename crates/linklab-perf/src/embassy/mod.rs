//! The device apps on embassy-net (feature `embassy-net`, embassy-net 0.9): the iperf3
//! server, the HTTP bench-file server (with user routes such as `/stats`), TCP and UDP echo,
//! each an `async fn` that runs forever in a task of the user's. They run the same sans-IO
//! cores and the same socket logic as the smoltcp adapters ([`crate::iperf::pool`],
//! [`crate::http::serve_on`], [`crate::echo::echo_on`], over [`crate::socket`]'s traits),
//! with the same lifetime rules ([`crate::rules`], [`crate::evict`]): every TCP socket gets
//! the TCP timeout and keep-alive and no Nagle, HTTP and echo connections that made no
//! progress for the idle timeout are reset, UDP echo replies that cannot leave are dropped,
//! and with a [`ServiceGate`] on the driver a SYN that finds all of a service's sockets busy
//! frees one first: a spent socket, else the connection idle longest beyond
//! [`crate::evict::GRACE_MS`] (evicted: its peer gets a RST first), else a half-open one —
//! never a connection making progress, nor a running iperf3 test. Counted (`reclaimed`,
//! `evicted`) as on the smoltcp side.
//!
//! No heap, no smoltcp of ours (embassy-net brings its own): the user lends every buffer.
//!
//! The driver holds each SYN for a served port until its service made room (or drops it
//! unanswered when none can be made now: its client sends it again, never a RST), shows it
//! each frame it sends (so the gate notes the SYN-ACKs that leave), and holds each UDP echo
//! request until the reply to the one before had its turn to leave: linklab-mac's
//! `EmbassyMac::with_gate` with a `FrameGate` that calls `GATE.admit` and `GATE.sent`; any
//! other embassy-net driver wrapped in a [`GatedDriver`]. The tasks:
//!
//! ```no_run
//! # #[cfg(all(feature = "http", feature = "echo"))]
//! # mod example {
//! use embassy_net::Stack;
//! use linklab_perf::embassy::{self as apps, AppCounters, ServiceGate};
//! use linklab_perf::http::NoRoutes;
//!
//! static GATE: ServiceGate = ServiceGate::new();
//! static COUNTERS: AppCounters = AppCounters::new();
//!
//! #[embassy_executor::task]
//! async fn iperf(stack: Stack<'static>, b: apps::IperfBuffers<'static, 4>) -> ! {
//!     apps::iperf_server(stack, b, &COUNTERS, Some(&GATE)).await
//! }
//! #[embassy_executor::task]
//! async fn http(stack: Stack<'static>, b: [apps::TcpBuffers<'static>; 2]) -> ! {
//!     apps::http_server(stack, b, &mut NoRoutes, &COUNTERS, Some(&GATE)).await
//! }
//! #[embassy_executor::task]
//! async fn echo(stack: Stack<'static>, t: apps::TcpBuffers<'static>, u: apps::UdpBuffers<'static>) -> ! {
//!     apps::echo_server(stack, t, u, &COUNTERS, Some(&GATE)).await
//! }
//! # }
//! # fn main() {}
//! ```
//!
//! One task per app keeps each woken only by its own sockets (a single task joining them
//! all would poll every app on every frame).

mod counters;
mod device;
#[cfg(feature = "echo")]
mod echo;
pub(crate) mod gate;
mod gated;
#[cfg(feature = "http")]
mod http;
mod iperf;
#[cfg(feature = "iperf2")]
mod iperf2;
mod memory;
#[cfg(any(feature = "echo", feature = "http"))]
mod service;
pub(crate) mod socket;
mod stats;

pub use counters::{AppCounter, AppCounters, APP_COUNTERS, SOCKET_VIEWS};
#[cfg(feature = "echo")]
pub use device::EchoMemory;
#[cfg(feature = "http")]
pub use device::HttpMemory;
#[cfg(not(feature = "iperf2"))]
pub use device::Iperf2Buffers;
pub use device::{announce, static_ipv4, IperfMemory, IPERF2_SOCKETS, MAX_UDP_PAYLOAD};
#[cfg(feature = "echo")]
pub use echo::echo_server;
pub use gate::{Admit, Port, ServiceGate, ANSWERS, TX_HOLD_PASSES, WATCHED_PORTS};
pub use gated::{GatedDriver, GatedRx, GatedTx, HeldFrame, MAX_HELD_FRAME};
#[cfg(feature = "http")]
pub use http::{http_server, HTTP_SOCKETS};
pub use iperf::{iperf_server, IperfBuffers};
#[cfg(feature = "iperf2")]
pub use iperf2::{iperf2_server, Iperf2Buffers};
pub use memory::SharedMemory;
pub use stats::AppStats;

#[cfg(any(feature = "echo", feature = "http"))]
use core::task::Context;

use embassy_net::tcp::TcpSocket;
use embassy_net::udp::PacketMetadata;
#[cfg(any(feature = "echo", feature = "iperf-udp"))]
use embassy_net::udp::UdpSocket;
use embassy_net::Stack;
use embassy_time::Duration;
#[cfg(any(feature = "echo", feature = "http"))]
use embassy_time::{Instant, Timer};

use crate::rules::{TCP_KEEP_ALIVE_MS, TCP_TIMEOUT_MS};

/// A TCP socket's two buffers.
pub struct TcpBuffers<'a> {
    /// Receive buffer: its free space is the window the stack advertises.
    pub rx: &'a mut [u8],
    /// Send buffer: what may be in flight, unacknowledged.
    pub tx: &'a mut [u8],
}

/// A UDP socket's buffers: packet records and payload bytes, each way.
pub struct UdpBuffers<'a> {
    /// Datagrams the receive side can hold.
    pub rx_meta: &'a mut [PacketMetadata],
    /// Payload bytes the receive side can hold.
    pub rx: &'a mut [u8],
    /// Datagrams the send side can hold.
    pub tx_meta: &'a mut [PacketMetadata],
    /// Payload bytes the send side can hold.
    pub tx: &'a mut [u8],
}

/// A TCP socket with the apps' lifetime rules (the TCP timeout and keep-alive of
/// [`crate::rules`]) and without Nagle's algorithm: with a send buffer of a few segments, as
/// an MCU has, Nagle holds the last partial segment until the peer's delayed ACK.
fn tcp_socket<'a>(stack: Stack<'a>, b: TcpBuffers<'a>) -> TcpSocket<'a> {
    let mut s = TcpSocket::new(stack, b.rx, b.tx);
    s.set_nagle_enabled(false);
    s.set_timeout(Some(Duration::from_millis(TCP_TIMEOUT_MS)));
    s.set_keep_alive(Some(Duration::from_millis(TCP_KEEP_ALIVE_MS)));
    s
}

#[cfg(any(feature = "echo", feature = "iperf-udp"))]
fn udp_socket<'a>(stack: Stack<'a>, b: UdpBuffers<'a>) -> UdpSocket<'a> {
    UdpSocket::new(stack, b.rx_meta, b.rx, b.tx_meta, b.tx)
}

/// Arranges a wake-up of the task at `at`, at once if it is due.
#[cfg(any(feature = "echo", feature = "http"))]
fn wake_at(at: Option<Instant>, cx: &mut Context<'_>) {
    if let Some(at) = at {
        if socket::poll_once(Timer::at(at), cx).is_some() {
            cx.waker().wake_by_ref();
        }
    }
}
