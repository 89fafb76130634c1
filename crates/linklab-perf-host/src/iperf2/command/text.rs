//! iperf 2.1.8's text output (`src/Locale.c`, `src/ReportOutputs.c`) and its CSV (`-y C`),
//! from the host adapter's events: the settings block, connection lines, interval and
//! final lines with `[SUM]` over `-P` flows, the UDP receiver's jitter and loss, the
//! client's "Sent N datagrams" and relayed "Server Report".

use std::collections::HashMap;
use std::net::SocketAddr;

use crate::dates;
use crate::iperf2::{Event, FlowReport, FlowTag};
use linklab_perf::iperf2::Protocol;

const SEPARATOR: &str = "------------------------------------------------------------";
const BW_HEADER: &str = "[ ID] Interval       Transfer     Bandwidth";
const JITTER_HEADER: &str =
    "[ ID] Interval       Transfer     Bandwidth        Jitter   Lost/Total Datagrams";

/// iperf 2's `byte_snprintf`: `A` adaptive bytes (powers of 1024), `a` adaptive bits
/// (powers of 1000), always in 4 places.
pub fn byte_text(value: f64, bits: bool) -> String {
    const BYTE: [&str; 6] = ["Byte", "KByte", "MByte", "GByte", "TByte", "PByte"];
    const BIT: [&str; 6] = ["bit", "Kbit", "Mbit", "Gbit", "Tbit", "Pbit"];
    let (mut n, step) = if bits {
        (value * 8.0, 1000.0)
    } else {
        (value, 1024.0)
    };
    let mut conv = 0;
    while n.abs() >= step && conv < 5 {
        n /= step;
        conv += 1;
    }
    let suffix = if bits { BIT[conv] } else { BYTE[conv] };
    let a = n.abs();
    if a < 0.9995 {
        format!("{n:4.3} {suffix}")
    } else if a < 9.995 {
        format!("{n:4.2} {suffix}")
    } else if a < 99.95 {
        format!("{n:4.1} {suffix}")
    } else {
        format!("{n:4.0} {suffix}")
    }
}

/// C's `%.2g`.
pub fn g2(v: f64) -> String {
    if v.is_nan() {
        return "-nan".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let exp = v.abs().log10().floor() as i32;
    // Round to 2 significant digits first: the exponent may move (9.96 -> 10).
    let rounded: f64 = format!("{v:.1e}").parse().unwrap_or(v);
    let exp = if rounded != 0.0 {
        rounded.abs().log10().floor() as i32
    } else {
        exp
    };
    if !(-4..2).contains(&exp) {
        let s = format!("{rounded:.1e}");
        // Rust writes 1.2e3; C writes 1.2e+03.
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = m.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (1 - exp).max(0) as usize;
    let s = format!("{rounded:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// An address as iperf 2 prints it (IPv4-mapped IPv6 as IPv4).
fn ip(a: &SocketAddr) -> String {
    match a {
        SocketAddr::V6(v6) => match v6.ip().to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => v6.ip().to_string(),
        },
        SocketAddr::V4(v4) => v4.ip().to_string(),
    }
}

/// The `[  1]` / `[ *1]` field.
fn id_field(id: u32, reversed: bool) -> String {
    if reversed {
        format!("[{:>3}] ", format!("*{id}"))
    } else {
        format!("[{id:3}] ")
    }
}

/// One interval or final line.
fn flow_line(prefix: &str, r: &FlowReport) -> String {
    let mut s = format!(
        "{prefix}{:4.4}-{:4.4} sec  {}s  {}s/sec",
        r.start_s,
        r.end_s,
        byte_text(r.bytes as f64, false),
        byte_text(r.bits_per_second() / 8.0, true)
    );
    if let Some(u) = r.udp {
        let pct = 100.0 * u.lost as f64 / u.total as f64;
        s.push_str(&format!(
            "  {:6.3} ms {}/{} ({}%)",
            u.jitter_ms,
            u.lost,
            u.total,
            g2(pct)
        ));
    }
    s
}

/// The CSV line of a report (`reportCSV_bw_format` / `_jitter_loss_format`): the traffic's
/// sender first.
fn csv_line(r: &FlowReport, when: &str) -> String {
    let (src, dst) = if r.sent {
        (&r.local, &r.peer)
    } else {
        (&r.peer, &r.local)
    };
    let mut s = format!(
        "{when},{},{},{},{},{},{:.1}-{:.1},{},{}",
        ip(src),
        src.port(),
        ip(dst),
        dst.port(),
        r.id,
        r.start_s,
        r.end_s,
        r.bytes,
        r.bits_per_second() as i64
    );
    if r.protocol == Protocol::Udp && r.udp.is_none() {
        // A UDP sender's line: stock 2.1.8 prints these placeholder fields.
        s.push_str(",0.000,0,-1,-0.000,0");
    }
    if let Some(u) = r.udp {
        s.push_str(&format!(
            ",{:.3},{},{},{:.3},{}",
            u.jitter_ms,
            u.lost,
            u.total,
            100.0 * u.lost as f64 / u.total.max(1) as f64,
            u.out_of_order
        ));
    }
    s
}

/// Prints events as stock iperf 2 does.
pub struct Printer {
    csv: bool,
    /// The client's `-P` (the server takes it from each flow's header).
    parallel: Option<u32>,
    /// Which header the last lines were under (None: print one before the next line).
    header: Option<bool>,
    /// Finals summed per (sent, reversed, udp) and per server client.
    sums: HashMap<(bool, bool, String), (u32, FlowReport)>,
    /// Interval lines summed per (sent, reversed, start).
    interval_sums: HashMap<(bool, bool, u64), (u32, FlowReport)>,
    out: Box<dyn FnMut(&str)>,
}

impl Printer {
    /// A printer to stdout.
    pub fn new(csv: bool, parallel: Option<u32>) -> Self {
        Self::with_output(csv, parallel, Box::new(|l: &str| println!("{l}")))
    }

    /// A printer to `out`, a line at a time.
    pub fn with_output(csv: bool, parallel: Option<u32>, out: Box<dyn FnMut(&str)>) -> Self {
        Self {
            csv,
            parallel,
            header: None,
            sums: HashMap::new(),
            interval_sums: HashMap::new(),
            out,
        }
    }

    fn line(&mut self, l: &str) {
        (self.out)(l);
    }

    fn with_header(&mut self, jitter: bool) {
        if self.header != Some(jitter) {
            self.header = Some(jitter);
            let h = if jitter { JITTER_HEADER } else { BW_HEADER };
            self.line(h);
        }
    }

    fn report(&mut self, r: &FlowReport) {
        if self.csv {
            let when = dates::local_time("%Y%m%d%H%M%S");
            let l = csv_line(r, &when);
            self.line(&l);
            return;
        }
        self.with_header(r.udp.is_some());
        let l = flow_line(&id_field(r.id, r.reversed), r);
        self.line(&l);
    }

    fn sum_line(&mut self, r: &FlowReport) {
        if self.csv {
            return;
        }
        let mut s = format!(
            "[SUM] {:4.4}-{:4.4} sec  {}s  {}s/sec",
            r.start_s,
            r.end_s,
            byte_text(r.bytes as f64, false),
            byte_text(r.bits_per_second() / 8.0, true)
        );
        if let Some(u) = r.udp {
            s.push_str(&format!(
                "   {}/{} ({}%)",
                u.lost,
                u.total,
                g2(100.0 * u.lost as f64 / u.total as f64)
            ));
        }
        self.line(&s);
    }

    /// Adds `r` to its group; prints the `[SUM]` once every flow of the group is in.
    fn add_to_sum(&mut self, r: &FlowReport) {
        let n = self.parallel.unwrap_or(r.threads).max(1);
        if n < 2 {
            return;
        }
        let who = if self.parallel.is_some() {
            String::new()
        } else {
            ip(&r.peer)
        };
        let key = (r.sent, r.reversed, who);
        let e = self.sums.entry(key.clone()).or_insert((
            0,
            FlowReport {
                bytes: 0,
                end_s: 0.0,
                ..*r
            },
        ));
        e.0 += 1;
        e.1.bytes += r.bytes;
        e.1.end_s = e.1.end_s.max(r.end_s);
        if let (Some(a), Some(b)) = (e.1.udp.as_mut(), r.udp) {
            a.lost += b.lost;
            a.total += b.total;
        }
        if e.0 >= n {
            let sum = e.1;
            self.sums.remove(&key);
            self.sum_line(&sum);
        }
    }

    fn add_to_interval_sum(&mut self, r: &FlowReport) {
        let Some(n) = self.parallel.filter(|n| *n > 1) else {
            return;
        };
        let key = (r.sent, r.reversed, (r.start_s * 1e6) as u64);
        let e = self
            .interval_sums
            .entry(key)
            .or_insert((0, FlowReport { bytes: 0, ..*r }));
        e.0 += 1;
        e.1.bytes += r.bytes;
        if e.0 >= n {
            let sum = e.1;
            self.interval_sums.remove(&key);
            self.sum_line(&sum);
        }
    }

    /// Prints one event.
    pub fn event(&mut self, e: &Event) {
        match e {
            Event::Listening { protocol, port } => {
                if self.csv {
                    return;
                }
                self.line(SEPARATOR);
                let p = proto(*protocol);
                self.line(&format!("Server listening on {p} port {port}"));
                self.line(SEPARATOR);
                self.header = None;
            }
            Event::Connecting {
                protocol,
                host,
                port,
                datagram_len,
                ipg_us,
            } => {
                if self.csv {
                    return;
                }
                self.line(SEPARATOR);
                let p = proto(*protocol);
                self.line(&format!("Client connecting to {host}, {p} port {port}"));
                if *protocol == Protocol::Udp {
                    self.line(&format!(
                        "Sending {datagram_len} byte datagrams, IPG target: {ipg_us:.2} us"
                    ));
                }
                self.line(SEPARATOR);
                self.header = None;
            }
            Event::Connected {
                id,
                local,
                peer,
                tag,
                reversed,
                ..
            } => {
                if self.csv {
                    return;
                }
                let t = match tag {
                    FlowTag::Plain => "",
                    FlowTag::Reverse => " (reverse)",
                    FlowTag::FullDuplex => " (full-duplex)",
                };
                let l = format!(
                    "{}local {} port {} connected with {} port {}{t}",
                    id_field(*id, *reversed),
                    ip(local),
                    local.port(),
                    ip(peer),
                    peer.port()
                );
                self.line(&l);
                self.header = None;
            }
            Event::Interval(r) => {
                self.report(r);
                self.add_to_interval_sum(r);
            }
            Event::Final(r) => {
                self.report(r);
                self.add_to_sum(r);
            }
            Event::Sent { id, datagrams } => {
                if !self.csv {
                    self.line(&format!("[{id:3}] Sent {datagrams} datagrams"));
                }
            }
            Event::ServerReport(r) => {
                if self.csv {
                    return;
                }
                self.line(&format!("[{:3}] Server Report:", r.id));
                self.header = None;
                self.with_header(true);
                let l = flow_line(&id_field(r.id, r.reversed), r);
                self.line(&l);
            }
            Event::Notice(s) => eprintln!("{s}"),
        }
    }
}

fn proto(p: Protocol) -> &'static str {
    match p {
        Protocol::Tcp => "TCP",
        Protocol::Udp => "UDP",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_byte_snprintf_prints_them() {
        // Figures from stock iperf 2.1.8 runs: 1.96 GBytes 16.6 Gbits/sec, 645 KBytes,
        // 5.27 Mbits/sec, 1.00 MBytes, 882 MBytes.
        assert_eq!(byte_text(2_104_533_000.0, false), "1.96 GByte");
        assert_eq!(byte_text(16.6e9 / 8.0, true), "16.6 Gbit");
        assert_eq!(byte_text(449.0 * 1470.0, false), " 645 KByte");
        assert_eq!(byte_text(5.27e6 / 8.0, true), "5.27 Mbit");
        assert_eq!(byte_text(1_048_636.0, false), "1.00 MByte");
        assert_eq!(byte_text(0.0, false), "0.000 Byte");
    }

    #[test]
    fn percent_as_c_g2() {
        assert_eq!(g2(0.0), "0");
        assert_eq!(g2(0.5), "0.5");
        assert_eq!(g2(12.34), "12");
        assert_eq!(g2(0.1234), "0.12");
        assert_eq!(g2(100.0), "1e+02");
        assert_eq!(g2(0.000012), "1.2e-05");
        assert_eq!(g2(f64::NAN), "-nan");
        assert_eq!(g2(9.96), "10");
    }
}
