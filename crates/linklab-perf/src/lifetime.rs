//! Socket lifetime rules for a device's fixed pool of sockets (feature `smoltcp`), so a few
//! spoofed or idle peers cannot hold its services: every TCP socket the apps own gets a
//! smoltcp timeout (a half-open connection whose peer never answers, or a closing one whose
//! peer went silent, is dropped instead of held forever), an application-level idle timeout
//! closes connections that made no progress for a while (idle clients, stalled request heads,
//! zero-window readers), and a new client that finds every socket of a service busy evicts
//! the connection idle longest beyond [`EVICT_GRACE`]. The rules themselves are stack-free
//! ([`crate::rules`], [`crate::evict`]); this module holds their smoltcp durations and what
//! freeing a socket takes in a smoltcp `SocketSet`.

use smoltcp::iface::{SocketHandle, SocketSet};
use smoltcp::socket::{tcp, Socket};
use smoltcp::time::{Duration, Instant};

use crate::evict::{Look, Progress, GRACE_MS};
use crate::socket_buffers::TcpBuffers;

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

/// How long a connection must have made no progress before a new client may evict it
/// ([`crate::evict::GRACE_MS`], which says why).
pub const EVICT_GRACE: Duration = Duration::from_millis(GRACE_MS);

/// A TCP socket over `b` with the apps' lifetime rules ([`TCP_TIMEOUT`],
/// [`TCP_KEEP_ALIVE`]) and without Nagle's algorithm: with a send buffer of a few segments,
/// as an MCU has, Nagle holds the last partial segment until the peer's delayed ACK (40 ms on
/// Linux) and a bulk sender then moves about one segment per 40 ms.
pub fn tcp_socket(b: TcpBuffers<'_>) -> tcp::Socket<'_> {
    let mut s = tcp::Socket::new(tcp::SocketBuffer::new(b.rx), tcp::SocketBuffer::new(b.tx));
    s.set_nagle_enabled(false);
    s.set_timeout(Some(TCP_TIMEOUT));
    s.set_keep_alive(Some(TCP_KEEP_ALIVE));
    s
}

/// Watches one connection for progress: [`crate::evict::Progress`] over smoltcp's clock.
pub type IdleWatch = Progress<Instant>;

/// One look at `socket` at `now` for `watch` (see [`Progress::observe`]).
pub fn observe(watch: &mut IdleWatch, socket: &tcp::Socket<'_>, now: Instant) {
    watch.observe(Look::of(socket), now);
}

/// A look at `socket` right before a choice (see [`Progress::refresh`]).
pub fn refresh(watch: &mut IdleWatch, socket: &tcp::Socket<'_>, now: Instant) {
    watch.refresh(Look::of(socket), now);
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
    // (Irrefutable in a build without UDP sockets.)
    #[allow(irrefutable_let_patterns)]
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

/// The destination port of a frame opening a TCP connection (the stack-independent
/// [`crate::rules::syn_port`]).
pub use crate::rules::{syn_port, NextFrame};

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
        observe(&mut w, &s, Instant::from_secs(100));
        assert!(!w.expired(Instant::from_secs(100), t));
        s.listen(80).unwrap();
        observe(&mut w, &s, Instant::from_secs(1000));
        assert!(!w.expired(Instant::from_secs(1000), t));
        assert_eq!(w.deadline(t), None);
        assert_eq!(w.last(), None);
    }
}
