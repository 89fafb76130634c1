//! Who this program says it is, in `-v`.

/// What `-v` prints.
pub const VERSION: &str = "iperf version 2.1.8 (linklab)";
