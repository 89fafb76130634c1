//! The server side: one connection's GET/HEAD of the bench files and of extra routes.

use super::head::{ascii, first_line, head_end, parse_request_line, Request};
use super::MAX_HEAD;
use crate::payload::{self, BenchFile};
use crate::slice_writer::SliceWriter;

/// What an extra route answered: the body is in the buffer the server lent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RouteBody {
    /// Body length in bytes (clamped to the lent buffer).
    pub len: usize,
    /// The `Content-Type` header value, e.g. `application/json`.
    pub content_type: &'static str,
}

/// Extra GET routes next to the bench files (e.g. `linklab serve`'s `/stats`).
pub trait Routes {
    /// Writes the body for `path` into `body` and describes it, or `None` for "not found".
    fn get(&mut self, path: &str, body: &mut [u8]) -> Option<RouteBody>;

    /// Called before the server touches a socket, outside every borrow of the network stack:
    /// a route that reads the stack (embassy-net's link state) reads it here, since `get`
    /// runs inside the socket's `write_with`, which holds the stack.
    fn before_serve(&mut self) {}
}

/// No extra routes: only the bench files exist.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRoutes;

impl Routes for NoRoutes {
    fn get(&mut self, _path: &str, _body: &mut [u8]) -> Option<RouteBody> {
        None
    }
}

/// The body a server response carries.
#[derive(Clone, Copy, Debug)]
enum Body {
    /// A bench file, generated from the offset.
    File { file: BenchFile, sent: u64 },
    /// An extra route's body, in the server's buffer.
    Buffer { len: usize, sent: usize },
    /// A short fixed text (error responses).
    Static { text: &'static [u8], sent: usize },
}

/// Where a server connection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ServerPhase {
    /// Collecting the request head.
    Head,
    /// Sending the response.
    Respond,
    /// Response fully produced.
    Done,
}

/// Size of the response head buffer.
const RESPONSE_HEAD: usize = 192;

/// A sans-IO HTTP/1.1 server for one connection: GET/HEAD of the bench files and extra
/// routes, then `Connection: close`. Call [`Server::reset`] before reusing it.
#[derive(Clone, Debug)]
pub struct Server {
    buf: [u8; MAX_HEAD],
    len: usize,
    head: [u8; RESPONSE_HEAD],
    head_len: usize,
    head_sent: usize,
    body: Body,
    status: Option<u16>,
    phase: ServerPhase,
}

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

impl Server {
    /// A server waiting for a request.
    pub const fn new() -> Server {
        Server {
            buf: [0; MAX_HEAD],
            len: 0,
            head: [0; RESPONSE_HEAD],
            head_len: 0,
            head_sent: 0,
            body: Body::Static { text: b"", sent: 0 },
            status: None,
            phase: ServerPhase::Head,
        }
    }

    /// Forgets the current connection and waits for a new request.
    pub fn reset(&mut self) {
        self.len = 0;
        self.head_len = 0;
        self.head_sent = 0;
        self.body = Body::Static { text: b"", sent: 0 };
        self.status = None;
        self.phase = ServerPhase::Head;
    }

    /// The response status once the request head is complete.
    pub fn status(&self) -> Option<u16> {
        self.status
    }

    /// True when the response has been produced completely (the connection may close).
    pub fn is_done(&self) -> bool {
        self.phase == ServerPhase::Done
    }

    /// True while the server still waits for (the rest of) a request head.
    pub fn wants_request(&self) -> bool {
        self.phase == ServerPhase::Head
    }

    /// Consumes received bytes and returns how many it took. Bytes after the request head
    /// (a body, a pipelined request) are consumed and ignored: one request per connection.
    pub fn receive(&mut self, data: &[u8], routes: &mut dyn Routes) -> usize {
        if self.phase != ServerPhase::Head {
            return data.len();
        }
        let room = MAX_HEAD - self.len;
        let take = data.len().min(room);
        let search_from = self.len.saturating_sub(3);
        if let (Some(dst), Some(src)) = (
            self.buf.get_mut(self.len..self.len + take),
            data.get(..take),
        ) {
            dst.copy_from_slice(src);
        }
        self.len += take;
        let window = self.buf.get(search_from..self.len).unwrap_or(&[]);
        match head_end(window) {
            Some(_) => {
                self.answer(routes);
                data.len()
            }
            None if self.len == MAX_HEAD => {
                self.respond_static(
                    431,
                    "Request Header Fields Too Large",
                    b"request head too large\n",
                    false,
                );
                data.len()
            }
            None => take,
        }
    }

    /// Decides the response for the complete head in `buf`.
    fn answer(&mut self, routes: &mut dyn Routes) {
        let head = self.buf.get(..self.len).unwrap_or(&[]);
        // Copy out what we need before `buf` is reused for a route body.
        let mut path_copy = [0u8; 256];
        let (path_len, head_only) = match parse_request_line(first_line(head)) {
            Request::Bad => {
                self.respond_static(400, "Bad Request", b"bad request\n", false);
                return;
            }
            Request::OtherMethod => {
                self.respond_static(405, "Method Not Allowed", b"only GET and HEAD\n", false);
                return;
            }
            Request::Get { path, head_only } => {
                let Some(dst) = path_copy.get_mut(..path.len()) else {
                    self.respond_static(404, "Not Found", b"not found\n", head_only);
                    return;
                };
                dst.copy_from_slice(path.as_bytes());
                (path.len(), head_only)
            }
        };
        let path = ascii(path_copy.get(..path_len).unwrap_or(&[])).unwrap_or("");
        // The body before the head: a head that does not fit replaces it with none.
        if let Some(file) = payload::find(path) {
            self.body = Body::File { file, sent: 0 };
            self.start_response(200, "OK", "text/plain", file.len);
        } else if let Some(route) = routes.get(path, &mut self.buf) {
            let len = route.len.min(MAX_HEAD);
            self.body = Body::Buffer { len, sent: 0 };
            self.start_response(200, "OK", route.content_type, len as u64);
        } else {
            self.respond_static(404, "Not Found", b"not found\n", head_only);
            return;
        }
        if head_only {
            self.body = Body::Static { text: b"", sent: 0 };
        }
    }

    /// Starts a response with a fixed text body.
    fn respond_static(&mut self, status: u16, reason: &str, text: &'static [u8], head_only: bool) {
        self.body = Body::Static {
            text: if head_only { b"" } else { text },
            sent: 0,
        };
        self.start_response(status, reason, "text/plain", text.len() as u64);
    }

    /// Starts the response: its head, or a bare 500 with no body if that head does not fit
    /// (a route's content type too long).
    fn start_response(&mut self, status: u16, reason: &str, content_type: &str, len: u64) {
        let mut head = (status, reason, content_type, len);
        let mut fallen_back = false;
        loop {
            let (status, reason, content_type, len) = head;
            let mut w = SliceWriter::new(&mut self.head);
            let written = (|| {
                w.text("HTTP/1.1 ")?
                    .num(status.into())?
                    .text(" ")?
                    .text(reason)?
                    .text("\r\nContent-Type: ")?
                    .text(content_type)?
                    .text("\r\nContent-Length: ")?
                    .num(len)?
                    .text("\r\nConnection: close\r\n\r\n")
                    .map(drop)
            })();
            self.head_len = w.len();
            self.status = Some(status);
            // The 500's head fits: RESPONSE_HEAD is larger, every number at its widest.
            if written.is_ok() || fallen_back {
                break;
            }
            fallen_back = true;
            head = (500, "Internal Server Error", "text/plain", 0);
            self.body = Body::Static { text: b"", sent: 0 };
        }
        self.head_sent = 0;
        self.phase = ServerPhase::Respond;
    }

    /// Writes the next response bytes into `out` and returns how many; 0 when there is
    /// nothing (more) to send.
    pub fn transmit(&mut self, out: &mut [u8]) -> usize {
        if self.phase != ServerPhase::Respond {
            return 0;
        }
        let mut n = 0;
        let head = self.head.get(self.head_sent..self.head_len).unwrap_or(&[]);
        let k = head.len().min(out.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..k), head.get(..k)) {
            dst.copy_from_slice(src);
        }
        self.head_sent += k;
        n += k;
        let rest = out.get_mut(n..).unwrap_or(&mut []);
        let body_done = match &mut self.body {
            Body::File { file, sent } => {
                let k = ((file.len - *sent).min(rest.len() as u64)) as usize;
                if let Some(dst) = rest.get_mut(..k) {
                    payload::fill(*sent, dst);
                }
                *sent += k as u64;
                n += k;
                *sent == file.len
            }
            Body::Buffer { len, sent } => {
                let src = self.buf.get(*sent..*len).unwrap_or(&[]);
                let k = src.len().min(rest.len());
                if let (Some(dst), Some(src)) = (rest.get_mut(..k), src.get(..k)) {
                    dst.copy_from_slice(src);
                }
                *sent += k;
                n += k;
                *sent >= *len
            }
            Body::Static { text, sent } => {
                let src = text.get(*sent..).unwrap_or(&[]);
                let k = src.len().min(rest.len());
                if let (Some(dst), Some(src)) = (rest.get_mut(..k), src.get(..k)) {
                    dst.copy_from_slice(src);
                }
                *sent += k;
                n += k;
                *sent >= text.len()
            }
        };
        if self.head_sent == self.head_len && body_done {
            self.phase = ServerPhase::Done;
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Drives a server to completion and returns the whole response.
    fn respond(request: &[&[u8]], routes: &mut dyn Routes) -> ([u8; 4096], usize, Server) {
        let mut server = Server::new();
        for part in request {
            let mut rest = *part;
            while !rest.is_empty() && server.wants_request() {
                let n = server.receive(rest, routes);
                rest = &rest[n..];
            }
        }
        let mut out = [0u8; 4096];
        let mut len = 0;
        while !server.is_done() {
            let n = server.transmit(&mut out[len..len + 100.min(4096 - len)]);
            if n == 0 {
                break;
            }
            len += n;
        }
        (out, len, server)
    }

    fn status_of(request: &[&[u8]]) -> Option<u16> {
        respond(request, &mut NoRoutes).2.status()
    }

    #[test]
    fn split_request_is_reassembled() {
        let parts: [&[u8]; 5] = [
            b"GE",
            b"T /10k",
            b"B.txt HTTP/1.1\r",
            b"\nHost: a\r\n\r",
            b"\n",
        ];
        assert_eq!(status_of(&parts), Some(200));
        // Not complete without the final empty line.
        assert_eq!(status_of(&parts[..4]), None);
    }

    #[test]
    fn garbage_and_wrong_methods_get_errors() {
        assert_eq!(status_of(&[b"\x00\xff\r\n\r\n"]), Some(400));
        assert_eq!(status_of(&[b"GET\r\n\r\n"]), Some(400));
        assert_eq!(status_of(&[b"GET /10kB.txt HTTP/2.0\r\n\r\n"]), Some(400));
        assert_eq!(status_of(&[b"GET 10kB.txt HTTP/1.1\r\n\r\n"]), Some(400));
        assert_eq!(status_of(&[b"POST /10kB.txt HTTP/1.1\r\n\r\n"]), Some(405));
        assert_eq!(status_of(&[b"GET /nope HTTP/1.1\r\n\r\n"]), Some(404));
        assert_eq!(status_of(&[b"GET /10kB.txt?x=1 HTTP/1.0\n\n"]), Some(200));
    }

    #[test]
    fn oversized_head_gets_431_and_everything_is_consumed() {
        let mut server = Server::new();
        let junk = [b'a'; 3000];
        assert_eq!(server.receive(&junk, &mut NoRoutes), 3000);
        assert_eq!(server.status(), Some(431));
    }

    #[test]
    fn head_request_has_no_body() {
        let (out, len, _) = respond(&[b"HEAD /10kB.txt HTTP/1.1\r\n\r\n"], &mut NoRoutes);
        let text = core::str::from_utf8(&out[..len]).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"));
        assert!(text.contains("Content-Length: 10000\r\n"));
        assert!(text.ends_with("\r\n\r\n"));
    }

    struct Stats;
    impl Routes for Stats {
        fn get(&mut self, path: &str, body: &mut [u8]) -> Option<RouteBody> {
            (path == "/stats").then(|| {
                body[..8].copy_from_slice(b"{\"a\":1}\n");
                RouteBody {
                    len: 8,
                    content_type: "application/json",
                }
            })
        }
    }

    /// A route whose content type does not fit the response head.
    struct Wordy;
    impl Routes for Wordy {
        fn get(&mut self, _path: &str, body: &mut [u8]) -> Option<RouteBody> {
            body[..3].copy_from_slice(b"abc");
            Some(RouteBody {
                len: 3,
                content_type: "x/yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy",
            })
        }
    }

    #[test]
    fn a_head_that_does_not_fit_is_a_bare_500() {
        let (out, len, server) = respond(&[b"GET /x HTTP/1.1\r\n\r\n"], &mut Wordy);
        assert_eq!(server.status(), Some(500));
        assert_eq!(
            core::str::from_utf8(&out[..len]).unwrap(),
            "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
    }

    #[test]
    fn extra_route_is_served() {
        let (out, len, server) = respond(&[b"GET /stats HTTP/1.1\r\n\r\n"], &mut Stats);
        assert_eq!(server.status(), Some(200));
        let text = core::str::from_utf8(&out[..len]).unwrap();
        assert!(text.contains("Content-Type: application/json\r\n"));
        assert!(text.ends_with("\r\n\r\n{\"a\":1}\n"));
    }
}
