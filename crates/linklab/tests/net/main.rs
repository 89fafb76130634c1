//! The CLI's tests against real peers in network namespaces they create (root): hostile peers,
//! iperf 2 interop, probe, report, rtt, serve, sweep, and `linklab serial` over pseudo
//! terminals. Every address lives in 198.18.0.0/15 inside a namespace of the test's own.
//!
//! One module per area (a former test file of its own), so a test keeps its name:
//! `cargo nextest run -E 'binary(net) & test(/^MODULE::/)'` runs one area.

mod hostile;
mod iperf2_interop;
mod probe;
mod probe_bad_input;
mod probe_http;
mod probe_iperf2;
mod probe_latency;
mod report;
mod rtt;
mod serial;
mod serve;
mod sweep;
mod sweep_iperf2;
