//! The options of `linklab iperf2`, named and read as stock iperf 2.1.8 reads them: numbers
//! with a suffix k/m/g (powers of 1000) or K/M/G (powers of 1024), seconds as decimals.

/// Options of `linklab iperf2` (iperf 2's names and meanings).
#[derive(clap::Args, Debug)]
#[command(disable_version_flag = true)]
pub struct Args {
    /// Run as a server.
    #[arg(short = 's', long)]
    pub server: bool,
    /// Run as a client connecting to HOST.
    #[arg(short = 'c', long = "client", value_name = "HOST")]
    pub client: Option<String>,
    /// Use UDP rather than TCP.
    #[arg(short = 'u', long)]
    pub udp: bool,
    /// Rate, bits/sec (k/m/g = 10^3.., K/M/G = 2^10..; UDP default 1M).
    #[arg(short = 'b', long = "bandwidth", value_name = "RATE", value_parser = rate)]
    pub bandwidth: Option<u64>,
    /// Time in seconds to transmit for (default 10).
    #[arg(short = 't', long, value_name = "SECS", value_parser = seconds(0.01, 86_400.0))]
    pub time: Option<f64>,
    /// Number of bytes to transmit (instead of -t).
    #[arg(short = 'n', long = "num", value_name = "BYTES", value_parser = bytes(1, 0x7FFF_FFFF))]
    pub num: Option<u64>,
    /// Seconds between periodic reports.
    #[arg(short = 'i', long, value_name = "SECS", value_parser = seconds(0.01, 3600.0))]
    pub interval: Option<f64>,
    /// Length of the buffer to read or write (TCP default 128K, UDP 1470).
    #[arg(short = 'l', long = "len", value_name = "BYTES", value_parser = bytes(1, 65_507 * 64))]
    pub len: Option<u64>,
    /// Number of parallel client threads.
    #[arg(short = 'P', long, value_name = "N", value_parser = linklab_results::values::ranged(1u32, 128))]
    pub parallel: Option<u32>,
    /// Do a bidirectional test individually (the server connects back after the test).
    #[arg(short = 'r', long)]
    pub tradeoff: bool,
    /// Do a bidirectional test simultaneously (the server connects back at once).
    #[arg(short = 'd', long = "dualtest")]
    pub dualtest: bool,
    /// Reverse the traffic flow (the server sends, on this connection).
    #[arg(short = 'R', long)]
    pub reverse: bool,
    /// Both send at once on the one connection.
    #[arg(long = "full-duplex")]
    pub full_duplex: bool,
    /// Server port to listen on / connect to (default 5001).
    #[arg(short = 'p', long, value_name = "PORT", value_parser = linklab_results::values::ranged(1u16, 65535))]
    pub port: Option<u16>,
    /// Port to receive -r/-d connect-backs on (default: -p).
    #[arg(short = 'L', long = "listenport", value_name = "PORT", value_parser = linklab_results::values::ranged(1u16, 65535))]
    pub listenport: Option<u16>,
    /// TCP window / UDP buffer size: SO_RCVBUF (and SO_SNDBUF on the client).
    #[arg(short = 'w', long = "window", value_name = "BYTES", value_parser = bytes(1024, 1 << 30))]
    pub window: Option<u64>,
    /// Report style: C for CSV.
    #[arg(short = 'y', long = "reportstyle", value_name = "C", value_parser = report_style)]
    pub reportstyle: Option<char>,
    /// Peer version detect (the client waits for the server's version reply).
    #[arg(short = 'X', long = "peer-detect")]
    pub peer_detect: bool,
    /// Compatibility mode: send no test header (no -r, -d, -R).
    #[arg(short = 'C', long = "compatibility")]
    pub compatibility: bool,
    /// Send iperf 2.0's 24-byte header instead of 2.1's 60 bytes.
    #[arg(long = "v20-header")]
    pub v20_header: bool,
    /// Enhanced reports (not served: stock's -e output is not reproduced).
    #[arg(short = 'e', long)]
    pub enhanced: bool,
    /// Print version information and quit.
    #[arg(short = 'v', long)]
    pub version: bool,
}

/// The options as the library command takes them.
impl From<Args> for linklab_perf_host::iperf2::command::Options {
    fn from(a: Args) -> Self {
        Self {
            server: a.server,
            client: a.client,
            udp: a.udp,
            bandwidth: a.bandwidth,
            time: a.time,
            num: a.num,
            interval: a.interval,
            len: a.len,
            parallel: a.parallel,
            tradeoff: a.tradeoff,
            dualtest: a.dualtest,
            reverse: a.reverse,
            full_duplex: a.full_duplex,
            port: a.port,
            listenport: a.listenport,
            window: a.window,
            reportstyle: a.reportstyle,
            peer_detect: a.peer_detect,
            compatibility: a.compatibility,
            v20_header: a.v20_header,
            enhanced: a.enhanced,
            version: a.version,
        }
    }
}

/// Splits an iperf 2 suffix: k/m/g/t are powers of 1000, K/M/G/T of 1024.
fn scaled(s: &str) -> Option<f64> {
    let t = s.trim();
    let last = t.chars().last()?;
    let (num, scale) = match last {
        'k' => (&t[..t.len() - 1], 1e3),
        'm' => (&t[..t.len() - 1], 1e6),
        'g' => (&t[..t.len() - 1], 1e9),
        't' => (&t[..t.len() - 1], 1e12),
        'K' => (&t[..t.len() - 1], 1024.0),
        'M' => (&t[..t.len() - 1], 1024.0 * 1024.0),
        'G' => (&t[..t.len() - 1], 1024.0 * 1024.0 * 1024.0),
        'T' => (&t[..t.len() - 1], 1024.0f64.powi(4)),
        _ => (t, 1.0),
    };
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some(v * scale)
}

/// A rate in bit/s with iperf 2's suffixes (1 bit/s ..= 100 Gbit/s... and more).
pub fn rate(s: &str) -> Result<u64, String> {
    match scaled(s) {
        Some(v) if (1.0..=1e13).contains(&v) => Ok(v as u64),
        _ => Err(
            "expected a rate in bits/sec with an optional k/m/g (10^3) or K/M/G (2^10) suffix"
                .into(),
        ),
    }
}

/// A byte count with iperf 2's suffixes, in `lo..=hi`.
pub fn bytes(lo: u64, hi: u64) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync {
    move |s: &str| {
        match scaled(s) {
        Some(v) if v >= lo as f64 && v <= hi as f64 => Ok(v as u64),
        _ => Err(format!(
            "expected a byte count in {lo}..={hi} with an optional k/m/g (10^3) or K/M/G (2^10) suffix"
        )),
    }
    }
}

/// Seconds in `lo..=hi`.
pub fn seconds(lo: f64, hi: f64) -> impl Fn(&str) -> Result<f64, String> + Clone + Send + Sync {
    move |s: &str| match s.trim().parse::<f64>() {
        Ok(v) if v >= lo && v <= hi => Ok(v),
        _ => Err(format!("expected seconds in {lo}..={hi}")),
    }
}

/// `-y C` (CSV) is the one report style served.
fn report_style(s: &str) -> Result<char, String> {
    match s {
        "C" | "c" => Ok('C'),
        _ => Err("expected C (CSV)".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suffixes_as_iperf_2_reads_them() {
        assert_eq!(rate("10M"), Ok(10_485_760));
        assert_eq!(rate("10m"), Ok(10_000_000));
        assert_eq!(rate("1.5k"), Ok(1500));
        assert_eq!(bytes(1, u64::MAX)("1K"), Ok(1024));
        assert_eq!(bytes(1, u64::MAX)("1k"), Ok(1000));
        assert_eq!(bytes(1, u64::MAX)("2G"), Ok(2 << 30));
        assert!(rate("fast").is_err());
        assert!(rate("-1M").is_err());
        assert!(bytes(1, 10)("11").is_err());
        assert!(seconds(0.01, 10.0)("0").is_err());
    }
}
