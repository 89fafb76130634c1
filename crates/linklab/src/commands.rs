//! The commands: each one's clap options and the one call into the library that does it.

pub mod report;
