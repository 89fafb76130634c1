//! The commands' clap arguments, one module per command, each making one call into its
//! library.

pub mod emu;
