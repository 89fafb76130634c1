//! Why a host test failed, and the text stock iperf3 prints for it.

use std::io;
use std::net::SocketAddr;

use linklab_perf::iperf::errors;
use linklab_perf::iperf::Failure;

use crate::net::plain_ip;

/// Why a host test failed.
#[derive(Debug)]
pub enum Error {
    /// A socket call failed.
    Io(io::Error),
    /// The test ended with an iperf3-level failure.
    Test(Failure),
    /// The configuration is not usable (explains which setting).
    Config(String),
    /// An iperf 2 client connected to this iperf3 server (its first bytes were an iperf 2
    /// test header or pattern, not a cookie); it is served as iperf 2 on its own thread.
    Iperf2Client(SocketAddr),
    /// A step iperf3 names failed: its `i_errno` and the OS `errno` (0: none).
    Iperf {
        /// iperf3's `i_errno` (see [`errors::i_errno`]).
        code: i32,
        /// The OS error number behind it, 0 if none.
        errno: i32,
    },
}

/// The system's text for `errno` ("Connection refused"), without Rust's suffix.
fn strerror(errno: i32) -> String {
    let s = io::Error::from_raw_os_error(errno).to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].into(),
        None => s,
    }
}

/// iperf3's text for `i_errno` `code`, with the system's text for `errno` where iperf3
/// adds it.
fn iperf_text(code: i32, errno: i32) -> String {
    let (text, with_errno) = errors::text(code);
    let mut s = if text.is_empty() {
        format!("int_errno={code}")
    } else {
        text.into()
    };
    if with_errno {
        s.push_str(": ");
        if errno != 0 {
            s.push_str(&strerror(errno));
        }
    }
    s
}

impl core::fmt::Display for Error {
    /// The text stock iperf3 prints after `iperf3: error - ` for the same failure.
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Io(e) => write!(f, "{e}"),
            Error::Iperf { code, errno } | Error::Test(Failure::ServerError(code, errno)) => {
                f.write_str(&iperf_text(*code, *errno))
            }
            Error::Test(Failure::AccessDenied) => f.write_str(&iperf_text(121, 0)),
            Error::Test(Failure::ControlClosed) => f.write_str(&iperf_text(109, 0)),
            Error::Test(Failure::PeerTerminated) => f.write_str(&iperf_text(120, 0)),
            Error::Test(Failure::StreamFailed) => f.write_str(&iperf_text(205, 0)),
            Error::Test(Failure::Timeout) => {
                write!(f, "the peer stopped responding (watchdog expired)")
            }
            // iperf3 never sends state 0; an iperf 2.1 server's version reply starts with
            // it (the client's cookie asks for that reply: see `iperf2::detect`).
            Error::Test(Failure::UnexpectedState(0)) => f.write_str(
                "the server answered with iperf 2's version reply: it speaks iperf 2, not \
                 iperf3 (use `linklab iperf2 -c`)",
            ),
            Error::Iperf2Client(peer) => write!(
                f,
                "{} port {} is an iperf 2 client (its first bytes are an iperf 2 header, not an \
                 iperf3 cookie): serving it as iperf 2 (`linklab iperf2 -s` serves iperf 2)",
                plain_ip(peer),
                peer.port()
            ),
            Error::Test(fail) => write!(f, "test failed: {fail:?}"),
            Error::Config(s) => write!(f, "{s}"),
        }
    }
}

impl std::error::Error for Error {}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Self {
        Error::Io(e)
    }
}
