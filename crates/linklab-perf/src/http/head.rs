//! The lines of an HTTP/1.x head: where a head ends, the request line a server reads and the
//! status line and decimal header values a client reads. Bounded, never panics.

/// Finds the end of an HTTP head (`\r\n\r\n` or a bare `\n\n`): the index after it.
pub(super) fn head_end(buf: &[u8]) -> Option<usize> {
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
pub(super) fn first_line(head: &[u8]) -> &[u8] {
    let end = head.iter().position(|&b| b == b'\n').unwrap_or(head.len());
    let line = head.get(..end).unwrap_or(&[]);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// `bytes` as text when every byte is ASCII, as a request target is. `core::str::from_utf8`
/// would do, but its validator and 256-byte table were 624 B of the compact image's flash
/// (37 640 B then), and ASCII needs no more than this check.
pub(super) fn ascii(bytes: &[u8]) -> Option<&str> {
    if !bytes.iter().all(u8::is_ascii) {
        return None;
    }
    // SAFETY: every byte is below 0x80, and a byte below 0x80 is UTF-8 on its own.
    Some(unsafe { core::str::from_utf8_unchecked(bytes) })
}

/// What a request head asked for.
pub(super) enum Request<'a> {
    /// `GET` (or `HEAD` when `head_only`) of `path` (query string removed).
    Get { path: &'a str, head_only: bool },
    /// A syntactically valid request with a method other than GET/HEAD.
    OtherMethod,
    /// Not an HTTP/1.x request line.
    Bad,
}

/// Parses a request line `METHOD SP target SP HTTP/1.x`.
pub(super) fn parse_request_line(line: &[u8]) -> Request<'_> {
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
    let Some(path) = ascii(target.get(..path_end).unwrap_or(&[])) else {
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

/// Parses `HTTP/1.x NNN reason`: the status code.
pub(super) fn parse_status_line(line: &[u8]) -> Option<u16> {
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
pub(super) fn parse_decimal(value: &[u8]) -> Option<u64> {
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
