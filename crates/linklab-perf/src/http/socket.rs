//! A [`Server`] over one TCP socket of any stack ([`TcpOps`]): the smoltcp adapter
//! (`smoltcp_serve`) and the embassy-net one run this same function.

use super::{Routes, Server};
use crate::socket::{TcpOps, TcpState};

/// Runs `server` over a TCP socket listening on `port`: listens (again) when the socket
/// is closed, feeds it the request, sends the response, closes after it. Call whenever the
/// socket may have changed. Returns true when a response was completed during this call.
pub fn serve_on(
    socket: &mut impl TcpOps,
    server: &mut Server,
    port: u16,
    routes: &mut dyn Routes,
) -> bool {
    if !socket.is_open() {
        server.reset();
        // Only fails for port 0 or an open socket; neither happens here.
        let _ = socket.listen(port);
        return false;
    }
    if matches!(socket.state(), TcpState::Listen | TcpState::SynReceived) {
        return false;
    }
    let was_done = server.is_done();
    while socket.can_recv() && server.wants_request() {
        if socket.recv(|buf| server.receive(buf, routes)) == 0 {
            break;
        }
    }
    // A request body (or anything after the head) is never used: read and drop it, so the
    // window stays open, the response can close, and the peer's FIN can arrive.
    if !server.wants_request() {
        while socket.can_recv() {
            if socket.recv(|buf| buf.len()) == 0 {
                break;
            }
        }
    }
    while socket.can_send() && !server.is_done() && !server.wants_request() {
        if socket.send(|buf| server.transmit(buf)) == 0 {
            break;
        }
    }
    if server.is_done() || (!socket.may_recv() && server.wants_request()) {
        socket.close();
    }
    !was_done && server.is_done()
}
