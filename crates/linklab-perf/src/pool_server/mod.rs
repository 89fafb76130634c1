//! One pool server, two stacks: iperf3's pool ([`crate::iperf::pool::PoolServer`]) and
//! iperf 2's (`crate::iperf2::pool::Iperf2Pool`) are each a [`ServerPool`] over their
//! sockets, and one adapter per stack drives any of them: `smoltcp` (a main loop's poll,
//! `make_room`, `note_answered`) and `embassy` (a task's turn with the service gate's held
//! SYN, and its sleep until the next deadline).

#[cfg(feature = "embassy-net")]
pub(crate) mod embassy;
mod pool;
#[cfg(feature = "smoltcp")]
pub(crate) mod smoltcp;

pub use pool::{Room, ServerPool, SynPool};
