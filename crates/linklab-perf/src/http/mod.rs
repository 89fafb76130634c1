//! HTTP/1.1 download: a sans-IO GET server for the bench files and a GET client that counts
//! and checksums what arrives — the `smoltcp_http_get` experiment of Niccle's MAC write-up, both ends.
//!
//! No heap, no panics on any input: every parser works on bounded buffers and answers
//! garbage with an error (the server with `400`/`404`/`405`/`431`, the client with a
//! [`ClientError`]). One request per connection (`Connection: close`), as Niccle's did.
//!
//! # Server
//!
//! ```
//! use linklab_perf::http::{NoRoutes, Server};
//! let mut server = Server::new();
//! // Feed what the socket received; it returns how many bytes it consumed.
//! server.receive(b"GET /10kB.txt HTTP/1.1\r\nHost: x\r\n\r\n", &mut NoRoutes);
//! // Drain the response into whatever send space the socket offers.
//! let mut out = [0u8; 512];
//! let mut total = 0;
//! while !server.is_done() {
//!     total += server.transmit(&mut out);
//! }
//! assert_eq!(server.status(), Some(200));
//! assert!(total > 10_000); // headers + the 10 000 bytes of `/10kB.txt`
//! ```
//!
//! The bench files (`linklab_perf::payload::BENCH_FILES`) are generated on the fly, so a
//! device can serve megabytes from no memory. Extra routes (e.g. `GET /stats` returning JSON)
//! come from a [`Routes`] implementation: the server asks it for any path that is not a bench
//! file and it writes the body into a buffer the server lends it ([`MAX_HEAD`] bytes).
//!
//! # Client
//!
//! ```
//! use linklab_perf::http::Client;
//! let mut client = Client::new("198.18.0.1", "/10kB.txt").unwrap();
//! let mut request = [0u8; 256];
//! let n = client.transmit(&mut request); // the GET request, maybe in several calls
//! assert!(request[..n].starts_with(b"GET /10kB.txt HTTP/1.1\r\n"));
//! // Feed response bytes with `client.receive(..)`; `client.download()` gives the result
//! // (bytes = headers + body as Niccle's MAC write-up printed, body length, CRC32 of the body) once the
//! // body is complete, `client.finish()` when the peer closed the connection.
//! ```
//!
//! # smoltcp
//!
//! With feature `smoltcp`, [`smoltcp_serve`] runs a [`Server`] over a listening TCP socket (call
//! it after every `Interface::poll`; it re-listens for the next connection) and
//! [`smoltcp_fetch`] runs a [`Client`] over a TCP socket the caller has connected.

//!
//! One concept per file: `head` parses request and status lines, `server` answers one
//! connection, `client` downloads over one, `socket` runs a server over any stack's
//! socket ([`serve_on`]), and `smoltcp` binds both to smoltcp sockets.

mod client;
mod head;
mod server;
#[cfg(feature = "smoltcp")]
mod smoltcp;
mod socket;

pub use client::{expected_crc32, Client, ClientError, Download};
pub use server::{NoRoutes, RouteBody, Routes, Server};
#[cfg(feature = "smoltcp")]
pub use smoltcp::{smoltcp_fetch, smoltcp_serve};
pub use socket::serve_on;

/// The TCP port the bench server listens on.
pub const HTTP_PORT: u16 = 80;

/// Largest request head (request line + headers) the server accepts, and the size of the
/// buffer lent to [`Routes::get`] (room for a `/stats` document of 22 MAC counters and the
/// apps' counters at 19 digits each); also the largest response head the client accepts.
pub const MAX_HEAD: usize = 2048;

/// Largest `path` + `host` the client can put in its request.
pub const MAX_REQUEST: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_panic_on_arbitrary_bytes() {
        // A cheap deterministic byte soup through both parsers, in odd chunk sizes.
        let mut x: u32 = 12345;
        let mut soup = [0u8; 5000];
        for b in soup.iter_mut() {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            *b = match (x >> 16) % 8 {
                0 => b'\r',
                1 => b'\n',
                2 => b' ',
                3 => b':',
                _ => (x >> 24) as u8,
            };
        }
        for chunk in [1usize, 3, 64, 999] {
            let mut server = Server::new();
            let mut client = Client::new("h", "/x").unwrap();
            for part in soup.chunks(chunk) {
                server.receive(part, &mut NoRoutes);
                let _ = client.receive(part);
            }
            let mut out = [0u8; 64];
            while server.transmit(&mut out) > 0 {}
            let _ = client.finish();
        }
    }
}
