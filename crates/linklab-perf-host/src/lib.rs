//! The host side of [linklab-perf]'s iperf apps: iperf3 and iperf 2 on std::net, as `linklab
//! iperf` and `linklab iperf2` run them.
//!
//! - [`iperf3`]: an iperf3 3.12-compatible client ([`iperf3::run_client`]) and server
//!   ([`iperf3::Server`]) over linklab-perf's sans-IO session, against a stock `iperf3 -s`
//!   or `iperf3 -c` alike; and [`iperf3::command`], the whole `linklab iperf` (iperf3's
//!   option checks, its text and its `-J` document, typed in [`iperf3::command::document`]);
//! - [`iperf2`]: an iperf 2.1.8-compatible client ([`iperf2::run_client`]) and server
//!   ([`iperf2::Server`]), their events printed by [`iperf2::command`] as iperf 2 prints;
//! - [`apps`]: socket buffers sized for a host, for linklab-perf's device apps on a TAP.
//!
//! Linux only (`ppoll`, `TCP_INFO`, the flow label manager).
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::atomic::AtomicBool;
//!
//! use linklab_perf_host::iperf3::{run_client, ClientConfig, Server};
//!
//! let mut server = Server::bind("127.0.0.1:0".parse()?)?;
//! let port = server.local_addr()?.port();
//! let stop = AtomicBool::new(false);
//! std::thread::scope(|s| -> Result<(), Box<dyn std::error::Error>> {
//!     s.spawn(|| server.serve_one_until(&stop)); // one test, as `iperf3 -s -1`
//!     let mut client = ClientConfig::new("127.0.0.1"); // as `iperf3 -c 127.0.0.1 -t 1`
//!     client.port = port;
//!     client.params.duration_s = 1;
//!     let report = run_client(&client)?;
//!     let forward = report.forward.expect("a client-to-server test");
//!     println!("{:.1} Mbit/s", forward.bits_per_second_received / 1e6);
//!     Ok(())
//! })
//! # }
//! ```
//!
//! [linklab-perf]: linklab_perf
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod apps;
pub mod clock;
mod command_error;
mod dates;
pub mod iperf2;
pub mod iperf3;
pub mod net;
pub mod sys;

pub use command_error::CommandError;
