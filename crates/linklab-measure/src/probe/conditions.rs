//! What a probe run was measured under, in every document: linklab's version, the host's
//! kernel, the link the device is reached through (its MTU, and its speed where the interface
//! says one), which iperf the device serves, the device's own description from `/stats`
//! (board, image, hash, window: what it offers), and probe's options. "A throughput figure
//! without its conditions isn't worth much."

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

use linklab_results::probe::{Conditions, DeviceStats, Service};

use super::options::ProbeOptions;
use super::plan::Iperf;

/// Gathers the conditions: the host's at once, the device's `/stats` over HTTP when served.
pub fn gather(
    options: &ProbeOptions,
    addr: IpAddr,
    http: Option<u16>,
    iperf: Option<&Iperf>,
    services: &[Service],
    started_unix_s: u64,
) -> Conditions {
    let host = options.host.as_str();
    let interface = route_interface(addr);
    let sys = |dev: &str, what: &str| {
        std::fs::read_to_string(format!("/sys/class/net/{dev}/{what}"))
            .ok()
            .and_then(|t| t.trim().parse::<i64>().ok())
    };
    let (device, device_absent) = match http {
        Some(port) => match device_stats(SocketAddr::new(addr, port), host) {
            Ok(d) => (Some(d), None),
            Err(e) => (None, Some(format!("GET /stats: {e:#}"))),
        },
        None => (None, Some("no HTTP server: no /stats to ask".into())),
    };
    Conditions {
        label: options.label.as_deref().map_or_else(
            || format!("{host} {}", linklab_results::time::utc_time(started_unix_s)),
            str::to_string,
        ),
        linklab_version: env!("CARGO_PKG_VERSION").into(),
        kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|k| k.trim().to_string()),
        mtu: interface
            .as_deref()
            .and_then(|d| sys(d, "mtu"))
            .and_then(|v| u32::try_from(v).ok()),
        speed_mbit: interface
            .as_deref()
            .and_then(|d| sys(d, "speed"))
            .and_then(|v| u64::try_from(v).ok()),
        interface,
        iperf: iperf.map(|i| iperf_words(i, services)),
        device,
        device_absent,
        options: options.command_line.clone(),
        runs: 1,
        // Read over the whole run, set when it ends (probe.rs).
        device_clock: None,
    }
}

/// The iperf the device serves, for people.
fn iperf_words(i: &Iperf, services: &[Service]) -> String {
    if !i.is_iperf2() {
        return "iperf3 (the protocol does not tell the server's version)".into();
    }
    match services
        .iter()
        .find(|s| s.name == "iperf2")
        .and_then(|s| s.version.clone())
    {
        Some(v) => format!("iperf {v}"),
        None => "iperf 2 (no version reply)".into(),
    }
}

/// The interface of the longest IPv4 route to `addr` in `/proc/net/route`.
fn route_interface(addr: IpAddr) -> Option<String> {
    let IpAddr::V4(v4) = addr else {
        return None;
    };
    let target = u32::from_le_bytes(v4.octets());
    let table = std::fs::read_to_string("/proc/net/route").ok()?;
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let dest = u32::from_str_radix(f.get(1)?, 16).ok()?;
            let mask = u32::from_str_radix(f.get(7)?, 16).ok()?;
            (target & mask == dest).then(|| (mask.count_ones(), f[0].to_string()))
        })
        .max_by_key(|(bits, _)| *bits)
        .map(|(_, dev)| dev)
}

/// `GET /stats`: the members of the device's description it has.
fn device_stats(peer: SocketAddr, host: &str) -> anyhow::Result<DeviceStats> {
    const LIMIT: usize = 64 * 1024;
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut stream = TcpStream::connect_timeout(&peer, Duration::from_millis(1500))?;
    stream.write_all(format!("GET /stats HTTP/1.0\r\nHost: {host}\r\n\r\n").as_bytes())?;
    let mut bytes = Vec::new();
    let mut buf = [0u8; 4096];
    while bytes.len() < LIMIT {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            anyhow::bail!("no whole answer within 2 s");
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut buf)? {
            0 => break,
            n => bytes.extend_from_slice(&buf[..n]),
        }
    }
    let head_end = bytes
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("not an HTTP response"))?;
    let head = String::from_utf8_lossy(&bytes[..head_end]);
    let status = head.lines().next().unwrap_or_default();
    if status.split_whitespace().nth(1) != Some("200") {
        anyhow::bail!("answered {status:?}");
    }
    let v: Value = serde_json::from_slice(&bytes[head_end + 4..])
        .map_err(|_| anyhow::anyhow!("the body is not JSON"))?;
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    Ok(DeviceStats {
        board: text("board"),
        image: text("image"),
        hash: text("hash").or_else(|| text("image_hash")),
        tcp_window: v
            .get("tcp_window")
            .and_then(|w| w.get("bytes").or(Some(w)))
            .and_then(Value::as_u64),
        uptime_s: v.get("uptime_s").and_then(Value::as_f64),
    })
}
