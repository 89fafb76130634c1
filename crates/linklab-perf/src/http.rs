//! HTTP/1.1 download: a sans-IO GET server for the bench files and a GET client that counts
//! and checksums what arrives — seed 000's `smoltcp_http_get` experiment, both ends.
//!
//! No heap, no panics on any input: every parser works on bounded buffers and answers
//! garbage with an error (the server with `400`/`404`/`405`/`431`, the client with a
//! [`ClientError`]). One request per connection (`Connection: close`), as seed 000 did.
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
//! // (bytes = headers + body as seed 000 printed, body length, CRC32 of the body) once the
//! // body is complete, `client.finish()` when the peer closed the connection.
//! ```
//!
//! # smoltcp
//!
//! With feature `smoltcp`, [`serve_tcp`] runs a [`Server`] over a listening TCP socket (call
//! it after every `Interface::poll`; it re-listens for the next connection) and
//! [`fetch_tcp`] runs a [`Client`] over a TCP socket the caller has connected.

use core::fmt::Write as _;

use crate::payload::{self, BenchFile};
use crate::slice_writer::SliceWriter;

/// The TCP port the bench server listens on.
pub const HTTP_PORT: u16 = 80;

/// Largest request head (request line + headers) the server accepts, and the size of the
/// buffer lent to [`Routes::get`] (room for a `/stats` document of 22 MAC counters and the
/// apps' counters at 19 digits each); also the largest response head the client accepts.
pub const MAX_HEAD: usize = 2048;

/// Largest `path` + `host` the client can put in its request.
pub const MAX_REQUEST: usize = 256;

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

/// Finds the end of an HTTP head (`\r\n\r\n` or a bare `\n\n`): the index after it.
fn head_end(buf: &[u8]) -> Option<usize> {
    let mut prev_newline = false;
    for (i, &b) in buf.iter().enumerate() {
        if b == b'\n' {
            if prev_newline {
                return Some(i + 1);
            }
            prev_newline = true;
        } else if b != b'\r' {
            prev_newline = false;
        }
    }
    None
}

/// The first line of a head, without its line ending.
fn first_line(head: &[u8]) -> &[u8] {
    let end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let line = head.get(..end).unwrap_or(&[]);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// What a request head asked for.
enum Request<'a> {
    /// `GET` (or `HEAD` when `head_only`) of `path` (query string removed).
    Get { path: &'a str, head_only: bool },
    /// A syntactically valid request with a method other than GET/HEAD.
    OtherMethod,
    /// Not an HTTP/1.x request line.
    Bad,
}

/// Parses a request line `METHOD SP target SP HTTP/1.x`.
fn parse_request_line(line: &[u8]) -> Request<'_> {
    let mut parts = line.split(|&b| b == b' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Request::Bad;
    };
    if !version.starts_with(b"HTTP/1.") || version.len() != 8 {
        return Request::Bad;
    }
    if method.is_empty() || !method.iter().all(|b| b.is_ascii_uppercase()) {
        return Request::Bad;
    }
    if target.first() != Some(&b'/') || !target.iter().all(|b| b.is_ascii_graphic()) {
        return Request::Bad;
    }
    let path_end = target
        .iter()
        .position(|&b| b == b'?')
        .unwrap_or(target.len());
    let Some(path) = target
        .get(..path_end)
        .and_then(|p| core::str::from_utf8(p).ok())
    else {
        return Request::Bad;
    };
    match method {
        b"GET" => Request::Get {
            path,
            head_only: false,
        },
        b"HEAD" => Request::Get {
            path,
            head_only: true,
        },
        _ => Request::OtherMethod,
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
        let path = path_copy
            .get(..path_len)
            .and_then(|p| core::str::from_utf8(p).ok())
            .unwrap_or("");
        if let Some(file) = payload::find(path) {
            self.start_response(200, "OK", "text/plain", file.len);
            self.body = Body::File { file, sent: 0 };
        } else if let Some(route) = routes.get(path, &mut self.buf) {
            let len = route.len.min(MAX_HEAD);
            self.start_response(200, "OK", route.content_type, len as u64);
            self.body = Body::Buffer { len, sent: 0 };
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
        self.start_response(status, reason, "text/plain", text.len() as u64);
        self.body = Body::Static {
            text: if head_only { b"" } else { text },
            sent: 0,
        };
    }

    /// Writes the response head; falls back to a bare 500 if it does not fit.
    fn start_response(&mut self, status: u16, reason: &str, content_type: &str, len: u64) {
        let mut w = SliceWriter::new(&mut self.head);
        let ok = write!(
            w,
            "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {len}\r\nConnection: close\r\n\r\n"
        );
        self.head_len = w.len();
        self.status = Some(status);
        if ok.is_err() {
            const FALLBACK: &[u8] = b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
            if let Some(dst) = self.head.get_mut(..FALLBACK.len()) {
                dst.copy_from_slice(FALLBACK);
            }
            self.head_len = FALLBACK.len();
            self.status = Some(500);
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

/// Why a download failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ClientError {
    /// `host` + `path` do not fit [`MAX_REQUEST`] or contain bytes a request line cannot.
    BadRequest,
    /// The response head is longer than [`MAX_HEAD`].
    HeadTooLong,
    /// The status line is not `HTTP/1.x NNN ...`.
    BadStatusLine,
    /// A `Content-Length` header is not a decimal number.
    BadContentLength,
    /// The response uses a transfer coding this client does not decode (chunked).
    UnsupportedEncoding,
    /// More body bytes arrived than `Content-Length` announced.
    ExcessData,
    /// The connection closed before the head or the announced body was complete.
    Truncated,
}

impl core::fmt::Display for ClientError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let text = match self {
            ClientError::BadRequest => "host or path too long or not printable",
            ClientError::HeadTooLong => "response head too long",
            ClientError::BadStatusLine => "bad status line",
            ClientError::BadContentLength => "bad Content-Length",
            ClientError::UnsupportedEncoding => "unsupported transfer coding",
            ClientError::ExcessData => "more body bytes than Content-Length",
            ClientError::Truncated => "connection closed before the response was complete",
        };
        f.write_str(text)
    }
}

/// A finished download, as seed 000 printed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Download {
    /// The response status code.
    pub status: u16,
    /// All response bytes received: head + body (seed 000's "Received N bytes").
    pub total_bytes: u64,
    /// Body bytes received.
    pub body_bytes: u64,
    /// CRC32 (IEEE, as zlib/crc32fast) of the body.
    pub crc32: u32,
}

/// Where a client is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientPhase {
    /// Reading the response head.
    Head,
    /// Reading the body.
    Body,
    /// Body complete (or failed).
    Done,
}

/// A sans-IO HTTP/1.1 GET client for one connection: sends one request, parses the
/// response head, counts and checksums the body.
#[derive(Clone)]
pub struct Client {
    request: [u8; MAX_REQUEST + 64],
    request_len: usize,
    request_sent: usize,
    head: [u8; MAX_HEAD],
    head_len: usize,
    phase: ClientPhase,
    status: u16,
    content_length: Option<u64>,
    body_bytes: u64,
    total_bytes: u64,
    crc: crc32fast::Hasher,
    error: Option<ClientError>,
}

impl core::fmt::Debug for Client {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Client")
            .field("phase", &self.phase)
            .field("status", &self.status)
            .field("content_length", &self.content_length)
            .field("body_bytes", &self.body_bytes)
            .field("total_bytes", &self.total_bytes)
            .finish()
    }
}

/// Parses `HTTP/1.x NNN reason`: the status code.
fn parse_status_line(line: &[u8]) -> Option<u16> {
    let rest = line.strip_prefix(b"HTTP/1.")?;
    let rest = rest.get(1..)?;
    let rest = rest.strip_prefix(b" ")?;
    let code = rest.get(..3)?;
    if !code.iter().all(u8::is_ascii_digit) || rest.get(3).is_some_and(|&b| b != b' ') {
        return None;
    }
    Some(
        code.iter()
            .fold(0u16, |acc, d| acc * 10 + u16::from(d - b'0')),
    )
}

/// Parses a decimal header value (surrounding spaces allowed).
fn parse_decimal(value: &[u8]) -> Option<u64> {
    let value = value.trim_ascii();
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |acc, &d| {
        if d.is_ascii_digit() {
            acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        } else {
            None
        }
    })
}

impl Client {
    /// A client that will request `path` from `host` (the `Host` header).
    pub fn new(host: &str, path: &str) -> Result<Client, ClientError> {
        let printable = |s: &str| s.bytes().all(|b| b.is_ascii_graphic());
        if host.len() + path.len() > MAX_REQUEST
            || !printable(host)
            || !printable(path)
            || !path.starts_with('/')
        {
            return Err(ClientError::BadRequest);
        }
        let mut request = [0u8; MAX_REQUEST + 64];
        let mut w = SliceWriter::new(&mut request);
        write!(
            w,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
        )
        .map_err(|_| ClientError::BadRequest)?;
        let request_len = w.len();
        Ok(Client {
            request,
            request_len,
            request_sent: 0,
            head: [0; MAX_HEAD],
            head_len: 0,
            phase: ClientPhase::Head,
            status: 0,
            content_length: None,
            body_bytes: 0,
            total_bytes: 0,
            crc: crc32fast::Hasher::new(),
            error: None,
        })
    }

    /// Writes the next request bytes into `out`; 0 once the request is out.
    pub fn transmit(&mut self, out: &mut [u8]) -> usize {
        let src = self
            .request
            .get(self.request_sent..self.request_len)
            .unwrap_or(&[]);
        let k = src.len().min(out.len());
        if let (Some(dst), Some(src)) = (out.get_mut(..k), src.get(..k)) {
            dst.copy_from_slice(src);
        }
        self.request_sent += k;
        k
    }

    /// True when the whole request has been handed to [`Client::transmit`]'s caller.
    pub fn request_sent(&self) -> bool {
        self.request_sent == self.request_len
    }

    /// Response bytes received so far (head + body).
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Consumes received response bytes (all of them). An error is sticky.
    pub fn receive(&mut self, mut data: &[u8]) -> Result<(), ClientError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.total_bytes += data.len() as u64;
        if self.phase == ClientPhase::Head {
            let room = MAX_HEAD - self.head_len;
            let search_from = self.head_len.saturating_sub(3);
            let take = data.len().min(room);
            if let (Some(dst), Some(src)) = (
                self.head.get_mut(self.head_len..self.head_len + take),
                data.get(..take),
            ) {
                dst.copy_from_slice(src);
            }
            let old_len = self.head_len;
            self.head_len += take;
            let window = self.head.get(search_from..self.head_len).unwrap_or(&[]);
            match head_end(window) {
                Some(end) => {
                    let head_total = search_from + end;
                    self.head_len = head_total;
                    let used = head_total - old_len;
                    data = data.get(used..).unwrap_or(&[]);
                    if let Err(e) = self.parse_head() {
                        return Err(self.fail(e));
                    }
                    self.phase = ClientPhase::Body;
                }
                None if self.head_len == MAX_HEAD => {
                    return Err(self.fail(ClientError::HeadTooLong))
                }
                None => return Ok(()),
            }
        }
        if self.phase == ClientPhase::Body || (self.phase == ClientPhase::Done && !data.is_empty())
        {
            if let Some(cl) = self.content_length {
                if self.body_bytes + data.len() as u64 > cl {
                    return Err(self.fail(ClientError::ExcessData));
                }
            }
            self.crc.update(data);
            self.body_bytes += data.len() as u64;
            if self.content_length == Some(self.body_bytes) {
                self.phase = ClientPhase::Done;
            }
        }
        Ok(())
    }

    /// Records a sticky error.
    fn fail(&mut self, e: ClientError) -> ClientError {
        self.error = Some(e);
        self.phase = ClientPhase::Done;
        e
    }

    /// Parses the complete response head in `head`.
    fn parse_head(&mut self) -> Result<(), ClientError> {
        let head = self.head.get(..self.head_len).unwrap_or(&[]);
        let mut lines = head
            .split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l));
        let status = lines
            .next()
            .and_then(parse_status_line)
            .ok_or(ClientError::BadStatusLine)?;
        let mut content_length = None;
        for line in lines {
            let Some(colon) = line.iter().position(|&b| b == b':') else {
                continue;
            };
            let (name, value) = (
                line.get(..colon).unwrap_or(&[]),
                line.get(colon + 1..).unwrap_or(&[]),
            );
            if name.eq_ignore_ascii_case(b"content-length") {
                let v = parse_decimal(value).ok_or(ClientError::BadContentLength)?;
                if content_length.is_some_and(|old| old != v) {
                    return Err(ClientError::BadContentLength);
                }
                content_length = Some(v);
            } else if name.eq_ignore_ascii_case(b"transfer-encoding")
                && !value.trim_ascii().eq_ignore_ascii_case(b"identity")
            {
                return Err(ClientError::UnsupportedEncoding);
            }
        }
        self.status = status;
        self.content_length = content_length;
        if content_length == Some(0) {
            self.phase = ClientPhase::Done;
        }
        Ok(())
    }

    /// The download, once the body announced by `Content-Length` is complete.
    pub fn download(&self) -> Option<Download> {
        (self.error.is_none() && self.phase == ClientPhase::Done && self.content_length.is_some())
            .then(|| self.result())
    }

    /// The download when the peer has closed the connection: complete if the head arrived
    /// and the body matches `Content-Length` (or there was none), else an error.
    pub fn finish(&mut self) -> Result<Download, ClientError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        match (self.phase, self.content_length) {
            (ClientPhase::Head, _) => Err(self.fail(ClientError::Truncated)),
            (_, Some(cl)) if cl != self.body_bytes => Err(self.fail(ClientError::Truncated)),
            _ => {
                self.phase = ClientPhase::Done;
                Ok(self.result())
            }
        }
    }

    /// The figures so far.
    fn result(&self) -> Download {
        Download {
            status: self.status,
            total_bytes: self.total_bytes,
            body_bytes: self.body_bytes,
            crc32: self.crc.clone().finalize(),
        }
    }
}

/// The CRC32 a client must see for a bench file's body (computed from the payload).
pub fn expected_crc32(file: BenchFile) -> u32 {
    let mut crc = crc32fast::Hasher::new();
    let mut chunk = [0u8; 1024];
    let mut offset = 0;
    while offset < file.len {
        let k = (file.len - offset).min(chunk.len() as u64) as usize;
        let part = chunk.get_mut(..k).unwrap_or(&mut []);
        payload::fill(offset, part);
        crc.update(part);
        offset += k as u64;
    }
    crc.finalize()
}

#[cfg(feature = "smoltcp")]
mod smoltcp_adapter {
    use super::{Client, ClientError, Download, Routes, Server};
    use smoltcp::socket::tcp::{Socket, State};

    /// Runs `server` over a TCP socket listening on `port`: listens (again) when the socket
    /// is closed, feeds it the request, sends the response, closes after it. Call after every
    /// `Interface::poll`. Returns true when a response was completed during this call.
    pub fn serve_tcp(
        socket: &mut Socket<'_>,
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
        if socket.state() == State::Listen || socket.state() == State::SynReceived {
            return false;
        }
        let was_done = server.is_done();
        while socket.can_recv() && server.wants_request() {
            let taken = socket.recv(|buf| {
                let n = server.receive(buf, routes);
                (n, n)
            });
            if !matches!(taken, Ok(n) if n > 0) {
                break;
            }
        }
        // A request body (or anything after the head) is never used: read and drop it, so the
        // window stays open, the response can close, and the peer's FIN can arrive.
        if !server.wants_request() {
            while socket.can_recv() {
                if !matches!(socket.recv(|buf| (buf.len(), buf.len())), Ok(n) if n > 0) {
                    break;
                }
            }
        }
        while socket.can_send() && !server.is_done() && !server.wants_request() {
            let sent = socket.send(|buf| {
                let n = server.transmit(buf);
                (n, n)
            });
            if !matches!(sent, Ok(n) if n > 0) {
                break;
            }
        }
        if server.is_done() || (!socket.may_recv() && server.wants_request()) {
            socket.close();
        }
        !was_done && server.is_done()
    }

    /// Runs `client` over a TCP socket the caller connected: sends the request, feeds the
    /// response. Returns `Ok(Some(download))` when the body is complete (the socket is then
    /// closed), `Ok(None)` while in progress, an error when the response is bad or cut short.
    pub fn fetch_tcp(
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
}

#[cfg(feature = "smoltcp")]
pub use smoltcp_adapter::{fetch_tcp, serve_tcp};

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

    #[test]
    fn extra_route_is_served() {
        let (out, len, server) = respond(&[b"GET /stats HTTP/1.1\r\n\r\n"], &mut Stats);
        assert_eq!(server.status(), Some(200));
        let text = core::str::from_utf8(&out[..len]).unwrap();
        assert!(text.contains("Content-Type: application/json\r\n"));
        assert!(text.ends_with("\r\n\r\n{\"a\":1}\n"));
    }

    /// Server and client back to back, in chunks of `chunk` bytes.
    fn round_trip(path: &str, chunk: usize) -> Download {
        let mut client = Client::new("198.18.0.1", path).unwrap();
        let mut server = Server::new();
        let mut buf = [0u8; 2048];
        loop {
            let n = client.transmit(&mut buf[..chunk]);
            if n == 0 {
                break;
            }
            server.receive(&buf[..n], &mut NoRoutes);
        }
        while !server.is_done() {
            let n = server.transmit(&mut buf[..chunk]);
            client.receive(&buf[..n]).unwrap();
        }
        client.download().or_else(|| client.finish().ok()).unwrap()
    }

    #[test]
    fn client_counts_and_checksums_a_bench_file() {
        for chunk in [1, 7, 536, 1460, 2048] {
            let d = round_trip("/10kB.txt", chunk);
            assert_eq!(d.status, 200);
            assert_eq!(d.body_bytes, 10_000);
            assert!(
                d.total_bytes > 10_050 && d.total_bytes < 10_150,
                "{}",
                d.total_bytes
            );
            assert_eq!(d.crc32, expected_crc32(payload::find("/10kB.txt").unwrap()));
        }
        let d = round_trip("/nope", 100);
        assert_eq!(d.status, 404);
    }

    #[test]
    fn expected_crc_matches_a_direct_hash() {
        let mut body = [0u8; 10_000];
        payload::fill(0, &mut body);
        assert_eq!(
            expected_crc32(payload::find("/10kB.txt").unwrap()),
            crc32fast::hash(&body)
        );
    }

    #[test]
    fn client_rejects_bad_responses() {
        let mut c = Client::new("h", "/x").unwrap();
        assert_eq!(
            c.receive(b"HTTP/1.1 2000 OK\r\n\r\n"),
            Err(ClientError::BadStatusLine)
        );
        let mut c = Client::new("h", "/x").unwrap();
        assert_eq!(
            c.receive(b"HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n"),
            Err(ClientError::BadContentLength)
        );
        let mut c = Client::new("h", "/x").unwrap();
        assert_eq!(
            c.receive(b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
            Err(ClientError::BadContentLength)
        );
        let mut c = Client::new("h", "/x").unwrap();
        assert_eq!(
            c.receive(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabc"),
            Err(ClientError::ExcessData)
        );
        let mut c = Client::new("h", "/x").unwrap();
        c.receive(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab")
            .unwrap();
        assert_eq!(c.download(), None);
        assert_eq!(c.finish(), Err(ClientError::Truncated));
        let mut c = Client::new("h", "/x").unwrap();
        assert_eq!(
            c.receive(&[b'x'; MAX_HEAD + 1]),
            Err(ClientError::HeadTooLong)
        );
        let mut c = Client::new("h", "/x").unwrap();
        assert_eq!(
            c.receive(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Err(ClientError::UnsupportedEncoding)
        );
        assert!(Client::new("h", "no-slash").is_err());
        assert!(Client::new("h", "/with space").is_err());
    }

    #[test]
    fn client_without_content_length_finishes_on_close() {
        let mut c = Client::new("h", "/x").unwrap();
        c.receive(b"HTTP/1.0 200 OK\r\n\r\nhello").unwrap();
        assert_eq!(c.download(), None);
        let d = c.finish().unwrap();
        assert_eq!((d.body_bytes, d.crc32), (5, crc32fast::hash(b"hello")));
    }

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
