//! The application on embassy-net: an HTTP server (port 80) that answers every GET with a
//! known body, and a TCP echo server (port 7). One connection at a time per port; both
//! run until stopped.

use embassy_futures::select::select3;
use embassy_net::tcp::TcpSocket;
use embassy_net::Stack;
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
use embassy_sync::signal::Signal;
use embassy_time::{with_timeout, Duration};
use embedded_io_async::Write;

/// Bytes of the HTTP body: 200 kB, some 140 full-size frames sent back to back, each spaced
/// by the MAC's inter-packet gap.
pub const BODY_LEN: usize = 200_000;

/// Byte `i` of the HTTP body: a pattern that does not repeat at any power-of-two period, so
/// a lost, duplicated or reordered segment shows.
pub fn body_byte(i: usize) -> u8 {
    (i % 251) as u8 ^ (i / 251) as u8
}

/// A stalled peer loses its connection after this long.
const SOCKET_TIMEOUT: Duration = Duration::from_secs(10);

/// A stop request from another thread; it wakes the waiting task (nothing polls for it, so
/// every other wake-up of the stack is the driver's or embassy-net's own).
pub type Stop = Signal<CriticalSectionRawMutex, ()>;

/// Serves HTTP and echo until `stop` is signalled.
pub async fn serve(stack: Stack<'_>, stop: &Stop) {
    select3(http(stack), echo(stack), stop.wait()).await;
}

async fn http(stack: Stack<'_>) {
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 8192]);
    loop {
        let mut socket = TcpSocket::new(stack, &mut rx, &mut tx);
        socket.set_timeout(Some(SOCKET_TIMEOUT));
        if socket.accept(80).await.is_err() {
            continue;
        }
        if read_request(&mut socket).await {
            let _ = respond(&mut socket).await;
        }
        close(&mut socket).await;
    }
}

/// Reads until the end of the request head; false if the peer went away first or the head
/// does not fit.
async fn read_request(socket: &mut TcpSocket<'_>) -> bool {
    let mut head = [0u8; 1024];
    let mut len = 0;
    while len < head.len() {
        match socket.read(&mut head[len..]).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => len += n,
        }
        if head[..len].windows(4).any(|w| w == b"\r\n\r\n") {
            return true;
        }
    }
    false
}

async fn respond(socket: &mut TcpSocket<'_>) -> Result<(), embassy_net::tcp::Error> {
    let header = format!(
        "HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {BODY_LEN}\r\nConnection: close\r\n\r\n"
    );
    socket.write_all(header.as_bytes()).await?;
    let mut chunk = [0u8; 1460];
    let mut sent = 0;
    while sent < BODY_LEN {
        let n = chunk.len().min(BODY_LEN - sent);
        for (k, b) in chunk[..n].iter_mut().enumerate() {
            *b = body_byte(sent + k);
        }
        socket.write_all(&chunk[..n]).await?;
        sent += n;
    }
    socket.flush().await
}

async fn echo(stack: Stack<'_>) {
    let (mut rx, mut tx) = ([0u8; 4096], [0u8; 4096]);
    loop {
        let mut socket = TcpSocket::new(stack, &mut rx, &mut tx);
        socket.set_timeout(Some(SOCKET_TIMEOUT));
        if socket.accept(7).await.is_err() {
            continue;
        }
        let mut buf = [0u8; 1024];
        loop {
            match socket.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if socket.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            }
        }
        close(&mut socket).await;
    }
}

/// Sends our FIN after all data, then waits (bounded) for the peer's, so the socket leaves
/// the set only when the connection is over.
async fn close(socket: &mut TcpSocket<'_>) {
    socket.close();
    let _ = with_timeout(Duration::from_secs(2), async {
        let _ = socket.flush().await;
        let mut sink = [0u8; 256];
        while let Ok(n) = socket.read(&mut sink).await {
            if n == 0 {
                break;
            }
        }
    })
    .await;
}
