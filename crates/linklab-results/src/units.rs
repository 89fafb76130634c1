//! Figures in words for people: rates with their unit.

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
    fn formats_rates() {
        assert_eq!(format_rate(200e6), "200 Mbit/s");
        assert_eq!(format_rate(1.25e9), "1.25 Gbit/s");
        assert_eq!(format_rate(950e3), "950 kbit/s");
        assert_eq!(format_rate(12.5e6), "12.5 Mbit/s");
    }
}
