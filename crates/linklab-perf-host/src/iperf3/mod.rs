//! iperf3 on std::net: a client ([`run_client`]) and server ([`Server`]) driving
//! linklab-perf's sans-IO [`Session`](linklab_perf::iperf::Session) with non-blocking
//! sockets and `ppoll(2)`, with iperf3's socket options; and [`command`], `linklab iperf`'s
//! whole behaviour: iperf3 3.12's option checks, its text and its `-J` document.
//!
//! ```text
//! run_client(&ClientConfig) -> Result<TestReport, Error>     one test against any iperf3 -s
//! run_client_observed(&cfg, &mut observer) -> HostReport     the same, with every event
//! Server::listen(&ServerConfig)?.serve_one_observed(..)      iperf3 -s compatible server
//! ```
//!
//! - `client`: [`ClientConfig`], [`run_client`], opening the data streams;
//! - `server`: [`Server`], accepting control and data connections, the shared UDP socket;
//! - `control`: the control connection of either role;
//! - `streams`: the data streams and one turn of the event loop;
//! - `sockets`: sockets with iperf3's options (socket2), listeners;
//! - `measure`: CPU use and TCP_INFO samples;
//! - `error`, `report`, `observer`: why a test failed, what it reports, what it tells on
//!   the way.

mod client;
pub mod command;
mod control;
mod diskfile;
mod error;
mod measure;
mod observer;
mod report;
mod server;
mod sockets;
mod streams;

pub use client::{run_client, run_client_observed, run_client_with, ClientConfig};
pub use error::Error;
pub use measure::{TcpInterval, TcpStats};
pub use observer::{Observer, Quiet};
pub use report::{ControlInfo, HostInterval, HostReport, ServerOutput, StreamInfo, TestText};
pub use server::{Server, ServerConfig, ServerOutcome, ServerStats};
pub use sockets::{BufferSizes, Family, ListenConfig, StreamOptions};
