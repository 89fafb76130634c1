//! One server-side connection ([`TcpServerConn`]) over one TCP socket of any stack
//! ([`TcpOps`]): the turn both hosts of iperf 2's TCP server take per socket — the pool of
//! sockets ([`super::pool`]) and the one-socket server ([`super::one_socket`]).

use super::{ConnectBack, TcpEnd, TcpServerConn};
use crate::socket::{TcpOps, TcpState};
use crate::time::Micros;

/// What one turn of a connection moved.
#[derive(Clone, Copy, Debug, Default)]
pub struct Turn {
    /// Bytes received (counted and dropped in place).
    pub received: usize,
    /// Bytes sent (`-R`, `--full-duplex`).
    pub sent: usize,
    /// The connect-back the connection asked for in this turn (`-r` after the client's
    /// test, `-d` at once).
    pub connect_back: Option<ConnectBack>,
}

/// Runs `conn` over `sock` once: reads and drops what arrived, notes the peer's FIN or
/// reset, writes the version reply and what `-R`/`--full-duplex` may send, shuts the write
/// side when sending is done, checks the clocks, and closes the socket once the connection
/// is over (a FIN for a completed test, a RST otherwise). The payload sent is whatever the
/// send buffer holds: iperf 2 never checks it.
pub fn serve_conn(conn: &mut TcpServerConn, sock: &mut impl TcpOps, now: Micros) -> Turn {
    let mut turn = Turn::default();
    loop {
        let n = sock.recv(|buf| {
            conn.on_received(buf, now);
            buf.len()
        });
        if n == 0 {
            break;
        }
        turn.received += n;
    }
    if !conn.is_finished() {
        match sock.state() {
            TcpState::CloseWait | TcpState::LastAck | TcpState::Closing | TcpState::TimeWait => {
                conn.on_peer_closed(now)
            }
            TcpState::Closed | TcpState::Listen | TcpState::SynSent => conn.on_reset(now),
            _ => {}
        }
    }
    while !conn.control_output().is_empty() && sock.can_send() {
        match sock.send_slice(conn.control_output()) {
            0 => break,
            n => conn.control_sent(n, now),
        }
    }
    while sock.can_send() {
        let allowed = conn.send_allowance(now);
        if allowed == 0 {
            break;
        }
        // Claimed in place, not written.
        match sock.send(|buf| buf.len().min(allowed)) {
            0 => break,
            n => {
                conn.on_sent(n, now);
                turn.sent += n;
            }
        }
    }
    if conn.wants_close_write() {
        sock.close();
        conn.write_closed();
    }
    turn.connect_back = conn.take_connect_back();
    conn.poll(now);
    if conn.is_finished() {
        match conn.outcome().end {
            Some(TcpEnd::Completed) => sock.close(),
            _ => sock.abort(),
        }
    }
    turn
}
