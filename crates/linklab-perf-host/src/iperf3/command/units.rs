//! iperf3's number formats: `unit_snprintf` (adaptive or fixed K/M/G/T, bits in powers of
//! 1000, bytes in powers of 1024, always four places) and C's `%.Ng`.

/// `unit_snprintf(value, format)` of iperf3: `value` in bytes; a lower-case `format`
/// (`a`, `k`, `m`, `g`, `t`) shows bits in powers of 1000, an upper-case one bytes in
/// powers of 1024; `a`/`A` pick the unit. Callers append `s` or `s/sec` as iperf3 does.
pub fn unit(value: f64, format: char) -> String {
    let bits = !format.is_ascii_uppercase();
    let mut v = if bits { value * 8.0 } else { value };
    let base = if bits { 1000.0 } else { 1024.0 };
    let conv = match format.to_ascii_uppercase() {
        'B' => 0,
        'K' => 1,
        'M' => 2,
        'G' => 3,
        'T' => 4,
        _ => {
            let mut c = 0;
            let mut t = v;
            while t >= base && c < 4 {
                t /= base;
                c += 1;
            }
            c
        }
    };
    v /= base.powi(conv);
    let label = if bits {
        ["bit", "Kbit", "Mbit", "Gbit", "Tbit"][conv as usize]
    } else {
        ["Byte", "KByte", "MByte", "GByte", "TByte"][conv as usize]
    };
    let n = if v < 9.995 {
        format!("{v:4.2}")
    } else if v < 99.95 {
        format!("{v:4.1}")
    } else {
        format!("{v:4.0}")
    };
    format!("{n} {label}")
}

/// C's `printf("%.{precision}g", v)`.
pub fn g(v: f64, precision: usize) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() {
            "0".into()
        } else {
            format!("{v}")
        };
    }
    let p = precision.max(1);
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let m = strip_zeros(mantissa);
        format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{v:.decimals$}")).to_string()
    }
}

/// Drops trailing zeros after a decimal point, and the point if nothing follows.
fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_like_iperf3() {
        assert_eq!(unit(1536.0, 'A'), "1.50 KByte");
        assert_eq!(unit(9_430_000_000.0 / 8.0, 'a'), "9.43 Gbit");
        assert_eq!(unit(128.0 * 1024.0, 'A'), " 128 KByte");
        assert_eq!(unit(131_072.0, 'a'), "1.05 Mbit");
        assert_eq!(unit(125_000.0, 'k'), "1000 Kbit");
        assert_eq!(
            unit(2.0 * 1024.0 * 1024.0 * 1024.0 * 1024.0, 'A'),
            "2.00 TByte"
        );
    }

    #[test]
    fn percent_g_like_c() {
        assert_eq!(g(0.0, 2), "0");
        assert_eq!(g(1.234, 2), "1.2");
        assert_eq!(g(12.34, 2), "12");
        assert_eq!(g(100.0, 2), "1e+02");
        assert_eq!(g(0.05, 2), "0.05");
        assert_eq!(g(0.000_012, 2), "1.2e-05");
        assert_eq!(g(99.96, 2), "1e+02");
    }
}
