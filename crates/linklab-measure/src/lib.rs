//! Measuring a network device from a host: `linklab probe` (discovery, then every figure with
//! its range), `sweep` (an offered-rate UDP or TCP sweep against an iperf server), `rtt`
//! (round-trip and inter-arrival histograms per size) and `bench` (Niccle's MAC write-up's
//! experiment on the simulated link), each returning its document (linklab-results).
//!
//! Where this crate sits among the others: the repository's ARCHITECTURE.md.

pub mod bench;
pub mod probe;
pub mod rtt;
pub mod sweep;
