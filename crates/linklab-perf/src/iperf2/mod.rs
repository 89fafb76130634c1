//! iperf 2, sans-IO (feature `iperf2`, or `iperf2-tcp` for its TCP server alone): the
//! server and client of iperf 2.1.8's wire contract — the TCP test header (2.1's 60 bytes,
//! 2.0's 24, or none), the version reply, `-r`/`-d` connect-back, `-R` and `--full-duplex`
//! on the one connection, UDP with its datagram header, FIN and server report — in `#![no_std]` without `alloc`, every count
//! bounded, nothing panicking on input. Facts from iperf 2.1.8's sources with file and
//! line: `shared/notes/iperf2.md`.
//!
//! # Layers
//! - [`wire`]: typed views over the header, datagram, report and ack bytes;
//! - [`detect`]: which iperf a connection's first bytes come from;
//! - [`request`]: what a header asks for ([`TestRequest`]: mode, amount, port, rate);
//! - [`udp_stats`]: loss, out-of-order and RFC 1889 jitter exactly as 2.1.8 counts them;
//! - [`tcp_sender`], [`udp_sender`]: one flow's sending side (`-t`/`-n`, `-b`, the FIN);
//! - [`tcp_server`]: one server-side TCP connection ([`TcpServerConn`]);
//! - [`client`]: one client-side TCP connection ([`TcpClientFlow`]);
//! - [`flow`]: what every TCP flow offers its host ([`TcpFlow`]), and a send-only flow
//!   for connect-backs ([`SendFlow`]);
//! - [`udp_server`]: the UDP server's flows ([`UdpServerSession`], [`UdpServer`]).
//! - [`tcp_socket`]: one connection's turn over one TCP socket of any stack;
//! - [`pool`]: the server of port 5001 over a fixed set of sockets ([`pool::Iperf2Pool`]);
//!   [`device`] (features `smoltcp`, `iperf2`) runs it over smoltcp sockets lent from the
//!   iperf servers' data memory;
//! - [`one_socket`]: the TCP server on one socket, lwIP's lwiperf's feature set
//!   ([`one_socket::OneSocketServer`]: what `apps::DeviceApps` runs with `iperf2-tcp`
//!   alone).
//!
//! # Hosting the server from a socket loop (device or host)
//! Time is [`Micros`] on any monotonic clock. Nothing here opens a socket, allocates or
//! picks an address: the host does what the sessions ask.
//!
//! **TCP, port 5001.** One [`TcpServerConn`] per accepted connection (`-P N` opens N;
//! bound them by the sockets you have — a connection that finds none is refused by the
//! stack as stock iperf's backlog would). Per turn:
//! 1. received bytes → `on_received(bytes, now)` (all consumed; discard them in place);
//!    FIN → `on_peer_closed(now)`; RST/error → `on_reset(now)`;
//! 2. write `control_output()` (the 28-byte version reply, when the header asks for it)
//!    before anything else, then `control_sent(n, now)` (a connection refused for an iperf3
//!    cookie still writes the reply its first bytes asked for: `is_finished()` stays false
//!    until it is out);
//! 3. `send_allowance(now)` pattern bytes may be written (`-R`, `--full-duplex`): fill
//!    them with `fill(buf)`, write, `on_sent(n, now)`;
//! 4. `wants_close_write()` → shut the write side (`close()` on smoltcp), then
//!    `write_closed()`;
//! 5. `take_connect_back()` → `Some(cb)` for `-r` (after the client's test) or `-d` (at
//!    once): connect **to the peer address of this connection** (never an address from the
//!    header; the port is `cb.port`, never 0), then drive a [`TcpSender`]
//!    (`TcpSender::new(cb.amount, cb.rate_bps, cap)`: write `allowance(now)` bytes of
//!    `fill`, `on_sent`, close when `is_done()`), sending no header (2.1.8's connect-back
//!    is a compat-mode client). For UDP connect-backs see [`UdpServer`].
//! 6. `poll(now)`, sleep until `poll_at(now)`; when `is_finished()`, log `outcome()` and
//!    close (abort for [`TcpEnd::IdleTimeout`] or [`TcpEnd::Refused`]).
//!
//! Deadlines: the watchdog ([`TcpServerConfig::idle_timeout_us`]), the end of a timed
//! `-R` send; sending is capped at [`TcpServerConfig::max_send_us`].
//!
//! **UDP, port 5001.** One [`UdpServer<P, N>`] over the one socket, `P` the peer's
//! address type. Per datagram `on_datagram(peer, bytes, now)`; then send every
//! `next_output(now, &mut buf)` → `(peer, len)` to `peer` (reports, 128 bytes; `-R` data,
//! up to [`UdpServerConfig::max_send_len`]); `take_connect_back()` → `(peer, cb)`: a UDP
//! socket sending to `peer`'s address at `cb.port`, driven by a [`UdpSender`]
//! (`header: None`, `fin: FinMode::AwaitReport`, its replies fed to `on_datagram`);
//! `poll(now)`, sleep until `poll_at(now)`; `take_finished()` gives each ended flow's
//! figures once.
//!
//! Deadlines: the flow watchdog ([`UdpServerConfig::idle_timeout_us`]), the linger after
//! the FIN ([`UdpServerConfig::linger_us`]), the `-R` sender's pacing (1 ms steps).
//!
//! State sizes (x86-64, checked by a test): `TcpServerConn` 368 B, `UdpServerSession`
//! 608 B, `UdpServer<_, 1>` 672 B; none allocates.
//!
//! A device without the sender's wall clock sets
//! [`UdpServerConfig::first_transit`] to [`FirstTransit::Skip`] (2.1.8 would count the
//! whole clock offset into the first jitter sample).

pub mod client;
pub mod detect;
#[cfg(all(feature = "smoltcp", feature = "iperf2"))]
pub mod device;
pub mod flow;
pub mod one_socket;
pub mod pattern;
pub mod pool;
pub mod request;
pub mod tcp_sender;
pub mod tcp_server;
pub mod tcp_socket;
pub mod udp_sender;
pub mod udp_server;
pub mod udp_stats;
pub mod wire;

pub use crate::time::Micros;
pub use client::{ClientEnd, TcpClientConfig, TcpClientFlow};
pub use flow::{SendFlow, TcpFlow};
pub use request::{Amount, HeaderStyle, Mode, Protocol, TestRequest};
pub use tcp_sender::TcpSender;
pub use tcp_server::{ConnectBack, TcpEnd, TcpOutcome, TcpPhase, TcpServerConfig, TcpServerConn};
pub use udp_sender::{FinMode, UdpSendPhase, UdpSender, UdpSenderConfig};
pub use udp_server::{UdpOutcome, UdpPhase, UdpServer, UdpServerConfig, UdpServerSession};
pub use udp_stats::{FirstTransit, UdpReceiveStats};
pub use wire::report::ReportInfo;
pub use wire::DEFAULT_PORT;
