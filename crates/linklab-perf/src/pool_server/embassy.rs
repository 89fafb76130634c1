//! The pool servers' embassy tasks (iperf3's `iperf_server`, iperf 2's `iperf2_server`):
//! each builds its sockets for one pass of its task, this runs the pass's pool work, the SYN
//! the service gate holds for it, and the sleep until its next deadline.

use core::task::Context;

use embassy_time::{Instant, Timer};

use super::pool::{Room, ServerPool, SynPool};
use crate::embassy::gate::{Port, ServiceGate};
use crate::embassy::socket::poll_once;
use crate::rules::Peer;
use crate::socket::TcpState;

/// One pass of a pool server's task at `now`: the pool's work over `sockets`, then, with a
/// `gate` that `asked` for the pool's port (after the work, so a socket whose evicted
/// peer's RST has left listens again first), room for the SYN it holds
/// ([`make_room_for_held_syn`] over the first `n` TCP sockets, `look` giving each one's
/// state and peer).
pub(crate) fn serve_pass<S, P: ServerPool<S>>(
    pool: &mut P,
    sockets: &mut S,
    (gate, n, now): (Option<&ServiceGate>, usize, u64),
    asked: impl FnOnce(&ServiceGate, u16, &mut S) -> bool,
    look: impl Fn(&mut S, usize) -> (TcpState, Option<Peer>),
) {
    pool.serve(sockets, now);
    if let Some(g) = gate {
        if asked(g, pool.syn_port(), sockets) {
            make_room_for_held_syn(pool, sockets, (g, n, now), look);
        }
    }
}

/// A SYN `gate` holds for `pool`'s port: the pool first hears which of its `n` TCP sockets'
/// half-open peers we answered (`look` gives a socket's state and peer), then makes room
/// ([`ServerPool::make_room`]); the SYN goes to the stack once a socket listens, is dropped
/// while a handshake we answered may complete, and waits while a socket is freed.
fn make_room_for_held_syn<S, P: ServerPool<S>>(
    pool: &mut P,
    sockets: &mut S,
    (gate, n, now): (&ServiceGate, usize, u64),
    look: impl Fn(&mut S, usize) -> (TcpState, Option<Peer>),
) {
    let port = pool.syn_port();
    for i in 0..n {
        note_if_answered(pool, i, look(sockets, i), gate, now);
    }
    match pool.make_room(port, sockets, now) {
        Room::Ready => gate.answer(Port::Tcp(port)),
        Room::Defer => gate.defer(Port::Tcp(port)),
        Room::Freeing => {}
    }
}

/// Tells `pool` that TCP socket `i` (in `state`, half open with `peer`) is answered when
/// `gate` saw our SYN-ACK to its peer leave.
pub(crate) fn note_if_answered(
    pool: &mut impl SynPool,
    i: usize,
    (state, peer): (TcpState, Option<Peer>),
    gate: &ServiceGate,
    now: u64,
) {
    if state == TcpState::SynReceived && peer.is_some_and(|p| gate.answered(pool.syn_port(), p)) {
        pool.answered(i, now);
    }
}

/// Arms the task's timer for `pool`'s next deadline after a pass at `now`; true when that
/// deadline is already due (run another pass at once). `timer_at` is when the task's timer
/// was last set for: embassy-time keeps a task's timer (the earliest time it was set for)
/// until it fires, so while that time is ahead and no later than the next deadline, the task
/// is polled by then without setting it again.
pub(crate) fn due_again(
    pool: &impl SynPool,
    now: u64,
    timer_at: &mut Option<u64>,
    cx: &mut Context<'_>,
) -> bool {
    match pool.next_poll() {
        Some(at) if timer_at.is_some_and(|t| t <= at && t > now) => false,
        Some(at) if poll_once(Timer::at(Instant::from_micros(at)), cx).is_some() => true,
        Some(at) => {
            *timer_at = Some(at);
            false
        }
        None => false,
    }
}
