//! The HTTP bench-file server on embassy-net: one future per socket running the shared
//! [`serve_on`] (the smoltcp adapter's function) with the idle rule, and a watcher that
//! frees a socket when a SYN finds none listening.

use core::cell::RefCell;

use embassy_futures::join::join3;
use embassy_net::Stack;

use super::counters::Http;
use super::service::{make_room, socket_loop, Counted, OnSocket, Shared};
use super::socket::Tcp;
use super::{AppCounters, ServiceGate, TcpBuffers};
use crate::http::{serve_on, Routes, Server, HTTP_PORT};
use crate::socket::TcpState;

/// HTTP connections served at once (as the smoltcp `DeviceApps`).
pub const HTTP_SOCKETS: usize = 2;

/// One HTTP socket's app: the sans-IO server and the shared routes.
struct HttpSocket<'r, 'd, 'c> {
    server: Server,
    routes: &'r RefCell<&'d mut dyn Routes>,
    counters: &'c AppCounters,
    view: Option<usize>,
}

impl OnSocket for HttpSocket<'_, '_, '_> {
    fn serve(&mut self, socket: &mut Tcp<'_, '_, '_>) {
        let mut routes = self.routes.borrow_mut();
        routes.before_serve();
        if serve_on(socket, &mut self.server, HTTP_PORT, &mut **routes) {
            self.counters.add_http(Http::Responses);
        }
    }

    fn idle_closed(&mut self) {
        self.counters.add_http(Http::IdleClosed);
    }

    fn fresh(&mut self) {
        self.server.reset();
    }

    fn published(&mut self, state: TcpState) {
        self.counters.set_view(self.view, HTTP_PORT, state);
    }
}

/// Serves the bench files (and `routes`, e.g. `/stats`) on port 80 forever, one connection
/// per socket; connections that made no progress for `rules::IDLE_TIMEOUT_MS` are reset.
/// Counts into `counters`; with `gate` (the driver's gate), a SYN finding both sockets
/// busy frees one first (`crate::evict::choose`: a spent one, else the connection idle
/// longest beyond the grace, its peer reset, else a half-open one), or is dropped
/// unanswered when none may go now (a handshake we answered may complete, or both carry
/// connections making progress): its client sends it again and is served when one ends.
/// Without a gate, such a SYN gets the stack's RST.
pub async fn http_server(
    stack: Stack<'_>,
    buffers: [TcpBuffers<'_>; HTTP_SOCKETS],
    routes: &mut dyn Routes,
    counters: &AppCounters,
    gate: Option<&ServiceGate>,
) -> ! {
    let routes = RefCell::new(routes);
    let shared: [Shared; HTTP_SOCKETS] = Default::default();
    let [b0, b1] = buffers;
    let app = || HttpSocket {
        server: Server::new(),
        routes: &routes,
        counters,
        view: counters.claim_view(),
    };
    let (mut a0, mut a1) = (app(), app());
    let never = join3(
        socket_loop(stack, HTTP_PORT, gate, b0, &shared[0], &mut a0),
        socket_loop(stack, HTTP_PORT, gate, b1, &shared[1], &mut a1),
        make_room(HTTP_PORT, &shared, gate, |counted| match counted {
            Counted::Reclaimed { answered } => {
                counters.add_http(Http::Reclaimed);
                if answered {
                    counters.add_http(Http::ReclaimedAnswered);
                }
            }
            Counted::Evicted => counters.add_http(Http::Evicted),
            Counted::Syns(syns) => counters.set_http_syns(&syns),
        }),
    )
    .await;
    match never.0 {}
}
