//! Who this program says it is, in `-v` and in the `-J` document.

/// What `-v` and `-J` call this program: iperf3's version it speaks, and who it is.
pub const VERSION: &str = "iperf 3.12 (linklab)";
