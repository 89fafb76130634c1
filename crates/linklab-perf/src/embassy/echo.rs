//! Echo (RFC 862) on embassy-net: TCP 7 through the shared [`echo_on`] (the smoltcp
//! adapter's function) on one socket with the idle rule and the SYN watcher, UDP 7 through
//! the shared [`Echo`] core with its replies in the shared [`ReplyLane`] (the smoltcp
//! adapter's rule), the gate standing in for the smoltcp main loop's egress after each frame.

use core::cell::RefCell;
use core::convert::Infallible;
use core::future::poll_fn;
use core::task::Poll;

use embassy_futures::join::join3;
use embassy_net::{IpAddress, IpEndpoint, Stack};
use embassy_time::{Duration, Instant};

use super::counters::EchoTcp;
use super::service::{make_room, socket_loop, Counted, OnSocket, Shared};
use super::socket::{poll_once, Tcp, Udp};
use super::{udp_socket, wake_at, AppCounters, Port, ServiceGate, TcpBuffers, UdpBuffers};
use crate::echo::{echo_on, Echo, ReplyLane, ECHO_PORT};
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

/// Serves echo on TCP and UDP port 7 forever. TCP: one connection at a time, reset when it
/// made no progress for the idle timeout; with `gate`, a SYN finding the socket busy frees
/// it if it is spent or half-open (not answered by us within the grace), or idle beyond the
/// grace (evicted: its peer reset), else is dropped unanswered for its client to send again
/// (without a gate: the stack's RST). UDP:
/// replies whose next hop does not answer ARP are dropped (`udp_unsent`) — with `gate`, as
/// soon as a request from another host is read, so they never hold up replies to hosts that
/// answer; without, after `rules::STUCK_REPLY_MS`. Counts into `counters`.
pub async fn echo_server(
    stack: Stack<'_>,
    tcp: TcpBuffers<'_>,
    udp: UdpBuffers<'_>,
    counters: &AppCounters,
    gate: Option<&ServiceGate>,
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
        socket_loop(stack, ECHO_PORT, gate, tcp, &shared[0], &mut app),
        udp_loop(stack, udp, &core, counters, gate),
        make_room(ECHO_PORT, &shared, gate, |counted| match counted {
            Counted::Reclaimed { answered } => {
                counters.add_echo(EchoTcp::Reclaimed);
                if answered {
                    counters.add_echo(EchoTcp::ReclaimedAnswered);
                }
            }
            Counted::Evicted => counters.add_echo(EchoTcp::Evicted),
            Counted::Syns(syns) => counters.set_echo_syns(&syns),
        }),
    )
    .await;
    match never.0 {}
}

/// UDP echo forever, its replies in one [`ReplyLane`]. embassy-net sends a socket's
/// datagrams in order and holds them all while the first waits for its next hop's ARP
/// answer — a second at a time, forever, for a spoofed requester — and shows an app only
/// whether the send queue is empty. So:
///
/// - with `gate` (the driver's [`ServiceGate`]), each request reaches the socket only after
///   the reply to the one before was queued, and the stack's pass that takes it in has
///   tried to send that reply: a reply to another host still queued when a request is read
///   is stuck. It is dropped (counted in `udp_unsent`), with the socket — made anew, so the
///   stack's wait for the stuck reply's neighbour does not silence the next reply (smoltcp
///   keeps that wait per socket) — and the new reply leaves at once;
/// - replies that did not leave for [`STUCK_REPLY_MS`] with no new request to push them out
///   are dropped the same way (without a gate this is the only rule: the stack may not yet
///   have tried to send what is queued, so another destination is no sign of a stuck reply).
async fn udp_loop(
    stack: Stack<'_>,
    b: UdpBuffers<'_>,
    core: &RefCell<Echo>,
    counters: &AppCounters,
    gate: Option<&ServiceGate>,
) -> Infallible {
    let port = Port::Udp(ECHO_PORT);
    let gated = gate.is_some_and(|g| g.serve(port));
    let stuck = Duration::from_millis(STUCK_REPLY_MS);
    // One lane per destination with a gate; without, every reply shares one.
    let mut lane = ReplyLane::<Option<IpAddress>, Instant>::new(Instant::now());
    let mut reply = [0u8; MAX_DATAGRAM];
    // A reply read on a socket whose queue was stuck, to send on the next one.
    let mut carried: Option<(usize, IpEndpoint)> = None;
    loop {
        let mut socket = udp_socket(
            stack,
            UdpBuffers {
                rx_meta: &mut *b.rx_meta,
                rx: &mut *b.rx,
                tx_meta: &mut *b.tx_meta,
                tx: &mut *b.tx,
            },
        );
        poll_fn(|cx| {
            let mut udp = Udp {
                socket: &mut socket,
                cx,
            };
            let mut core = core.borrow_mut();
            let now = Instant::now();
            let mut stale = 0;
            if udp.is_open() || udp.bind(ECHO_PORT) {
                if let Some((n, to)) = carried.take() {
                    send(&mut udp, &mut core, &mut lane, &reply[..n], to, now);
                }
                while stale == 0 {
                    let mut echo = None;
                    let received = udp.recv(|data, from| {
                        echo = core.datagram(data, &mut reply).map(|n| (n, from));
                    });
                    if !received {
                        break;
                    }
                    let Some((n, from)) = echo else { continue };
                    let key = gated.then_some(from.addr);
                    stale = lane.admit(key, queued(&mut udp));
                    if stale > 0 {
                        carried = Some((n, from));
                    } else {
                        send(&mut udp, &mut core, &mut lane, &reply[..n], from, now);
                    }
                }
                if stale == 0 {
                    stale = lane.tick(queued(&mut udp), now, stuck);
                }
            }
            if stale > 0 {
                // Requests not read yet go with the socket.
                while udp.recv(|_, _| {}) {
                    core.datagram_dropped();
                }
                core.replies_unsent(stale);
                counters.set_echo_core(&core.counters());
                return Poll::Ready(());
            }
            counters.set_echo_core(&core.counters());
            // The reply to the request read last is queued: the next may come in.
            if let Some(g) = gate {
                if g.asked(port, udp.cx) {
                    g.answer(port);
                }
            }
            udp.watch();
            wake_at(lane.deadline(stuck), udp.cx);
            Poll::Pending
        })
        .await;
        // The socket is dropped here (its queued replies with it) and made anew.
    }
}

/// Whether `udp`'s send queue holds anything, as the [`ReplyLane`] counts it (embassy-net
/// shows no more); registers the task to be woken when it empties.
fn queued(udp: &mut Udp<'_, '_, '_>) -> usize {
    usize::from(poll_once(udp.socket.flush(), udp.cx).is_none())
}

/// Queues the reply `data` to `to`, recording it in `lane` (or counting it dropped when the
/// send buffer has no room).
fn send(
    udp: &mut Udp<'_, '_, '_>,
    core: &mut Echo,
    lane: &mut ReplyLane<Option<IpAddress>, Instant>,
    data: &[u8],
    to: IpEndpoint,
    now: Instant,
) {
    let n = data.len();
    let sent = udp.send(n, to, |buf| {
        buf[..n].copy_from_slice(data);
        n
    });
    if sent {
        lane.queued(queued(udp), now);
    } else {
        core.datagram_dropped_after_echo();
    }
}
