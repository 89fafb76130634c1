//! One module per command: its clap arguments and the one call into the library that runs it.

pub mod serial;
pub mod serve;
pub mod track;
