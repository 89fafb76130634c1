//! Socket lifetime rules for a device's fixed pool of sockets (feature `smoltcp`), so a few
//! spoofed or idle peers cannot hold its services: every TCP socket the apps own gets a
//! smoltcp timeout (a half-open connection whose peer never answers, or a closing one whose
//! peer went silent, is dropped instead of held forever), and an application-level idle
//! timeout closes connections on which nothing moved for a while (idle clients, stalled
//! request heads, zero-window readers).

use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::{tcp, Socket};
use smoltcp::time::{Duration, Instant};

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

/// Watches one connection for activity: a change of state or of the bytes queued either
/// way, or bytes the app reports it moved.
#[derive(Clone, Copy, Debug)]
pub struct IdleWatch {
    since: Instant,
    seen: Option<(tcp::State, usize, usize)>,
}

impl Default for IdleWatch {
    fn default() -> Self {
        Self::new()
    }
}

impl IdleWatch {
    /// A watch that has seen nothing yet.
    pub const fn new() -> IdleWatch {
        IdleWatch {
            since: Instant::ZERO,
            seen: None,
        }
    }

    /// Call after the app polled `socket`; `moved` says whether the app read or wrote bytes.
    /// True when the socket holds a connection on which nothing moved for `timeout` (the
    /// caller then aborts it). Listening and closed sockets never expire.
    pub fn expired(
        &mut self,
        socket: &tcp::Socket<'_>,
        moved: bool,
        now: Instant,
        timeout: Duration,
    ) -> bool {
        let state = socket.state();
        if matches!(state, tcp::State::Listen | tcp::State::Closed) {
            self.seen = None;
            return false;
        }
        let now_seen = (state, socket.recv_queue(), socket.send_queue());
        if moved || self.seen != Some(now_seen) {
            self.seen = Some(now_seen);
            self.since = now;
            return false;
        }
        now >= self.since + timeout
    }

    /// When the watched connection last showed activity.
    pub fn since(&self) -> Instant {
        self.since
    }

    /// Forgets the connection (its socket was reclaimed for a new one).
    pub fn reset(&mut self) {
        self.seen = None;
    }

    /// When this watch would expire if nothing moves (None when not watching a connection).
    pub fn deadline(&self, timeout: Duration) -> Option<Instant> {
        self.seen.map(|_| self.since + timeout)
    }
}

/// Resets the TCP socket behind `handle` and makes it listen on `port` again, with fresh
/// interface bookkeeping: smoltcp remembers, per socket-set slot, a neighbour it is waiting
/// for (a spoofed peer that never answers ARP, or one without a route), and a socket reused in
/// place would stay silent — its next SYN-ACK unsent — until that wait runs out. Removing it
/// from the set and adding it back clears that. Returns the socket's (possibly new) handle.
pub fn relisten(sockets: &mut SocketSet<'_>, handle: SocketHandle, port: u16) -> SocketHandle {
    match sockets.remove(handle) {
        Socket::Tcp(mut s) => {
            s.abort();
            let _ = s.listen(port);
            sockets.add(s)
        }
        other => sockets.add(other),
    }
}

/// A socket state that may be reclaimed for a new connection when every socket of a
/// service is busy: half-open, or closing (our side or the peer's), never ESTABLISHED.
pub fn reclaimable(state: tcp::State) -> bool {
    use tcp::State::*;
    matches!(
        state,
        SynReceived | SynSent | FinWait1 | FinWait2 | Closing | LastAck | TimeWait | CloseWait
    )
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
    fn a_listening_socket_never_expires_and_a_quiet_one_does() {
        let mut rx = [0u8; 64];
        let mut tx = [0u8; 64];
        let mut s = tcp::Socket::new(
            tcp::SocketBuffer::new(&mut rx[..]),
            tcp::SocketBuffer::new(&mut tx[..]),
        );
        let mut w = IdleWatch::new();
        let t = Duration::from_secs(10);
        assert!(!w.expired(&s, false, Instant::from_secs(100), t));
        s.listen(80).unwrap();
        assert!(!w.expired(&s, false, Instant::from_secs(1000), t));
        assert_eq!(w.deadline(t), None);
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
