//! Socket lifetime rules for a device's fixed pool of sockets (feature `smoltcp`), so a few
//! spoofed or idle peers cannot hold its services: every TCP socket the apps own gets a
//! smoltcp timeout (a half-open connection whose peer never answers, or a closing one whose
//! peer went silent, is dropped instead of held forever), and an application-level idle
//! timeout closes connections on which nothing moved for a while (idle clients, stalled
//! request heads, zero-window readers).

use smoltcp::socket::tcp;
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

    /// When this watch would expire if nothing moves (None when not watching a connection).
    pub fn deadline(&self, timeout: Duration) -> Option<Instant> {
        self.seen.map(|_| self.since + timeout)
    }
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
}
