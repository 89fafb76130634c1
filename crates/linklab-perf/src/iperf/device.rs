//! smoltcp adapter (feature `smoltcp`): an iperf3 server for a device, over sockets the
//! caller owns in a `smoltcp::iface::SocketSet`. No heap; data moves zero-copy through the
//! sockets' own buffers (received TCP bytes are counted and dropped in place, sent TCP
//! bytes are claimed in the transmit ring without copying).
//!
//! # What it needs
//! - `N >= 3` TCP sockets (handles in `tcp`), all of which the server makes listen on the
//!   port: one carries the control connection, one stays listening so a second client can
//!   be answered ACCESS_DENIED, the rest carry TCP data streams. A test with `-P p` needs
//!   `p` data sockets (`2p` with `--bidir`), so `N = 2 + 2p` covers everything up to `p`.
//!   At most [`MAX_TCP_SOCKETS`]. Give data sockets large buffers (the TCP window is the
//!   receive buffer), control sockets can be small (1 KiB rx / 1 KiB tx is plenty... but the
//!   sockets are interchangeable, so size all alike).
//! - One UDP socket (handle `udp`), bound by the server to the port: UDP streams are told
//!   apart by the peer's address. Its packet buffers bound the UDP burst it absorbs.
//! - Two JSON buffers for the [`Session`] (`rx` >= 8 KiB accepts any parameter document;
//!   `tx` >= 4 KiB holds results for 16 streams).
//!
//! # Main loop
//! ```ignore
//! let mut server = SmoltcpIperfServer::new(&tcp_handles, udp_handle, 5201, &mut rx, &mut tx);
//! loop {
//!     iface.poll(now, &mut device, &mut sockets);
//!     server.poll(&mut sockets, now);
//!     let wake = [iface.poll_at(now, &sockets), server.poll_at()].into_iter().flatten().min();
//!     // sleep until `wake` or the next packet
//! }
//! ```

use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::IpEndpoint;

use super::pool::{PoolServer, PoolSockets, Room};
use super::report::TestReport;
use super::session::{Failure, Session};
use super::stream::Micros;
use crate::evict::half_open_to;
use crate::lifetime::{evict, relisten};
use crate::rules::Peer;

pub use super::pool::{ServerCounters, MAX_TCP_SOCKETS};

/// An iperf3 server over smoltcp sockets (see the module docs for what it needs): the
/// shared pool logic ([`PoolServer`]) over sockets in a smoltcp `SocketSet`.
pub struct SmoltcpIperfServer<'a> {
    pool: PoolServer<'a, IpEndpoint>,
    tcp: heapless::Vec<SocketHandle, MAX_TCP_SOCKETS>,
    udp: SocketHandle,
}

/// The server's sockets in a smoltcp socket set, for one poll; `flush` runs the interface's
/// egress (so an evicted peer gets its RST before its socket listens again).
struct Sockets<'p, 's> {
    set: &'p mut SocketSet<'s>,
    tcp: &'p mut [SocketHandle],
    udp: SocketHandle,
    flush: &'p mut dyn FnMut(&mut SocketSet<'s>),
}

impl<'s> PoolSockets for Sockets<'_, 's> {
    type Endpoint = IpEndpoint;
    type Tcp<'t>
        = &'t mut tcp::Socket<'s>
    where
        Self: 't;
    type Udp<'t>
        = &'t mut udp::Socket<'s>
    where
        Self: 't;

    fn tcp_count(&self) -> usize {
        self.tcp.len()
    }

    fn tcp(&mut self, i: usize) -> Self::Tcp<'_> {
        self.set.get_mut::<tcp::Socket>(self.tcp[i])
    }

    fn udp(&mut self) -> Self::Udp<'_> {
        self.set.get_mut::<udp::Socket>(self.udp)
    }

    /// Listens again at once, in a fresh slot (see [`relisten`]); an evicted peer's RST is
    /// sent first ([`evict`]).
    fn free(&mut self, i: usize, port: u16, evicted: bool) -> bool {
        self.tcp[i] = if evicted {
            evict(self.set, self.tcp[i], port, self.flush)
        } else {
            relisten(self.set, self.tcp[i], port)
        };
        true
    }
}

fn micros(t: Instant) -> Micros {
    t.total_micros().max(0) as Micros
}

impl<'a> SmoltcpIperfServer<'a> {
    /// A server on `port` over the TCP sockets `tcp` (3..=[`MAX_TCP_SOCKETS`]; extra
    /// handles are ignored) and the UDP socket `udp`, with JSON buffers `rx` and `tx`.
    pub fn new(
        tcp: &[SocketHandle],
        udp: SocketHandle,
        port: u16,
        rx: &'a mut [u8],
        tx: &'a mut [u8],
    ) -> Self {
        let n = tcp.len().min(MAX_TCP_SOCKETS);
        Self {
            pool: PoolServer::new(port, rx, tx),
            tcp: heapless::Vec::from_slice(&tcp[..n]).unwrap_or_default(),
            udp,
        }
    }

    /// The test session (phase, parameters, live counters).
    pub fn session(&self) -> &Session<'a> {
        self.pool.session()
    }

    /// Tests done, failed, connections denied, sockets reclaimed, connections evicted.
    pub fn counters(&self) -> ServerCounters {
        self.pool.counters()
    }

    /// Takes the outcome of the last finished test, if any is new.
    pub fn take_outcome(&mut self) -> Option<Result<TestReport, Failure>> {
        self.pool.take_outcome()
    }

    /// Number of TCP sockets currently carrying data streams (0 between tests).
    pub fn open_streams(&self) -> usize {
        self.pool.open_streams()
    }

    /// When the server next needs [`poll`](Self::poll) even without network activity.
    pub fn poll_at(&self) -> Option<Instant> {
        self.pool
            .poll_at()
            .map(|t| Instant::from_micros(t.min(i64::MAX as u64) as i64))
    }

    /// Called before the stack sees a SYN for `port`: when it is this server's port and no
    /// socket listens, frees one so the SYN finds a listener ([`PoolServer::room_for`]: a
    /// spent socket, else the connection or idle test idle longest beyond the grace, else a
    /// half-open one, unanswered before answered). `flush` runs the interface's egress, so
    /// an evicted peer gets its RST before the socket listens again. True when the SYN is to
    /// be dropped unanswered instead (a handshake we answered may be completing; see
    /// [`crate::evict::Choice::Defer`]).
    pub fn make_room<'s>(
        &mut self,
        port: u16,
        sockets: &mut SocketSet<'s>,
        now: Instant,
        flush: &mut dyn FnMut(&mut SocketSet<'s>),
    ) -> bool {
        let mut s = Sockets {
            set: sockets,
            tcp: &mut self.tcp,
            udp: self.udp,
            flush,
        };
        // Never Freeing here: `free` listens at once.
        self.pool.room_for(port, &mut s, micros(now)) == Room::Defer
    }

    /// Our SYN-ACK from `port` to `peer` left at `now`: the socket half-open with `peer`, if
    /// it is one of ours, is answered ([`PoolServer::note_answered`]).
    pub fn note_answered(&mut self, port: u16, peer: Peer, sockets: &SocketSet<'_>, now: Instant) {
        if port != self.pool.port() {
            return;
        }
        for (i, h) in self.tcp.iter().enumerate() {
            if half_open_to(sockets.get::<tcp::Socket>(*h), peer) {
                self.pool.note_answered(i, micros(now));
            }
        }
    }

    /// Does all pending work: accepts, reads and writes control and data, runs timers.
    /// Call after every `Interface::poll`.
    pub fn poll(&mut self, sockets: &mut SocketSet<'_>, now: Instant) {
        let mut s = Sockets {
            set: sockets,
            tcp: &mut self.tcp,
            udp: self.udp,
            flush: &mut |_| {},
        };
        self.pool.poll(&mut s, micros(now));
    }
}
