//! Typed parsers for the values people type — rates, byte counts, numbers in a range,
//! TCP windows, interface names, addresses — shared by every subcommand, and the usage error
//! that makes a bad value or a bad combination of options exit with code 2 ([`crate::usage`]).
//!
//! Each parser is a clap `value_parser`: clap calls it, and a bad value becomes one line
//! `linklab: error: invalid value 'X' for '--opt <V>': expected …` (see `main`).

use std::fmt::Display;
use std::net::Ipv4Addr;
use std::str::FromStr;

/// A number of type `T` in `lo..=hi`.
pub fn ranged<T>(lo: T, hi: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync
where
    T: FromStr + PartialOrd + Display + Copy + Send + Sync + 'static,
{
    move |s: &str| match s.trim().parse::<T>() {
        Ok(v) if v >= lo && v <= hi => Ok(v),
        _ => Err(format!("expected a number in {lo}..={hi}")),
    }
}

/// A number in `0..hi` (`hi` excluded), e.g. a probability that must stay below 1.
pub fn fraction_below(hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |s: &str| match s.trim().parse::<f64>() {
        Ok(v) if (0.0..hi).contains(&v) => Ok(v),
        _ => Err(format!("expected a number in [0, {hi})")),
    }
}

/// Splits an optional one-letter suffix off a number: `50M` → (`50`, 1000²) with `unit` 1000.
fn split_suffix(s: &str, unit: f64) -> (&str, f64) {
    let t = s.trim();
    match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], unit),
        Some((i, 'm' | 'M')) => (&t[..i], unit * unit),
        Some((i, 'g' | 'G')) => (&t[..i], unit * unit * unit),
        Some((i, 't' | 'T')) => (&t[..i], unit * unit * unit * unit),
        _ => (t, 1.0),
    }
}

/// A bit rate in bit/s with an optional k, M, G or T suffix (powers of 1000, as iperf3's
/// `-b`), in `lo..=hi` bit/s.
pub fn bit_rate(lo: f64, hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |s: &str| {
        let (num, scale) = split_suffix(s, 1e3);
        match num.parse::<f64>() {
            Ok(v) if v.is_finite() && (lo..=hi).contains(&(v * scale)) => Ok(v * scale),
            _ => Err(format!(
                "expected bit/s with an optional k, M or G suffix (e.g. 50M, 1.5G) in {}..={}",
                short_rate(lo),
                short_rate(hi)
            )),
        }
    }
}

/// A rate as typed: `1k`, `50M`, `100G`.
fn short_rate(bps: f64) -> String {
    for (scale, suffix) in [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")] {
        if bps >= scale && (bps / scale).fract() == 0.0 {
            return format!("{}{suffix}", bps / scale);
        }
    }
    format!("{bps}")
}

/// A byte count with an optional K, M, G or T suffix (powers of 1024, as iperf3's `-n` and
/// `-l`), in `lo..=hi` bytes.
pub fn byte_count(lo: u64, hi: u64) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync {
    move |s: &str| {
        let (num, scale) = split_suffix(s, 1024.0);
        match num.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => {
                let bytes = v * scale;
                if bytes.fract() == 0.0 && bytes >= lo as f64 && bytes <= hi as f64 {
                    return Ok(bytes as u64);
                }
            }
            _ => {}
        }
        Err(format!(
            "expected a byte count with an optional K, M or G suffix (powers of 1024) in {lo}..={hi}"
        ))
    }
}

/// How a device's TCP receive window is chosen (`--tcp-window auto|BYTES`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpWindow {
    /// Derived from the RX queue's capacity so that a peer cannot overrun the queue.
    Auto,
    /// A fixed window in bytes.
    Bytes(usize),
}

impl Display for TcpWindow {
    /// As typed: `auto` or the number of bytes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TcpWindow::Auto => f.write_str("auto"),
            TcpWindow::Bytes(n) => write!(f, "{n}"),
        }
    }
}

/// `auto` or a window in `lo..=hi` bytes.
pub fn tcp_window(
    lo: usize,
    hi: usize,
) -> impl Fn(&str) -> Result<TcpWindow, String> + Clone + Send + Sync {
    move |s: &str| {
        if s == "auto" {
            return Ok(TcpWindow::Auto);
        }
        s.parse::<usize>()
            .ok()
            .filter(|n| (lo..=hi).contains(n))
            .map(TcpWindow::Bytes)
            .ok_or_else(|| format!("expected 'auto' or a number of bytes in {lo}..={hi}"))
    }
}

/// A network interface name: 1 to 15 bytes (IFNAMSIZ − 1), printable, no `/` or `:`.
pub fn interface_name(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 15
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'/' && b != b':');
    if ok {
        Ok(s.to_string())
    } else {
        Err("expected an interface name of 1 to 15 printable characters without '/' or ':'".into())
    }
}

/// `ADDR/PREFIX`: a unicast IPv4 host address with a prefix length of 1 to 30, not the
/// network or broadcast address of its subnet.
pub fn ipv4_with_prefix(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let what = "expected ADDR/PREFIX with a unicast IPv4 host address and a prefix of 1..=30, e.g. 198.18.0.2/24";
    let (addr, prefix) = s.split_once('/').ok_or(what)?;
    let addr: Ipv4Addr = addr.parse().map_err(|_| what)?;
    let prefix: u8 = prefix
        .parse()
        .ok()
        .filter(|p| (1..=30).contains(p))
        .ok_or(what)?;
    if addr.is_unspecified() || addr.is_broadcast() || addr.is_multicast() || addr.is_loopback() {
        return Err(what.into());
    }
    let host_bits = u32::MAX >> prefix;
    let host = u32::from(addr) & host_bits;
    if host == 0 || host == host_bits {
        return Err(format!(
            "{what} (not the network or broadcast address of its subnet)"
        ));
    }
    Ok((addr, prefix))
}

/// A unicast MAC address, six hex octets separated by `:`, not all zero.
pub fn mac_address(s: &str) -> Result<[u8; 6], String> {
    let what = "expected a unicast MAC address like 02:4c:4c:00:00:01";
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for octet in mac.iter_mut() {
        let part = parts.next().filter(|p| p.len() == 2).ok_or(what)?;
        *octet = u8::from_str_radix(part, 16).map_err(|_| what)?;
    }
    if parts.next().is_some() || mac[0] & 1 == 1 || mac == [0; 6] {
        return Err(what.into());
    }
    Ok(mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranged_numbers() {
        let p = ranged(2usize, 1024);
        assert_eq!(p("2"), Ok(2));
        assert_eq!(p("1024"), Ok(1024));
        for bad in ["1", "1025", "abc", "", "-3", "2.5"] {
            assert_eq!(p(bad), Err("expected a number in 2..=1024".into()), "{bad}");
        }
        let f = ranged(0.0f64, 1.0);
        assert_eq!(f("0.5"), Ok(0.5));
        assert!(f("NaN").is_err() && f("1.5").is_err() && f("inf").is_err());
    }

    #[test]
    fn bit_rates_use_powers_of_1000() {
        let p = bit_rate(1e3, 100e9);
        assert_eq!(p("50M"), Ok(50e6));
        assert_eq!(p("1.5G"), Ok(1.5e9));
        assert_eq!(p("800k"), Ok(800e3));
        assert_eq!(p("2000"), Ok(2000.0));
        for bad in ["", "fast", "M", "-5M", "0", "1e400", "NaNM", "200T", "999"] {
            let e = p(bad).unwrap_err();
            assert!(e.contains("1k..=100G"), "{bad}: {e}");
        }
    }

    #[test]
    fn byte_counts_use_powers_of_1024() {
        let p = byte_count(1, 1 << 40);
        assert_eq!(p("128K"), Ok(128 * 1024));
        assert_eq!(p("1M"), Ok(1 << 20));
        assert_eq!(p("0.5K"), Ok(512));
        assert_eq!(p("1460"), Ok(1460));
        for bad in ["0", "1.5", "x", "K", "-1K", "2T"] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn tcp_windows() {
        let p = tcp_window(536, 65_535);
        assert_eq!(p("auto"), Ok(TcpWindow::Auto));
        assert_eq!(p("10220"), Ok(TcpWindow::Bytes(10_220)));
        assert!(p("100").unwrap_err().contains("536..=65535"));
        assert!(p("Auto").is_err());
    }

    #[test]
    fn names_and_addresses() {
        assert_eq!(interface_name("tap0"), Ok("tap0".into()));
        for bad in ["", "a-very-long-name-x", "a/b", "a:b", "..", "a b"] {
            assert!(interface_name(bad).is_err(), "{bad}");
        }
        assert_eq!(
            ipv4_with_prefix("198.18.0.2/24"),
            Ok((Ipv4Addr::new(198, 18, 0, 2), 24))
        );
        for bad in [
            "198.18.0.2",
            "198.18.0.2/0",
            "198.18.0.2/31",
            "198.18.0.0/24",
            "198.18.0.255/24",
            "224.0.0.1/4",
            "127.0.0.1/8",
            "x/24",
            "1.2.3.4/x",
        ] {
            assert!(ipv4_with_prefix(bad).is_err(), "{bad}");
        }
        assert_eq!(
            mac_address("02:4c:4c:00:00:01"),
            Ok([0x02, 0x4c, 0x4c, 0, 0, 1])
        );
        for bad in [
            "01:00:00:00:00:01",
            "00:00:00:00:00:00",
            "02:4c:4c:00:00",
            "02:4c:4c:00:00:01:02",
            "02:4c:4c:0:00:01",
            "zz:4c:4c:00:00:01",
        ] {
            assert!(mac_address(bad).is_err(), "{bad}");
        }
    }
}
