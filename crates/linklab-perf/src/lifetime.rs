//! Socket lifetime rules for a device's fixed pool of sockets (feature `smoltcp`), so a few
//! spoofed or idle peers cannot hold its services: every TCP socket the apps own gets a
//! smoltcp timeout (a half-open connection whose peer never answers, or a closing one whose
//! peer went silent, is dropped instead of held forever), an application-level idle timeout
//! closes connections that made no progress for a while (idle clients, stalled request heads,
//! zero-window readers), and a new client that finds every socket of a service busy evicts
//! the connection idle longest beyond [`EVICT_GRACE`] ([`crate::evict`] over smoltcp sockets).

use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::{tcp, Socket};
use smoltcp::time::{Duration, Instant};

use crate::evict::{Candidate, Kind, Look, Progress, GRACE_MS};

/// smoltcp's per-socket timeout for every TCP socket of the apps: a connection whose peer
/// sends nothing for this long while we wait for it (SYN-RECEIVED, unacknowledged data,
/// FIN-WAIT) is aborted.
pub const TCP_TIMEOUT: Duration = Duration::from_secs(10);

/// Keep-alive interval of every TCP socket of the apps: a live but quiet peer answers the
/// probes, so [`TCP_TIMEOUT`] only ends connections to peers that are gone (smoltcp counts
/// its timeout from the last segment received, whatever the state), and quiet live ones
/// are left to the application idle timeout, which resets them.
pub const TCP_KEEP_ALIVE: Duration = Duration::from_secs(3);

/// The default application idle timeout of HTTP and TCP echo connections.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection must have made no progress before a new client may evict it
/// ([`crate::evict::GRACE_MS`], which says why).
pub const EVICT_GRACE: Duration = Duration::from_millis(GRACE_MS);

/// Watches one connection for progress ([`crate::evict::Progress`] over a smoltcp socket):
/// bytes from the peer, bytes it acknowledged, a change of state. Look at the socket right
/// after the interface poll and again right after the app ran.
#[derive(Clone, Copy, Debug, Default)]
pub struct IdleWatch {
    progress: Progress<Instant, tcp::State>,
}

impl IdleWatch {
    /// A watch that has seen nothing yet.
    pub const fn new() -> IdleWatch {
        IdleWatch {
            progress: Progress::new(),
        }
    }

    /// One look at `socket` at `now`. Listening and closed sockets hold no connection (the
    /// watch forgets it).
    pub fn observe(&mut self, socket: &tcp::Socket<'_>, now: Instant) {
        let state = socket.state();
        let look = (!matches!(state, tcp::State::Listen | tcp::State::Closed)).then(|| Look {
            state,
            rx_queued: socket.recv_queue(),
            tx_queued: socket.send_queue(),
        });
        self.progress.observe(look, now);
    }

    /// When the watched connection last made progress (None: no connection).
    pub fn last_progress(&self) -> Option<Instant> {
        self.progress.last()
    }

    /// True when the watched connection made no progress for `timeout` (the caller then
    /// aborts it). Never for a socket without a connection.
    pub fn expired(&self, now: Instant, timeout: Duration) -> bool {
        self.deadline(timeout).is_some_and(|d| now >= d)
    }

    /// Forgets the connection (its socket was reclaimed for a new one).
    pub fn reset(&mut self) {
        self.progress.forget();
    }

    /// When this watch would expire if nothing moves (None when not watching a connection).
    pub fn deadline(&self, timeout: Duration) -> Option<Instant> {
        self.progress.last().map(|t| t + timeout)
    }
}

/// Removes the socket behind `handle` from the set and adds it back, so it starts with fresh
/// interface bookkeeping: smoltcp remembers, per socket-set slot, a neighbour it is waiting
/// for (a spoofed peer that never answers ARP, or one without a route), and a socket reused in
/// place stays silent — its next SYN-ACK or datagram unsent — until that wait runs out (a
/// second). The socket takes the first free slot, which is the one it left (every removal
/// here is followed by its add), so the sockets keep their order. Returns its handle.
pub fn fresh_slot(sockets: &mut SocketSet<'_>, handle: SocketHandle) -> SocketHandle {
    let socket = sockets.remove(handle);
    sockets.add(socket)
}

/// Resets the TCP socket behind `handle` and makes it listen on `port` again, in a
/// [`fresh_slot`] (so its SYN-ACK to the next client is not held back by a wait for the last
/// one's neighbour). Returns the socket's (possibly new) handle.
pub fn relisten(sockets: &mut SocketSet<'_>, handle: SocketHandle, port: u16) -> SocketHandle {
    if let Socket::Tcp(s) = sockets.get_mut::<Socket>(handle) {
        s.abort();
        let _ = s.listen(port);
    }
    fresh_slot(sockets, handle)
}

/// Evicts the connection behind `handle` for a new client on `port`: aborts it, lets `flush`
/// (the interface's egress) send the peer its RST, then makes the socket listen again with
/// [`relisten`]. Returns the socket's (possibly new) handle.
pub fn evict<'s>(
    sockets: &mut SocketSet<'s>,
    handle: SocketHandle,
    port: u16,
    flush: &mut dyn FnMut(&mut SocketSet<'s>),
) -> SocketHandle {
    sockets.get_mut::<tcp::Socket>(handle).abort();
    flush(sockets);
    relisten(sockets, handle, port)
}

/// What the eviction choice ([`crate::evict::idlest`]) knows of `socket`, whose connection
/// last made progress at `last_progress` (None: unknown, taken as long ago): None when it
/// listens; otherwise that instant and what the connection would lose
/// ([`Kind`](crate::evict::Kind)) — nothing when closed or closing with nothing of ours left
/// unacknowledged, its handshake when half-open, its data otherwise (also when closing while
/// the tail of a download is still unacknowledged).
pub fn candidate(
    socket: &tcp::Socket<'_>,
    last_progress: Option<Instant>,
) -> Option<Candidate<Instant>> {
    use tcp::State::*;
    let kind = match socket.state() {
        Listen => return None,
        Closed | TimeWait => Kind::Spent,
        SynReceived | SynSent => Kind::HalfOpen,
        Established => Kind::Connection,
        FinWait1 | FinWait2 | Closing | LastAck | CloseWait if socket.send_queue() == 0 => {
            Kind::Spent
        }
        FinWait1 | FinWait2 | Closing | LastAck | CloseWait => Kind::Connection,
    };
    Some(Candidate {
        kind,
        last_progress: last_progress.unwrap_or(Instant::ZERO),
    })
}

/// True when taking a socket with this `candidate` costs nobody data (it was spent or
/// half-open): counted as `reclaimed`, not `evicted`.
pub fn reclaims(candidate: &Candidate<Instant>) -> bool {
    candidate.kind != Kind::Connection
}

/// The destination port of `frame` if it is an Ethernet II / IPv4 / TCP segment opening a
/// connection (SYN without ACK or RST, first fragment); None for anything else. Any bytes
/// may be wrong; nothing panics.
pub fn syn_port(frame: &[u8]) -> Option<u16> {
    use smoltcp::wire::{EthernetFrame, EthernetProtocol, IpProtocol, Ipv4Packet, TcpPacket};
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EthernetProtocol::Ipv4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(eth.payload()).ok()?;
    if ip.next_header() != IpProtocol::Tcp || ip.frag_offset() != 0 {
        return None;
    }
    let tcp = TcpPacket::new_checked(ip.payload()).ok()?;
    if !tcp.syn() || tcp.rst() || tcp.ack() {
        return None;
    }
    Some(tcp.dst_port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listening_socket_never_expires() {
        let mut rx = [0u8; 64];
        let mut tx = [0u8; 64];
        let mut s = tcp::Socket::new(
            tcp::SocketBuffer::new(&mut rx[..]),
            tcp::SocketBuffer::new(&mut tx[..]),
        );
        let mut w = IdleWatch::new();
        let t = Duration::from_secs(10);
        w.observe(&s, Instant::from_secs(100));
        assert!(!w.expired(Instant::from_secs(100), t));
        s.listen(80).unwrap();
        w.observe(&s, Instant::from_secs(1000));
        assert!(!w.expired(Instant::from_secs(1000), t));
        assert_eq!(w.deadline(t), None);
        assert_eq!(w.last_progress(), None);
    }

    fn segment(flags: u8, port: u16) -> [u8; 54] {
        let mut f = [0u8; 54];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45; // IPv4, 20-byte header
        f[16..18].copy_from_slice(&40u16.to_be_bytes()); // total length
        f[23] = 6;
        f[46] = 5 << 4; // TCP data offset: 20 bytes
        f[36..38].copy_from_slice(&port.to_be_bytes());
        f[47] = flags;
        f
    }

    #[test]
    fn only_a_connection_opening_syn_names_its_port() {
        assert_eq!(syn_port(&segment(0x02, 80)), Some(80));
        assert_eq!(syn_port(&segment(0x12, 80)), None); // SYN-ACK
        assert_eq!(syn_port(&segment(0x10, 80)), None); // ACK
        assert_eq!(syn_port(&segment(0x06, 80)), None); // SYN+RST
        let mut udp = segment(0x02, 80);
        udp[23] = 17;
        assert_eq!(syn_port(&udp), None);
        let mut frag = segment(0x02, 80);
        frag[21] = 1;
        assert_eq!(syn_port(&frag), None);
        for len in 0..54 {
            assert_eq!(syn_port(&segment(0x02, 80)[..len]), None, "{len}");
        }
    }
}
