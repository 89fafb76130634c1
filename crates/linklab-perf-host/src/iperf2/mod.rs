//! iperf 2 on std::net: a server ([`Server`]: TCP and UDP on one port, `iperf -s` /
//! `iperf -s -u`) and a client ([`run_client`]), on non-blocking std sockets and
//! `ppoll(2)`, a thread per TCP connection, one thread for the UDP socket. They drive the
//! sans-IO flows of [`linklab_perf::iperf2`] and tell what happens through [`Event`]s, which
//! [`command`] prints as stock iperf 2.1.8 does.
//!
//! - `config`: what the client and server run with, and the client's result and errors;
//! - `events`: what the host reports;
//! - `tcp`: one loop that drives any [`TcpFlow`](linklab_perf::iperf2::TcpFlow) over a
//!   `TcpStream`;
//! - `udp`: the UDP server's socket loop, the UDP client, the `-R` receiver;
//! - `server`: listeners, accepted connections, connect-backs;
//! - `back`: the client's `-r`/`-d` listener;
//! - `client`: `-P` connections, UDP flows.

mod back;
mod client;
pub mod command;
mod config;
mod events;
mod server;
mod tcp;
mod udp;

pub use client::run_client;
pub use config::{ClientConfig, ClientError, ClientSummary, ServerConfig};
pub use events::{Event, FlowReport, FlowTag, UdpFigures};
pub use server::{serve_handed_over, Server};
