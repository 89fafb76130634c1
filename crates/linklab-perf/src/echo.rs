//! Echo (RFC 862) over UDP and TCP: what comes in goes back out, for round-trip tests.
//!
//! The protocol core is sans-IO: [`Echo::datagram`] turns one received datagram into its reply
//! and [`Echo::stream`] moves stream bytes from what was received into send space, both
//! counting what they did; [`ReplyLane`] keeps replies to a host that cannot be reached from
//! holding up replies to hosts that can. The smoltcp adapter ([`SmoltcpEchoServer`], feature
//! `smoltcp`) binds the core to one UDP and one TCP socket on port 7. No heap, no panics on
//! input.

mod socket;
pub use socket::echo_on;

/// The well-known echo port (RFC 862).
pub const ECHO_PORT: u16 = 7;

/// What an echo service did since it started; every received datagram is either echoed or
/// counted as dropped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct EchoCounters {
    /// UDP datagrams received.
    pub udp_rx_datagrams: u64,
    /// UDP datagrams echoed back.
    pub udp_tx_datagrams: u64,
    /// UDP datagrams received but not echoed (reply did not fit the send space).
    pub udp_dropped: u64,
    /// Of `udp_tx_datagrams`, replies dropped unsent because their destination's next hop
    /// never answered ARP (a spoofed or vanished requester): see [`ReplyLane`].
    pub udp_unsent: u64,
    /// TCP connections accepted.
    pub tcp_connections: u64,
    /// TCP payload bytes echoed back.
    pub tcp_bytes: u64,
}

/// The sans-IO echo core: stateless apart from its counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct Echo {
    counters: EchoCounters,
}

impl Echo {
    /// A fresh echo core with zeroed counters.
    pub const fn new() -> Echo {
        Echo {
            counters: EchoCounters {
                udp_rx_datagrams: 0,
                udp_tx_datagrams: 0,
                udp_dropped: 0,
                udp_unsent: 0,
                tcp_connections: 0,
                tcp_bytes: 0,
            },
        }
    }

    /// The counters so far.
    pub fn counters(&self) -> EchoCounters {
        self.counters
    }

    /// Writes the reply to one received datagram into `out` and returns its length, or `None`
    /// (counted as dropped) when `out` is too small to hold it.
    pub fn datagram(&mut self, request: &[u8], out: &mut [u8]) -> Option<usize> {
        self.counters.udp_rx_datagrams += 1;
        match out.get_mut(..request.len()) {
            Some(reply) => {
                reply.copy_from_slice(request);
                self.counters.udp_tx_datagrams += 1;
                Some(request.len())
            }
            None => {
                self.counters.udp_dropped += 1;
                None
            }
        }
    }

    /// Records a datagram that arrived but could not be echoed (no room to send it).
    pub fn datagram_dropped(&mut self) {
        self.counters.udp_rx_datagrams += 1;
        self.counters.udp_dropped += 1;
    }

    /// Records a newly accepted stream connection.
    pub fn stream_opened(&mut self) {
        self.counters.tcp_connections += 1;
    }

    /// Copies as many received stream bytes as fit into `tx`; returns how many were moved
    /// (the caller consumes that many from its receive side and commits them to send).
    pub fn stream(&mut self, rx: &[u8], tx: &mut [u8]) -> usize {
        let n = rx.len().min(tx.len());
        tx[..n].copy_from_slice(&rx[..n]);
        self.counters.tcp_bytes += n as u64;
        n
    }
}

/// The UDP echo's send queue, kept to one destination at a time.
///
/// A stack such as smoltcp sends a socket's datagrams in order and, while the first one waits
/// for its next hop to answer ARP, holds all of them — a second at a time, again and again,
/// when the requester was spoofed and nobody ever answers. So replies to one destination
/// share the queue, and a reply to another destination first drops whatever is still queued
/// (the caller runs the stack's egress after each reply, so a reply still queued at the next
/// one did not leave when it could: its next hop does not resolve); replies that did not move
/// for `stuck` are dropped too, so the stack stops asking for a host that is not there.
/// Replies to hosts that resolve leave at once and are never delayed or dropped by these.
#[derive(Clone, Copy, Debug)]
pub struct ReplyLane<A, T> {
    dest: Option<A>,
    replies: u64,
    queued_bytes: usize,
    since: T,
}

impl<A: Copy + PartialEq, T: Copy + Ord> ReplyLane<A, T> {
    /// An empty lane at `now`.
    pub const fn new(now: T) -> Self {
        ReplyLane {
            dest: None,
            replies: 0,
            queued_bytes: 0,
            since: now,
        }
    }

    /// A reply to `dest` is ready and the send queue holds `queued_bytes`: returns how many
    /// queued replies must be dropped first (0, or all of them when they are for another
    /// destination). Then queue the reply and call [`queued`](Self::queued).
    pub fn admit(&mut self, dest: A, queued_bytes: usize) -> u64 {
        let drop = if queued_bytes == 0 || self.dest == Some(dest) {
            0
        } else {
            self.replies
        };
        if drop > 0 || queued_bytes == 0 {
            self.replies = 0;
        }
        self.dest = Some(dest);
        drop
    }

    /// The reply admitted last was queued; the send queue now holds `queued_bytes`.
    pub fn queued(&mut self, queued_bytes: usize, now: T) {
        self.replies += 1;
        self.queued_bytes = queued_bytes;
        self.since = now;
    }

    /// The send queue holds `queued_bytes` at `now`: returns how many replies must be dropped
    /// because none moved for `stuck` (then the lane is empty).
    pub fn tick<D>(&mut self, queued_bytes: usize, now: T, stuck: D) -> u64
    where
        T: core::ops::Add<D, Output = T>,
    {
        if queued_bytes == 0 {
            self.dest = None;
            self.replies = 0;
        } else if queued_bytes != self.queued_bytes {
            self.queued_bytes = queued_bytes;
            self.since = now;
        } else if now >= self.since + stuck {
            let drop = self.replies;
            self.dest = None;
            self.replies = 0;
            return drop;
        }
        0
    }

    /// When [`tick`](Self::tick) would drop the queued replies if nothing moves (None when the
    /// lane is empty).
    pub fn deadline<D>(&self, stuck: D) -> Option<T>
    where
        T: core::ops::Add<D, Output = T>,
    {
        self.dest
            .filter(|_| self.replies > 0)
            .map(|_| self.since + stuck)
    }
}

#[cfg(all(feature = "smoltcp", feature = "echo"))]
pub use adapter::SmoltcpEchoServer;

#[cfg(all(feature = "smoltcp", feature = "echo"))]
mod adapter {
    use super::{Echo, EchoCounters, ReplyLane, ECHO_PORT};
    use smoltcp::iface::{SocketHandle, SocketSet};
    use smoltcp::socket::{tcp, udp};
    use smoltcp::time::{Duration, Instant};
    use smoltcp::wire::IpAddress;

    /// Largest datagram echoed; bigger ones are counted as dropped.
    const MAX_DATAGRAM: usize = 2048;
    /// Replies that have not left for this long, with no new request to push them out, are
    /// dropped (see [`ReplyLane`]): smoltcp would otherwise ask for their next hop every
    /// second forever.
    const STUCK_REPLY: Duration = Duration::from_millis(crate::rules::STUCK_REPLY_MS);

    /// Echo on UDP and TCP port 7 over two smoltcp sockets the caller created (and so owns
    /// the buffers of): call [`echo_datagram`](SmoltcpEchoServer::echo_datagram) after every
    /// frame the interface takes in (with its egress in between, as
    /// [`crate::apps::DeviceApps::poll_interface`] does) and [`poll`](SmoltcpEchoServer::poll)
    /// after every interface poll.
    #[derive(Debug)]
    pub struct SmoltcpEchoServer {
        udp: SocketHandle,
        tcp: SocketHandle,
        tcp_was_active: bool,
        lane: ReplyLane<IpAddress, Instant>,
        core: Echo,
    }

    impl SmoltcpEchoServer {
        /// Serves echo on the given UDP and TCP sockets (they are bound/listened on port 7 on
        /// the first poll).
        pub fn new(udp: SocketHandle, tcp: SocketHandle) -> SmoltcpEchoServer {
            SmoltcpEchoServer {
                udp,
                tcp,
                tcp_was_active: false,
                lane: ReplyLane::new(Instant::ZERO),
                core: Echo::new(),
            }
        }

        /// The counters so far.
        pub fn counters(&self) -> EchoCounters {
            self.core.counters()
        }

        /// Forgets the TCP connection: its socket was reclaimed for a new one, now at
        /// `handle`.
        pub fn forget_tcp(&mut self, handle: SocketHandle) {
            self.tcp = handle;
            self.tcp_was_active = false;
        }

        /// Echoes one received UDP datagram, if any; true when the caller should run the
        /// interface's egress and call again (a reply was queued, or a datagram dropped).
        /// Replies wait in one [`ReplyLane`]: one that is still queued when a reply to
        /// another host comes did not leave in the egress after it, so it (and any other
        /// reply to its host) is dropped, counted in `udp_unsent`, and the socket gets fresh
        /// interface bookkeeping (smoltcp silences a socket for a second whenever its first
        /// datagram's next hop is missing; see [`crate::lifetime::relisten`]).
        pub fn echo_datagram(&mut self, sockets: &mut SocketSet<'_>, now: Instant) -> bool {
            let socket = sockets.get_mut::<udp::Socket>(self.udp);
            if !socket.is_open() && socket.bind(ECHO_PORT).is_err() {
                return false;
            }
            if !socket.can_recv() {
                // Called after every frame: the two 2 KiB buffers below are zeroed only when
                // a datagram waits (on every pass that cost the firmware ~700 instructions,
                // measured on the Cortex-M3).
                return false;
            }
            let mut request = [0u8; MAX_DATAGRAM];
            let (len, meta) = match socket.recv_slice(&mut request) {
                Ok(got) => got,
                Err(udp::RecvError::Exhausted) => return false,
                Err(_) => {
                    // Truncated: larger than MAX_DATAGRAM.
                    self.core.datagram_dropped();
                    return true;
                }
            };
            let mut reply = [0u8; MAX_DATAGRAM];
            let Some(n) = self.core.datagram(&request[..len], &mut reply) else {
                return true;
            };
            let stuck = self.lane.admit(meta.endpoint.addr, socket.send_queue());
            if stuck > 0 {
                self.drop_queued(sockets, stuck);
            }
            let socket = sockets.get_mut::<udp::Socket>(self.udp);
            if socket.send_slice(&reply[..n], meta).is_err() {
                self.core.datagram_dropped_after_echo();
            } else {
                self.lane.queued(socket.send_queue(), now);
            }
            true
        }

        /// Drops the `n` queued replies that could not leave: empties the socket (requests
        /// not yet read go with it, counted as dropped) and gives it a fresh slot in the set.
        fn drop_queued(&mut self, sockets: &mut SocketSet<'_>, n: u64) {
            let socket = sockets.get_mut::<udp::Socket>(self.udp);
            while socket.recv().is_ok() {
                self.core.datagram_dropped();
            }
            socket.close();
            let _ = socket.bind(ECHO_PORT);
            self.udp = crate::lifetime::fresh_slot(sockets, self.udp);
            self.core.replies_unsent(n);
        }

        /// Moves the TCP connection's bytes back out and drops UDP replies that did not move
        /// for a second; bounded work per call.
        pub fn poll(&mut self, sockets: &mut SocketSet<'_>, now: Instant) {
            let queued = sockets.get::<udp::Socket>(self.udp).send_queue();
            let stuck = self.lane.tick(queued, now, STUCK_REPLY);
            if stuck > 0 {
                self.drop_queued(sockets, stuck);
            }
            self.poll_tcp(sockets.get_mut::<tcp::Socket>(self.tcp));
        }

        /// When [`poll`](Self::poll) next has work without traffic (stuck replies to drop).
        pub fn poll_at(&self) -> Option<Instant> {
            self.lane.deadline(STUCK_REPLY)
        }

        fn poll_tcp(&mut self, socket: &mut tcp::Socket<'_>) {
            super::echo_on(&mut self.core, socket, &mut self.tcp_was_active);
        }
    }
}

#[cfg(all(feature = "echo", any(feature = "smoltcp", feature = "embassy-net")))]
impl Echo {
    /// Records `n` echoed replies dropped before they could leave.
    pub(crate) fn replies_unsent(&mut self, n: u64) {
        self.counters.udp_unsent += n;
    }

    /// Undoes the "echoed" count of a reply the socket then refused (its send buffer was
    /// full): the datagram ends up counted as dropped, once.
    pub(crate) fn datagram_dropped_after_echo(&mut self) {
        self.counters.udp_tx_datagrams = self.counters.udp_tx_datagrams.saturating_sub(1);
        self.counters.udp_dropped += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datagram_reply_equals_request() {
        let mut echo = Echo::new();
        let mut out = [0u8; 16];
        assert_eq!(echo.datagram(b"hello", &mut out), Some(5));
        assert_eq!(&out[..5], b"hello");
        let c = echo.counters();
        assert_eq!(
            (c.udp_rx_datagrams, c.udp_tx_datagrams, c.udp_dropped),
            (1, 1, 0)
        );
    }

    #[test]
    fn datagram_too_big_for_out_is_dropped_and_counted() {
        let mut echo = Echo::new();
        let mut out = [0u8; 4];
        assert_eq!(echo.datagram(b"hello", &mut out), None);
        let c = echo.counters();
        assert_eq!(c.udp_rx_datagrams, c.udp_tx_datagrams + c.udp_dropped);
        assert_eq!(c.udp_dropped, 1);
    }

    #[test]
    fn a_reply_to_another_host_drops_the_ones_that_did_not_leave() {
        let mut lane = ReplyLane::<u8, u64>::new(0);
        // Replies to host 1 queue together (the stack sends them in order).
        assert_eq!(lane.admit(1, 0), 0);
        lane.queued(100, 10);
        assert_eq!(lane.admit(1, 100), 0);
        lane.queued(200, 11);
        // Still queued after the egress: host 1 does not resolve. A reply to host 2 drops
        // both, and is queued alone.
        assert_eq!(lane.admit(2, 200), 2);
        lane.queued(100, 12);
        // Host 2's reply left; host 3's never waits behind anything.
        assert_eq!(lane.admit(3, 0), 0);
        lane.queued(100, 13);
        assert_eq!(lane.deadline(1000), Some(1013));
        // Nothing new comes: a reply that did not move for a second is dropped.
        assert_eq!(lane.tick(100, 500, 1000), 0);
        assert_eq!(lane.tick(100, 1013, 1000), 1);
        assert_eq!(lane.deadline(1000), None);
        assert_eq!(lane.tick(0, 2000, 1000), 0);
    }

    #[test]
    fn stream_moves_what_fits_in_order() {
        let mut echo = Echo::new();
        let mut tx = [0u8; 3];
        assert_eq!(echo.stream(b"abcdef", &mut tx), 3);
        assert_eq!(&tx, b"abc");
        assert_eq!(echo.stream(b"", &mut tx), 0);
        assert_eq!(echo.counters().tcp_bytes, 3);
    }
}
