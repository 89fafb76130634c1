//! [`DeviceApps`]' side of the interface poll: the SYN rule before each frame that opens a
//! connection, the SYN-ACK watch, UDP echo's egress after each request, the connect-backs
//! iperf 2 asked for, iperf 2's one socket listening again before the frames come in.

use smoltcp::iface::{Interface, PollIngressSingleResult, PollResult, SocketSet};
use smoltcp::phy::Device;
#[cfg(any(
    feature = "echo",
    feature = "http",
    all(feature = "iperf2-tcp", not(feature = "iperf2"))
))]
use smoltcp::socket::tcp;
use smoltcp::socket::tcp::State as TcpState;
use smoltcp::socket::Socket;
use smoltcp::time::Instant;

use super::DeviceApps;
#[cfg(feature = "echo")]
use crate::echo::ECHO_PORT;
#[cfg(any(feature = "echo", feature = "http"))]
use crate::evict::half_open_to;
#[cfg(any(feature = "echo", feature = "http"))]
use crate::evict::Choice;
#[cfg(feature = "http")]
use crate::http;
#[cfg(feature = "iperf2-tcp")]
use crate::iperf2::DEFAULT_PORT as IPERF2_PORT;
#[cfg(any(feature = "echo", feature = "http"))]
use crate::lifetime::{evict, refresh, relisten, EVICT_GRACE};
use crate::rules::NextFrame;
use crate::synack_watch::{SynAckWatch, SynAcks};

impl<'a, const N: usize, const S: usize, const H: usize, const M: usize>
    DeviceApps<'a, N, S, H, M>
{
    /// Runs the interface: ingress one frame at a time, then egress. Before each frame that
    /// opens a TCP connection (see [`crate::lifetime::syn_port`]) to a service none of whose
    /// sockets listens, frees one for it ([`crate::evict::choose`]): a spent socket
    /// (`reclaimed`), else the connection idle longest beyond [`EVICT_GRACE`] (`evicted`:
    /// the peer gets a RST), else a half-open one our SYN-ACK has not answered (`reclaimed`:
    /// lwIP's rule, so spoofed SYNs from hosts that never answer cannot lock real clients
    /// out), else one answered longer than the grace ago (`reclaimed`, also counted in
    /// `reclaimed_answered`). While a handshake we answered may still complete, or when every
    /// connection is making progress, the SYN is dropped unanswered (`listen_drops`; its
    /// client sends it again and is served once a connection ends), so no client that
    /// believes it is connected is reset and none is refused; every SYN is counted
    /// ([`crate::syns`]). Every SYN-ACK leaving is watched
    /// ([`crate::synack_watch`]) to know which handshakes were answered. After each frame, a
    /// UDP echo request is answered and the egress run at once (see
    /// [`crate::echo::SmoltcpEchoServer::echo_datagram`]), so a reply that cannot leave is
    /// known before the next one is queued. Use instead of `Interface::poll`; `next_frame` looks at
    /// the device's next frame without receiving it (for a linklab-mac `Mac`:
    /// `|mac| mac.peek(NextFrame::of).unwrap_or(NextFrame::Empty)`); the stack receives only
    /// a frame it showed, so one queued by an interrupt after an empty look waits for the
    /// next pass instead of passing the SYN rule unseen.
    /// Without feature `evict` there is no SYN rule and no SYN-ACK watch: a SYN that finds
    /// every socket busy gets smoltcp's RST (the minimal and compact images, whose flash
    /// budgets leave no room for it).
    pub fn poll_interface<D: Device + ?Sized>(
        &mut self,
        iface: &mut Interface,
        device: &mut D,
        sockets: &mut SocketSet<'a>,
        now: Instant,
        next_frame: impl FnMut(&mut D) -> NextFrame,
    ) {
        self.poll_ingress(iface, device, sockets, now, next_frame);
        self.poll_egress(iface, device, sockets, now);
    }

    /// [`DeviceApps::poll_interface`]'s first half: maintenance and ingress (with the SYN
    /// rule), nothing sent but what ingress answers at once. Run the apps, then
    /// [`DeviceApps::poll_egress`]: the segments then leave with what the apps just did —
    /// an ACK carries the window the app's read just opened (sent before it, the window
    /// lacked what the app had not read yet, e.g. iperf3's 37-byte cookie, and the peer
    /// filled it with an odd-sized segment, leaving every later payload off its word in the
    /// receive buffer), and data the app just queued goes out in the same pass.
    pub fn poll_ingress<D: Device + ?Sized>(
        &mut self,
        iface: &mut Interface,
        device: &mut D,
        sockets: &mut SocketSet<'a>,
        now: Instant,
        mut next_frame: impl FnMut(&mut D) -> NextFrame,
    ) {
        let mut sent = SynAcks::new();
        let mut device = SynAckWatch {
            device,
            sent: &mut sent,
            hide_syn_to: None,
        };
        iface.poll_maintenance(now);
        #[cfg(feature = "iperf2")]
        self.iperf2.start_connects(iface, sockets);
        #[cfg(all(feature = "iperf2-tcp", not(feature = "iperf2")))]
        {
            // A SYN among the frames below finds the one socket listening if it may.
            let (handle, server) = &mut self.iperf2;
            let micros = crate::socket::micros(now);
            server.listen_if_closed(sockets.get_mut::<tcp::Socket>(*handle), micros);
        }
        loop {
            // The SYN rule frees sockets, so a build without eviction skips it.
            let next = if cfg!(feature = "evict") {
                next_frame(device.device)
            } else {
                NextFrame::Other
            };
            if next == NextFrame::Empty {
                break;
            }
            if let NextFrame::Syn(port) = next {
                // A SYN that finds no socket listening may take a half-open one, so the
                // handshakes taken in before it get their chance to be answered first: a
                // real client's SYN-ACK leaves (answered: its socket is not taken), a
                // spoofed one's waits for ARP (its socket may be). Without this flush a
                // second SYN in the same batch took the first one's socket whatever it
                // was: a mixed-load soak lost real iperf3 streams' SYNs so, unanswered.
                if !listens(sockets, port) {
                    egress(iface, &mut device, sockets, now);
                }
                self.note_answered(device.sent, sockets, now);
                let mut flush = |s: &mut SocketSet<'a>| egress(iface, &mut device, s, now);
                if self.make_room(port, sockets, now, &mut flush) {
                    device.hide_syn_to = Some(port);
                }
            }
            let ingress = iface.poll_ingress_single(now, &mut device, sockets);
            device.hide_syn_to = None;
            if ingress == PollIngressSingleResult::None {
                break;
            }
            #[cfg(feature = "echo")]
            while self.echo.echo_datagram(sockets, now) {
                egress(iface, &mut device, sockets, now);
            }
        }
        self.note_answered(&mut sent, sockets, now);
    }

    /// [`DeviceApps::poll_interface`]'s second half: egress until nothing is left to send
    /// (noting the SYN-ACKs that leave).
    pub fn poll_egress<D: Device + ?Sized>(
        &mut self,
        iface: &mut Interface,
        device: &mut D,
        sockets: &mut SocketSet<'a>,
        now: Instant,
    ) {
        #[cfg(feature = "iperf2")]
        self.iperf2.start_connects(iface, sockets);
        let mut sent = SynAcks::new();
        let mut device = SynAckWatch {
            device,
            sent: &mut sent,
            hide_syn_to: None,
        };
        egress(iface, &mut device, sockets, now);
        self.note_answered(&mut sent, sockets, now);
    }

    /// Marks the half-open connections whose SYN-ACK left (`sent`, drained) as answered at
    /// `now` (see [`crate::evict::Kind::Answered`]).
    // (Nothing to note or free in a build without TCP apps.)
    #[cfg_attr(
        not(any(
            feature = "iperf3",
            feature = "iperf2",
            feature = "http",
            feature = "echo"
        )),
        allow(unused_variables)
    )]
    fn note_answered(&mut self, sent: &mut SynAcks, sockets: &SocketSet<'_>, now: Instant) {
        if !cfg!(feature = "evict") {
            return;
        }
        while let Some((port, peer)) = sent.pop() {
            match port {
                #[cfg(feature = "http")]
                http::HTTP_PORT => {
                    for (h, _, watch) in &mut self.http {
                        if half_open_to(sockets.get::<tcp::Socket>(*h), peer) {
                            watch.note_answered(now);
                        }
                    }
                }
                #[cfg(feature = "echo")]
                ECHO_PORT => {
                    if half_open_to(sockets.get::<tcp::Socket>(self.echo_tcp), peer) {
                        self.echo_watch.note_answered(now);
                    }
                }
                #[cfg(feature = "iperf2")]
                IPERF2_PORT => self.iperf2.note_answered(port, peer, sockets, now),
                #[cfg(feature = "iperf3")]
                _ => self.iperf.note_answered(port, peer, sockets, now),
                #[cfg(not(feature = "iperf3"))]
                _ => {}
            }
        }
    }

    /// Frees a socket for a new connection to `port` when none of its sockets listens (see
    /// [`poll_interface`](Self::poll_interface)); `flush` runs the interface's egress. True
    /// when the SYN is to be dropped unanswered ([`Choice::Defer`], [`Choice::Busy`]).
    // (Nothing to note or free in a build without TCP apps.)
    #[cfg_attr(
        not(any(
            feature = "iperf3",
            feature = "iperf2",
            feature = "http",
            feature = "echo"
        )),
        allow(unused_variables)
    )]
    fn make_room(
        &mut self,
        port: u16,
        sockets: &mut SocketSet<'a>,
        now: Instant,
        flush: &mut dyn FnMut(&mut SocketSet<'a>),
    ) -> bool {
        match port {
            #[cfg(feature = "http")]
            http::HTTP_PORT => {
                let listening = self
                    .http
                    .iter()
                    .any(|(h, _, _)| sockets.get::<tcp::Socket>(*h).state() == tcp::State::Listen);
                if listening {
                    self.http_taken.pass();
                    return false;
                }
                // Progress that came in with the frames before this SYN counts.
                for (h, _, watch) in &mut self.http {
                    refresh(watch, sockets.get::<tcp::Socket>(*h), now);
                }
                let facts = self
                    .http
                    .iter()
                    .map(|(h, _, w)| w.candidate(sockets.get::<tcp::Socket>(*h)));
                let choice = crate::evict::choose(facts, now, EVICT_GRACE);
                if let Choice::Take(i, taken) = choice {
                    let (h, server, watch) = &mut self.http[i];
                    *h = if taken.evicts() {
                        evict(sockets, *h, http::HTTP_PORT, flush)
                    } else {
                        relisten(sockets, *h, http::HTTP_PORT)
                    };
                    server.reset();
                    watch.forget();
                }
                self.http_taken.count(&choice)
            }
            #[cfg(feature = "echo")]
            ECHO_PORT => {
                let socket = sockets.get::<tcp::Socket>(self.echo_tcp);
                if socket.state() == tcp::State::Listen {
                    self.echo_taken.pass();
                    return false;
                }
                refresh(&mut self.echo_watch, socket, now);
                let facts = [self.echo_watch.candidate(socket)];
                let choice = crate::evict::choose(facts, now, EVICT_GRACE);
                if let Choice::Take(_, taken) = choice {
                    self.echo_tcp = if taken.evicts() {
                        evict(sockets, self.echo_tcp, ECHO_PORT, flush)
                    } else {
                        relisten(sockets, self.echo_tcp, ECHO_PORT)
                    };
                    self.echo.forget_tcp(self.echo_tcp);
                    self.echo_watch.forget();
                }
                self.echo_taken.count(&choice)
            }
            #[cfg(feature = "iperf2")]
            IPERF2_PORT => {
                let memory = &mut self.memory;
                self.iperf2.make_room(port, sockets, memory, now, flush)
            }
            // iperf 2's one socket makes no room: a second client gets the stack's RST.
            #[cfg(all(feature = "iperf2-tcp", not(feature = "iperf2")))]
            IPERF2_PORT => false,
            #[cfg(feature = "iperf3")]
            _ => self
                .iperf
                .make_room(port, sockets, Some(&mut self.memory), now, flush),
            #[cfg(not(feature = "iperf3"))]
            _ => false,
        }
    }
}

/// True when a TCP socket in `sockets` listens on `port`: a SYN to it needs no room made.
fn listens(sockets: &SocketSet<'_>, port: u16) -> bool {
    sockets.iter().any(|(_, s)| match s {
        Socket::Tcp(t) => t.state() == TcpState::Listen && t.listen_endpoint().port == port,
        #[allow(unreachable_patterns)]
        _ => false,
    })
}

/// Runs the interface's egress until it has nothing more to send.
pub(super) fn egress<D: Device + ?Sized>(
    iface: &mut Interface,
    device: &mut D,
    sockets: &mut SocketSet<'_>,
    now: Instant,
) {
    while iface.poll_egress(now, device, sockets) != PollResult::None {}
}
