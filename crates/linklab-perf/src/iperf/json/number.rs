//! JSON numbers without floating-point parsing or printing: a device that links
//! `f64::from_str` and ryu pays ~25 KB of flash for them (tables and code), for a handful
//! of fields where nanosecond precision is plenty.
//!
//! - reading: [`Decimal`], an exact sign / integer / nanoseconds split of any JSON number
//!   (exponents included), from which integer fields are taken directly and the few
//!   fractional ones convert with one integer-to-float division;
//! - writing: [`Fixed`], a finite `f64` printed as a decimal with up to nine fractional
//!   digits (`2.0`, `0.000015`), which stock iperf3's cJSON reads like any number.

use serde::{Serialize, Serializer};

/// Fractional digits kept when reading and printed when writing.
const FRAC_DIGITS: u32 = 9;
/// `10^FRAC_DIGITS`.
const NANOS: u64 = 1_000_000_000;

/// A JSON number as sign, integer part (saturated at `u64::MAX`) and the first nine
/// fractional digits (truncated).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Decimal {
    /// True for a number below zero.
    pub negative: bool,
    /// The integer part of the magnitude, saturating.
    pub int: u64,
    /// The fractional part in units of 10⁻⁹, truncated.
    pub nanos: u32,
}

/// `10^n` for `n` in 0..=19 (a table: a device's flash pays less for it than for the
/// inlined checked multiplications).
const POW10: [u64; 20] = {
    let mut t = [1u64; 20];
    let mut i = 1;
    while i < 20 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// `10^n` for `n` in 0..=19; None above.
fn checked_pow10(n: u32) -> Option<u64> {
    POW10.get(n as usize).copied()
}

/// `10^n` for `n` in 0..=19; saturates above.
fn pow10(n: u32) -> u64 {
    checked_pow10(n).unwrap_or(u64::MAX)
}

impl Decimal {
    /// Parses a JSON number (`-? digits (. digits)? ([eE] [+-]? digits)?`) that spans all of
    /// `text`; None if it is not one.
    pub fn parse(text: &[u8]) -> Option<Decimal> {
        let (negative, rest) = match text.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, text),
        };
        // Significant digits (the first 19 that are not leading zeros) and the power of ten
        // that scales them.
        let mut mantissa = 0u64;
        let mut kept = 0u32;
        let mut exp: i64 = 0;
        let mut i = 0;
        let mut int_digits = 0;
        while let Some(d) = rest.get(i).filter(|b| b.is_ascii_digit()) {
            if kept < 19 {
                mantissa = mantissa * 10 + u64::from(d - b'0');
                kept += u32::from(mantissa != 0);
            } else {
                exp += 1;
            }
            i += 1;
            int_digits += 1;
        }
        if int_digits == 0 {
            return None;
        }
        if rest.get(i) == Some(&b'.') {
            i += 1;
            let start = i;
            while let Some(d) = rest.get(i).filter(|b| b.is_ascii_digit()) {
                if kept < 19 {
                    mantissa = mantissa * 10 + u64::from(d - b'0');
                    kept += u32::from(mantissa != 0);
                    exp -= 1;
                }
                i += 1;
            }
            if i == start {
                return None;
            }
        }
        if matches!(rest.get(i), Some(b'e' | b'E')) {
            i += 1;
            let minus = match rest.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let start = i;
            let mut e: i64 = 0;
            while let Some(d) = rest.get(i).filter(|b| b.is_ascii_digit()) {
                e = (e * 10 + i64::from(d - b'0')).min(1_000_000);
                i += 1;
            }
            if i == start {
                return None;
            }
            exp += if minus { -e } else { e };
        }
        if i != rest.len() {
            return None;
        }
        let (int, nanos) = if mantissa == 0 {
            (0, 0)
        } else if exp >= 0 {
            let int = u32::try_from(exp)
                .ok()
                .and_then(checked_pow10)
                .and_then(|p| mantissa.checked_mul(p))
                .unwrap_or(u64::MAX);
            (int, 0)
        } else {
            let shift = (-exp).min(40) as u32;
            let (int, rem) = if shift > 19 {
                (0, mantissa)
            } else {
                (mantissa / pow10(shift), mantissa % pow10(shift))
            };
            // rem < 10^shift: scale it to nanoseconds.
            let nanos = if shift <= FRAC_DIGITS {
                rem * pow10(FRAC_DIGITS - shift)
            } else if shift - FRAC_DIGITS > 19 {
                0
            } else {
                rem / pow10(shift - FRAC_DIGITS)
            };
            (int, nanos as u32)
        };
        Some(Decimal {
            negative: negative && (int, nanos) != (0, 0),
            int,
            nanos,
        })
    }

    /// The integer part clamped to `0..=max` (negative numbers are 0).
    pub fn to_uint(self, max: u64) -> u64 {
        if self.negative {
            0
        } else {
            self.int.min(max)
        }
    }

    /// The integer part with its sign, truncated toward zero, saturating.
    pub fn to_int(self) -> i64 {
        let m = i64::try_from(self.int).unwrap_or(i64::MAX);
        if self.negative {
            -m
        } else {
            m
        }
    }

    /// The value in millionths, saturating (negative numbers are 0): a time in seconds as
    /// microseconds.
    pub fn to_micros(self) -> u64 {
        if self.negative {
            return 0;
        }
        self.int
            .saturating_mul(1_000_000)
            .saturating_add(u64::from(self.nanos / 1000))
    }

    /// True if the number is not zero.
    pub fn is_nonzero(self) -> bool {
        self.int != 0 || self.nanos != 0
    }

    /// The value as an `f64`: exact to the nearest double while the number has fewer than
    /// ~16 significant digits (`int` below 2^53 / 10^9 with nanoseconds, any `int` without).
    pub fn to_f64(self) -> f64 {
        let v = match self.int.checked_mul(NANOS) {
            Some(n) if n < 1 << 53 && self.nanos != 0 => (n + u64::from(self.nanos)) as f64 / 1e9,
            _ if self.nanos == 0 => self.int as f64,
            _ => self.int as f64 + f64::from(self.nanos) / 1e9,
        };
        if self.negative {
            -v
        } else {
            v
        }
    }
}

/// A finite `f64` written as a JSON number with up to nine fractional digits (at least
/// one); NaN and infinities are written as `null`, as serde-json-core writes them.
pub(crate) struct Fixed(pub f64);

impl Fixed {
    /// The text of the number into `out`; returns its length (at most 31 bytes).
    pub(crate) fn write(&self, out: &mut [u8; 32]) -> usize {
        let v = self.0;
        let a = if v < 0.0 { -v } else { v };
        // Saturating casts: beyond u64 the integer part is clamped (no iperf3 field gets there).
        let mut int = a as u64;
        let frac = a - int as f64;
        // Above 2^64 the integer part saturates and what is left is no fraction.
        let mut nanos = if frac < 1.0 {
            (frac * 1e9 + 0.5) as u64
        } else {
            0
        };
        if nanos >= NANOS {
            int = int.saturating_add(1);
            nanos -= NANOS;
        }
        let mut n = 0;
        if v < 0.0 && (int, nanos) != (0, 0) {
            out[n] = b'-';
            n += 1;
        }
        let mut digits = [0u8; 20];
        let mut d = 0;
        loop {
            digits[d] = b'0' + (int % 10) as u8;
            int /= 10;
            d += 1;
            if int == 0 {
                break;
            }
        }
        for k in (0..d).rev() {
            out[n] = digits[k];
            n += 1;
        }
        out[n] = b'.';
        n += 1;
        let mut frac = [b'0'; FRAC_DIGITS as usize];
        for k in (0..FRAC_DIGITS as usize).rev() {
            frac[k] = b'0' + (nanos % 10) as u8;
            nanos /= 10;
        }
        let keep = frac.iter().rposition(|&c| c != b'0').map_or(1, |p| p + 1);
        out[n..n + keep].copy_from_slice(&frac[..keep]);
        n + keep
    }
}

impl Serialize for Fixed {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.0.is_finite() {
            return s.serialize_none();
        }
        let mut text = [0u8; 32];
        let n = self.write(&mut text);
        // serde-json-core writes bytes as they are: the number's text, unquoted.
        s.serialize_bytes(&text[..n])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(s: &str) -> Option<Decimal> {
        Decimal::parse(s.as_bytes())
    }

    #[test]
    fn numbers_as_cjson_prints_them() {
        let d = |negative, int, nanos| {
            Some(Decimal {
                negative,
                int,
                nanos,
            })
        };
        assert_eq!(dec("0"), d(false, 0, 0));
        assert_eq!(dec("-0"), d(false, 0, 0));
        assert_eq!(dec("10485760"), d(false, 10_485_760, 0));
        assert_eq!(dec("1.2e9"), d(false, 1_200_000_000, 0));
        assert_eq!(dec("5e7"), d(false, 50_000_000, 0));
        assert_eq!(dec("1.5e-05"), d(false, 0, 15_000));
        assert_eq!(dec("2.000104"), d(false, 2, 104_000));
        assert_eq!(dec("-1"), d(true, 1, 0));
        assert_eq!(dec("-2.5E+1"), d(true, 25, 0));
        assert_eq!(dec("1e-10"), d(false, 0, 0));
        assert_eq!(dec("123456789012345678901234"), d(false, u64::MAX, 0));
        // 19 significant digits are kept (f64 kept ~16).
        assert_eq!(dec("9007199254740993"), d(false, 9_007_199_254_740_993, 0));
        assert_eq!(
            dec("18446744073709551615"),
            d(false, 18_446_744_073_709_551_610, 0)
        );
        assert_eq!(dec("1e999999999999"), d(false, u64::MAX, 0));
        assert_eq!(dec("1e-999999999999"), d(false, 0, 0));
        assert_eq!(
            dec("0.000000000000000000000000000000000000000000001e45"),
            d(false, 1, 0)
        );
        for bad in [
            "", "-", ".5", "1.", "1e", "1e+", "--1", "1x", "0x10", "+1", " 1",
        ] {
            assert_eq!(dec(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn conversions_match_the_standard_library() {
        for s in [
            "0",
            "1.5",
            "1.5e-05",
            "2.000104",
            "-3.25",
            "100",
            "0.1",
            "99.999999999",
        ] {
            let want: f64 = s.parse().unwrap();
            assert_eq!(dec(s).unwrap().to_f64(), want, "{s}");
        }
        assert_eq!(dec("-7.9").unwrap().to_int(), -7);
        assert_eq!(dec("-7.9").unwrap().to_uint(10), 0);
        assert_eq!(dec("1e30").unwrap().to_uint(255), 255);
        assert!(dec("0.000000001").unwrap().is_nonzero());
        assert!(!dec("0.0000000001").unwrap().is_nonzero());
    }

    fn text(v: f64) -> std::string::String {
        let mut b = [0u8; 32];
        let n = Fixed(v).write(&mut b);
        std::string::String::from_utf8(b[..n].to_vec()).unwrap()
    }

    #[test]
    fn fixed_prints_what_reads_back() {
        assert_eq!(text(2.0), "2.0");
        assert_eq!(text(0.0), "0.0");
        assert_eq!(text(-0.0), "0.0");
        assert_eq!(text(1.5e-05), "0.000015");
        assert_eq!(text(2.000104), "2.000104");
        assert_eq!(text(-1.25), "-1.25");
        assert_eq!(text(0.9999999999), "1.0");
        assert_eq!(text(1e300), "18446744073709551615.0");
        for v in [0.5, 1.5e-05, 2.000104, 12.345678, 99.5, 1e-9, 3.0] {
            assert_eq!(dec(&text(v)).unwrap().to_f64(), v, "{v}");
        }
    }
}
