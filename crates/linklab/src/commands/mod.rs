//! One module per command: its clap arguments, turned into the options of the library that
//! does the work, and one call.

pub mod track;
