//! Times in the documents' words: a Unix time as people read it.

use time::macros::format_description;
use time::OffsetDateTime;

/// Formats a Unix time (seconds) as `YYYY-MM-DD HH:MM UTC`; a time past what a date holds
/// reads as its number of seconds.
pub fn utc_time(unix: u64) -> String {
    let format = format_description!("[year]-[month]-[day] [hour]:[minute] UTC");
    i64::try_from(unix)
        .ok()
        .and_then(|s| OffsetDateTime::from_unix_timestamp(s).ok())
        .and_then(|t| t.format(format).ok())
        .unwrap_or_else(|| format!("{unix} s after 1970 UTC"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(utc_time(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(utc_time(1_795_318_200), "2026-11-22 03:30 UTC");
        assert_eq!(utc_time(u64::MAX), "18446744073709551615 s after 1970 UTC");
    }
}
