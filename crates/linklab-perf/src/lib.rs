//! linklab-perf: sans-IO measurement apps — an iperf3-compatible client and server, HTTP
//! download, echo — with thin adapters to smoltcp sockets (feature `smoltcp`, device side) and
//! std::net (feature `std`, host side). `#![no_std]` without `alloc`.
#![no_std]

#[cfg(feature = "std")]
extern crate std;

// Diagnostics go through `linklab_fmt::debug!` etc. (defmt, log or nothing by this crate's
// features); the two features exclude each other.
linklab_fmt::exclusive_features!();

pub mod app_counters;
#[cfg(feature = "smoltcp")]
pub mod apps;
pub mod blast;
pub mod device_config;
pub mod echo;
#[cfg(feature = "embassy-net")]
pub mod embassy;
pub mod evict;
pub mod http;
pub mod iperf;
#[cfg(feature = "smoltcp")]
pub mod lend;
#[cfg(feature = "smoltcp")]
pub mod lifetime;
pub mod payload;
pub mod rules;
pub mod slice_writer;
pub mod socket;
#[cfg(feature = "smoltcp")]
pub mod socket_buffers;
#[cfg(feature = "smoltcp")]
pub mod synack_watch;
