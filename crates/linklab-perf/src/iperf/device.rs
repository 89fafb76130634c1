//! smoltcp adapter (feature `smoltcp`): an iperf3 server for a device, over sockets in a
//! `smoltcp::iface::SocketSet` the caller owns. No heap; data moves zero-copy through the
//! sockets' own buffers (received TCP bytes are counted and dropped in place, sent TCP
//! bytes are claimed in the transmit ring without copying).
//!
//! # Two ways to give it sockets
//! - [`SmoltcpIperfServer::from_buffers`] (what `DeviceApps` and the firmware use): the
//!   server makes its sockets from an [`IperfBuffers`]: two control sockets with small
//!   buffers (the test's control connection, and one to answer a second client
//!   ACCESS_DENIED), and the data memory, one chunk per stream it carries at once. A chunk
//!   is lent to a data socket only while it listens for or carries a stream, and to the UDP
//!   socket during a UDP test (the two never carry a test at the same time), so the
//!   windows cost nothing twice. `-P p` needs `p` chunks, `-P p --bidir` `2p`.
//! - [`SmoltcpIperfServer::new`] (feature `iperf-udp`): `N >= 3` TCP sockets and one UDP
//!   socket the caller made, every TCP socket taking any role (one control, one spare, the
//!   rest data streams): size them alike, the receive buffer is the window.
//!
//! Two JSON buffers go to the [`Session`] (`rx` >= 8 KiB accepts any parameter document,
//! a stock client's is ~300 bytes; `tx` >= 4 KiB holds results for 16 streams, one
//! stream's ~350 bytes).
//!
//! # Main loop
//! ```no_run
//! use linklab_perf::iperf::device::{IperfBuffers, SmoltcpIperfServer};
//! use smoltcp::iface::{Interface, SocketSet};
//! use smoltcp::phy::Device;
//! use smoltcp::time::Instant;
//!
//! fn serve<'a, D: Device, I: IntoIterator<Item = &'a mut [u8]>>(
//!     iface: &mut Interface,
//!     device: &mut D,
//!     sockets: &mut SocketSet<'a>,
//!     buffers: IperfBuffers<'a, I>,
//!     now: impl Fn() -> Instant,
//! ) -> ! {
//!     let mut server = SmoltcpIperfServer::<4, 2>::from_buffers(sockets, buffers, 5201);
//!     loop {
//!         let t = now();
//!         iface.poll(t, device, sockets);
//!         server.poll(sockets, t);
//!         let wake = [iface.poll_at(t, sockets), server.poll_at()].into_iter().flatten().min();
//!         // sleep until `wake` or the next packet
//!     }
//! }
//! ```

use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::tcp;
#[cfg(feature = "iperf-udp")]
use smoltcp::socket::udp;
use smoltcp::time::Instant;
use smoltcp::wire::IpEndpoint;

use super::pool::{PoolServer, PoolSockets, Room};
use super::report::TestReport;
use super::session::{Failure, Session};
use super::stream::Micros;
use super::wire::MAX_STREAMS;
use crate::evict::half_open_to;
use crate::lend::Lender;
use crate::lifetime::{evict, relisten, tcp_socket};
use crate::rules::Peer;
use crate::socket_buffers::TcpBuffers;

pub use super::pool::{ServerCounters, MAX_TCP_SOCKETS};

/// What [`SmoltcpIperfServer::from_buffers`] makes its sockets of (see the module docs).
pub struct IperfBuffers<'a, I> {
    /// The two control sockets' buffers: the test's control connection, and one left
    /// listening to answer a second client ACCESS_DENIED. Control messages are short
    /// (a stock client's parameters ~300 bytes, one stream's results ~350): 512 bytes each
    /// way are plenty.
    pub control: [TcpBuffers<'a>; 2],
    /// The data memory: one chunk per stream carried at once (at most `N - 2`), each lent
    /// whole to a data socket while it listens for or carries a stream (its receive window
    /// is the first [`window`](Self::window) bytes, its send buffer the rest), and one to the
    /// UDP socket during a UDP test (the datagrams it receives in the first
    /// [`udp_rx`](Self::udp_rx) bytes, those it sends in the rest).
    pub data: I,
    /// The receive window of a data socket: the first part of each chunk.
    pub window: usize,
    /// The UDP socket's receive bytes: the first part of the chunk it gets.
    #[cfg(feature = "iperf-udp")]
    pub udp_rx: usize,
    /// The UDP socket's datagram records, received and sent (its payload bytes are a data
    /// chunk's).
    #[cfg(feature = "iperf-udp")]
    pub udp_meta: [&'a mut [udp::PacketMetadata]; 2],
    /// Control JSON received.
    pub json_rx: &'a mut [u8],
    /// Control JSON sent.
    pub json_tx: &'a mut [u8],
}

/// The data memory and which socket holds which chunk.
struct DataMemory<'a, const N: usize> {
    chunks: Lender<'a, u8, N>,
    window: usize,
    /// The chunk data socket `i` holds.
    holder: [Option<u8>; N],
    #[cfg(feature = "iperf-udp")]
    udp_rx: usize,
    #[cfg(feature = "iperf-udp")]
    udp_meta: Lender<'a, udp::PacketMetadata, 2>,
    /// The chunk (and records) the UDP socket holds.
    #[cfg(feature = "iperf-udp")]
    udp_chunk: Option<u8>,
}

/// An iperf3 server over smoltcp sockets (see the module docs for what it needs): the
/// shared pool logic ([`PoolServer`]) over sockets in a smoltcp `SocketSet`, at most `N` TCP
/// sockets and `S` streams.
pub struct SmoltcpIperfServer<'a, const N: usize = MAX_TCP_SOCKETS, const S: usize = MAX_STREAMS> {
    pool: PoolServer<'a, IpEndpoint, N, S>,
    tcp: heapless::Vec<SocketHandle, N>,
    #[cfg(feature = "iperf-udp")]
    udp: SocketHandle,
    memory: Option<DataMemory<'a, N>>,
}

/// The server's sockets in a smoltcp socket set, for one poll; `flush` runs the interface's
/// egress (so an evicted peer gets its RST before its socket listens again).
struct Sockets<'p, 'a, const N: usize> {
    set: &'p mut SocketSet<'a>,
    tcp: &'p mut [SocketHandle],
    #[cfg(feature = "iperf-udp")]
    udp: &'p mut SocketHandle,
    memory: Option<&'p mut DataMemory<'a, N>>,
    flush: &'p mut dyn FnMut(&mut SocketSet<'a>),
}

/// A TCP socket without buffers: a data socket parked between tests.
fn parked_tcp<'a>() -> tcp::Socket<'a> {
    tcp::Socket::new(
        tcp::SocketBuffer::new(&mut [][..]),
        tcp::SocketBuffer::new(&mut [][..]),
    )
}

/// A UDP socket without buffers: the iperf3 UDP socket between UDP tests (it drops what
/// comes).
#[cfg(feature = "iperf-udp")]
fn parked_udp<'a>() -> udp::Socket<'a> {
    udp::Socket::new(
        udp::PacketBuffer::new(&mut [][..], &mut [][..]),
        udp::PacketBuffer::new(&mut [][..], &mut [][..]),
    )
}

impl<'a, const N: usize> PoolSockets for Sockets<'_, 'a, N> {
    type Endpoint = IpEndpoint;
    type Tcp<'t>
        = &'t mut tcp::Socket<'a>
    where
        Self: 't;
    #[cfg(feature = "iperf-udp")]
    type Udp<'t>
        = &'t mut udp::Socket<'a>
    where
        Self: 't;

    fn tcp_count(&self) -> usize {
        self.tcp.len()
    }

    fn tcp(&mut self, i: usize) -> Self::Tcp<'_> {
        self.set.get_mut::<tcp::Socket>(self.tcp[i])
    }

    #[cfg(feature = "iperf-udp")]
    fn udp(&mut self) -> Self::Udp<'_> {
        self.set.get_mut::<udp::Socket>(*self.udp)
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

    /// Makes data socket `i` anew over a chunk of the data memory (in the slot it left).
    fn prepare(&mut self, i: usize) -> bool {
        let Some(m) = self.memory.as_deref_mut() else {
            return true;
        };
        if m.holder[i].is_some() {
            return true;
        }
        let Some((c, bytes)) = m.chunks.lend() else {
            return false;
        };
        let (rx, tx) = bytes.split_at_mut(m.window.min(bytes.len()));
        let _ = self.set.remove(self.tcp[i]);
        self.tcp[i] = self.set.add(tcp_socket(TcpBuffers { rx, tx }));
        m.holder[i] = Some(c as u8);
        true
    }

    /// Makes data socket `i` anew without buffers and takes its chunk back.
    fn release(&mut self, i: usize) {
        let Some(m) = self.memory.as_deref_mut() else {
            return;
        };
        if let Some(c) = m.holder[i].take() {
            let _ = self.set.remove(self.tcp[i]);
            self.tcp[i] = self.set.add(parked_tcp());
            // SAFETY: the only socket made over chunk `c` was just removed from the set and
            // dropped.
            unsafe { m.chunks.give_back(usize::from(c)) };
        }
    }

    /// Makes the UDP socket anew over a chunk of the data memory.
    #[cfg(feature = "iperf-udp")]
    fn prepare_udp(&mut self) -> bool {
        let Some(m) = self.memory.as_deref_mut() else {
            return true;
        };
        if m.udp_chunk.is_some() {
            return true;
        }
        let Some((c, bytes)) = m.chunks.lend() else {
            return false;
        };
        let (Some((_, rx_meta)), Some((_, tx_meta))) = (m.udp_meta.lend(), m.udp_meta.lend())
        else {
            // SAFETY: chunk `c` was lent just now and given to nothing.
            unsafe { m.chunks.give_back(c) };
            return false;
        };
        let (rx, tx) = bytes.split_at_mut(m.udp_rx.min(bytes.len()));
        let _ = self.set.remove(*self.udp);
        *self.udp = self.set.add(udp::Socket::new(
            udp::PacketBuffer::new(rx_meta, rx),
            udp::PacketBuffer::new(tx_meta, tx),
        ));
        m.udp_chunk = Some(c as u8);
        true
    }

    /// Makes the UDP socket anew without buffers and takes its chunk and records back.
    #[cfg(feature = "iperf-udp")]
    fn release_udp(&mut self) {
        let Some(m) = self.memory.as_deref_mut() else {
            return;
        };
        if let Some(c) = m.udp_chunk.take() {
            let _ = self.set.remove(*self.udp);
            *self.udp = self.set.add(parked_udp());
            // SAFETY: the only socket made over chunk `c` and the two records was just
            // removed from the set and dropped.
            unsafe {
                m.chunks.give_back(usize::from(c));
                m.udp_meta.give_back(0);
                m.udp_meta.give_back(1);
            }
        }
    }
}

fn micros(t: Instant) -> Micros {
    t.total_micros().max(0) as Micros
}

impl<'a, const N: usize, const S: usize> SmoltcpIperfServer<'a, N, S> {
    /// A server on `port` over the TCP sockets `tcp` (3..=`N`; extra handles are ignored),
    /// every one taking any role, and the UDP socket `udp`, with JSON buffers `rx` and `tx`.
    #[cfg(feature = "iperf-udp")]
    pub fn new(
        tcp: &[SocketHandle],
        udp: SocketHandle,
        port: u16,
        rx: &'a mut [u8],
        tx: &'a mut [u8],
    ) -> Self {
        let n = tcp.len().min(N);
        Self {
            pool: PoolServer::new(port, rx, tx),
            tcp: heapless::Vec::from_slice(&tcp[..n]).unwrap_or_default(),
            udp,
            memory: None,
        }
    }

    /// A server on `port` whose sockets it makes in `sockets` from `b` (see the module
    /// docs): a data socket per chunk of `b.data` (at most `N - 2`, and at most `S` are
    /// used), first in the set so that a stream's SYN finds one before a control socket,
    /// then the two control sockets and the UDP socket. The set needs room for `2 + ` the
    /// chunks (`+ 1` with feature `iperf-udp`).
    ///
    /// Always inlined, as [`crate::apps::DeviceApps::new`], so that a caller building it in
    /// a static builds it in one frame.
    #[inline(always)]
    pub fn from_buffers<I>(sockets: &mut SocketSet<'a>, b: IperfBuffers<'a, I>, port: u16) -> Self
    where
        I: IntoIterator<Item = &'a mut [u8]>,
    {
        let chunks: Lender<'a, u8, N> = Lender::new(b.data);
        let d = chunks.len().min(N.saturating_sub(2));
        let mut tcp = heapless::Vec::new();
        for _ in 0..d {
            let _ = tcp.push(sockets.add(parked_tcp()));
        }
        for c in b.control {
            let _ = tcp.push(sockets.add(tcp_socket(c)));
        }
        let mut pool = PoolServer::new(port, b.json_rx, b.json_tx);
        pool.set_data_slots(d);
        Self {
            pool,
            tcp,
            #[cfg(feature = "iperf-udp")]
            udp: sockets.add(parked_udp()),
            memory: Some(DataMemory {
                chunks,
                window: b.window,
                holder: [None; N],
                #[cfg(feature = "iperf-udp")]
                udp_rx: b.udp_rx,
                #[cfg(feature = "iperf-udp")]
                udp_meta: Lender::new(b.udp_meta),
                #[cfg(feature = "iperf-udp")]
                udp_chunk: None,
            }),
        }
    }

    /// The test session (phase, parameters, live counters).
    pub fn session(&self) -> &Session<'a, S> {
        self.pool.session()
    }

    /// Tests done, failed, connections denied, sockets reclaimed, connections evicted.
    pub fn counters(&self) -> ServerCounters {
        self.pool.counters()
    }

    /// Takes the outcome of the last finished test, if any is new.
    pub fn take_outcome(&mut self) -> Option<Result<TestReport<S>, Failure>> {
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

    /// The server's sockets in `set` for one poll.
    fn sockets<'p>(
        &'p mut self,
        set: &'p mut SocketSet<'a>,
        flush: &'p mut dyn FnMut(&mut SocketSet<'a>),
    ) -> (&'p mut PoolServer<'a, IpEndpoint, N, S>, Sockets<'p, 'a, N>) {
        (
            &mut self.pool,
            Sockets {
                set,
                tcp: &mut self.tcp,
                #[cfg(feature = "iperf-udp")]
                udp: &mut self.udp,
                memory: self.memory.as_mut(),
                flush,
            },
        )
    }

    /// Called before the stack sees a SYN for `port`: when it is this server's port and no
    /// socket listens, frees one so the SYN finds a listener ([`PoolServer::room_for`]: a
    /// spent socket, else the connection or idle test idle longest beyond the grace, else a
    /// half-open one, unanswered before answered). `flush` runs the interface's egress, so
    /// an evicted peer gets its RST before the socket listens again. True when the SYN is to
    /// be dropped unanswered instead (a handshake we answered may be completing; see
    /// [`crate::evict::Choice::Defer`]).
    pub fn make_room(
        &mut self,
        port: u16,
        sockets: &mut SocketSet<'a>,
        now: Instant,
        flush: &mut dyn FnMut(&mut SocketSet<'a>),
    ) -> bool {
        let (pool, mut s) = self.sockets(sockets, flush);
        // Never Freeing here: `free` listens at once.
        pool.room_for(port, &mut s, micros(now)) == Room::Defer
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

    /// True when `handle` is one of the server's TCP sockets.
    pub fn owns(&self, handle: SocketHandle) -> bool {
        self.tcp.contains(&handle)
    }

    /// Does all pending work: accepts, reads and writes control and data, runs timers.
    /// Call after every `Interface::poll`.
    pub fn poll(&mut self, sockets: &mut SocketSet<'a>, now: Instant) {
        let mut no_flush = |_: &mut SocketSet<'a>| {};
        let (pool, mut s) = self.sockets(sockets, &mut no_flush);
        pool.poll(&mut s, micros(now));
    }
}
