//! Which iperf a connection's first bytes come from: an iperf3 client opens with a 37-byte
//! cookie (36 characters of `a-z2-7` and a NUL), an iperf 2 client with its test header
//! or, without one, the '0'..'9' pattern. Each server uses this to name a client of the
//! other protocol in one line instead of failing on it later.
//!
//! [`elicits_iperf2_reply`] is the client-side probe: an iperf3 cookie whose first word
//! also reads, to an iperf 2.1 server, as a short test header that asks for its version
//! reply — so an iperf3 client pointed at an iperf 2 server gets the 28-byte reply at once
//! (its first byte 0, a state iperf3 never sends) instead of waiting on a silent server.

use super::request::TestRequest;
use super::wire::get_u32;
use super::wire::header::{header_len, HeaderLen};
use crate::iperf::wire::{is_cookie_char, COOKIE_SIZE};

/// What a connection's first bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FirstBytes {
    /// Too few bytes to tell.
    NeedMore,
    /// An iperf3 cookie (or, with fewer than 37 bytes, its beginning).
    Iperf3Cookie,
    /// An iperf 2 test header.
    Iperf2Header,
    /// iperf 2's payload pattern (a header-less iperf 2 client, `-C`).
    Iperf2Pattern,
    /// Neither.
    Unknown,
}

/// True if `head` starts with a whole iperf3 cookie.
pub fn is_iperf3_cookie(head: &[u8]) -> bool {
    let Some(cookie) = head.get(..COOKIE_SIZE) else {
        return false;
    };
    let (chars, nul) = cookie.split_at(COOKIE_SIZE - 1);
    nul == [0] && chars.iter().all(|&c| is_cookie_char(c))
}

/// True if `first` is iperf 2's pattern: consecutive digits '0'..'9' repeating.
fn is_pattern(first: &[u8]) -> bool {
    first.iter().all(u8::is_ascii_digit)
        && first
            .windows(2)
            .all(|w| w[1] == b'0' + (w[0].wrapping_sub(b'0') + 1) % 10)
}

/// Classifies the first bytes of a TCP connection (4 bytes suffice for most answers; up
/// to 37 make a cookie certain).
pub fn classify(first: &[u8]) -> FirstBytes {
    if first.len() < 4 {
        return FirstBytes::NeedMore;
    }
    let head = &first[..first.len().min(COOKIE_SIZE)];
    let chars = &head[..head.len().min(COOKIE_SIZE - 1)];
    if chars.iter().all(|&c| is_cookie_char(c)) {
        return if head.len() < COOKIE_SIZE || is_iperf3_cookie(head) {
            FirstBytes::Iperf3Cookie
        } else {
            FirstBytes::Unknown
        };
    }
    if is_pattern(&first[..first.len().min(16)]) {
        return FirstBytes::Iperf2Pattern;
    }
    let w = get_u32(first, 0);
    if !plausible_flags(w) {
        return FirstBytes::Unknown;
    }
    match header_len(w) {
        HeaderLen::Bytes(n) => {
            let kept = &first[..first.len().min(n)];
            if kept.len() < super::wire::header::V1_LEN {
                FirstBytes::NeedMore
            } else if TestRequest::from_tcp_header_prefix(kept).is_some() {
                FirstBytes::Iperf2Header
            } else {
                FirstBytes::Unknown
            }
        }
        _ => FirstBytes::Unknown,
    }
}

/// True if `w` is a flags word an iperf 2 client sends: no bit set that no version uses
/// (bits 9-15 and 18-23), and either the length bits (2.1) or only the top byte's flags and
/// RUN_NOW (2.0's `-r`/`-d`). A 2.1.8 server reads any word with a header bit as a header;
/// this stricter test keeps a stray byte stream on an iperf3 port from passing as one.
fn plausible_flags(w: u32) -> bool {
    use super::wire::flags::LEN_BIT;
    if w & 0x00FC_FE00 != 0 {
        return false;
    }
    w & LEN_BIT != 0 || w & 0x00FF_FFFE == 0
}

/// True if a 2.1 iperf 2 server that reads `cookie` as a connection's first bytes takes a
/// whole test header from the cookie alone (its length bits say 24..=36 bytes) and
/// answers it with its version reply at once (EXTEND without VERSION2, or V2PEERDETECT;
/// nothing it refuses).
pub fn elicits_iperf2_reply(cookie: &[u8; COOKIE_SIZE]) -> bool {
    let w = get_u32(cookie, 0);
    let HeaderLen::Bytes(n) = header_len(w) else {
        return false;
    };
    if n >= COOKIE_SIZE || w & super::wire::flags::LEN_BIT == 0 {
        return false;
    }
    TestRequest::from_tcp_header_prefix(&cookie[..n])
        .is_some_and(|r| r.wants_ack && r.unsupported.is_none())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iperf::wire::make_cookie;
    use crate::iperf2::request::{HeaderStyle, Mode, Protocol};

    #[test]
    fn first_bytes_of_each_kind() {
        for seed in 0..50 {
            let c = make_cookie(seed);
            assert_eq!(classify(&c), FirstBytes::Iperf3Cookie);
            assert_eq!(classify(&c[..5]), FirstBytes::Iperf3Cookie);
        }
        let mut h = [0u8; 60];
        for mode in [Mode::Normal, Mode::Tradeoff, Mode::Reverse] {
            TestRequest {
                mode,
                ..TestRequest::plain(Protocol::Tcp)
            }
            .write(HeaderStyle::V21, &mut h);
            assert_eq!(classify(&h), FirstBytes::Iperf2Header);
            assert_eq!(classify(&h[..10]), FirstBytes::NeedMore);
        }
        TestRequest::plain(Protocol::Tcp).write(HeaderStyle::V20, &mut h);
        // 2.0's plain header is flags 0: data to an iperf 2 server, not a header.
        assert_eq!(classify(&h[..24]), FirstBytes::Unknown);
        assert_eq!(classify(b"01234567890123456789"), FirstBytes::Iperf2Pattern);
        assert_eq!(classify(b"GET / HTTP/1.1\r\n"), FirstBytes::Unknown);
        assert_eq!(classify(b"ab"), FirstBytes::NeedMore);
        // Random high bytes read as a header by 2.1.8, but not as a client here.
        let garbage: std::vec::Vec<u8> = (0..64u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 0x80)
            .collect();
        assert_eq!(classify(&garbage), FirstBytes::Unknown);
        // 2.0's -r and -d headers are clients.
        let mut h20 = [0u8; 24];
        h20[0] = 0x80;
        assert_eq!(classify(&h20), FirstBytes::Iperf2Header);
        h20[3] = 1;
        assert_eq!(classify(&h20), FirstBytes::Iperf2Header);
    }

    #[test]
    fn some_cookies_probe_an_iperf2_server() {
        let hits = (0..4000u64)
            .filter(|s| elicits_iperf2_reply(&make_cookie(*s)))
            .count();
        // About one seed in 70 (60 of these 4000).
        assert!(hits > 20, "{hits}");
        let c = make_cookie(
            (0..4000u64)
                .find(|s| elicits_iperf2_reply(&make_cookie(*s)))
                .unwrap(),
        );
        // Our own iperf 2 server takes such a cookie as a header and replies.
        let mut conn = crate::iperf2::TcpServerConn::new(Default::default(), 0);
        conn.on_received(&c[..4], 0);
        let n = ((u32::from_be_bytes([c[0], c[1], c[2], c[3]]) & 0x1FE) >> 1) as usize;
        conn.on_received(&c[4..n], 0);
        assert_eq!(conn.control_output().len(), 28);
    }
}
