//! smoltcp adapter (feature `smoltcp`): an iperf3 server for a device, over sockets in a
//! `smoltcp::iface::SocketSet` the caller owns. No heap; data moves zero-copy through the
//! sockets' own buffers (received TCP bytes are counted and dropped in place, sent TCP
//! bytes are claimed in the transmit ring without copying).
//!
//! # Two ways to give it sockets
//! - [`SmoltcpIperfServer::from_buffers`] (what `DeviceApps` and the firmware use): the
//!   server makes its sockets: two control sockets over [`IperfBuffers`] (the test's control
//!   connection, and one to answer a second client ACCESS_DENIED), and data sockets without
//!   buffers, each lent a share of the device's data memory ([`SmoltcpDataMemory`],
//!   [`crate::data_memory`], shared with the iperf 2 server) only while it listens for or
//!   carries a stream, and the UDP socket one during a UDP test: the windows cost nothing
//!   twice, and a test's streams share the memory ([`crate::data_memory::stream_share`]:
//!   one or two streams get the window and send buffer the device was sized for, more an
//!   equal part each, never a window under two segments). Poll it with
//!   [`poll_lent`](SmoltcpIperfServer::poll_lent).
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
//! use linklab_perf::data_memory::{DataPlan, SmoltcpDataMemory};
//! use linklab_perf::iperf::device::{IperfBuffers, SmoltcpIperfServer};
//! use smoltcp::iface::{Interface, SocketSet};
//! use smoltcp::phy::Device;
//! use smoltcp::time::Instant;
//!
//! fn serve<'a, D: Device>(
//!     iface: &mut Interface,
//!     device: &mut D,
//!     sockets: &mut SocketSet<'a>,
//!     buffers: IperfBuffers<'a>,
//!     memory: &mut SmoltcpDataMemory<'a>,
//!     plan: DataPlan,
//!     now: impl Fn() -> Instant,
//! ) -> ! {
//!     let mut server = SmoltcpIperfServer::<6, 4>::from_buffers(sockets, buffers, 5201, plan);
//!     loop {
//!         let t = now();
//!         iface.poll(t, device, sockets);
//!         server.poll_lent(sockets, memory, t);
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

use super::pool::{PoolServer, PoolSockets};
use super::report::TestReport;
use super::session::{Failure, Session};
use super::wire::MAX_STREAMS;
use crate::data_memory::{DataPlan, Share, SmoltcpDataMemory, Tenant};
use crate::lifetime::{evict, relisten, tcp_socket};
use crate::pool_server::smoltcp as adapter;
use crate::rules::Peer;
use crate::socket::Maybe;
use crate::socket_buffers::TcpBuffers;

pub use super::pool::{ServerCounters, MAX_TCP_SOCKETS};

/// What [`SmoltcpIperfServer::from_buffers`] makes its control sockets of (its data sockets
/// are lent the data memory's shares).
pub struct IperfBuffers<'a> {
    /// The two control sockets' buffers: the test's control connection, and one left
    /// listening to answer a second client ACCESS_DENIED. Control messages are short (a
    /// stock client's parameters ~300 bytes, one stream's results ~350), but a receive
    /// buffer of two segments ([`crate::data_memory::MIN_RX`]) keeps the client's MSS whole:
    /// stock iperf3 sizes its UDP datagrams by it.
    pub control: [TcpBuffers<'a>; 2],
    /// Control JSON received.
    pub json_rx: &'a mut [u8],
    /// Control JSON sent.
    pub json_tx: &'a mut [u8],
}

/// What each socket holds of the data memory (slice numbers).
#[derive(Clone, Copy, Debug)]
struct Held<const N: usize> {
    tcp: [Option<u8>; N],
    #[cfg(feature = "iperf-udp")]
    udp: Option<u8>,
}

/// An iperf3 server over smoltcp sockets (see the module docs for what it needs): the
/// shared pool logic ([`PoolServer`]) over sockets in a smoltcp `SocketSet`, at most `N` TCP
/// sockets and `S` streams.
pub struct SmoltcpIperfServer<'a, const N: usize = MAX_TCP_SOCKETS, const S: usize = MAX_STREAMS> {
    pool: PoolServer<'a, IpEndpoint, N, S>,
    /// Its TCP sockets: none for a parked data socket (kept out of the set, so smoltcp does
    /// not walk it on every pass).
    tcp: heapless::Vec<Option<SocketHandle>, N>,
    /// Its UDP socket: none while parked.
    #[cfg(feature = "iperf-udp")]
    udp: Option<SocketHandle>,
    held: Held<N>,
}

/// The server's sockets in a smoltcp socket set, for one poll; `flush` runs the interface's
/// egress (so an evicted peer gets its RST before its socket listens again).
struct Sockets<'p, 'a, const N: usize> {
    set: &'p mut SocketSet<'a>,
    tcp: &'p mut [Option<SocketHandle>],
    #[cfg(feature = "iperf-udp")]
    udp: &'p mut Option<SocketHandle>,
    held: &'p mut Held<N>,
    memory: Option<&'p mut SmoltcpDataMemory<'a>>,
    flush: &'p mut dyn FnMut(&mut SocketSet<'a>),
}

impl<'a, const N: usize> PoolSockets for Sockets<'_, 'a, N> {
    type Endpoint = IpEndpoint;
    type Tcp<'t>
        = Maybe<&'t mut tcp::Socket<'a>>
    where
        Self: 't;
    #[cfg(feature = "iperf-udp")]
    type Udp<'t>
        = Maybe<&'t mut udp::Socket<'a>>
    where
        Self: 't;

    fn tcp_count(&self) -> usize {
        self.tcp.len()
    }

    fn tcp(&mut self, i: usize) -> Self::Tcp<'_> {
        match self.tcp[i] {
            Some(h) => Maybe::Socket(self.set.get_mut::<tcp::Socket>(h)),
            None => Maybe::Parked,
        }
    }

    #[cfg(feature = "iperf-udp")]
    fn udp(&mut self) -> Self::Udp<'_> {
        match *self.udp {
            Some(h) => Maybe::Socket(self.set.get_mut::<udp::Socket>(h)),
            None => Maybe::Parked,
        }
    }

    /// Listens again at once, in a fresh slot (see [`relisten`]); an evicted peer's RST is
    /// sent first ([`evict`]).
    fn free(&mut self, i: usize, port: u16, evicted: bool) -> bool {
        if let Some(h) = self.tcp[i] {
            self.tcp[i] = Some(if evicted {
                evict(self.set, h, port, self.flush)
            } else {
                relisten(self.set, h, port)
            });
        }
        true
    }

    /// Makes data socket `i` anew over a share of the data memory (in the slot it left).
    fn prepare(&mut self, i: usize, share: Share) -> bool {
        let Some(m) = self.memory.as_deref_mut() else {
            return true;
        };
        if self.held.tcp[i].is_some() {
            return true;
        }
        let Some((id, bytes)) = m.bytes.lend(Tenant::Iperf3, share.len(), false) else {
            return false;
        };
        let (rx, tx) = bytes.split_at_mut(share.rx.min(bytes.len()));
        if let Some(h) = self.tcp[i].take() {
            let _ = self.set.remove(h);
        }
        self.tcp[i] = Some(self.set.add(tcp_socket(TcpBuffers { rx, tx })));
        self.held.tcp[i] = Some(id as u8);
        true
    }

    /// Makes data socket `i` anew without buffers and gives its share back.
    fn release(&mut self, i: usize) {
        let Some(m) = self.memory.as_deref_mut() else {
            return;
        };
        if let Some(id) = self.held.tcp[i].take() {
            if let Some(h) = self.tcp[i].take() {
                let _ = self.set.remove(h);
            }
            // SAFETY: the only socket made over slice `id` was just removed from the set and
            // dropped.
            unsafe { m.bytes.give_back(usize::from(id)) };
        }
    }

    /// Makes the UDP socket anew over a share of the data memory and its records.
    #[cfg(feature = "iperf-udp")]
    fn prepare_udp(&mut self, share: Share) -> bool {
        let Some(m) = self.memory.as_deref_mut() else {
            return true;
        };
        if self.held.udp.is_some() {
            return true;
        }
        let Some((id, bytes)) = m.bytes.lend(Tenant::Iperf3, share.len(), false) else {
            return false;
        };
        let (Some((_, rx_meta)), Some((_, tx_meta))) = (m.udp_meta.lend(), m.udp_meta.lend())
        else {
            // SAFETY: slice `id` and the records lent (if one was) were given to nothing.
            unsafe {
                m.bytes.give_back(id);
                m.udp_meta.give_back(0);
                m.udp_meta.give_back(1);
            }
            return false;
        };
        let (rx, tx) = bytes.split_at_mut(share.rx.min(bytes.len()));
        if let Some(h) = self.udp.take() {
            let _ = self.set.remove(h);
        }
        *self.udp = Some(self.set.add(udp::Socket::new(
            udp::PacketBuffer::new(rx_meta, rx),
            udp::PacketBuffer::new(tx_meta, tx),
        )));
        self.held.udp = Some(id as u8);
        true
    }

    /// Makes the UDP socket anew without buffers and gives its share and records back.
    #[cfg(feature = "iperf-udp")]
    fn release_udp(&mut self) {
        let Some(m) = self.memory.as_deref_mut() else {
            return;
        };
        if let Some(id) = self.held.udp.take() {
            if let Some(h) = self.udp.take() {
                let _ = self.set.remove(h);
            }
            // SAFETY: the only socket made over slice `id` and the two records was just
            // removed from the set and dropped.
            unsafe {
                m.bytes.give_back(usize::from(id));
                m.udp_meta.give_back(0);
                m.udp_meta.give_back(1);
            }
        }
    }

    fn claim(&mut self) -> bool {
        self.memory
            .as_deref_mut()
            .is_none_or(|m| m.bytes.claim(Tenant::Iperf3))
    }

    fn unclaim(&mut self) {
        if let Some(m) = self.memory.as_deref_mut() {
            m.bytes.unclaim(Tenant::Iperf3);
        }
    }
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
            tcp: tcp[..n].iter().map(|h| Some(*h)).collect(),
            udp: Some(udp),
            held: Held {
                tcp: [None; N],
                udp: None,
            },
        }
    }

    /// A server on `port` whose sockets it makes in `sockets` (see the module docs): `N - 2`
    /// data sockets without buffers, first in the set so that a stream's SYN finds one before
    /// a control socket, then the two control sockets over `b` and the UDP socket. The set
    /// needs room for `N` (`N + 1` with feature `iperf-udp`). Its data sockets share the data
    /// memory as `plan` says; poll it with [`poll_lent`](Self::poll_lent).
    ///
    /// Always inlined, as [`crate::apps::DeviceApps::new`], so that a caller building it in
    /// a static builds it in one frame.
    #[inline(always)]
    pub fn from_buffers(
        sockets: &mut SocketSet<'a>,
        b: IperfBuffers<'a>,
        port: u16,
        plan: DataPlan,
    ) -> Self {
        let d = N.saturating_sub(2);
        let mut tcp = heapless::Vec::new();
        for _ in 0..d {
            let _ = tcp.push(None);
        }
        for c in b.control {
            let _ = tcp.push(Some(sockets.add(tcp_socket(c))));
        }
        let mut pool = PoolServer::new(port, b.json_rx, b.json_tx);
        pool.set_data_memory(d, plan);
        Self {
            pool,
            tcp,
            #[cfg(feature = "iperf-udp")]
            udp: None,
            held: Held {
                tcp: [None; N],
                #[cfg(feature = "iperf-udp")]
                udp: None,
            },
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
        adapter::poll_at(&self.pool)
    }

    /// The server's sockets in `set` for one poll.
    fn sockets<'p>(
        &'p mut self,
        set: &'p mut SocketSet<'a>,
        memory: Option<&'p mut SmoltcpDataMemory<'a>>,
        flush: &'p mut dyn FnMut(&mut SocketSet<'a>),
    ) -> (&'p mut PoolServer<'a, IpEndpoint, N, S>, Sockets<'p, 'a, N>) {
        (
            &mut self.pool,
            Sockets {
                set,
                tcp: &mut self.tcp,
                #[cfg(feature = "iperf-udp")]
                udp: &mut self.udp,
                held: &mut self.held,
                memory,
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
        memory: Option<&mut SmoltcpDataMemory<'a>>,
        now: Instant,
        flush: &mut dyn FnMut(&mut SocketSet<'a>),
    ) -> bool {
        let (pool, mut s) = self.sockets(sockets, memory, flush);
        // Never Freeing here: `free` listens at once.
        adapter::make_room(pool, port, &mut s, now)
    }

    /// Our SYN-ACK from `port` to `peer` left at `now`: the socket half-open with `peer`, if
    /// it is one of ours, is answered ([`PoolServer::note_answered`]).
    pub fn note_answered(&mut self, port: u16, peer: Peer, sockets: &SocketSet<'_>, now: Instant) {
        adapter::note_answered(&mut self.pool, &self.tcp, (port, peer), sockets, now);
    }

    /// True when `handle` is one of the server's TCP sockets.
    pub fn owns(&self, handle: SocketHandle) -> bool {
        self.tcp.contains(&Some(handle))
    }

    /// Does all pending work: accepts, reads and writes control and data, runs timers.
    /// Call after every `Interface::poll` (a server made by [`new`](Self::new)).
    pub fn poll(&mut self, sockets: &mut SocketSet<'a>, now: Instant) {
        let mut no_flush = |_: &mut SocketSet<'a>| {};
        let (pool, mut s) = self.sockets(sockets, None, &mut no_flush);
        adapter::serve(pool, &mut s, now);
    }

    /// [`poll`](Self::poll) for a server made by [`from_buffers`](Self::from_buffers), its
    /// data sockets lent shares of `memory`. With iperf 2 not inlined: `DeviceApps` calls it
    /// twice when iperf 2 gives memory back.
    #[cfg_attr(feature = "iperf2", inline(never))]
    pub fn poll_lent(
        &mut self,
        sockets: &mut SocketSet<'a>,
        memory: &mut SmoltcpDataMemory<'a>,
        now: Instant,
    ) {
        let mut no_flush = |_: &mut SocketSet<'a>| {};
        let (pool, mut s) = self.sockets(sockets, Some(memory), &mut no_flush);
        adapter::serve(pool, &mut s, now);
    }
}
