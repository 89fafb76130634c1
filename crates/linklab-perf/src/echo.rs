//! Echo (RFC 862) over UDP and TCP: what comes in goes back out, for round-trip tests.
//!
//! The protocol core is sans-IO: [`Echo::datagram`] turns one received datagram into its reply
//! and [`Echo::stream`] moves stream bytes from what was received into send space, both
//! counting what they did. The smoltcp adapter ([`SmoltcpEchoServer`], feature `smoltcp`) binds the
//! core to one UDP and one TCP socket on port 7. No heap, no panics on input.

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
    /// TCP connections accepted.
    pub tcp_connections: u64,
    /// TCP payload bytes echoed back.
    pub tcp_bytes: u64,
    /// Times the queued UDP replies were dropped because they could not leave (their
    /// destination never answered ARP); those replies are in `udp_tx_datagrams` but never
    /// reached the wire.
    pub udp_unsent_resets: u64,
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
                tcp_connections: 0,
                tcp_bytes: 0,
                udp_unsent_resets: 0,
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

#[cfg(feature = "smoltcp")]
pub use adapter::SmoltcpEchoServer;

#[cfg(feature = "smoltcp")]
mod adapter {
    use super::{Echo, EchoCounters, ECHO_PORT};
    use smoltcp::iface::{SocketHandle, SocketSet};
    use smoltcp::socket::{tcp, udp};
    use smoltcp::time::{Duration, Instant};

    /// Largest datagram echoed; bigger ones are counted as dropped.
    const MAX_DATAGRAM: usize = 2048;
    /// Replies that have not left for this long are waiting for an ARP answer that will not
    /// come (a spoofed or vanished requester): they are dropped so they cannot block the
    /// socket's send buffer for everyone else.
    const STUCK_REPLY: Duration = Duration::from_secs(1);

    /// Echo on UDP and TCP port 7 over two smoltcp sockets the caller created (and so owns
    /// the buffers of); call [`SmoltcpEchoServer::poll`] after every `Interface::poll`.
    #[derive(Debug)]
    pub struct SmoltcpEchoServer {
        udp: SocketHandle,
        tcp: SocketHandle,
        tcp_was_active: bool,
        /// Since when the UDP send queue has held the same bytes, and how many.
        udp_stuck: Option<(Instant, usize)>,
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
                udp_stuck: None,
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

        /// Moves whatever the sockets received back out; bounded work per call.
        pub fn poll(&mut self, sockets: &mut SocketSet<'_>, now: Instant) {
            self.poll_udp(sockets.get_mut::<udp::Socket>(self.udp), now);
            self.poll_tcp(sockets.get_mut::<tcp::Socket>(self.tcp));
        }

        fn poll_udp(&mut self, socket: &mut udp::Socket<'_>, now: Instant) {
            if !socket.is_open() && socket.bind(ECHO_PORT).is_err() {
                return;
            }
            if socket.can_recv() {
                self.echo_datagrams(socket);
            }
            self.drop_stuck_replies(socket, now);
        }

        /// Echoes every datagram waiting. Only called when one is: its two buffers are
        /// zeroed on each call (2 × 2 KiB; on every main-loop pass that cost the firmware ~700
        /// instructions, measured on the Cortex-M3).
        fn echo_datagrams(&mut self, socket: &mut udp::Socket<'_>) {
            let mut request = [0u8; MAX_DATAGRAM];
            let mut reply = [0u8; MAX_DATAGRAM];
            while socket.can_recv() {
                let (len, meta) = match socket.recv_slice(&mut request) {
                    Ok(got) => got,
                    Err(_) => {
                        // Truncated: larger than MAX_DATAGRAM; smoltcp already dropped it.
                        self.core.datagram_dropped();
                        continue;
                    }
                };
                let Some(n) = self.core.datagram(&request[..len], &mut reply) else {
                    continue;
                };
                if socket.send_slice(&reply[..n], meta).is_err() {
                    self.core.datagram_dropped_after_echo();
                }
            }
        }

        /// Drops replies that have waited [`STUCK_REPLY`] without leaving (the receive side
        /// was just drained, so only the stuck replies are lost).
        fn drop_stuck_replies(&mut self, socket: &mut udp::Socket<'_>, now: Instant) {
            let queued = socket.send_queue();
            match self.udp_stuck {
                _ if queued == 0 => self.udp_stuck = None,
                Some((since, n)) if n == queued => {
                    if now >= since + STUCK_REPLY {
                        socket.close();
                        let _ = socket.bind(ECHO_PORT);
                        self.core.replies_dropped_unsent();
                        self.udp_stuck = None;
                    }
                }
                _ => self.udp_stuck = Some((now, queued)),
            }
        }

        fn poll_tcp(&mut self, socket: &mut tcp::Socket<'_>) {
            super::echo_on(&mut self.core, socket, &mut self.tcp_was_active);
        }
    }
}

#[cfg(any(feature = "smoltcp", feature = "embassy-net"))]
impl Echo {
    /// Counts a reset of the queued UDP replies that could not leave.
    pub(crate) fn replies_dropped_unsent(&mut self) {
        self.counters.udp_unsent_resets += 1;
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
    fn stream_moves_what_fits_in_order() {
        let mut echo = Echo::new();
        let mut tx = [0u8; 3];
        assert_eq!(echo.stream(b"abcdef", &mut tx), 3);
        assert_eq!(&tx, b"abc");
        assert_eq!(echo.stream(b"", &mut tx), 0);
        assert_eq!(echo.counters().tcp_bytes, 3);
    }
}
