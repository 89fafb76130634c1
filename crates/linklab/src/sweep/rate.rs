//! Bit rates as people type them (`50M`, `1.5G`, `800k`, iperf3 style, powers of 1000).

/// Lowest rate accepted, bit/s.
pub const MIN_BPS: f64 = 1e3;
/// Highest rate accepted, bit/s.
pub const MAX_BPS: f64 = 100e9;

/// Parses a rate in bit/s with an optional `k`, `M` or `G` suffix; `option` names the flag
/// in the error, which also states the accepted form and range.
pub fn parse_rate(option: &str, text: &str) -> anyhow::Result<f64> {
    let t = text.trim();
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1e3),
        Some((i, 'm' | 'M')) => (&t[..i], 1e6),
        Some((i, 'g' | 'G')) => (&t[..i], 1e9),
        _ => (t, 1.0),
    };
    match num.parse::<f64>() {
        Ok(v) if v.is_finite() && (MIN_BPS..=MAX_BPS).contains(&(v * scale)) => Ok(v * scale),
        _ => anyhow::bail!(
            "{option}: {text:?} is not a rate (accepted: bit/s with an optional k, M or G suffix, e.g. 50M or 1.5G; 1k..=100G)"
        ),
    }
}

/// Formats a rate for people: `950 kbit/s`, `200 Mbit/s`, `1.25 Gbit/s`.
pub fn format_rate(bps: f64) -> String {
    let (v, unit) = if bps >= 1e9 {
        (bps / 1e9, "Gbit/s")
    } else if bps >= 1e6 {
        (bps / 1e6, "Mbit/s")
    } else {
        (bps / 1e3, "kbit/s")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_suffixes() {
        assert_eq!(parse_rate("--from", "50M").unwrap(), 50e6);
        assert_eq!(parse_rate("--from", "1.5G").unwrap(), 1.5e9);
        assert_eq!(parse_rate("--from", "800k").unwrap(), 800e3);
        assert_eq!(parse_rate("--from", "2000").unwrap(), 2000.0);
    }

    #[test]
    fn rejects_with_the_option_and_range() {
        for bad in ["", "fast", "M", "-5M", "0", "1e400", "NaNM", "200T", "999"] {
            let e = parse_rate("--to", bad).unwrap_err().to_string();
            assert!(
                e.starts_with("--to: ") && e.contains("1k..=100G"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn formats() {
        assert_eq!(format_rate(200e6), "200 Mbit/s");
        assert_eq!(format_rate(1.25e9), "1.25 Gbit/s");
        assert_eq!(format_rate(950e3), "950 kbit/s");
        assert_eq!(format_rate(12.5e6), "12.5 Mbit/s");
    }
}
