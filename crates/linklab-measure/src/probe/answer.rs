//! How long a service has to answer in discovery, and a socket error in plain words (shared
//! by discovery and the HTTP client).

use std::io::ErrorKind;
use std::time::Duration;

/// How long a TCP connect, or an answer, may take.
pub const ANSWER: Duration = Duration::from_millis(1500);

/// A socket error in plain words.
pub fn describe(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::ConnectionRefused => "connection refused".into(),
        ErrorKind::TimedOut | ErrorKind::WouldBlock => {
            format!("no answer within {:.1} s", ANSWER.as_secs_f64())
        }
        ErrorKind::HostUnreachable => "host unreachable".into(),
        ErrorKind::NetworkUnreachable => "network unreachable".into(),
        _ => e.to_string(),
    }
}

/// An error that may wrap an `io::Error`, in plain words.
pub fn io_text(e: &anyhow::Error) -> String {
    match e.downcast_ref::<std::io::Error>() {
        Some(io) => describe(io),
        None => format!("{e:#}"),
    }
}
