//! What a server pool offers the stacks' adapters: its port, its work and deadline, room
//! for a SYN that finds nothing listening, and word of our SYN-ACKs.

use crate::syns::SynCounts;
use crate::time::Micros;

/// What a pool did for a SYN to its server's port ([`ServerPool::make_room`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Room {
    /// The SYN may go to the stack: a socket listens (one was freed for it, or one already
    /// did).
    Ready,
    /// Sockets were freed for it but listen only once their evicted peers' RSTs have left (at
    /// most [`crate::rules::RST_GRACE_MS`]): hold the SYN until then.
    Freeing,
    /// Drop the SYN unanswered: a handshake we answered may be completing, and no other
    /// socket may be taken ([`crate::evict::Choice::Defer`]), a would-be stream is being
    /// settled while a test's streams connect, or nothing may be taken at all (the server is
    /// busy: [`crate::evict::Choice::Busy`]); its client sends it again.
    Defer,
}

/// A server pool that takes SYNs on its port, whatever its sockets: what an adapter needs
/// without them.
pub trait SynPool {
    /// The port it serves.
    fn syn_port(&self) -> u16;
    /// Our SYN-ACK to the peer of TCP socket `i`'s half-open connection left at `now`.
    fn answered(&mut self, i: usize, now: Micros);
    /// When it next needs [`ServerPool::serve`] even without network activity.
    fn next_poll(&self) -> Option<Micros>;
    /// What became of the SYNs to its port ([`crate::syns`]), for an adapter that cannot
    /// hold a SYN the pool asked it to ([`Room::Freeing`]) and drops it instead.
    fn syns(&mut self) -> &mut SynCounts;
}

/// A [`SynPool`] over sockets `S`: the pool logic the adapters drive.
pub trait ServerPool<S>: SynPool {
    /// Does all pending work over `sockets` at `now`: accepts, reads and writes, timers.
    fn serve(&mut self, sockets: &mut S, now: Micros);
    /// Makes room for a SYN to `port` at `now`, if it is the pool's and nothing listens.
    fn make_room(&mut self, port: u16, sockets: &mut S, now: Micros) -> Room;
}
