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
pub const TCP_TIMEOUT: Duration = Duration::from_millis(crate::rules::TCP_TIMEOUT_MS);

/// Keep-alive interval of every TCP socket of the apps: a live but quiet peer answers the
/// probes, so [`TCP_TIMEOUT`] only ends connections to peers that are gone (smoltcp counts
/// its timeout from the last segment received, whatever the state), and quiet live ones
/// are left to the application idle timeout, which resets them.
pub const TCP_KEEP_ALIVE: Duration = Duration::from_millis(crate::rules::TCP_KEEP_ALIVE_MS);

/// The default application idle timeout of HTTP and TCP echo connections.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_millis(crate::rules::IDLE_TIMEOUT_MS);

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
    crate::socket::TcpState::from(state).reclaimable()
}

/// The destination port of a frame opening a TCP connection (the stack-independent
/// [`crate::rules::syn_port`]).
pub use crate::rules::syn_port;

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
}
