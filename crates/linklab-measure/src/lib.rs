//! Measuring a network device from a host, as functions that return their documents
//! (linklab-results): [`probe`] (discovery, then every figure with its range), [`sweep`] (an
//! offered-rate UDP or TCP sweep against an iperf server), [`rtt`] (round-trip and
//! inter-arrival histograms per size) and [`bench`](mod@bench) (Niccle's MAC write-up's experiment on
//! the simulated link). The `linklab` command line is these functions with its options,
//! its printing and its files.
//!
//! Where this crate sits among the others: the repository's ARCHITECTURE.md.

pub mod bench;
pub mod probe;
pub mod rtt;
pub mod sweep;

// The README's examples compile with the doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
