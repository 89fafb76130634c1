//! Echo (RFC 862) on embassy-net: TCP 7 through the shared [`echo_on`] (the smoltcp
//! adapter's function) on one socket with the idle rule and the SYN watcher, UDP 7 through
//! the shared [`Echo`] core, with the stuck-reply rule.

use core::cell::RefCell;
use core::convert::Infallible;
use core::future::poll_fn;
use core::task::Poll;

use embassy_futures::join::join3;
use embassy_net::Stack;
use embassy_time::Instant;

use super::counters::EchoTcp;
use super::service::{make_room, socket_loop, Freed, OnSocket, Shared};
use super::socket::{poll_once, Tcp, Udp};
use super::{udp_socket, wake_at, AppCounters, SynWatch, TcpBuffers, UdpBuffers};
use crate::echo::{echo_on, Echo, ECHO_PORT};
use crate::rules::STUCK_REPLY_MS;
use crate::socket::{TcpState, UdpOps};

/// Largest datagram echoed; bigger ones are counted as dropped.
const MAX_DATAGRAM: usize = 2048;

/// The TCP echo socket's app.
struct EchoSocket<'e, 'c> {
    core: &'e RefCell<Echo>,
    was_active: bool,
    counters: &'c AppCounters,
    view: Option<usize>,
}

impl OnSocket for EchoSocket<'_, '_> {
    fn serve(&mut self, socket: &mut Tcp<'_, '_, '_>) {
        let mut core = self.core.borrow_mut();
        echo_on(&mut core, socket, &mut self.was_active);
        self.counters.set_echo_core(&core.counters());
    }

    fn idle_closed(&mut self) {
        self.counters.add_echo(EchoTcp::IdleClosed);
    }

    fn fresh(&mut self) {
        self.was_active = false;
    }

    fn published(&mut self, state: TcpState) {
        self.counters.set_view(self.view, ECHO_PORT, state);
    }
}

/// Serves echo on TCP and UDP port 7 forever (TCP: one connection at a time, reset when it
/// made no progress for the idle timeout; UDP: replies that cannot leave for
/// `rules::STUCK_REPLY_MS` are dropped). Counts into `counters`; with `syns`, a SYN finding
/// the TCP socket busy frees it if it is spent or half-open, or idle beyond the grace
/// (evicted: its peer reset).
pub async fn echo_server(
    stack: Stack<'_>,
    tcp: TcpBuffers<'_>,
    udp: UdpBuffers<'_>,
    counters: &AppCounters,
    syns: Option<&SynWatch>,
) -> ! {
    let core = RefCell::new(Echo::new());
    let shared: [Shared; 1] = Default::default();
    let mut app = EchoSocket {
        core: &core,
        was_active: false,
        counters,
        view: counters.claim_view(),
    };
    let never = join3(
        socket_loop(stack, tcp, &shared[0], &mut app),
        udp_loop(stack, udp, &core, counters),
        make_room(ECHO_PORT, &shared, syns, |freed| {
            counters.add_echo(match freed {
                Freed::Reclaimed => EchoTcp::Reclaimed,
                Freed::Evicted => EchoTcp::Evicted,
            })
        }),
    )
    .await;
    match never.0 {}
}

/// UDP echo forever. A reply that cannot leave (its requester never answers ARP) blocks the
/// socket's send queue for everyone; embassy-net shows only whether that queue is empty, so
/// the rule is: a queue seen non-empty for [`STUCK_REPLY_MS`] without once being seen empty
/// is dropped whole (the socket closed and bound again), and counted.
async fn udp_loop(
    stack: Stack<'_>,
    b: UdpBuffers<'_>,
    core: &RefCell<Echo>,
    counters: &AppCounters,
) -> Infallible {
    let mut socket = udp_socket(stack, b);
    let mut stuck_since: Option<u64> = None;
    poll_fn(|cx| {
        let mut udp = Udp {
            socket: &mut socket,
            cx,
        };
        if !udp.is_open() && !udp.bind(ECHO_PORT) {
            return Poll::Pending;
        }
        let mut core = core.borrow_mut();
        loop {
            let mut reply = [0u8; MAX_DATAGRAM];
            let mut echo = None;
            let received = udp.recv(|data, from| {
                echo = core.datagram(data, &mut reply).map(|n| (n, from));
            });
            if !received {
                break;
            }
            if let Some((n, from)) = echo {
                let queued = udp.send(n, from, |buf| {
                    buf[..n].copy_from_slice(&reply[..n]);
                    n
                });
                if !queued {
                    core.datagram_dropped_after_echo();
                }
            }
        }
        let now = Instant::now().as_micros();
        let empty = poll_once(udp.socket.flush(), udp.cx).is_some();
        stuck_since = match stuck_since {
            _ if empty => None,
            None => Some(now),
            Some(since) if now >= since + STUCK_REPLY_MS * 1000 => {
                udp.socket.close();
                let _ = udp.bind(ECHO_PORT);
                core.replies_unsent(1);
                None
            }
            Some(since) => Some(since),
        };
        counters.set_echo_core(&core.counters());
        udp.watch();
        wake_at(
            stuck_since.map(|s| Instant::from_micros(s + STUCK_REPLY_MS * 1000)),
            udp.cx,
        );
        Poll::Pending
    })
    .await
}
