//! The smoltcp adapters: a [`Server`] on a listening TCP socket, a [`Client`] on a
//! connected one.

use super::{Client, ClientError, Download, Routes, Server};
use smoltcp::socket::tcp::{Socket, State};

/// Runs `server` over a TCP socket listening on `port`: listens (again) when the socket
/// is closed, feeds it the request, sends the response, closes after it. Call after every
/// `Interface::poll`. Returns true when a response was completed during this call.
pub fn smoltcp_serve(
    socket: &mut Socket<'_>,
    server: &mut Server,
    port: u16,
    routes: &mut dyn Routes,
) -> bool {
    super::socket::serve_on(socket, server, port, routes)
}

/// Runs `client` over a TCP socket the caller connected: sends the request, feeds the
/// response. Returns `Ok(Some(download))` when the body is complete (the socket is then
/// closed), `Ok(None)` while in progress, an error when the response is bad or cut short.
pub fn smoltcp_fetch(
    socket: &mut Socket<'_>,
    client: &mut Client,
) -> Result<Option<Download>, ClientError> {
    while socket.can_send() && !client.request_sent() {
        let sent = socket.send(|buf| {
            let n = client.transmit(buf);
            (n, n)
        });
        if !matches!(sent, Ok(n) if n > 0) {
            break;
        }
    }
    let mut result = Ok(());
    while socket.can_recv() && result.is_ok() {
        let got = socket.recv(|buf| (buf.len(), client.receive(buf)));
        match got {
            Ok(r) => result = r,
            Err(_) => break,
        }
    }
    result?;
    if let Some(download) = client.download() {
        socket.close();
        return Ok(Some(download));
    }
    let closed_by_peer = matches!(
        socket.state(),
        State::CloseWait | State::LastAck | State::Closed | State::TimeWait | State::Closing
    );
    if closed_by_peer && !socket.can_recv() && client.request_sent() {
        let download = client.finish()?;
        socket.close();
        return Ok(Some(download));
    }
    Ok(None)
}
