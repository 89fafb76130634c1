//! linklab-serial: a reliable framed link over a byte stream (UART, SPI, USB-CDC), sans-IO,
//! `#![no_std]` without `alloc`, never panicking on bytes from the line.
//!
//! Layers, bottom to top:
//!
//! * [`framing`]: COBS between 0x00 delimiters (the `cobs` crate); resynchronises after any
//!   garbage at the next delimiter.
//! * [`wire`]: the frame — a 10-byte header (kind, sequence, cumulative ACK, credits,
//!   selective ACK, both ends' epochs), the payload (up to 1514 bytes: an Ethernet frame),
//!   CRC-32.
//! * [`Link`]: handshake and restart detection, selective-repeat ARQ over a window of up to 16
//!   frames with an adaptive timeout ([`rto`]), in-order delivery without duplicates,
//!   receiver-granted credits, and counters with conservation laws ([`counters`]).
//! * [`selftest`]: echo frames across sizes with PRBS payloads, from either end, no app
//!   needed at the other.
//! * `device` (feature `smoltcp`): `smoltcp::phy::Device` for [`Link`].
//! * `embassy` (feature `embassy`): the link as an embassy-net driver, shared with the task
//!   that moves its bytes, and a pump for byte-stream transports.
//! * `impair` (feature `impair`): a deterministic line impairment model for tests and
//!   benchmarks.
//!
//! # Usage
//!
//! ```
//! use linklab_serial::{Config, Link, State};
//!
//! let config = Config::for_line_rate(115_200 / 10);
//! let mut a: Box<Link> = Box::new(Link::new(config, 1));
//! let mut b: Box<Link> = Box::new(Link::new(config, 2));
//! a.send(5, |buf| buf.copy_from_slice(b"hello")).unwrap();
//!
//! // A perfect wire: move bytes both ways until nothing is left to say.
//! let mut buf = [0u8; 2048];
//! for now in 0..10 {
//!     let n = a.poll_output(now, &mut buf);
//!     b.handle_input(now, &buf[..n]);
//!     let n = b.poll_output(now, &mut buf);
//!     a.handle_input(now, &buf[..n]);
//! }
//! assert_eq!(a.state(), State::Established);
//! assert_eq!(b.receive().unwrap().payload(), b"hello");
//! a.counters().check_conservation().unwrap();
//! b.counters().check_conservation().unwrap();
//! ```
//!
//! # Features
#![doc = document_features::document_features!()]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(test)]
extern crate std;

pub mod counters;
#[cfg(feature = "smoltcp")]
pub mod device;
#[cfg(feature = "embassy")]
pub mod embassy;
pub mod framing;
#[cfg(feature = "impair")]
pub mod impair;
mod link;
pub mod rto;
mod rx;
pub mod selftest;
#[cfg(any(feature = "smoltcp", feature = "embassy"))]
mod stack;
mod tx;
pub mod wire;

pub use counters::{ConservationError, Counters};
pub use link::{Config, Link, Received, SendError, State};
pub use wire::MAX_PAYLOAD;
