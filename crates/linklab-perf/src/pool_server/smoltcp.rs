//! The pool servers over smoltcp sockets (iperf3's `SmoltcpIperfServer`, iperf 2's
//! `SmoltcpIperf2Server`): each lends its sockets for one call, this does the rest.

use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;

use super::pool::{Room, ServerPool, SynPool};
use crate::evict::half_open_to;
use crate::rules::Peer;
use crate::socket::{instant, micros};

/// Does `pool`'s pending work over `sockets` at `now`.
pub(crate) fn serve<S>(pool: &mut impl ServerPool<S>, sockets: &mut S, now: Instant) {
    pool.serve(sockets, micros(now));
}

/// When `pool` next needs [`serve`] even without network activity.
pub(crate) fn poll_at(pool: &impl SynPool) -> Option<Instant> {
    pool.next_poll().map(instant)
}

/// Makes room in `pool` for a SYN to `port` ([`ServerPool::make_room`]); true when the SYN
/// is to be dropped unanswered. A main loop cannot hold a SYN while a socket is freed
/// ([`Room::Freeing`]: the socket's RST has not left), so that one is dropped too, counted
/// so: its client sends it again, never a RST.
pub(crate) fn make_room<S>(
    pool: &mut impl ServerPool<S>,
    port: u16,
    sockets: &mut S,
    now: Instant,
) -> bool {
    match pool.make_room(port, sockets, micros(now)) {
        Room::Ready => false,
        Room::Defer => true,
        Room::Freeing => {
            pool.syns().drop_unanswered();
            true
        }
    }
}

/// Our SYN-ACK from `port` to `peer` left at `now`: each of `pool`'s TCP sockets (`tcp`) half
/// open with `peer` is answered ([`SynPool::answered`]).
pub(crate) fn note_answered(
    pool: &mut impl SynPool,
    tcp: &[Option<SocketHandle>],
    (port, peer): (u16, Peer),
    sockets: &SocketSet<'_>,
    now: Instant,
) {
    if port != pool.syn_port() {
        return;
    }
    for (i, h) in tcp.iter().enumerate() {
        if h.is_some_and(|h| half_open_to(sockets.get::<tcp::Socket>(h), peer)) {
            pool.answered(i, micros(now));
        }
    }
}
