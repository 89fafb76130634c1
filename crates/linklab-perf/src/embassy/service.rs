//! What HTTP and TCP echo share on embassy-net: a socket's life (made from its buffers,
//! served until it is idle too long or freed for a new client, then made anew) and the
//! watcher that frees one when a SYN finds none listening. The rules are the stack-free ones
//! of [`crate::evict`], as the smoltcp `DeviceApps` applies them: the idle timeout and the
//! eviction count from [`Progress`], the socket to free is [`choose`]'s choice; a half-open
//! socket is answered once the gate saw our SYN-ACK to its peer leave
//! ([`ServiceGate::answered`]).

use core::cell::Cell;
use core::convert::Infallible;
use core::future::poll_fn;
use core::task::Poll;

use embassy_net::Stack;
use embassy_time::{with_timeout, Duration, Instant};

use super::socket::Tcp;
use super::{tcp_socket, wake_at, Port, ServiceGate, TcpBuffers};
use crate::evict::{choose, Candidate, Choice, Look, Progress, GRACE_MS};
use crate::rules::{IDLE_TIMEOUT_MS, RST_GRACE_MS};
use crate::socket::{TcpOps, TcpState};
use crate::syns::SynCounts;

/// What a socket's future tells the watcher after each of its polls, and what the watcher
/// asks of it.
#[derive(Default)]
pub(crate) struct Shared {
    /// The socket's state (None while it is being made anew).
    state: Cell<Option<TcpState>>,
    /// What the eviction choice knows of it (None while listening).
    candidate: Cell<Option<Candidate<Instant>>>,
    /// The watcher wants it freed: evicting a connection (its peer gets a RST first), or
    /// reclaiming a half-open or spent socket.
    free: Cell<Option<Freed>>,
}

/// How a socket was freed for a new client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Freed {
    /// A half-open or spent socket, taken at once.
    Reclaimed,
    /// An idle connection, reset (its RST sent before the socket is made anew).
    Evicted,
}

/// What the watcher did for a SYN (the counters it goes to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Counted {
    /// A half-open or spent socket freed (`reclaimed`); `answered` when our SYN-ACK had
    /// answered it (also `reclaimed_answered`).
    Reclaimed { answered: bool },
    /// An idle connection reset (`evicted`).
    Evicted,
    /// What became of the SYNs so far (`syns`, `syns_held`, `listen_drops`).
    Syns(SynCounts),
}

/// An app served on one socket at a time.
pub(crate) trait OnSocket {
    /// Serves the socket once (listening again when it is closed).
    fn serve(&mut self, socket: &mut Tcp<'_, '_, '_>);
    /// A connection was reset for idleness.
    fn idle_closed(&mut self);
    /// A new socket replaces the old one.
    fn fresh(&mut self) {}
    /// The socket's state after a poll (for the apps' socket list).
    fn published(&mut self, state: TcpState);
}

/// Why a socket's life ended.
#[derive(PartialEq)]
enum End {
    /// Idle for the idle timeout: reset.
    Idle,
    /// Freed for a new client by the watcher.
    Freed(Freed),
}

/// One socket of the service on `port`, forever: made from `b`, served by `app` until its
/// connection made no progress ([`Progress`]) for [`IDLE_TIMEOUT_MS`] or the watcher frees
/// it, then reset and made anew (after its RST left, at most [`RST_GRACE_MS`] later, when its
/// peer was a live one). While half-open, it is answered once `gate` saw our SYN-ACK leave.
pub(crate) async fn socket_loop(
    stack: Stack<'_>,
    port: u16,
    gate: Option<&ServiceGate>,
    b: TcpBuffers<'_>,
    shared: &Shared,
    app: &mut impl OnSocket,
) -> Infallible {
    let idle = Duration::from_millis(IDLE_TIMEOUT_MS);
    loop {
        let mut socket = tcp_socket(
            stack,
            TcpBuffers {
                rx: &mut *b.rx,
                tx: &mut *b.tx,
            },
        );
        app.fresh();
        let mut progress = Progress::<Instant>::new();
        shared.free.set(None);
        let end = poll_fn(|cx| {
            let mut tcp = Tcp {
                socket: &mut socket,
                cx,
                may_leave_bytes: false,
            };
            if let Some(freed) = shared.free.get() {
                tcp.abort();
                return Poll::Ready(End::Freed(freed));
            }
            // A look before the app (what the peer did) and one after (what the app left).
            let now = Instant::now();
            progress.observe(Look::of(&tcp), now);
            // The socket list shows the state the app serves in: a route run by the app
            // (`/stats`) lists its own connection as it is, not as it was at the last poll
            // (SYN-RECEIVED when the handshake's last ACK and the request came together).
            app.published(tcp.state());
            app.serve(&mut tcp);
            progress.observe(Look::of(&tcp), now);
            if progress.expired(now, idle) {
                tcp.abort();
                app.idle_closed();
                return Poll::Ready(End::Idle);
            }
            let state = tcp.state();
            if state == TcpState::SynReceived && progress.answered().is_none() {
                let peer = tcp.peer();
                if gate.zip(peer).is_some_and(|(g, p)| g.answered(port, p)) {
                    progress.note_answered(now);
                }
            }
            shared.state.set(Some(state));
            shared.candidate.set(progress.candidate(&tcp));
            app.published(state);
            tcp.watch(state);
            wake_at(progress.deadline(idle), cx);
            Poll::Pending
        })
        .await;
        shared.state.set(None);
        shared.candidate.set(None);
        if end != End::Freed(Freed::Reclaimed) {
            // Let the RST reach the peer (a socket leaving the set sends nothing). A
            // half-open or spent socket's peer needs none (a spoofed one would never get it).
            let _ = with_timeout(Duration::from_millis(RST_GRACE_MS), socket.flush()).await;
        }
        // The socket is dropped here (it leaves the stack's socket set) and made anew.
    }
}

/// The watcher of a service's sockets: when a SYN for `port` waits (see [`ServiceGate`]) and no
/// socket listens, asks the one [`choose`] names (a spent socket, else the connection idle
/// longest beyond [`GRACE_MS`], else a half-open one, unanswered before answered) to free
/// itself, and counts it with `counted`; lets the SYN through once a socket listens (held
/// meanwhile), drops it unanswered when none can be freed now — a handshake we answered may
/// complete ([`Choice::Defer`]), or every connection is making progress ([`Choice::Busy`]):
/// its client sends it again, never a RST — and counts every SYN by what became of it
/// ([`SynCounts`]). Join it after the socket futures, so it reads what they published in the
/// same turn.
pub(crate) async fn make_room(
    port: u16,
    shared: &[Shared],
    gate: Option<&ServiceGate>,
    mut counted: impl FnMut(Counted),
) -> Infallible {
    let Some(gate) = gate else {
        return poll_fn(|_| Poll::Pending).await;
    };
    let port = Port::Tcp(port);
    gate.serve(port);
    let grace = Duration::from_millis(GRACE_MS);
    let mut syns = SynCounts::new();
    poll_fn(|cx| {
        if !gate.asked(port, cx) {
            return Poll::Pending;
        }
        let listening = shared
            .iter()
            .any(|s| s.state.get() == Some(TcpState::Listen));
        if listening {
            syns.pass();
            gate.answer(port);
        } else if shared
            .iter()
            .any(|s| s.free.get().is_some() || s.state.get().is_none())
        {
            // A socket is being freed or made anew: its future wakes the task (and so this
            // watcher, joined with it) when it is back. The SYN waits for it.
            syns.hold();
        } else {
            let facts = shared.iter().map(|s| s.candidate.get());
            match choose(facts, Instant::now(), grace) {
                Choice::Take(i, taken) => {
                    let (freed, count) = if taken.evicts() {
                        (Freed::Evicted, Counted::Evicted)
                    } else {
                        let answered = taken.answered();
                        (Freed::Reclaimed, Counted::Reclaimed { answered })
                    };
                    shared[i].free.set(Some(freed));
                    counted(count);
                    syns.hold();
                    cx.waker().wake_by_ref();
                }
                Choice::Defer | Choice::Busy => {
                    syns.drop_unanswered();
                    gate.defer(port);
                }
            }
        }
        counted(Counted::Syns(syns));
        Poll::Pending
    })
    .await
}
