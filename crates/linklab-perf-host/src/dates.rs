//! Dates as iperf prints them: `--timestamps` (a strftime format, local time), iperf3's
//! `Time:` line (RFC 1123, GMT) and iperf 2's CSV stamp, through the `time` crate.
//!
//! The local offset is read once, while the process has one thread (the `time` crate
//! refuses to read it later, as the C library's reading of the time zone is not
//! thread-safe): [`local_offset`] is called by the commands before they start threads; a
//! process that cannot read it prints UTC.

use std::sync::OnceLock;

use time::format_description;
use time::{OffsetDateTime, UtcOffset};

use crate::clock::unix_time;

/// The local time zone's offset from UTC, read on the first call (UTC if it cannot be read).
pub fn local_offset() -> UtcOffset {
    static OFFSET: OnceLock<UtcOffset> = OnceLock::new();
    *OFFSET.get_or_init(|| UtcOffset::current_local_offset().unwrap_or(UtcOffset::UTC))
}

/// Now in local time, formatted with the strftime format `fmt` (iperf3's `--timestamps`,
/// iperf 2's CSV stamp). A format the `time` crate cannot read (`%Z`, `%O`, `%E`) is
/// printed as it is.
pub fn local_time(fmt: &str) -> String {
    let now = OffsetDateTime::from_unix_timestamp(unix_time())
        .unwrap_or(OffsetDateTime::UNIX_EPOCH)
        .to_offset(local_offset());
    match format_description::parse_strftime_borrowed(fmt) {
        Ok(items) => now.format(&items).unwrap_or_default(),
        Err(_) => fmt.to_string(),
    }
}

/// Now as RFC 1123 in GMT ("Tue, 02 Dec 2025 10:11:12 GMT", as iperf3 prints `Time:`) and
/// as seconds since the epoch.
pub fn rfc1123_now() -> (String, i64) {
    let secs = unix_time();
    let now = OffsetDateTime::from_unix_timestamp(secs).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    let text = format_description::parse_strftime_borrowed("%a, %d %b %Y %H:%M:%S GMT")
        .ok()
        .and_then(|items| now.format(&items).ok())
        .unwrap_or_default();
    (text, secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1123_is_what_iperf3_prints() {
        let (text, secs) = rfc1123_now();
        assert!(secs > 1_700_000_000);
        assert_eq!(text.len(), "Tue, 02 Dec 2025 10:11:12 GMT".len(), "{text}");
        assert!(text.ends_with(" GMT"), "{text}");
    }

    #[test]
    fn a_strftime_format_is_read_as_c_reads_it() {
        let year = local_time("%Y");
        assert_eq!(year.len(), 4, "{year}");
        assert!(local_time("<%Y> %H:%M:%S").starts_with(&format!("<{year}> ")));
        // What the crate cannot read comes out as written.
        assert_eq!(local_time("%Z"), "%Z");
    }
}
