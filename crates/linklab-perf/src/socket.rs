//! What the device apps need of a socket, whatever the stack: one TCP socket ([`TcpOps`]),
//! one UDP socket ([`UdpOps`]). The apps' socket logic (the iperf3 server's pool of sockets,
//! the HTTP server on a socket, echo) is written once over these traits; each stack's adapter
//! implements them in a few lines: smoltcp 0.14's sockets (feature `smoltcp`), embassy-net's
//! (feature `embassy-net`, smoltcp 0.13 inside). No type of either stack appears here.
//!
//! An operation that cannot proceed now (nothing received, no send space) returns at once;
//! an async adapter registers its task's waker on the way, so "not now" means "woken when it
//! may be".

/// A TCP connection's state (RFC 793's names), as both smoltcp versions report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum TcpState {
    /// No connection, not listening.
    Closed,
    /// Waiting for a SYN.
    Listen,
    /// SYN sent (an active open).
    SynSent,
    /// SYN received, SYN-ACK sent: half-open.
    SynReceived,
    /// Open both ways.
    Established,
    /// Our FIN sent, not acknowledged.
    FinWait1,
    /// Our FIN acknowledged; the peer may still send.
    FinWait2,
    /// The peer's FIN received; we may still send.
    CloseWait,
    /// Both FINs sent, ours not acknowledged.
    Closing,
    /// The peer closed first, our FIN sent, not acknowledged.
    LastAck,
    /// Both sides closed; waiting out old segments.
    TimeWait,
}

impl TcpState {
    /// RFC 793's upper-case name (as smoltcp prints it and `/stats` shows it).
    pub fn name(self) -> &'static str {
        match self {
            TcpState::Closed => "CLOSED",
            TcpState::Listen => "LISTEN",
            TcpState::SynSent => "SYN-SENT",
            TcpState::SynReceived => "SYN-RECEIVED",
            TcpState::Established => "ESTABLISHED",
            TcpState::FinWait1 => "FIN-WAIT-1",
            TcpState::FinWait2 => "FIN-WAIT-2",
            TcpState::CloseWait => "CLOSE-WAIT",
            TcpState::Closing => "CLOSING",
            TcpState::LastAck => "LAST-ACK",
            TcpState::TimeWait => "TIME-WAIT",
        }
    }
}

/// One TCP socket, as the apps use it.
pub trait TcpOps {
    /// The connection's state.
    fn state(&self) -> TcpState;
    /// Received bytes wait to be read.
    fn can_recv(&self) -> bool;
    /// The receive half is open (or bytes still wait).
    fn may_recv(&self) -> bool;
    /// The send half is open and the send buffer has room.
    fn can_send(&self) -> bool;
    /// The send half is open.
    fn may_send(&self) -> bool;
    /// Bytes queued in the receive and send buffers.
    fn queues(&self) -> (usize, usize);
    /// Free bytes in the send buffer.
    fn send_room(&self) -> usize;
    /// Lends the largest contiguous run of received bytes to `f`, which returns how many it
    /// consumed; returns that (0 when nothing waits, or the socket cannot receive).
    fn recv(&mut self, f: impl FnOnce(&[u8]) -> usize) -> usize;
    /// Lends the largest contiguous free run of the send buffer to `f`, which returns how
    /// many bytes it wrote there; returns that (0 when there is no room, or the socket cannot
    /// send).
    fn send(&mut self, f: impl FnOnce(&mut [u8]) -> usize) -> usize;
    /// Listens on `port`; false if the socket is not closed.
    fn listen(&mut self, port: u16) -> bool;
    /// Closes our half (FIN after the queued bytes).
    fn close(&mut self);
    /// Resets the connection (RST), closing the socket at once.
    fn abort(&mut self);
    /// Reset and its RST not sent yet: the socket is closed but still knows its peer until
    /// the stack's next transmission. Listening again now would forget the peer, so a
    /// connection evicted for a new client would never hear of it.
    fn rst_pending(&self) -> bool;
    /// The peer came over IPv6.
    fn remote_is_ipv6(&self) -> bool;
    /// The peer, when connected or connecting over IPv4 (to match the SYN-ACKs that leave:
    /// [`crate::rules::syn_ack`]).
    fn peer(&self) -> Option<crate::rules::Peer>;
    /// The congestion control the stack runs on this socket, lower case (`none`, `reno`,
    /// `cubic`), for iperf3's results.
    fn congestion_control(&self) -> &'static str;
    /// True when a reader may leave received bytes in the buffer and still be woken by the
    /// next ones (smoltcp's sockets polled by a main loop). embassy-net wakes a reader only
    /// for an empty buffer, so there only the iperf3 server with the driver's gate, which
    /// wakes it for each segment, may (it keeps its read position on a word:
    /// `iperf::pool`); without one a reader consumes all it read.
    fn may_leave_bytes(&self) -> bool {
        true
    }

    /// Copies received bytes into `buf` (across the receive ring's wrap); how many.
    fn recv_slice(&mut self, buf: &mut [u8]) -> usize {
        let mut got = 0;
        while got < buf.len() {
            let rest = &mut buf[got..];
            let n = self.recv(|data| {
                let n = data.len().min(rest.len());
                rest[..n].copy_from_slice(&data[..n]);
                n
            });
            if n == 0 {
                break;
            }
            got += n;
        }
        got
    }

    /// Copies what fits of `data` into the send buffer (across the ring's wrap); how many
    /// bytes.
    fn send_slice(&mut self, data: &[u8]) -> usize {
        let mut sent = 0;
        while sent < data.len() {
            let rest = &data[sent..];
            let n = self.send(|buf| {
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                n
            });
            if n == 0 {
                break;
            }
            sent += n;
        }
        sent
    }

    /// Listening or connected in any way, as smoltcp's `is_open`: neither CLOSED nor
    /// TIME-WAIT (a socket in TIME-WAIT may listen again at once).
    fn is_open(&self) -> bool {
        !matches!(self.state(), TcpState::Closed | TcpState::TimeWait)
    }

    /// A connection exists or is being set up or torn down (neither closed, listening nor
    /// in TIME-WAIT), as smoltcp's `is_active`.
    fn is_active(&self) -> bool {
        !matches!(
            self.state(),
            TcpState::Closed | TcpState::TimeWait | TcpState::Listen
        )
    }
}

/// One UDP socket, as the apps use it.
pub trait UdpOps {
    /// The stack's remote endpoint (address and port).
    type Endpoint: Copy + PartialEq;
    /// Bound to a port.
    fn is_open(&self) -> bool;
    /// Binds to `port`; false if that failed.
    fn bind(&mut self, port: u16) -> bool;
    /// Lends the next received datagram and its sender to `f`; false when none waits.
    fn recv(&mut self, f: impl FnOnce(&[u8], Self::Endpoint)) -> bool;
    /// Queues one datagram of at most `len` bytes to `to`, written in place by `f` (which
    /// returns its length); false when there is no room.
    fn send(&mut self, len: usize, to: Self::Endpoint, f: impl FnOnce(&mut [u8]) -> usize) -> bool;
}

/// A socket of a pool, or none: a parked one, kept out of its stack's socket set (so the
/// stack does not walk it on every pass) until it is lent buffers. Parked, it is closed
/// and takes nothing: it receives and sends nothing and does not listen.
pub enum Maybe<T> {
    /// The socket.
    Socket(T),
    /// No socket.
    Parked,
}

impl<T: TcpOps> TcpOps for Maybe<T> {
    fn state(&self) -> TcpState {
        match self {
            Maybe::Socket(s) => s.state(),
            Maybe::Parked => TcpState::Closed,
        }
    }
    fn can_recv(&self) -> bool {
        matches!(self, Maybe::Socket(s) if s.can_recv())
    }
    fn may_recv(&self) -> bool {
        matches!(self, Maybe::Socket(s) if s.may_recv())
    }
    fn can_send(&self) -> bool {
        matches!(self, Maybe::Socket(s) if s.can_send())
    }
    fn may_send(&self) -> bool {
        matches!(self, Maybe::Socket(s) if s.may_send())
    }
    fn queues(&self) -> (usize, usize) {
        match self {
            Maybe::Socket(s) => s.queues(),
            Maybe::Parked => (0, 0),
        }
    }
    fn send_room(&self) -> usize {
        match self {
            Maybe::Socket(s) => s.send_room(),
            Maybe::Parked => 0,
        }
    }
    fn recv(&mut self, f: impl FnOnce(&[u8]) -> usize) -> usize {
        match self {
            Maybe::Socket(s) => s.recv(f),
            Maybe::Parked => 0,
        }
    }
    fn send(&mut self, f: impl FnOnce(&mut [u8]) -> usize) -> usize {
        match self {
            Maybe::Socket(s) => s.send(f),
            Maybe::Parked => 0,
        }
    }
    fn listen(&mut self, port: u16) -> bool {
        match self {
            Maybe::Socket(s) => s.listen(port),
            Maybe::Parked => false,
        }
    }
    fn close(&mut self) {
        if let Maybe::Socket(s) = self {
            s.close()
        }
    }
    fn abort(&mut self) {
        if let Maybe::Socket(s) = self {
            s.abort()
        }
    }
    fn rst_pending(&self) -> bool {
        matches!(self, Maybe::Socket(s) if s.rst_pending())
    }
    fn remote_is_ipv6(&self) -> bool {
        matches!(self, Maybe::Socket(s) if s.remote_is_ipv6())
    }
    fn peer(&self) -> Option<crate::rules::Peer> {
        match self {
            Maybe::Socket(s) => s.peer(),
            Maybe::Parked => None,
        }
    }
    fn congestion_control(&self) -> &'static str {
        match self {
            Maybe::Socket(s) => s.congestion_control(),
            Maybe::Parked => "none",
        }
    }
    fn may_leave_bytes(&self) -> bool {
        matches!(self, Maybe::Socket(s) if s.may_leave_bytes())
    }
    fn recv_slice(&mut self, buf: &mut [u8]) -> usize {
        match self {
            Maybe::Socket(s) => s.recv_slice(buf),
            Maybe::Parked => 0,
        }
    }
    fn send_slice(&mut self, data: &[u8]) -> usize {
        match self {
            Maybe::Socket(s) => s.send_slice(data),
            Maybe::Parked => 0,
        }
    }
}

impl<T: UdpOps> UdpOps for Maybe<T> {
    type Endpoint = T::Endpoint;
    fn is_open(&self) -> bool {
        matches!(self, Maybe::Socket(s) if s.is_open())
    }
    fn bind(&mut self, port: u16) -> bool {
        match self {
            Maybe::Socket(s) => s.bind(port),
            Maybe::Parked => false,
        }
    }
    fn recv(&mut self, f: impl FnOnce(&[u8], Self::Endpoint)) -> bool {
        match self {
            Maybe::Socket(s) => s.recv(f),
            Maybe::Parked => false,
        }
    }
    fn send(&mut self, len: usize, to: Self::Endpoint, f: impl FnOnce(&mut [u8]) -> usize) -> bool {
        match self {
            Maybe::Socket(s) => s.send(len, to, f),
            Maybe::Parked => false,
        }
    }
}

#[cfg(feature = "smoltcp")]
mod smoltcp;
/// The smoltcp adapters' clock: smoltcp's `Instant` and the apps' microseconds.
#[cfg(feature = "smoltcp")]
pub(crate) use self::smoltcp::{instant, micros};

/// A socket lent by reference is the socket.
impl<T: TcpOps + ?Sized> TcpOps for &mut T {
    fn state(&self) -> TcpState {
        (**self).state()
    }
    fn can_recv(&self) -> bool {
        (**self).can_recv()
    }
    fn may_recv(&self) -> bool {
        (**self).may_recv()
    }
    fn can_send(&self) -> bool {
        (**self).can_send()
    }
    fn may_send(&self) -> bool {
        (**self).may_send()
    }
    fn queues(&self) -> (usize, usize) {
        (**self).queues()
    }
    fn send_room(&self) -> usize {
        (**self).send_room()
    }
    fn recv(&mut self, f: impl FnOnce(&[u8]) -> usize) -> usize {
        (**self).recv(f)
    }
    fn send(&mut self, f: impl FnOnce(&mut [u8]) -> usize) -> usize {
        (**self).send(f)
    }
    fn listen(&mut self, port: u16) -> bool {
        (**self).listen(port)
    }
    fn close(&mut self) {
        (**self).close()
    }
    fn abort(&mut self) {
        (**self).abort()
    }
    fn rst_pending(&self) -> bool {
        (**self).rst_pending()
    }
    fn remote_is_ipv6(&self) -> bool {
        (**self).remote_is_ipv6()
    }
    fn peer(&self) -> Option<crate::rules::Peer> {
        (**self).peer()
    }
    fn congestion_control(&self) -> &'static str {
        (**self).congestion_control()
    }
    fn may_leave_bytes(&self) -> bool {
        (**self).may_leave_bytes()
    }
    fn recv_slice(&mut self, buf: &mut [u8]) -> usize {
        (**self).recv_slice(buf)
    }
    fn send_slice(&mut self, data: &[u8]) -> usize {
        (**self).send_slice(data)
    }
}

/// A socket lent by reference is the socket.
impl<T: UdpOps + ?Sized> UdpOps for &mut T {
    type Endpoint = T::Endpoint;
    fn is_open(&self) -> bool {
        (**self).is_open()
    }
    fn bind(&mut self, port: u16) -> bool {
        (**self).bind(port)
    }
    fn recv(&mut self, f: impl FnOnce(&[u8], Self::Endpoint)) -> bool {
        (**self).recv(f)
    }
    fn send(&mut self, len: usize, to: Self::Endpoint, f: impl FnOnce(&mut [u8]) -> usize) -> bool {
        (**self).send(len, to, f)
    }
}

/// A socket that is only a state (for tests of the rules over [`TcpOps`]).
#[cfg(test)]
pub(crate) struct InState(pub TcpState);

#[cfg(test)]
impl TcpOps for InState {
    fn state(&self) -> TcpState {
        self.0
    }
    fn can_recv(&self) -> bool {
        false
    }
    fn may_recv(&self) -> bool {
        false
    }
    fn can_send(&self) -> bool {
        false
    }
    fn may_send(&self) -> bool {
        false
    }
    fn queues(&self) -> (usize, usize) {
        (0, 0)
    }
    fn send_room(&self) -> usize {
        0
    }
    fn recv(&mut self, _f: impl FnOnce(&[u8]) -> usize) -> usize {
        0
    }
    fn send(&mut self, _f: impl FnOnce(&mut [u8]) -> usize) -> usize {
        0
    }
    fn listen(&mut self, _port: u16) -> bool {
        false
    }
    fn close(&mut self) {}
    fn abort(&mut self) {}
    fn rst_pending(&self) -> bool {
        false
    }
    fn remote_is_ipv6(&self) -> bool {
        false
    }
    fn peer(&self) -> Option<crate::rules::Peer> {
        None
    }
    fn congestion_control(&self) -> &'static str {
        "none"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_and_active_are_smoltcps() {
        use TcpState::*;
        // smoltcp: a socket in TIME-WAIT is not open (it may listen again at once).
        for (state, open, active) in [
            (Closed, false, false),
            (Listen, true, false),
            (SynReceived, true, true),
            (Established, true, true),
            (FinWait2, true, true),
            (CloseWait, true, true),
            (TimeWait, false, false),
        ] {
            assert_eq!(InState(state).is_open(), open, "{state:?}");
            assert_eq!(InState(state).is_active(), active, "{state:?}");
        }
    }
}
