//! Sans-IO network measurement apps for microcontrollers: an iperf3-compatible
//! server and client, an iperf 2 server and client (feature `iperf2`), an HTTP bench-file
//! server and download client, TCP and UDP echo.
//! `#![no_std]` without `alloc`: every buffer is lent by the caller.
//!
//! A stock `iperf3 -c DEVICE` (with `-R`, `--bidir`, `-P`, `-u -b`, the results exchange and
//! `-J`), `iperf -c DEVICE` (iperf 2: `-r`, `-d`, `-R`, `-u`), `curl http://DEVICE/1MB.txt`
//! and `nc DEVICE 7` measure your device with nothing of linklab on the host. The apps are
//! written once, sans-IO ([`iperf`], [`iperf2`], [`http`], [`echo`]), and run in three
//! homes, each an adapter (two of them here, turned on by a feature):
//!
//! | home | feature | what you call |
//! |---|---|---|
//! | embassy-net 0.9 (a task per app) | `embassy-net` | [`embassy_apps!`], or `embassy::iperf_server` and its siblings |
//! | smoltcp 0.14 in a main loop | `smoltcp` | `apps::DeviceApps` (every app), or `iperf::device::SmoltcpIperfServer` |
//! | a host's std::net | the crate `linklab-perf-host` | `linklab_perf_host::iperf3::Server`, `linklab_perf_host::iperf3::run_client` |
//!
//! # On embassy-net
//!
//! The buffers are statics sized by you (here a 14 600-byte TCP window, a ring of 12
//! frames less two), one task per app, a `/stats` route with the apps' counters. This is
//! the code of the board examples (`examples/boards/` in the repository) and of linklab's
//! emulated embassy images:
//!
//! ```no_run
//! # #[cfg(all(feature = "embassy-net", feature = "http", feature = "echo"))]
//! # mod example {
//! use embassy_executor::Spawner;
//! use embassy_net::{Stack, StackResources};
//! use linklab_perf::embassy::{AppCounters, AppStats, EchoMemory, HttpMemory, IperfMemory};
//!
//! static COUNTERS: AppCounters = AppCounters::new();
//!
//! // Three statics (.bss), three embassy-executor tasks over them, `app_sockets` and
//! // `spawn_apps`, defined here in your crate.
//! linklab_perf::embassy_apps! {
//!     // TCP sockets (two control, four data), the data memory in streams (iperf3's and
//!     // iperf 2's, one test at a time), a stream's window and send buffer, UDP datagrams,
//!     // control JSON bytes
//!     iperf: IperfMemory<6, 2, 14_600, 5_840, 4, 2048>,
//!     http: HttpMemory<1024, 5_840>, // request head, send buffer
//!     echo: EchoMemory<1024, 2>,     // TCP bytes, UDP datagrams
//!     counters: &COUNTERS,
//!     gate: None, // or Some(&GATE): a driver that shows the apps each frame first
//!     routes: |stack| AppStats::new("my-board", &COUNTERS, stack), // GET /stats
//! }
//!
//! /// embassy-net's sockets: the apps' (iperf3 with iperf 2, and HTTP with echo).
//! pub type Resources = StackResources<{ app_sockets(true, true) }>;
//!
//! /// After `embassy_net::new(driver, config, resources, seed)` and spawning its runner:
//! pub async fn start(spawner: Spawner, stack: Stack<'static>) {
//!     spawn_apps::<true, true>(spawner, stack).unwrap();
//!     linklab_perf::embassy::announce(stack, "my-board").await; // logs the address
//! }
//! # }
//! # fn main() {}
//! ```
//!
//! # In a smoltcp main loop
//!
//! [`apps::DeviceApps`] makes every app's sockets in your `SocketSet` from the buffers you
//! lend and runs them each turn of the loop, over any `smoltcp::phy::Device` (linklab-mac's
//! `Mac`, a HAL's driver). Shown with locals; on an MCU put the buffers in statics:
//!
//! ```no_run
//! # #[cfg(all(feature = "smoltcp", feature = "http", feature = "echo", feature = "iperf-udp"))]
//! # mod example {
//! use linklab_perf::apps::{AppBuffers, DataBuffers, DeviceApps, TcpBuffers, UdpBuffers};
//! use linklab_perf::data_memory::{DataPlan, MIN_RX};
//! use linklab_perf::http::NoRoutes;
//! use linklab_perf::iperf::device::IperfBuffers;
//! use linklab_perf::lifetime::NextFrame;
//! use smoltcp::iface::{Config, Interface, SocketSet, SocketStorage};
//! use smoltcp::phy::Device;
//! use smoltcp::socket::udp::PacketMetadata;
//! use smoltcp::time::Instant;
//! use smoltcp::wire::{EthernetAddress, IpCidr, Ipv4Address};
//!
//! /// The iperf servers' data memory: two streams of an 8 KiB window and a 4 KiB send buffer
//! /// (word-aligned: it is lent out in words).
//! #[repr(C, align(4))]
//! struct Data([u8; 2 * (8192 + 4096)]);
//!
//! /// Serves iperf3 (5201, up to two streams), iperf 2 (5001), HTTP (80) and echo (7) on
//! /// 198.18.0.2/24 forever.
//! pub fn serve<D: Device>(mut device: D, mac: [u8; 6], now: impl Fn() -> Instant) -> ! {
//!     let mut iface = Interface::new(
//!         Config::new(EthernetAddress(mac).into()),
//!         &mut device,
//!         now(),
//!     );
//!     iface.update_ip_addrs(|ips| {
//!         let _ = ips.push(IpCidr::new(Ipv4Address::new(198, 18, 0, 2).into(), 24));
//!     });
//!
//!     // iperf3: two control sockets (a receive buffer of two segments keeps the client's
//!     // MSS whole) and JSON; the data memory, lent to iperf3's or iperf 2's streams.
//!     let (mut c0, mut c1) = (([0; MIN_RX], [0; 512]), ([0; MIN_RX], [0; 512]));
//!     let mut data = Data([0; 2 * (8192 + 4096)]);
//!     let mut udp_meta = [[PacketMetadata::EMPTY; 4], [PacketMetadata::EMPTY; 4]];
//!     let [meta_rx, meta_tx] = &mut udp_meta;
//!     let (mut json_rx, mut json_tx) = ([0; 2048], [0; 2048]);
//!     // HTTP (two sockets) and echo.
//!     let (mut h0, mut h1) = (([0; 1024], [0; 4096]), ([0; 1024], [0; 4096]));
//!     let (mut echo_tcp, mut echo_udp) = (([0; 1024], [0; 1024]), ([0; 1500], [0; 1500]));
//!     let mut echo_meta = [[PacketMetadata::EMPTY; 2], [PacketMetadata::EMPTY; 2]];
//!     let [echo_meta_rx, echo_meta_tx] = &mut echo_meta;
//!
//!     let buffers = AppBuffers {
//!         echo_udp: UdpBuffers {
//!             rx_meta: echo_meta_rx,
//!             rx: &mut echo_udp.0,
//!             tx_meta: echo_meta_tx,
//!             tx: &mut echo_udp.1,
//!         },
//!         echo_tcp: TcpBuffers { rx: &mut echo_tcp.0, tx: &mut echo_tcp.1 },
//!         http: [
//!             TcpBuffers { rx: &mut h0.0, tx: &mut h0.1 },
//!             TcpBuffers { rx: &mut h1.0, tx: &mut h1.1 },
//!         ],
//!         iperf: IperfBuffers {
//!             control: [
//!                 TcpBuffers { rx: &mut c0.0, tx: &mut c0.1 },
//!                 TcpBuffers { rx: &mut c1.0, tx: &mut c1.1 },
//!             ],
//!             json_rx: &mut json_rx,
//!             json_tx: &mut json_tx,
//!         },
//!         data: DataBuffers {
//!             bytes: &mut data.0,
//!             plan: DataPlan {
//!                 bytes: 2 * (8192 + 4096),
//!                 window: 8192, // a receiving stream's TCP window
//!                 tx: 4096,     // a sending stream's send buffer
//!                 udp_rx: 6000, // a UDP test's received datagrams
//!                 per_stream: 0,
//!             },
//!             udp_meta: [meta_rx, meta_tx],
//!         },
//!     };
//!     // 4 HTTP and echo sockets; iperf3's 2 control + 2 data + 1 UDP; iperf 2's 3 TCP + 1 UDP.
//!     let mut storage = [SocketStorage::EMPTY; 13];
//!     let mut sockets = SocketSet::new(&mut storage[..]);
//!     // At most 4 iperf3 TCP sockets, 2 streams.
//!     let mut apps = DeviceApps::<4, 2>::new(&mut sockets, buffers);
//!
//!     loop {
//!         let t = now();
//!         // Ingress (the SYN rule needs a look at the next frame: with linklab-mac,
//!         // `|mac| mac.peek(NextFrame::of).unwrap_or(NextFrame::Empty)`), the apps, egress.
//!         apps.poll_ingress(&mut iface, &mut device, &mut sockets, t, |_| NextFrame::Other);
//!         apps.poll(&mut sockets, &mut NoRoutes, t);
//!         apps.poll_egress(&mut iface, &mut device, &mut sockets, t);
//!         // Sleep until the next frame or the earlier of `iface.poll_at(t, &sockets)`
//!         // and `apps.poll_at()`.
//!     }
//! }
//! # }
//! # fn main() {}
//! ```
//!
//! # On a host
//!
//! The std adapter (an iperf3 and iperf 2 client and server on std::net, what `linklab
//! iperf` and `linklab iperf2` run) is its own crate, `linklab-perf-host`, so this one stays
//! `#![no_std]` with features that only choose apps and modes.
//!
//! # Features
#![doc = document_features::document_features!()]
//!
//! Items behind a feature say so in these docs. `defmt` and `log` exclude each other: a
//! build with both fails with one line naming the fix.
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The unit tests format text and collect bytes with std.
#[cfg(test)]
extern crate std;

// Diagnostics go through `linklab_fmt::debug!` etc. (defmt, log or nothing by this crate's
// features); the two features exclude each other.
linklab_fmt::exclusive_features!();

pub mod app_counters;
#[cfg(feature = "smoltcp")]
pub mod apps;
pub mod blast;
pub mod data_memory;
pub mod device_config;
pub mod echo;
#[cfg(feature = "embassy-net")]
pub mod embassy;
pub mod evict;
pub mod http;
pub mod iperf;
#[cfg(feature = "iperf2-tcp")]
pub mod iperf2;
#[cfg(any(feature = "smoltcp", feature = "embassy-net"))]
pub mod lend;
#[cfg(feature = "smoltcp")]
pub mod lifetime;
pub mod payload;
pub mod pool_server;
pub mod rules;
pub mod slice_writer;
pub mod socket;
#[cfg(feature = "smoltcp")]
pub mod socket_buffers;
#[cfg(feature = "smoltcp")]
pub mod synack_watch;
pub mod syns;
pub mod time;
