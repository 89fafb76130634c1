//! The client side: one GET over one connection, counted and checksummed.

use core::fmt::Write as _;

use super::head::{first_line, head_end, parse_decimal, parse_status_line};
use super::{MAX_HEAD, MAX_REQUEST};
use crate::payload::{self, BenchFile};
use crate::slice_writer::SliceWriter;

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

/// A finished download, as Niccle's MAC write-up printed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Download {
    /// The response status code.
    pub status: u16,
    /// All response bytes received: head + body (Niccle's "Received N bytes").
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

    /// The response's status code, once its head has been parsed.
    pub fn status(&self) -> Option<u16> {
        (self.status != 0).then_some(self.status)
    }

    /// The response's status line without its line ending (`HTTP/1.0 404 File not found`),
    /// once its head has been parsed: what a prober names when it refuses a response.
    pub fn status_line(&self) -> Option<&[u8]> {
        (self.status != 0).then(|| first_line(self.head.get(..self.head_len).unwrap_or(&[])))
    }

    /// The body length the response announced (`Content-Length`), once its head has been
    /// parsed; `None` when it announced none (the body then ends at the server's close).
    pub fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// Body bytes received so far.
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::{NoRoutes, Server};

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

    /// The status is known as soon as the head is in, before any body byte.
    #[test]
    fn status_once_the_head_is_parsed() {
        let mut c = Client::new("h", "/x").unwrap();
        assert_eq!(c.status(), None);
        c.receive(b"HTTP/1.1 404 Not Found\r\nContent-").unwrap();
        assert_eq!(c.status(), None);
        c.receive(b"Length: 10\r\n\r\nnot").unwrap();
        assert_eq!(c.status(), Some(404));
        assert_eq!(c.status_line(), Some(&b"HTTP/1.1 404 Not Found"[..]));
        assert_eq!(c.content_length(), Some(10));
        let mut none = Client::new("h", "/x").unwrap();
        none.receive(b"HTTP/1.0 200 OK\n\nbody").unwrap();
        assert_eq!(none.status_line(), Some(&b"HTTP/1.0 200 OK"[..]));
        assert_eq!(none.content_length(), None);
        let mut bad = Client::new("h", "/x").unwrap();
        assert!(bad.receive(b"garbage\r\n\r\n").is_err());
        assert_eq!(bad.status(), None);
        assert_eq!(bad.status_line(), None);
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
}
