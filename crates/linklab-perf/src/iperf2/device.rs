//! smoltcp adapter (feature `smoltcp`): iperf 2's server ([`super::pool::Iperf2Pool`]) over
//! sockets in a `smoltcp::iface::SocketSet` the caller owns. Its sockets own no buffers:
//! each is made anew over a slice of the device's data memory
//! ([`SmoltcpDataMemory`], shared with the iperf3 server) while it listens for, carries or
//! sends a stream, and parked without buffers otherwise. No heap.
//!
//! `DeviceApps` (`crate::apps`) runs it beside the iperf3 server; alone:
//! ```no_run
//! use linklab_perf::data_memory::SmoltcpDataMemory;
//! use linklab_perf::iperf2::device::SmoltcpIperf2Server;
//! use linklab_perf::iperf2::pool::Iperf2Sizes;
//! use smoltcp::iface::{Interface, SocketSet};
//! use smoltcp::phy::Device;
//! use smoltcp::time::Instant;
//!
//! fn serve<'a, D: Device>(
//!     iface: &mut Interface,
//!     device: &mut D,
//!     sockets: &mut SocketSet<'a>, // room for 3 + 1 sockets
//!     memory: &mut SmoltcpDataMemory<'a>,
//!     now: impl Fn() -> Instant,
//! ) -> ! {
//!     let sizes = Iperf2Sizes { window: 8 * 1460, tx: 4 * 1460, udp_rx: 4 * 1470, udp_tx: 512 };
//!     let mut server = SmoltcpIperf2Server::<3>::new(5001, sizes);
//!     loop {
//!         let t = now();
//!         server.start_connects(iface, sockets); // the connect-backs asked for
//!         iface.poll(t, device, sockets);
//!         server.poll(sockets, memory, t);
//!         let wake = [iface.poll_at(t, sockets), server.poll_at()].into_iter().flatten().min();
//!         // sleep until `wake` or the next packet
//!     }
//! }
//! ```

use smoltcp::iface::{Interface, SocketHandle, SocketSet};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{IpAddress, IpEndpoint, Ipv4Address};

use super::pool::{Iperf2Counters, Iperf2Pool, Iperf2Sizes, Iperf2Sockets};
use crate::data_memory::{Share, SmoltcpDataMemory, Tenant};
use crate::lifetime::{relisten, tcp_socket};
use crate::pool_server::smoltcp as adapter;
use crate::rules::Peer;
use crate::socket::Maybe;
use crate::socket_buffers::TcpBuffers;

pub use super::pool::MAX_TCP_SOCKETS;

/// What socket `i` holds of the data memory.
#[derive(Clone, Copy, Debug, Default)]
struct Held {
    /// The slice's number in the data memory.
    slice: Option<u8>,
}

/// iperf 2's server over smoltcp sockets: at most `M` TCP sockets (a stream or a
/// connect-back each: `-P 2` needs 2, `-d` 2, and one more listens for the next client's
/// first stream while a test may still open one) and one UDP socket.
pub struct SmoltcpIperf2Server<const M: usize = MAX_TCP_SOCKETS> {
    pool: Iperf2Pool<IpEndpoint, M>,
    /// Its TCP sockets: none while parked (kept out of the set, so smoltcp does not walk
    /// them on every pass).
    tcp: [Option<SocketHandle>; M],
    held: [Held; M],
    /// Its UDP socket: none while parked.
    udp: Option<SocketHandle>,
    udp_slice: Option<u8>,
    /// Connects asked for, made before the interface's next ingress or egress (smoltcp's
    /// `connect` needs the interface's context).
    connects: heapless::Vec<(usize, IpEndpoint, u16), M>,
}

/// The server's sockets in a smoltcp socket set and the memory, for one poll.
struct Sockets<'p, 'a, const M: usize> {
    set: &'p mut SocketSet<'a>,
    tcp: &'p mut [Option<SocketHandle>; M],
    held: &'p mut [Held; M],
    udp: &'p mut Option<SocketHandle>,
    udp_slice: &'p mut Option<u8>,
    memory: &'p mut SmoltcpDataMemory<'a>,
    connects: &'p mut heapless::Vec<(usize, IpEndpoint, u16), M>,
    flush: &'p mut dyn FnMut(&mut SocketSet<'a>),
}

impl<'a, const M: usize> Iperf2Sockets for Sockets<'_, 'a, M> {
    type Endpoint = IpEndpoint;
    type Tcp<'t>
        = Maybe<&'t mut tcp::Socket<'a>>
    where
        Self: 't;
    type Udp<'t>
        = Maybe<&'t mut udp::Socket<'a>>
    where
        Self: 't;

    fn tcp_count(&self) -> usize {
        M
    }

    fn tcp(&mut self, i: usize) -> Self::Tcp<'_> {
        match self.tcp[i] {
            Some(h) => Maybe::Socket(self.set.get_mut::<tcp::Socket>(h)),
            None => Maybe::Parked,
        }
    }

    fn udp(&mut self) -> Self::Udp<'_> {
        match *self.udp {
            Some(h) => Maybe::Socket(self.set.get_mut::<udp::Socket>(h)),
            None => Maybe::Parked,
        }
    }

    fn prepare(&mut self, i: usize, share: Share, idle: bool) -> bool {
        if self.held[i].slice.is_some() {
            return true;
        }
        let Some((id, bytes)) = self.memory.bytes.lend(Tenant::Iperf2, share.len(), idle) else {
            return false;
        };
        let (rx, tx) = bytes.split_at_mut(share.rx.min(bytes.len()));
        if let Some(h) = self.tcp[i].take() {
            let _ = self.set.remove(h);
        }
        self.tcp[i] = Some(self.set.add(tcp_socket(TcpBuffers { rx, tx })));
        self.held[i].slice = Some(id as u8);
        true
    }

    fn release(&mut self, i: usize) {
        self.connects.retain(|c| c.0 != i);
        if let Some(id) = self.held[i].slice.take() {
            if let Some(h) = self.tcp[i].take() {
                let _ = self.set.remove(h);
            }
            // SAFETY: the only socket made over slice `id` was just removed from the set and
            // dropped.
            unsafe { self.memory.bytes.give_back(usize::from(id)) };
        }
    }

    fn set_busy(&mut self, i: usize) {
        if let Some(id) = self.held[i].slice {
            self.memory.bytes.set_busy(usize::from(id));
        }
    }

    fn prepare_udp(&mut self, share: Share, idle: bool) -> bool {
        if self.udp_slice.is_some() {
            return true;
        }
        let Some((id, bytes)) = self.memory.bytes.lend(Tenant::Iperf2, share.len(), idle) else {
            return false;
        };
        let m = &mut self.memory.udp_meta;
        let (Some((_, rx_meta)), Some((_, tx_meta))) = (m.lend(), m.lend()) else {
            // SAFETY: slice `id` was lent just now and given to nothing; the records lent (if
            // one was) were given to nothing either.
            unsafe {
                self.memory.bytes.give_back(id);
                m.give_back(0);
                m.give_back(1);
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
        *self.udp_slice = Some(id as u8);
        true
    }

    fn release_udp(&mut self) {
        if let Some(id) = self.udp_slice.take() {
            if let Some(h) = self.udp.take() {
                let _ = self.set.remove(h);
            }
            // SAFETY: the only socket made over slice `id` and the two records was just
            // removed from the set and dropped.
            unsafe {
                self.memory.bytes.give_back(usize::from(id));
                self.memory.udp_meta.give_back(0);
                self.memory.udp_meta.give_back(1);
            }
        }
    }

    fn set_udp_busy(&mut self) {
        if let Some(id) = *self.udp_slice {
            self.memory.bytes.set_busy(usize::from(id));
        }
    }

    fn set_udp_idle(&mut self) {
        if let Some(id) = *self.udp_slice {
            self.memory.bytes.set_idle(usize::from(id));
        }
    }

    fn claim(&mut self) -> bool {
        self.memory.bytes.claim(Tenant::Iperf2)
    }

    fn unclaim(&mut self) {
        self.memory.bytes.unclaim(Tenant::Iperf2)
    }

    fn must_yield(&self) -> bool {
        self.memory.bytes.must_yield(Tenant::Iperf2)
    }

    fn memory_taken(&self) -> bool {
        self.memory.bytes.holder() == Some(Tenant::Iperf3)
    }

    fn connect(&mut self, i: usize, to: Peer, local_port: u16) -> bool {
        let [a, b, c, d] = to.addr;
        let remote = IpEndpoint::new(IpAddress::Ipv4(Ipv4Address::new(a, b, c, d)), to.port);
        self.connects.push((i, remote, local_port)).is_ok()
    }

    /// In a fresh slot (see [`crate::lifetime::relisten`]).
    fn relisten(&mut self, i: usize, port: u16) {
        if let Some(h) = self.tcp[i] {
            self.tcp[i] = Some(relisten(self.set, h, port));
        }
    }

    fn flush(&mut self) -> bool {
        (self.flush)(self.set);
        true
    }

    fn udp_addr(e: IpEndpoint) -> Option<[u8; 4]> {
        #[allow(irrefutable_let_patterns)]
        let IpAddress::Ipv4(a) = e.addr
        else {
            return None;
        };
        Some(a.octets())
    }
}

impl<const M: usize> SmoltcpIperf2Server<M> {
    /// A server on `port` with `M` TCP sockets and a UDP socket, added to a socket set
    /// only while they are lent a slice of the data memory (of `sizes`): the set needs room
    /// for `M + 1`.
    pub fn new(port: u16, sizes: Iperf2Sizes) -> Self {
        Self {
            pool: Iperf2Pool::new(port, sizes),
            tcp: [None; M],
            held: [Held::default(); M],
            udp: None,
            udp_slice: None,
            connects: heapless::Vec::new(),
        }
    }

    /// The server's counters.
    pub fn counters(&self) -> Iperf2Counters {
        self.pool.counters()
    }

    /// What became of the SYNs to its port.
    pub fn syns(&self) -> crate::syns::SynCounts {
        self.pool.syns()
    }

    /// Streams and flows of the running test.
    pub fn open_streams(&self) -> usize {
        self.pool.open_streams()
    }

    /// True when `handle` is one of the server's TCP sockets.
    pub fn owns(&self, handle: SocketHandle) -> bool {
        self.tcp.contains(&Some(handle))
    }

    /// True while iperf3's test holds the memory and this server holds nothing of it
    /// ([`Iperf2Pool::dormant`]): its polls have nothing to do.
    fn dormant(&self, memory: &SmoltcpDataMemory<'_>) -> bool {
        memory.bytes.holder() == Some(Tenant::Iperf3) && self.pool.dormant()
    }

    /// When the server next needs [`poll`](Self::poll) (at once while a connect waits for
    /// [`start_connects`](Self::start_connects)).
    pub fn poll_at(&self) -> Option<Instant> {
        if self.pool.dormant() {
            return None;
        }
        if !self.connects.is_empty() {
            return Some(Instant::from_micros(0));
        }
        adapter::poll_at(&self.pool)
    }

    fn sockets<'p, 'a>(
        &'p mut self,
        set: &'p mut SocketSet<'a>,
        memory: &'p mut SmoltcpDataMemory<'a>,
        flush: &'p mut dyn FnMut(&mut SocketSet<'a>),
    ) -> (&'p mut Iperf2Pool<IpEndpoint, M>, Sockets<'p, 'a, M>) {
        (
            &mut self.pool,
            Sockets {
                set,
                tcp: &mut self.tcp,
                held: &mut self.held,
                udp: &mut self.udp,
                udp_slice: &mut self.udp_slice,
                memory,
                connects: &mut self.connects,
                flush,
            },
        )
    }

    /// Does all pending work (see [`Iperf2Pool::poll`]). Call after every interface poll.
    pub fn poll<'a>(
        &mut self,
        sockets: &mut SocketSet<'a>,
        memory: &mut SmoltcpDataMemory<'a>,
        now: Instant,
    ) {
        if self.dormant(memory) {
            return;
        }
        let mut no_flush = |_: &mut SocketSet<'a>| {};
        let (pool, mut s) = self.sockets(sockets, memory, &mut no_flush);
        adapter::serve(pool, &mut s, now);
    }

    /// Opens the connect-backs the last poll asked for (smoltcp's `connect` needs the
    /// interface's context): call before the interface's ingress or egress.
    pub fn start_connects(&mut self, iface: &mut Interface, sockets: &mut SocketSet<'_>) {
        while let Some((i, remote, local)) = self.connects.pop() {
            if let Some(Some(h)) = self.tcp.get(i) {
                let s = sockets.get_mut::<tcp::Socket>(*h);
                // A failed connect leaves the socket closed: the pool sees the connect-back
                // fail.
                let _ = s.connect(iface.context(), remote, local);
            }
        }
    }

    /// Called before the stack sees a SYN for `port` ([`Iperf2Pool::room_for`]); `flush` runs
    /// the interface's egress. True when the SYN is to be dropped unanswered.
    pub fn make_room<'a>(
        &mut self,
        port: u16,
        sockets: &mut SocketSet<'a>,
        memory: &mut SmoltcpDataMemory<'a>,
        now: Instant,
        flush: &mut dyn FnMut(&mut SocketSet<'a>),
    ) -> bool {
        let (pool, mut s) = self.sockets(sockets, memory, flush);
        // Never Freeing here: the flush sends the RSTs at once.
        adapter::make_room(pool, port, &mut s, now)
    }

    /// Our SYN-ACK from `port` to `peer` left at `now`.
    pub fn note_answered(&mut self, port: u16, peer: Peer, sockets: &SocketSet<'_>, now: Instant) {
        adapter::note_answered(&mut self.pool, &self.tcp, (port, peer), sockets, now);
    }
}
