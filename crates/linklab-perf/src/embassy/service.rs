//! What HTTP and TCP echo share on embassy-net: a socket's life (made from its buffers,
//! served until it is idle too long or freed for a new connection, then made anew) and the
//! watcher that frees one when a SYN finds none listening.

use core::cell::Cell;
use core::convert::Infallible;
use core::future::poll_fn;
use core::task::Poll;

use embassy_net::Stack;
use embassy_time::{with_timeout, Duration, Instant};

use super::socket::Tcp;
use super::syn::pick_victim;
use super::{tcp_socket, wake_at, SynWatch, TcpBuffers};
use crate::rules::{Activity, IDLE_TIMEOUT_MS};
use crate::socket::{TcpOps, TcpState};

/// How long a connection reset for idleness may take to get its RST out before its socket
/// is made anew anyway.
const RST_GRACE: Duration = Duration::from_millis(500);

/// What a socket's future tells the watcher: its state and last activity (µs), and whether
/// the watcher wants it freed.
#[derive(Default)]
pub(crate) struct Shared {
    state: Cell<Option<TcpState>>,
    since_us: Cell<u64>,
    free: Cell<bool>,
}

/// An app served on one socket at a time.
pub(crate) trait OnSocket {
    /// Serves the socket once (listening again when it is closed); true when the app moved
    /// bytes (so the connection is not idle).
    fn serve(&mut self, socket: &mut Tcp<'_, '_, '_>) -> bool;
    /// A connection was reset for idleness.
    fn idle_closed(&mut self);
    /// A new socket replaces the old one.
    fn fresh(&mut self) {}
    /// The socket's state after a poll (for the apps' socket list).
    fn published(&mut self, state: TcpState);
}

/// Why a socket's life ended.
enum End {
    Idle,
    Freed,
}

/// One socket, forever: made from `b`, served by `app` until it is idle for
/// [`IDLE_TIMEOUT_MS`] (reset, RST given [`RST_GRACE`] to leave) or the watcher frees it
/// (half-open or closing: reset), then made anew.
pub(crate) async fn socket_loop(
    stack: Stack<'_>,
    b: TcpBuffers<'_>,
    shared: &Shared,
    app: &mut impl OnSocket,
) -> Infallible {
    loop {
        let mut socket = tcp_socket(
            stack,
            TcpBuffers {
                rx: &mut *b.rx,
                tx: &mut *b.tx,
            },
        );
        app.fresh();
        let mut activity = Activity::new();
        shared.free.set(false);
        let end = poll_fn(|cx| {
            let mut tcp = Tcp {
                socket: &mut socket,
                cx,
            };
            if shared.free.get() {
                tcp.abort();
                return Poll::Ready(End::Freed);
            }
            let moved = app.serve(&mut tcp);
            let now = Instant::now().as_micros();
            let state = tcp.state();
            let timeout = IDLE_TIMEOUT_MS * 1000;
            if activity.expired(state, tcp.queues(), moved, now, timeout) {
                tcp.abort();
                app.idle_closed();
                return Poll::Ready(End::Idle);
            }
            shared.state.set(Some(state));
            shared.since_us.set(activity.since_us());
            app.published(state);
            tcp.watch();
            wake_at(activity.deadline_us(timeout), cx);
            Poll::Pending
        })
        .await;
        shared.state.set(None);
        if let End::Idle = end {
            // Let the RST reach the idle peer (a socket leaving the set sends nothing).
            let _ = with_timeout(RST_GRACE, socket.flush()).await;
        }
        // The socket is dropped here (it leaves the stack's socket set) and made anew.
    }
}

/// The watcher of a service's sockets: when a SYN for `port` waits (see [`SynWatch`]) and no
/// socket listens, asks the one [`pick_victim`] names to free itself, then lets the SYN
/// through once one listens (at once if none can be freed). Join it after the socket
/// futures, so it reads what they published in the same turn.
pub(crate) async fn make_room(
    port: u16,
    shared: &[Shared],
    syns: Option<&SynWatch>,
    mut reclaimed: impl FnMut(),
) -> Infallible {
    let Some(syns) = syns else {
        return poll_fn(|_| Poll::Pending).await;
    };
    syns.serve(port);
    poll_fn(|cx| {
        if !syns.asked(port, cx) {
            return Poll::Pending;
        }
        let listening = shared
            .iter()
            .any(|s| s.state.get() == Some(TcpState::Listen));
        if listening {
            syns.answer(port);
        } else if shared
            .iter()
            .any(|s| s.free.get() || s.state.get().is_none())
        {
            // A socket is being freed or made anew: its future wakes the task (and so this
            // watcher, joined with it) when it is back.
        } else {
            let views = shared
                .iter()
                .map(|s| (s.state.get().unwrap_or(TcpState::Closed), s.since_us.get()));
            match pick_victim(views) {
                Some(i) => {
                    shared[i].free.set(true);
                    reclaimed();
                    cx.waker().wake_by_ref();
                }
                None => syns.answer(port),
            }
        }
        Poll::Pending
    })
    .await
}
