//! [`TcpOps`] and [`UdpOps`] on embassy-net's sockets: each operation is one poll of
//! embassy-net's own async operation with the app's task context, so an operation that
//! cannot proceed registers the task's waker with the socket and returns "not now".

use core::future::Future;
use core::pin::pin;
use core::task::{Context, Poll};

use embassy_net::tcp::{State, TcpSocket};
#[cfg(any(feature = "echo", feature = "iperf-udp", feature = "iperf2"))]
use embassy_net::udp::UdpSocket;
use embassy_net::IpAddress;
#[cfg(any(feature = "echo", feature = "iperf-udp", feature = "iperf2"))]
use embassy_net::IpEndpoint;

use crate::rules::Peer;
#[cfg(any(feature = "echo", feature = "iperf-udp", feature = "iperf2"))]
use crate::socket::UdpOps;
use crate::socket::{Maybe, TcpOps, TcpState};

/// Polls `f` once in `cx`: its output if it is ready now.
pub(crate) fn poll_once<F: Future>(f: F, cx: &mut Context<'_>) -> Option<F::Output> {
    match pin!(f).poll(cx) {
        Poll::Ready(r) => Some(r),
        Poll::Pending => None,
    }
}

/// An embassy-net TCP socket and the task context its operations register with.
pub(crate) struct Tcp<'p, 'a, 'c> {
    /// The socket.
    pub socket: &'p mut TcpSocket<'a>,
    /// The app task's context.
    pub cx: &'p mut Context<'c>,
    /// The app may leave received bytes in the socket ([`TcpOps::may_leave_bytes`]) of an
    /// IPv4 peer: it has another way to be woken for more (the driver's gate,
    /// `ServiceGate::wake_on_segment`).
    pub may_leave_bytes: bool,
}

impl Tcp<'_, '_, '_> {
    /// Registers the task with both halves of the socket, in `state` now, so that data,
    /// send room or a change of state wakes it (a half that is ready now registers nothing:
    /// the app has seen it ready and left it so), and, for a reset socket, with the sending
    /// of its RST (so an app waiting to listen again hears when it left). A listening socket
    /// registers its receive half only: smoltcp wakes both halves on every change of state,
    /// and a listening socket has nothing else to report.
    pub fn watch(&mut self, state: TcpState) {
        let _ = poll_once(self.socket.wait_read_ready(), self.cx);
        match state {
            TcpState::Listen => {}
            TcpState::Closed if self.socket.remote_endpoint().is_some() => {
                // Its RST is not sent yet.
                let _ = poll_once(self.socket.flush(), self.cx);
            }
            _ => {
                let _ = poll_once(self.socket.wait_write_ready(), self.cx);
            }
        }
    }
}

impl Maybe<Tcp<'_, '_, '_>> {
    /// Registers the task with the socket (`Tcp::watch`); a parked one, out of the stack,
    /// has nothing to report.
    pub fn watch(&mut self, state: TcpState) {
        if let Maybe::Socket(s) = self {
            s.watch(state);
        }
    }
}

pub(crate) fn tcp_state(s: State) -> TcpState {
    match s {
        State::Closed => TcpState::Closed,
        State::Listen => TcpState::Listen,
        State::SynSent => TcpState::SynSent,
        State::SynReceived => TcpState::SynReceived,
        State::Established => TcpState::Established,
        State::FinWait1 => TcpState::FinWait1,
        State::FinWait2 => TcpState::FinWait2,
        State::CloseWait => TcpState::CloseWait,
        State::Closing => TcpState::Closing,
        State::LastAck => TcpState::LastAck,
        State::TimeWait => TcpState::TimeWait,
    }
}

impl TcpOps for Tcp<'_, '_, '_> {
    fn state(&self) -> TcpState {
        tcp_state(self.socket.state())
    }
    fn can_recv(&self) -> bool {
        self.socket.can_recv()
    }
    fn may_recv(&self) -> bool {
        self.socket.may_recv()
    }
    fn can_send(&self) -> bool {
        self.socket.can_send()
    }
    fn may_send(&self) -> bool {
        self.socket.may_send()
    }
    fn queues(&self) -> (usize, usize) {
        (self.socket.recv_queue(), self.socket.send_queue())
    }
    fn send_room(&self) -> usize {
        self.socket.send_capacity() - self.socket.send_queue()
    }
    fn recv(&mut self, f: impl FnOnce(&[u8]) -> usize) -> usize {
        let read = self.socket.read_with(|buf| {
            let n = f(buf);
            (n, n)
        });
        match poll_once(read, self.cx) {
            Some(Ok(n)) => n,
            _ => 0,
        }
    }
    fn send(&mut self, f: impl FnOnce(&mut [u8]) -> usize) -> usize {
        let write = self.socket.write_with(|buf| {
            let n = f(buf);
            (n, n)
        });
        match poll_once(write, self.cx) {
            Some(Ok(n)) => n,
            _ => 0,
        }
    }
    fn listen(&mut self, port: u16) -> bool {
        // `accept` listens at once, then waits for a connection: one poll is the listen.
        !matches!(poll_once(self.socket.accept(port), self.cx), Some(Err(_)))
    }
    fn close(&mut self) {
        self.socket.close()
    }
    fn abort(&mut self) {
        self.socket.abort()
    }
    fn rst_pending(&self) -> bool {
        self.socket.state() == State::Closed && self.socket.remote_endpoint().is_some()
    }
    fn remote_is_ipv6(&self) -> bool {
        #[allow(unreachable_patterns)]
        match self.socket.remote_endpoint().map(|e| e.addr) {
            Some(IpAddress::Ipv4(_)) | None => false,
            Some(_) => true,
        }
    }
    fn peer(&self) -> Option<Peer> {
        let e = self.socket.remote_endpoint()?;
        #[allow(irrefutable_let_patterns)]
        let IpAddress::Ipv4(a) = e.addr
        else {
            return None;
        };
        Some(Peer {
            addr: a.octets(),
            port: e.port,
        })
    }
    fn congestion_control(&self) -> &'static str {
        // embassy-net builds its smoltcp without the reno and cubic features.
        "none"
    }
    fn may_leave_bytes(&self) -> bool {
        // `read_with` registers the waker only when the buffer is empty: bytes left there
        // keep the task from waking for more, unless the app has another way (the gate,
        // which reads IPv4 frames only).
        self.may_leave_bytes && !self.remote_is_ipv6()
    }
}

/// An embassy-net UDP socket and the task context its operations register with.
#[cfg(any(feature = "echo", feature = "iperf-udp", feature = "iperf2"))]
pub(crate) struct Udp<'p, 'a, 'c> {
    /// The socket.
    pub socket: &'p mut UdpSocket<'a>,
    /// The app task's context.
    pub cx: &'p mut Context<'c>,
}

#[cfg(any(feature = "echo", feature = "iperf-udp", feature = "iperf2"))]
impl Udp<'_, '_, '_> {
    /// Registers the task for received datagrams and for send room.
    pub fn watch(&mut self) {
        let _ = self.socket.poll_recv_ready(self.cx);
        let _ = self.socket.poll_send_ready(self.cx);
    }
}

#[cfg(any(feature = "iperf-udp", feature = "iperf2"))]
impl Maybe<Udp<'_, '_, '_>> {
    /// Registers the task with the socket (`Udp::watch`); a parked one, out of the stack,
    /// has nothing to report.
    pub fn watch(&mut self) {
        if let Maybe::Socket(s) = self {
            s.watch();
        }
    }
}

#[cfg(any(feature = "echo", feature = "iperf-udp", feature = "iperf2"))]
impl UdpOps for Udp<'_, '_, '_> {
    type Endpoint = IpEndpoint;
    fn is_open(&self) -> bool {
        self.socket.is_open()
    }
    fn bind(&mut self, port: u16) -> bool {
        self.socket.bind(port).is_ok()
    }
    fn recv(&mut self, f: impl FnOnce(&[u8], IpEndpoint)) -> bool {
        let recv = self
            .socket
            .recv_from_with(|data, meta| f(data, meta.endpoint));
        poll_once(recv, self.cx).is_some()
    }
    fn send(&mut self, len: usize, to: IpEndpoint, f: impl FnOnce(&mut [u8]) -> usize) -> bool {
        let send = self.socket.send_to_with(len, to, |buf| (f(buf), ()));
        matches!(poll_once(send, self.cx), Some(Ok(())))
    }
}
