//! The host server: one test at a time on a TCP listener and a UDP socket on the same
//! port (dual-stack unless told otherwise); everyone else gets ACCESS_DENIED.
//!
//! - `config`: what it allows and counts;
//! - `listening`: its sockets;
//! - `run`: one test after another;
//! - `accept`: data connections and UDP hellos while streams are created;
//! - `options`: a test's parameters applied to the listener and sockets, and undone.

mod accept;
mod config;
mod listening;
mod options;
mod run;

pub use config::{ServerConfig, ServerOutcome, ServerStats};
pub use listening::Server;
