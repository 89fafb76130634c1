//! iperf 2's server on embassy-net: the shared pool logic ([`Iperf2Pool`]) over sockets made
//! anew over slices of the data memory it shares with the iperf3 server ([`SharedMemory`]),
//! polled whenever one of its sockets, its next deadline or the iperf3 task wakes it.

use core::convert::Infallible;
use core::future::poll_fn;
use core::task::{Context, Poll};

use embassy_net::tcp::TcpSocket;
use embassy_net::udp::{PacketMetadata, UdpSocket};
use embassy_net::{IpAddress, IpEndpoint, Ipv4Address, Stack};
use embassy_time::Instant;

use super::memory::SharedMemory;
use super::socket::{poll_once, Tcp, Udp};
use super::{tcp_socket, AppCounters, Port, ServiceGate, TcpBuffers};
use crate::data_memory::{Share, Tenant};
use crate::iperf2::pool::{Iperf2Pool, Iperf2Sizes, Iperf2Sockets};
use crate::iperf2::DEFAULT_PORT;
use crate::lend::Lender;
use crate::pool_server::embassy::{due_again, serve_pass};
use crate::rules::Peer;
use crate::socket::{Maybe, TcpOps};

/// What the iperf 2 server needs besides its sockets (`M` TCP and one UDP, made by the task:
/// `M + 1` of embassy-net's `StackResources`): the data memory it shares with the iperf3
/// server, the UDP socket's datagram records, and the sizes of the slices it borrows.
pub struct Iperf2Buffers {
    /// The data memory, shared with the iperf3 server (one test at a time across both).
    pub memory: &'static SharedMemory,
    /// The UDP socket's records: received, sent.
    pub udp_meta: [&'static mut [PacketMetadata]; 2],
    /// The slices: a stream's window and send buffer, the UDP socket's bytes.
    pub sizes: Iperf2Sizes,
}

/// A TCP socket's buffers in its slice of the memory: `share.rx` of receive ring, the send
/// buffer after it.
fn stream_buffers(bytes: &mut [u8], share: Share) -> TcpBuffers<'_> {
    let (rx, tx) = bytes.split_at_mut(share.rx.min(bytes.len()));
    TcpBuffers { rx, tx }
}

/// The server's sockets, the memory and the task context, for one poll.
struct Sockets<'p, 'a, 'c, const M: usize> {
    stack: Stack<'a>,
    /// The TCP sockets; one without a slice is parked, out of the stack's socket set (so
    /// embassy-net's runner does not walk it on every pass), as the main loop's are.
    tcp: &'p mut [Option<TcpSocket<'a>>; M],
    /// The memory's slice each TCP socket holds, and how it is split.
    slices: &'p mut [Option<(u8, Share)>; M],
    /// The UDP socket, parked (out of the set) without a slice.
    udp: &'p mut Option<UdpSocket<'a>>,
    udp_slice: &'p mut Option<u8>,
    meta: &'p mut Lender<'static, PacketMetadata, 2>,
    memory: &'static SharedMemory,
    cx: &'p mut Context<'c>,
}

impl<'a, 'c, const M: usize> Iperf2Sockets for Sockets<'_, 'a, 'c, M> {
    type Endpoint = IpEndpoint;
    type Tcp<'t>
        = Maybe<Tcp<'t, 'a, 'c>>
    where
        Self: 't;
    type Udp<'t>
        = Maybe<Udp<'t, 'a, 'c>>
    where
        Self: 't;

    fn tcp_count(&self) -> usize {
        M
    }

    fn tcp(&mut self, i: usize) -> Self::Tcp<'_> {
        match &mut self.tcp[i] {
            Some(socket) => Maybe::Socket(Tcp {
                socket,
                cx: self.cx,
                may_leave_bytes: false,
            }),
            None => Maybe::Parked,
        }
    }

    fn udp(&mut self) -> Self::Udp<'_> {
        match self.udp {
            Some(socket) => Maybe::Socket(Udp {
                socket,
                cx: self.cx,
            }),
            None => Maybe::Parked,
        }
    }

    fn prepare(&mut self, i: usize, share: Share, idle: bool) -> bool {
        let stack = self.stack;
        let lend = (Tenant::Iperf2, share.len(), idle);
        let slot = (&mut self.tcp[i], &mut self.slices[i]);
        self.memory.lend_to(lend, share, slot, |bytes| {
            tcp_socket(stack, stream_buffers(bytes, share))
        })
    }

    fn release(&mut self, i: usize) {
        if self.memory.take_back(&mut self.tcp[i], &mut self.slices[i]) {
            self.memory.wake(Tenant::Iperf3);
        }
    }

    fn set_busy(&mut self, i: usize) {
        if let Some((id, _)) = self.slices[i] {
            self.memory.with(|m| m.set_busy(usize::from(id)));
        }
    }

    fn prepare_udp(&mut self, share: Share, idle: bool) -> bool {
        if self.udp_slice.is_some() {
            return true;
        }
        let lent = self
            .memory
            .with(|m| m.lend(Tenant::Iperf2, share.len(), idle))
            .flatten();
        let Some((id, bytes)) = lent else {
            return false;
        };
        let (Some((_, rx_meta)), Some((_, tx_meta))) = (self.meta.lend(), self.meta.lend()) else {
            // SAFETY: slice `id` and the records lent (if one was) were given to nothing.
            self.memory.with(|m| unsafe { m.give_back(id) });
            // SAFETY: as above: no socket was made over the records.
            unsafe {
                self.meta.give_back(0);
                self.meta.give_back(1);
            }
            return false;
        };
        let (rx, tx) = bytes.split_at_mut(share.rx.min(bytes.len()));
        *self.udp = Some(UdpSocket::new(self.stack, rx_meta, rx, tx_meta, tx));
        *self.udp_slice = Some(id as u8);
        true
    }

    fn release_udp(&mut self) {
        if let Some(id) = self.udp_slice.take() {
            *self.udp = None;
            // SAFETY: the only socket made over slice `id` and the two records was just
            // dropped.
            self.memory
                .with(|m| unsafe { m.give_back(usize::from(id)) });
            // SAFETY: the socket over the two records was the one just dropped.
            unsafe {
                self.meta.give_back(0);
                self.meta.give_back(1);
            }
            self.memory.wake(Tenant::Iperf3);
        }
    }

    fn set_udp_busy(&mut self) {
        if let Some(id) = *self.udp_slice {
            self.memory.with(|m| m.set_busy(usize::from(id)));
        }
    }

    fn set_udp_idle(&mut self) {
        if let Some(id) = *self.udp_slice {
            self.memory.with(|m| m.set_idle(usize::from(id)));
        }
    }

    fn claim(&mut self) -> bool {
        self.memory
            .with(|m| m.claim(Tenant::Iperf2))
            .unwrap_or(false)
    }

    fn unclaim(&mut self) {
        self.memory.with(|m| m.unclaim(Tenant::Iperf2));
    }

    fn must_yield(&self) -> bool {
        self.memory
            .with(|m| m.must_yield(Tenant::Iperf2))
            .unwrap_or(false)
    }

    fn memory_taken(&self) -> bool {
        self.memory
            .with(|m| m.holder() == Some(Tenant::Iperf3))
            .unwrap_or(true)
    }

    /// Listens again made anew over the same slice: a fresh slot in the stack's socket set,
    /// as the iperf3 server's reclaimed sockets (`super::iperf`'s `remake`: smoltcp keeps a
    /// slot silent for a second after a SYN-ACK to a spoofed peer could not be sent).
    fn relisten(&mut self, i: usize, port: u16) {
        // The old socket is dropped here (embassy-net removes it from the stack).
        self.tcp[i] = None;
        if let Some((id, share)) = self.slices[i] {
            // SAFETY: the only socket made over slice `id` was just dropped.
            let bytes = self
                .memory
                .with(|m| unsafe { m.lend_again(usize::from(id)) })
                .flatten();
            self.tcp[i] = bytes.map(|b| tcp_socket(self.stack, stream_buffers(b, share)));
        }
        let _ = self.tcp(i).listen(port);
    }

    fn connect(&mut self, i: usize, to: Peer, _local_port: u16) -> bool {
        // embassy-net picks the local port.
        let [a, b, c, d] = to.addr;
        let remote = IpEndpoint::new(IpAddress::Ipv4(Ipv4Address::new(a, b, c, d)), to.port);
        let Some(socket) = &mut self.tcp[i] else {
            return false;
        };
        !matches!(poll_once(socket.connect(remote), self.cx), Some(Err(_)))
    }

    fn flush(&mut self) -> bool {
        // The stack sends on its runner's next pass.
        false
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

/// Serves iperf 2 on port 5001 forever (see [`Iperf2Pool`]): TCP (`-P`, `-r`, `-d`, `-R`,
/// `--full-duplex`, `-X`) and UDP, over `M` TCP sockets (at most
/// [`MAX_TCP_SOCKETS`](crate::iperf2::pool::MAX_TCP_SOCKETS)) and
/// one UDP socket, each made over a slice of `buffers.memory` while it carries a test or
/// waits for one. Counts into `counters`; with `gate`, a SYN finding nothing listening gets a
/// listener if a stream may be taken now, else frees what an idle test or a half-open peer
/// holds ([`Iperf2Pool::room_for`]).
pub async fn iperf2_server<const M: usize>(
    stack: Stack<'_>,
    buffers: Iperf2Buffers,
    counters: &AppCounters,
    gate: Option<&ServiceGate>,
) -> ! {
    let Iperf2Buffers {
        memory,
        udp_meta,
        sizes,
    } = buffers;
    let mut tcp: [Option<TcpSocket<'_>>; M] = [const { None }; M];
    let mut slices = [None; M];
    let mut udp = None;
    let mut udp_slice = None;
    let mut meta: Lender<'static, PacketMetadata, 2> = Lender::new(udp_meta);
    let mut pool = Iperf2Pool::<IpEndpoint, M>::new(DEFAULT_PORT, sizes);
    let port = pool.port();
    if let Some(g) = gate {
        g.serve(Port::Tcp(port));
    }
    let views: [Option<usize>; M] = core::array::from_fn(|_| counters.claim_view());
    let mut timer_at: Option<u64> = None;
    let never = poll_fn(|cx| loop {
        let now = Instant::now().as_micros();
        memory.register(Tenant::Iperf2, cx.waker());
        let mut s = Sockets {
            stack,
            tcp: &mut tcp,
            slices: &mut slices,
            udp: &mut udp,
            udp_slice: &mut udp_slice,
            meta: &mut meta,
            memory,
            cx,
        };
        serve_pass(
            &mut pool,
            &mut s,
            (gate, M, now),
            |g, port, s| g.asked(Port::Tcp(port), s.cx),
            |s, i| {
                let sock = s.tcp(i);
                (sock.state(), sock.peer())
            },
        );
        for (i, view) in views.iter().enumerate() {
            let mut sock = s.tcp(i);
            let state = sock.state();
            counters.set_view(*view, port, state);
            sock.watch(state);
        }
        s.udp().watch();
        counters.set_iperf2(&pool.counters(), pool.open_streams(), &pool.syns());
        if due_again(&pool, now, &mut timer_at, cx) {
            continue;
        }
        return Poll::<Infallible>::Pending;
    })
    .await;
    match never {}
}
