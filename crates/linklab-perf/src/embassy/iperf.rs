//! The iperf3 server on embassy-net: the shared pool logic ([`PoolServer`]) over two control
//! sockets the user lends and data sockets made anew over shares of the data memory it
//! shares with the iperf 2 server ([`SharedMemory`]) while they carry a test, polled whenever
//! one of its sockets, its next deadline or the iperf 2 task wakes it.

use core::convert::Infallible;
use core::future::poll_fn;
use core::task::{Context, Poll};

use embassy_net::tcp::TcpSocket;
#[cfg(feature = "iperf-udp")]
use embassy_net::udp::{PacketMetadata, UdpSocket};
use embassy_net::{IpEndpoint, Stack};
use embassy_time::Instant;

use super::memory::SharedMemory;
use super::socket::Tcp;
#[cfg(feature = "iperf-udp")]
use super::{socket::Udp, udp_socket, UdpBuffers};
use super::{tcp_socket, AppCounters, Port, ServiceGate, TcpBuffers};
use crate::data_memory::{DataPlan, Share, Tenant};
#[cfg(doc)]
use crate::iperf::pool::MAX_TCP_SOCKETS;
use crate::iperf::pool::{PoolServer, PoolSockets};
use crate::iperf::wire::{COOKIE_SIZE, DEFAULT_PORT};
use crate::lend::Lender;
use crate::pool_server::embassy::{due_again, note_if_answered, serve_pass};
use crate::socket::{Maybe, TcpOps};

/// Where a data socket's receive ring starts in its share: 3 mod 4. Every iperf3 data
/// stream begins with the client's 37-byte cookie, and smoltcp's receive ring never rewinds
/// to its start, so from a ring on a word every later segment would land off its word (and
/// smoltcp copy it with `memcpy`'s misaligned path: 3.6 instructions per byte on the
/// Cortex-M3 instead of ~1.2); from 3 mod 4 byte 37 is on a word.
const RX_SKEW: usize = (4 - COOKIE_SIZE % 4) % 4;

/// What the iperf3 server needs: `N` TCP sockets
/// (4..=[`MAX_TCP_SOCKETS`](crate::iperf::pool::MAX_TCP_SOCKETS): two control sockets —
/// the test's, and one left listening to deny a second client — over `control`, and `N - 2`
/// data sockets, one per stream, each made over a share of `memory` while it carries one:
/// `-P p` needs `2 + p` sockets and `-P p --bidir` `2 + 2p`, and the memory a share for
/// each, [`DataPlan::stream_share`]), one UDP socket, and the control JSON buffers
/// (`json_rx` 8 KiB accepts any parameter document; a stock client's is ~300 bytes;
/// `json_tx` 4 KiB holds results for 16 streams, two streams' ~700 bytes).
pub struct IperfBuffers<'a, const N: usize> {
    /// The two control sockets' buffers. A receive buffer of two segments
    /// ([`crate::data_memory::MIN_RX`]) keeps the client's MSS whole: stock iperf3 sizes its
    /// UDP datagrams by it.
    pub control: [TcpBuffers<'a>; 2],
    /// The data memory, shared with the iperf 2 server (one test at a time across both).
    pub memory: &'static SharedMemory,
    /// How a test's streams share it.
    pub plan: DataPlan,
    /// The UDP socket's buffers (they bound the burst it absorbs).
    #[cfg(feature = "iperf-udp")]
    pub udp: UdpBuffers<'a>,
    /// Control JSON received.
    pub json_rx: &'a mut [u8],
    /// Control JSON sent.
    pub json_tx: &'a mut [u8],
}

/// The server's sockets, the memory and the task context, for one poll.
struct Sockets<'p, 'a, 'c, const N: usize> {
    stack: Stack<'a>,
    /// The TCP sockets; a data socket without a share is parked, out of the stack's socket
    /// set (so embassy-net's runner does not walk it on every pass), as the main loop's are.
    tcp: &'p mut [Option<TcpSocket<'a>>; N],
    /// The two control sockets' buffers (receive, send of each), kept to make one anew.
    control: &'p mut Lender<'a, u8, 4>,
    /// The memory's slice each data socket holds, and how it is split.
    slices: &'p mut [Option<(u8, Share)>; N],
    memory: &'static SharedMemory,
    /// The UDP socket, parked (out of the stack's socket set) but during a UDP test.
    #[cfg(feature = "iperf-udp")]
    udp: &'p mut Option<UdpSocket<'a>>,
    /// The UDP socket's buffers, kept to make it anew for each UDP test.
    #[cfg(feature = "iperf-udp")]
    udp_buffers: &'p mut UdpLender<'a>,
    cx: &'p mut Context<'c>,
    /// The gate wakes the server for more data ([`ServiceGate::wake_on_segment`]), so its
    /// streams may keep up to three bytes in their sockets.
    may_leave_bytes: bool,
}

impl<'a, 'c, const N: usize> PoolSockets for Sockets<'_, 'a, 'c, N> {
    type Endpoint = IpEndpoint;
    type Tcp<'t>
        = Maybe<Tcp<'t, 'a, 'c>>
    where
        Self: 't;
    #[cfg(feature = "iperf-udp")]
    type Udp<'t>
        = Maybe<Udp<'t, 'a, 'c>>
    where
        Self: 't;

    fn tcp_count(&self) -> usize {
        N
    }

    fn tcp(&mut self, i: usize) -> Self::Tcp<'_> {
        match &mut self.tcp[i] {
            Some(socket) => Maybe::Socket(Tcp {
                socket,
                cx: self.cx,
                may_leave_bytes: self.may_leave_bytes,
            }),
            None => Maybe::Parked,
        }
    }

    #[cfg(feature = "iperf-udp")]
    fn udp(&mut self) -> Self::Udp<'_> {
        match self.udp {
            Some(socket) => Maybe::Socket(Udp {
                socket,
                cx: self.cx,
            }),
            None => Maybe::Parked,
        }
    }

    /// Makes the UDP socket over its buffers (the test's share is the main loop's: these
    /// buffers are the socket's own).
    #[cfg(feature = "iperf-udp")]
    fn prepare_udp(&mut self, _share: Share) -> bool {
        if self.udp.is_none() {
            *self.udp = self.udp_buffers.lend().map(|b| udp_socket(self.stack, b));
        }
        self.udp.is_some()
    }

    /// Drops the UDP socket (embassy-net removes it from the stack) and keeps its buffers.
    #[cfg(feature = "iperf-udp")]
    fn release_udp(&mut self) {
        if self.udp.take().is_some() {
            // SAFETY: the only socket made over the buffers was just dropped.
            unsafe { self.udp_buffers.give_back() };
        }
    }

    /// A half-open or spent socket listens at once, made anew ([`Sockets::remake`]); an
    /// evicted one once its RST has left (embassy-net sends it on the stack's next pass,
    /// which the gate lets run).
    fn free(&mut self, i: usize, port: u16, evicted: bool) -> bool {
        if evicted {
            return false;
        }
        self.remake(i);
        self.tcp(i).listen(port)
    }

    /// Makes data socket `i` anew over a share of the memory (its receive ring from
    /// [`RX_SKEW`] on).
    fn prepare(&mut self, i: usize, share: Share) -> bool {
        let stack = self.stack;
        let lend = (Tenant::Iperf3, share.len() + 4, false);
        let slot = (&mut self.tcp[i], &mut self.slices[i]);
        self.memory.lend_to(lend, share, slot, |bytes| {
            tcp_socket(stack, data_buffers(bytes, share))
        })
    }

    /// Makes data socket `i` anew without buffers and gives its share back.
    fn release(&mut self, i: usize) {
        self.memory.take_back(&mut self.tcp[i], &mut self.slices[i]);
    }

    fn claim(&mut self) -> bool {
        let (claimed, yields) = self
            .memory
            .with(|m| (m.claim(Tenant::Iperf3), m.must_yield(Tenant::Iperf2)))
            .unwrap_or((false, false));
        if yields {
            // iperf 2's idle shares go back in its task; it wakes this one then.
            self.memory.wake(Tenant::Iperf2);
        }
        claimed
    }

    fn unclaim(&mut self) {
        self.memory.with(|m| m.unclaim(Tenant::Iperf3));
        // iperf 2 listens again over the memory.
        self.memory.wake(Tenant::Iperf2);
    }
}

impl<const N: usize> Sockets<'_, '_, '_, N> {
    /// Makes TCP socket `i` anew over the buffers it has: a fresh slot in the stack's socket
    /// set. smoltcp keeps a slot's neighbour wait apart from its socket: after a SYN-ACK to
    /// a spoofed peer could not be sent (no ARP answer), the slot sends nothing for a second,
    /// and a real client's SYN taken by the same socket listening in place would wait out
    /// that second — long enough for the next spoofed SYN to take the socket from it.
    fn remake(&mut self, i: usize) {
        // The old socket is dropped here (embassy-net removes it from the stack).
        self.tcp[i] = None;
        let buffers = if let Some((id, share)) = self.slices[i] {
            // SAFETY: the only socket made over slice `id` was just dropped.
            let bytes = self
                .memory
                .with(|m| unsafe { m.lend_again(usize::from(id)) })
                .flatten();
            bytes.map(|b| data_buffers(b, share))
        } else if let Some(c) = i.checked_sub(N - 2) {
            // SAFETY: the only socket made over control buffers `2c` and `2c + 1` was just
            // dropped.
            let (rx, tx) = unsafe {
                (
                    self.control.lend_again(2 * c),
                    self.control.lend_again(2 * c + 1),
                )
            };
            rx.zip(tx).map(|(rx, tx)| TcpBuffers { rx, tx })
        } else {
            None
        };
        self.tcp[i] = buffers.map(|b| tcp_socket(self.stack, b));
    }
}

/// The UDP socket's buffers, lent to one socket at a time (made anew for each UDP test).
#[cfg(feature = "iperf-udp")]
struct UdpLender<'a> {
    /// Received, sent.
    meta: Lender<'a, PacketMetadata, 2>,
    /// Received, sent.
    bytes: Lender<'a, u8, 2>,
}

#[cfg(feature = "iperf-udp")]
impl<'a> UdpLender<'a> {
    fn new(b: UdpBuffers<'a>) -> Self {
        UdpLender {
            meta: Lender::new([b.rx_meta, b.tx_meta]),
            bytes: Lender::new([b.rx, b.tx]),
        }
    }

    /// The buffers, if none is lent.
    fn lend(&mut self) -> Option<UdpBuffers<'a>> {
        let lent = (
            self.meta.lend(),
            self.meta.lend(),
            self.bytes.lend(),
            self.bytes.lend(),
        );
        if let (Some((_, rx_meta)), Some((_, tx_meta)), Some((_, rx)), Some((_, tx))) = lent {
            return Some(UdpBuffers {
                rx_meta,
                rx,
                tx_meta,
                tx,
            });
        }
        // Some were lent already: give back only what this call took (to no socket).
        let (m0, m1, b0, b1) = lent;
        for (i, _) in [m0, m1].into_iter().flatten() {
            // SAFETY: slice `i` was lent just now and given to nothing.
            unsafe { self.meta.give_back(i) };
        }
        for (i, _) in [b0, b1].into_iter().flatten() {
            // SAFETY: as above.
            unsafe { self.bytes.give_back(i) };
        }
        None
    }

    /// Takes the buffers back.
    ///
    /// # Safety
    /// The socket made over them has been dropped, and nothing else uses them.
    unsafe fn give_back(&mut self) {
        for i in 0..2 {
            // SAFETY: the caller's promise.
            unsafe {
                self.meta.give_back(i);
                self.bytes.give_back(i);
            }
        }
    }
}

/// A data socket's buffers in its slice of the memory: the receive ring from [`RX_SKEW`] on,
/// `share.rx` long, the send buffer after it.
fn data_buffers(bytes: &mut [u8], share: Share) -> TcpBuffers<'_> {
    let (rx, tx) = bytes.split_at_mut((share.rx + 4).min(bytes.len()));
    let skew = RX_SKEW.min(rx.len());
    let rx = &mut rx[skew..];
    let rx_len = share.rx.min(rx.len());
    TcpBuffers {
        rx: &mut rx[..rx_len],
        tx,
    }
}

/// Serves iperf3 on port 5201 forever over `buffers` (see [`IperfBuffers`]): TCP and UDP,
/// `-R`, `--bidir`, `-P` up to the sockets lent, the results exchange. Counts into
/// `counters`; with `gate` (the driver's gate), a SYN finding every socket busy frees one
/// first ([`PoolServer::room_for`]: a spent one, else the idle test, would-be stream or
/// denied client idle longest beyond the grace, its peer reset, else a half-open one, not
/// one we answered within the grace; never a running test), and a receiving IPv4 stream
/// keeps its read position on a word, the gate waking the server for each segment (without
/// a gate, a stream that lands off its word after iperf3's cookie stays off it: the receive
/// slow mode, `crate::iperf::pool`) and holding the stack's ACK until the server read it
/// ([`ServiceGate::hold_tx`]: one ACK per burst, with the window the read opened, where
/// embassy-net would send two). The gate must see every frame the driver receives, and
/// this task must not run at a higher priority than embassy-net's runner
/// ([`ServiceGate::wake_on_segment`]).
pub async fn iperf_server<'a, const N: usize>(
    stack: Stack<'a>,
    buffers: IperfBuffers<'a, N>,
    counters: &AppCounters,
    gate: Option<&ServiceGate>,
) -> ! {
    let IperfBuffers {
        control,
        memory,
        plan,
        #[cfg(feature = "iperf-udp")]
        udp,
        json_rx,
        json_tx,
    } = buffers;
    // The data sockets first (a stream's SYN finds one before a control socket), parked.
    let [c0, c1] = control;
    let mut control: Lender<'a, u8, 4> = Lender::new([c0.rx, c0.tx, c1.rx, c1.tx]);
    let mut tcp: [Option<TcpSocket<'a>>; N] = core::array::from_fn(|i| {
        i.checked_sub(N - 2)?;
        match (control.lend(), control.lend()) {
            (Some((_, rx)), Some((_, tx))) => Some(tcp_socket(stack, TcpBuffers { rx, tx })),
            _ => None,
        }
    });
    let mut slices = [None; N];
    #[cfg(feature = "iperf-udp")]
    let mut udp_buffers = UdpLender::new(udp);
    #[cfg(feature = "iperf-udp")]
    let mut udp = None;
    let mut pool = PoolServer::<IpEndpoint>::new(DEFAULT_PORT, json_rx, json_tx);
    pool.set_data_memory(N.saturating_sub(2), plan);
    let port = pool.port();
    if let Some(g) = gate {
        g.serve(Port::Tcp(port));
    }
    let views: [Option<usize>; N] = core::array::from_fn(|_| counters.claim_view());
    // When the task's timer was last set for (see `due_again`).
    let mut timer_at: Option<u64> = None;
    let never = poll_fn(|cx| {
        loop {
            if let Some(g) = gate {
                g.service_runs();
            }
            let now = Instant::now().as_micros();
            memory.register(Tenant::Iperf3, cx.waker());
            let mut sockets = Sockets {
                stack,
                tcp: &mut tcp,
                control: &mut control,
                slices: &mut slices,
                memory,
                #[cfg(feature = "iperf-udp")]
                udp: &mut udp,
                #[cfg(feature = "iperf-udp")]
                udp_buffers: &mut udp_buffers,
                cx,
                may_leave_bytes: gate.is_some(),
            };
            // The pool's work, then a SYN held by the gate: room is made for it; it goes once
            // a socket listens, or is dropped while a handshake we answered may complete.
            serve_pass(
                &mut pool,
                &mut sockets,
                (gate, N, now),
                |g, port, s| g.asked(Port::Tcp(port), s.cx),
                |s, i| {
                    let socket = s.tcp(i);
                    (socket.state(), socket.peer())
                },
            );
            for (i, view) in views.iter().enumerate() {
                let mut socket = sockets.tcp(i);
                let state = socket.state();
                if let Some(g) = gate {
                    note_if_answered(&mut pool, i, (state, socket.peer()), g, now);
                }
                counters.set_view(*view, port, state);
                socket.watch(state);
            }
            #[cfg(feature = "iperf-udp")]
            sockets.udp().watch();
            // A receiving stream is woken by the gate for each segment: a stream keeping bytes
            // is not woken by its socket for more, and the stack's ACK waits for the read
            // (`ServiceGate::hold_tx`) to carry the window it opened.
            if let Some(g) = gate.filter(|_| pool.receives()) {
                g.wake_on_segment(port, sockets.cx);
            }
            counters.set_iperf(pool.counters(), pool.open_streams());
            // Sleep until the session's next deadline (pacing, intervals, the watchdog) or
            // until a socket wakes the task; a deadline already due runs another pass.
            if due_again(&pool, now, &mut timer_at, cx) {
                continue;
            }
            return Poll::<Infallible>::Pending;
        }
    })
    .await;
    match never {}
}
