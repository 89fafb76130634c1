//! Why `linklab iperf` or `linklab iperf2` stopped: a command line it refuses, or a
//! failure while it ran. The CLI prints the one line and exits 2 or 1.

use std::fmt;

/// Why a command ([`crate::iperf3::command::run`], [`crate::iperf2::command::run`])
/// stopped.
#[derive(Debug)]
pub enum CommandError {
    /// The options exclude each other or ask for what this build cannot do; the text is
    /// stock iperf's where it has one.
    Usage(String),
    /// The test or the server failed while running.
    Failed(String),
}

impl CommandError {
    /// A refused command line.
    pub fn usage(msg: impl Into<String>) -> Self {
        Self::Usage(msg.into())
    }

    /// A failure while running.
    pub fn failed(msg: impl fmt::Display) -> Self {
        Self::Failed(msg.to_string())
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Usage(m) | Self::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CommandError {}

impl From<std::io::Error> for CommandError {
    fn from(e: std::io::Error) -> Self {
        Self::failed(e)
    }
}

impl From<serde_json::Error> for CommandError {
    fn from(e: serde_json::Error) -> Self {
        Self::failed(e)
    }
}
