//! The validated configuration of `linklab serve`: every option checked once, each bad value
//! answered with one line that names the option and what it accepts.

use std::net::Ipv4Addr;
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_sim::device::RX_FRAMES_RANGE;

/// Default RX queue size in frames.
pub const DEFAULT_RX_FRAMES: usize = 32;
/// Smallest and largest explicit TCP receive window in bytes (`--tcp-window`).
pub const TCP_WINDOW: (usize, usize) = (536, 1 << 20);
/// Smallest and largest stats interval in seconds (`--stats-interval`).
pub const STATS_INTERVAL: (u64, u64) = (1, 3600);
/// The MAC address used when `--mac` is not given (locally administered, unicast).
pub const DEFAULT_MAC: [u8; 6] = [0x02, 0x4c, 0x4c, 0x00, 0x00, 0x01];

/// How the TCP receive window is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TcpWindow {
    /// Derived from the RX queue capacity so that a peer cannot overrun the queue.
    Auto,
    /// A fixed window in bytes.
    Bytes(usize),
}

/// Everything `linklab serve` needs to know, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// TAP interface name.
    pub tap: String,
    /// The soft NIC's IPv4 address.
    pub ip: Ipv4Addr,
    /// Prefix length of the soft NIC's subnet.
    pub prefix: u8,
    /// The soft NIC's MAC address.
    pub mac: [u8; 6],
    /// RX queue capacity in frames.
    pub rx_frames: usize,
    /// TCP receive window policy.
    pub tcp_window: TcpWindow,
    /// Print counters this often, if set.
    pub stats_interval: Option<Duration>,
}

/// Parses `--tap`: 1 to 15 bytes (IFNAMSIZ - 1), no `/`, whitespace or `:`.
pub fn parse_tap(s: &str) -> anyhow::Result<String> {
    let ok = !s.is_empty()
        && s.len() <= 15
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_graphic() && b != b'/' && b != b':');
    if !ok {
        bail!("--tap: expected an interface name of 1 to 15 printable characters without '/' or ':', got {s:?}");
    }
    Ok(s.to_string())
}

/// Parses `--ip ADDR/PREFIX`: a unicast IPv4 address with a prefix length of 1 to 30.
pub fn parse_ip(s: &str) -> anyhow::Result<(Ipv4Addr, u8)> {
    let what = "--ip: expected ADDR/PREFIX with a unicast IPv4 address and a prefix of 1..=30";
    let (addr, prefix) = s
        .split_once('/')
        .with_context(|| format!("{what}, got {s:?}"))?;
    let addr: Ipv4Addr = addr
        .parse()
        .ok()
        .with_context(|| format!("{what}, got {s:?}"))?;
    let prefix: u8 = prefix
        .parse()
        .ok()
        .filter(|p| (1..=30).contains(p))
        .with_context(|| format!("{what}, got {s:?}"))?;
    if addr.is_unspecified() || addr.is_broadcast() || addr.is_multicast() || addr.is_loopback() {
        bail!("{what}, got {s:?}");
    }
    let host_bits = u32::MAX >> prefix;
    let host = u32::from(addr) & host_bits;
    if host == 0 || host == host_bits {
        bail!("{what} (not the network or broadcast address of its subnet), got {s:?}");
    }
    Ok((addr, prefix))
}

/// Parses `--mac`: six hex octets separated by `:`, unicast and not all zero.
pub fn parse_mac(s: &str) -> anyhow::Result<[u8; 6]> {
    let what = "--mac: expected a unicast MAC address like 02:4c:4c:00:00:01";
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for octet in mac.iter_mut() {
        let part = parts
            .next()
            .filter(|p| p.len() == 2)
            .with_context(|| format!("{what}, got {s:?}"))?;
        *octet = u8::from_str_radix(part, 16)
            .ok()
            .with_context(|| format!("{what}, got {s:?}"))?;
    }
    if parts.next().is_some() || mac[0] & 1 == 1 || mac == [0; 6] {
        bail!("{what}, got {s:?}");
    }
    Ok(mac)
}

/// Parses `--rx-frames N`: full-size frames in 2..=1024 (the queue is sized at run time,
/// as in `linklab bench`).
pub fn parse_rx_frames(s: &str) -> anyhow::Result<usize> {
    s.parse::<usize>()
        .ok()
        .filter(|n| RX_FRAMES_RANGE.contains(n))
        .with_context(|| {
            format!(
                "--rx-frames: expected full-size frames in {}..={}, got {s:?}",
                RX_FRAMES_RANGE.start(),
                RX_FRAMES_RANGE.end()
            )
        })
}

/// Parses `--tcp-window auto|BYTES` (BYTES within [`TCP_WINDOW`]).
pub fn parse_tcp_window(s: &str) -> anyhow::Result<TcpWindow> {
    if s == "auto" {
        return Ok(TcpWindow::Auto);
    }
    let (lo, hi) = TCP_WINDOW;
    s.parse::<usize>()
        .ok()
        .filter(|n| (lo..=hi).contains(n))
        .map(TcpWindow::Bytes)
        .with_context(|| {
            format!("--tcp-window: expected 'auto' or a number of bytes in {lo}..={hi}, got {s:?}")
        })
}

/// Parses `--stats-interval S` within [`STATS_INTERVAL`] seconds.
pub fn parse_stats_interval(s: &str) -> anyhow::Result<Duration> {
    let (lo, hi) = STATS_INTERVAL;
    s.parse::<u64>()
        .ok()
        .filter(|n| (lo..=hi).contains(n))
        .map(Duration::from_secs)
        .with_context(|| {
            format!("--stats-interval: expected whole seconds in {lo}..={hi}, got {s:?}")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(r: anyhow::Result<impl std::fmt::Debug>) -> String {
        format!("{:#}", r.unwrap_err())
    }

    #[test]
    fn good_values_parse() {
        assert_eq!(parse_tap("tap0").unwrap(), "tap0");
        assert_eq!(
            parse_ip("198.18.0.2/24").unwrap(),
            (Ipv4Addr::new(198, 18, 0, 2), 24)
        );
        assert_eq!(parse_mac("02:4c:4c:00:00:01").unwrap(), DEFAULT_MAC);
        for n in [2, 5, 99, 1024] {
            assert_eq!(parse_rx_frames(&n.to_string()).unwrap(), n);
        }
        assert_eq!(parse_tcp_window("auto").unwrap(), TcpWindow::Auto);
        assert_eq!(parse_tcp_window("65535").unwrap(), TcpWindow::Bytes(65535));
        assert_eq!(parse_stats_interval("5").unwrap(), Duration::from_secs(5));
    }

    #[test]
    fn bad_values_name_the_option_and_range() {
        assert!(err(parse_tap("")).starts_with("--tap:"));
        assert!(err(parse_tap("a-very-long-name-x")).starts_with("--tap:"));
        assert!(err(parse_tap("a/b")).starts_with("--tap:"));
        for bad in [
            "198.18.0.2",
            "198.18.0.2/0",
            "198.18.0.2/31",
            "198.18.0.0/24",
            "198.18.0.255/24",
            "224.0.0.1/4",
            "x/24",
            "1.2.3.4/x",
        ] {
            assert!(err(parse_ip(bad)).starts_with("--ip:"), "{bad}");
        }
        for bad in [
            "01:00:00:00:00:01",
            "00:00:00:00:00:00",
            "02:4c:4c:00:00",
            "02:4c:4c:00:00:01:02",
            "02:4c:4c:0:00:01",
            "zz:4c:4c:00:00:01",
        ] {
            assert!(err(parse_mac(bad)).starts_with("--mac:"), "{bad}");
        }
        for bad in ["0", "1", "1025", "-3", "x"] {
            assert!(err(parse_rx_frames(bad)).contains("2..=1024"), "{bad}");
        }
        assert!(err(parse_tcp_window("100")).contains("536..=1048576"));
        assert!(err(parse_stats_interval("0")).starts_with("--stats-interval:"));
    }
}
