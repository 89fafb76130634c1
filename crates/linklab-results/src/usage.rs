//! The error that says the user asked wrongly — a bad option, a file that is not the document it
//! should be — as opposed to a failure while running: the CLI exits with 2 for it, as clap does.

use std::fmt::Display;

/// A mistake in how the command was called (a bad value, a missing or conflicting option),
/// as opposed to a failure while running: the CLI exits with 2 for it, like clap does.
#[derive(Debug)]
pub struct Usage(pub String);

impl Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// A usage error with this message, as an `anyhow::Error` (exit code 2).
pub fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(msg.into()))
}

/// Returns early with a usage error (exit code 2), formatted like `anyhow::bail!`.
#[macro_export]
macro_rules! bail_usage {
    ($($arg:tt)*) => {
        return Err($crate::usage::usage(format!($($arg)*)))
    };
}
pub use bail_usage;
