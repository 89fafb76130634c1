//! The options of `linklab iperf`: every option of iperf3 3.12's `--help`, with its short
//! and long names, parsed by the typed value parsers of `values.rs` (and the few iperf3
//! number forms they do not cover: `N[/M]`, C integers, DSCP names, `n,m`).

use std::path::PathBuf;

use linklab_results::values;

/// Options of `linklab iperf` (iperf3's, same names and meanings; `alias iperf3='linklab
/// iperf'` keeps a user's habits working).
#[derive(clap::Args, Debug)]
#[command(disable_version_flag = true)]
pub struct Args {
    // ---- server or client ----
    /// Server port to listen on / connect to.
    #[arg(short = 'p', long, value_name = "PORT", default_value = "5201",
          value_parser = values::ranged(1u16, 65535))]
    pub port: u16,
    /// Rate units of the report: k, m, g, t (bits) or K, M, G, T (bytes).
    #[arg(short = 'f', long, value_name = "FORMAT", value_parser = format_unit)]
    pub format: Option<char>,
    /// Seconds between periodic reports (0 = none, else 0.1-60).
    #[arg(short = 'i', long, value_name = "S", value_parser = values::ranged(0.0f64, 60.0))]
    pub interval: Option<f64>,
    /// Write a PID file.
    #[arg(short = 'I', long, value_name = "FILE")]
    pub pidfile: Option<PathBuf>,
    /// Send the contents of FILE (sending streams) or write what arrives into it (receiving).
    #[arg(short = 'F', long = "file", value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// CPU affinity: this side's CPU n, and the server's m (`n,m`).
    #[arg(short = 'A', long, value_name = "n[,m]", value_parser = affinity)]
    pub affinity: Option<(usize, Option<u16>)>,
    /// Bind to the address HOST (and interface DEV with `HOST%DEV`).
    #[arg(short = 'B', long = "bind", value_name = "HOST[%DEV]", value_parser = host_and_dev)]
    pub bind: Option<String>,
    /// Bind to the network interface NAME (SO_BINDTODEVICE).
    #[arg(long = "bind-dev", value_name = "NAME", value_parser = values::interface_name)]
    pub bind_dev: Option<String>,
    /// More detailed output.
    #[arg(short = 'V', long)]
    pub verbose: bool,
    /// Output in iperf3's JSON format.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// Append the output to FILE.
    #[arg(long, value_name = "FILE")]
    pub logfile: Option<PathBuf>,
    /// Flush the output at every interval.
    #[arg(long)]
    pub forceflush: bool,
    /// Prefix each output line with a timestamp (strftime FORMAT, default "%c ").
    #[arg(long, value_name = "FORMAT", num_args = 0..=1, require_equals = true,
          default_missing_value = "%c ")]
    pub timestamps: Option<String>,
    /// Idle timeout for receiving data, ms (default 120000).
    #[arg(long = "rcv-timeout", value_name = "MS", value_parser = values::ranged(100u64, 86_400_000))]
    pub rcv_timeout: Option<u64>,
    /// Timeout for unacknowledged TCP data, ms (TCP_USER_TIMEOUT).
    #[arg(long = "snd-timeout", value_name = "MS", value_parser = values::ranged(0u32, 86_400_000))]
    pub snd_timeout: Option<u32>,
    /// Debugging output (level 1-4, default 4).
    #[arg(short = 'd', long, value_name = "LEVEL", num_args = 0..=1, require_equals = true,
          default_missing_value = "4", value_parser = values::ranged(0u8, 4))]
    pub debug: Option<u8>,
    /// Show version information and quit.
    #[arg(short = 'v', long)]
    pub version: bool,

    // ---- server ----
    /// Run as a server.
    #[arg(short = 's', long)]
    pub server: bool,
    /// Run the server as a daemon.
    #[arg(short = 'D', long)]
    pub daemon: bool,
    /// Server: handle one client, then exit.
    #[arg(short = '1', long = "one-off")]
    pub one_off: bool,
    /// Server: end a test whose total rate exceeds RATE bit/s (averaged over S seconds, 5).
    #[arg(long = "server-bitrate-limit", value_name = "RATE[/S]", value_parser = rate_limit)]
    pub server_bitrate_limit: Option<(f64, Option<f64>)>,
    /// Server: stop waiting for a client after S seconds (with -1: exit).
    #[arg(long = "idle-timeout", value_name = "S", value_parser = values::ranged(1u32, 86_400))]
    pub idle_timeout: Option<u32>,
    /// Server authentication (not supported).
    #[arg(long = "rsa-private-key-path", value_name = "PATH")]
    pub rsa_private_key_path: Option<String>,
    /// Server authentication (not supported).
    #[arg(long = "authorized-users-path", value_name = "PATH")]
    pub authorized_users_path: Option<String>,
    /// Server authentication (not supported).
    #[arg(long = "time-skew-threshold", value_name = "S", value_parser = values::ranged(1u32, 86_400))]
    pub time_skew_threshold: Option<u32>,

    // ---- client ----
    /// Run as a client of the iperf3 server at HOST (`HOST%DEV` binds to DEV).
    #[arg(short = 'c', long, value_name = "HOST[%DEV]", value_parser = host_and_dev)]
    pub client: Option<String>,
    /// Use SCTP (not supported).
    #[arg(long)]
    pub sctp: bool,
    /// Bind SCTP associations (not supported).
    #[arg(short = 'X', long, value_name = "HOST", value_parser = host_name)]
    pub xbind: Option<String>,
    /// Number of SCTP streams (not supported).
    #[arg(long, value_name = "N", value_parser = values::ranged(1u16, 65535))]
    pub nstreams: Option<u16>,
    /// Use UDP rather than TCP.
    #[arg(short = 'u', long)]
    pub udp: bool,
    /// Timeout for the control connection setup, ms.
    #[arg(long = "connect-timeout", value_name = "MS", value_parser = values::ranged(1u64, 86_400_000))]
    pub connect_timeout: Option<u64>,
    /// Target bit rate per stream, k/M/G (0 = unlimited; UDP default 1M), `/N` for bursts
    /// of N blocks.
    #[arg(short = 'b', long = "bitrate", visible_alias = "bandwidth", value_name = "RATE[/N]",
          value_parser = rate_burst)]
    pub bitrate: Option<(f64, Option<u32>)>,
    /// How often a paced sender checks its rate, µs (default 1000).
    #[arg(long = "pacing-timer", value_name = "US", value_parser = values::ranged(1u64, 10_000_000))]
    pub pacing_timer: Option<u64>,
    /// Fair-queuing socket pacing, bit/s (SO_MAX_PACING_RATE).
    #[arg(long = "fq-rate", value_name = "RATE", value_parser = values::bit_rate(0.0, 1e15))]
    pub fq_rate: Option<f64>,
    /// Deprecated in iperf3; socket pacing is only used with --fq-rate.
    #[arg(long = "no-fq-socket-pacing", hide = true)]
    pub no_fq_socket_pacing: bool,
    /// Seconds to transmit (1-86400, default 10).
    #[arg(short = 't', long, value_name = "S", value_parser = values::ranged(1u32, 86_400))]
    pub time: Option<u32>,
    /// Bytes to transmit instead of a time, K/M/G (powers of 1024).
    #[arg(short = 'n', long = "bytes", value_name = "BYTES", value_parser = values::byte_count(1, u64::MAX / 2))]
    pub bytes: Option<u64>,
    /// Blocks (writes / datagrams) to transmit instead of a time, K/M/G.
    #[arg(short = 'k', long = "blockcount", value_name = "BLOCKS",
          value_parser = values::byte_count(1, u64::MAX / 2))]
    pub blockcount: Option<u64>,
    /// Block length: bytes per write (TCP, default 128K) or datagram (UDP, default the MSS).
    #[arg(short = 'l', long = "length", value_name = "LEN",
          value_parser = values::byte_count(1, linklab_perf::iperf::wire::MAX_BLOCK_LEN as u64))]
    pub length: Option<u64>,
    /// Local port of the data streams (the first; the next ones count up).
    #[arg(long, value_name = "PORT", value_parser = values::ranged(1u16, 65535))]
    pub cport: Option<u16>,
    /// Parallel streams (1-8).
    #[arg(short = 'P', long, value_name = "N", value_parser = values::ranged(1u8, 8))]
    pub parallel: Option<u8>,
    /// Reverse: the server sends.
    #[arg(short = 'R', long)]
    pub reverse: bool,
    /// Both directions at once.
    #[arg(long)]
    pub bidir: bool,
    /// Socket buffer sizes (the TCP window), K/M/G.
    #[arg(short = 'w', long, value_name = "BYTES", value_parser = values::byte_count(1, 512 << 20))]
    pub window: Option<u64>,
    /// TCP congestion control algorithm.
    #[arg(
        short = 'C',
        long,
        visible_alias = "linux-congestion",
        value_name = "ALGO",
        value_parser = congestion_name
    )]
    pub congestion: Option<String>,
    /// TCP maximum segment size.
    #[arg(short = 'M', long = "set-mss", value_name = "BYTES", value_parser = values::ranged(1u32, 9216))]
    pub set_mss: Option<u32>,
    /// TCP_NODELAY: no Nagle.
    #[arg(short = 'N', long = "no-delay")]
    pub no_delay: bool,
    /// IPv4 only.
    #[arg(short = '4', long = "version4")]
    pub version4: bool,
    /// IPv6 only.
    #[arg(short = '6', long = "version6")]
    pub version6: bool,
    /// IP type of service, 0-255 (52, 064 and 0x34 are the same).
    #[arg(short = 'S', long, value_name = "N", value_parser = tos)]
    pub tos: Option<u8>,
    /// DSCP value 0-63 or a name (af11 ... ef, cs0 ... cs7).
    #[arg(long, value_name = "N|NAME", value_parser = dscp)]
    pub dscp: Option<u8>,
    /// IPv6 flow label, 1-0xfffff.
    #[arg(short = 'L', long, value_name = "N", value_parser = flowlabel)]
    pub flowlabel: Option<u32>,
    /// Send with sendfile(2) (zero copy).
    #[arg(short = 'Z', long)]
    pub zerocopy: bool,
    /// Seconds at the start not counted (0-60).
    #[arg(short = 'O', long, value_name = "S", value_parser = values::ranged(0u32, 60))]
    pub omit: Option<u32>,
    /// Prefix every output line with TEXT.
    #[arg(short = 'T', long, value_name = "TEXT", value_parser = text)]
    pub title: Option<String>,
    /// A string to include in both sides' JSON output.
    #[arg(long = "extra-data", value_name = "TEXT", value_parser = text)]
    pub extra_data: Option<String>,
    /// Get the server's output with the results.
    #[arg(long = "get-server-output")]
    pub get_server_output: bool,
    /// 64-bit UDP sequence numbers.
    #[arg(long = "udp-counters-64bit")]
    pub udp_counters_64bit: bool,
    /// Repeating `0123456789` payload instead of a pseudo-random one.
    #[arg(long = "repeating-payload")]
    pub repeating_payload: bool,
    /// Set IPv4 Don't Fragment.
    #[arg(long = "dont-fragment")]
    pub dont_fragment: bool,
    /// Client authentication (not supported).
    #[arg(long, value_name = "NAME", value_parser = user_name)]
    pub username: Option<String>,
    /// Client authentication (not supported).
    #[arg(long = "rsa-public-key-path", value_name = "PATH")]
    pub rsa_public_key_path: Option<String>,
}

/// The options as the library command takes them.
impl From<Args> for linklab_perf_host::iperf3::command::Options {
    fn from(a: Args) -> Self {
        Self {
            port: a.port,
            format: a.format,
            interval: a.interval,
            pidfile: a.pidfile,
            file: a.file,
            affinity: a.affinity,
            bind: a.bind,
            bind_dev: a.bind_dev,
            verbose: a.verbose,
            json: a.json,
            logfile: a.logfile,
            forceflush: a.forceflush,
            timestamps: a.timestamps,
            rcv_timeout: a.rcv_timeout,
            snd_timeout: a.snd_timeout,
            debug: a.debug,
            version: a.version,
            server: a.server,
            daemon: a.daemon,
            one_off: a.one_off,
            server_bitrate_limit: a.server_bitrate_limit,
            idle_timeout: a.idle_timeout,
            rsa_private_key_path: a.rsa_private_key_path,
            authorized_users_path: a.authorized_users_path,
            time_skew_threshold: a.time_skew_threshold,
            client: a.client,
            sctp: a.sctp,
            xbind: a.xbind,
            nstreams: a.nstreams,
            udp: a.udp,
            connect_timeout: a.connect_timeout,
            bitrate: a.bitrate,
            pacing_timer: a.pacing_timer,
            fq_rate: a.fq_rate,
            no_fq_socket_pacing: a.no_fq_socket_pacing,
            time: a.time,
            bytes: a.bytes,
            blockcount: a.blockcount,
            length: a.length,
            cport: a.cport,
            parallel: a.parallel,
            reverse: a.reverse,
            bidir: a.bidir,
            window: a.window,
            congestion: a.congestion,
            set_mss: a.set_mss,
            no_delay: a.no_delay,
            version4: a.version4,
            version6: a.version6,
            tos: a.tos,
            dscp: a.dscp,
            flowlabel: a.flowlabel,
            zerocopy: a.zerocopy,
            omit: a.omit,
            title: a.title,
            extra_data: a.extra_data,
            get_server_output: a.get_server_output,
            udp_counters_64bit: a.udp_counters_64bit,
            repeating_payload: a.repeating_payload,
            dont_fragment: a.dont_fragment,
            username: a.username,
            rsa_public_key_path: a.rsa_public_key_path,
        }
    }
}

/// `-f`: one of kmgtKMGT.
fn format_unit(s: &str) -> Result<char, String> {
    match s.chars().next() {
        Some(c) if s.len() == 1 && "kmgtKMGT".contains(c) => Ok(c),
        _ => Err("expected one of k, m, g, t (bits) or K, M, G, T (bytes)".into()),
    }
}

/// `s` if it is 1 to `max` ASCII letters, digits and bytes of `extra`; else `what`.
fn word(s: &str, max: usize, extra: &[u8], what: &str) -> Result<String, String> {
    let ok = (1..=max).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b));
    if ok {
        Ok(s.to_string())
    } else {
        Err(what.into())
    }
}

/// A host name or IP address (v4 or v6), as `getaddrinfo` could take it: 1-253 characters
/// of letters, digits, `-`, `.`, `_` and `:`.
fn host_name(s: &str) -> Result<String, String> {
    word(
        s,
        253,
        b"-._:",
        "expected a host name or an IPv4/IPv6 address",
    )
}

/// `-c`/`-B HOST[%DEV]`: a host, and optionally the interface to bind to.
fn host_and_dev(s: &str) -> Result<String, String> {
    let (host, dev) = match s.split_once('%') {
        Some((h, d)) => (h, Some(d)),
        None => (s, None),
    };
    host_name(host).map_err(|e| format!("{e}, optionally followed by %DEV"))?;
    if let Some(d) = dev {
        values::interface_name(d)?;
    }
    Ok(s.to_string())
}

/// `-C`: a Linux congestion control name (TCP_CA_NAME_MAX − 1 = 15 characters of letters,
/// digits, `_` and `-`, e.g. `cubic`, `bbr`, `reno`).
fn congestion_name(s: &str) -> Result<String, String> {
    word(
        s,
        15,
        b"_-",
        "expected a congestion control name such as cubic, reno or bbr",
    )
}

/// `--username`: a login name (POSIX portable characters: letters, digits, `.`, `_`, `-`).
fn user_name(s: &str) -> Result<String, String> {
    word(
        s,
        32,
        b"._-",
        "expected a user name of letters, digits, '.', '_' and '-'",
    )
}

/// `-T`, `--extra-data`: free text, any printable characters (no control characters, which
/// would break iperf3's one-line-per-report text and its JSON consumers' lines).
fn text(s: &str) -> Result<String, String> {
    if s.chars().any(char::is_control) {
        Err("expected text without control characters".into())
    } else {
        Ok(s.to_string())
    }
}

/// A C integer as `strtol(s, &end, 0)` reads it, the whole string: decimal, `0x` hex,
/// `0` octal.
fn c_integer(s: &str) -> Option<i64> {
    let t = s.trim();
    let (neg, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let v = if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16).ok()?
    } else if t.len() > 1 && t.starts_with('0') {
        i64::from_str_radix(&t[1..], 8).ok()?
    } else {
        t.parse().ok()?
    };
    Some(if neg { -v } else { v })
}

/// `-S`: 0-255, decimal, octal or hex.
fn tos(s: &str) -> Result<u8, String> {
    c_integer(s)
        .and_then(|v| u8::try_from(v).ok())
        .ok_or_else(|| "expected a TOS value 0-255 (52, 064 and 0x34 are the same)".into())
}

/// `--dscp`: 0-63 or a name; the TOS byte it makes.
fn dscp(s: &str) -> Result<u8, String> {
    const NAMES: [(&str, u8); 24] = [
        ("af11", 0x28),
        ("af12", 0x30),
        ("af13", 0x38),
        ("af21", 0x48),
        ("af22", 0x50),
        ("af23", 0x58),
        ("af31", 0x68),
        ("af32", 0x70),
        ("af33", 0x78),
        ("af41", 0x88),
        ("af42", 0x90),
        ("af43", 0x98),
        ("cs0", 0x00),
        ("cs1", 0x20),
        ("cs2", 0x40),
        ("cs3", 0x60),
        ("cs4", 0x80),
        ("cs5", 0xa0),
        ("cs6", 0xc0),
        ("cs7", 0xe0),
        ("ef", 0xb8),
        ("lowdelay", 0x10),
        ("throughput", 0x08),
        ("reliability", 0x04),
    ];
    if let Some((_, v)) = NAMES.iter().find(|(n, _)| n.eq_ignore_ascii_case(s)) {
        return Ok(*v);
    }
    c_integer(s)
        .filter(|v| (0..=63).contains(v))
        .map(|v| (v as u8) << 2)
        .ok_or_else(|| {
            "expected a DSCP value 0-63 or a name (af11 ... af43, cs0 ... cs7, ef)".into()
        })
}

/// `-L`: 1-0xfffff.
fn flowlabel(s: &str) -> Result<u32, String> {
    c_integer(s)
        .filter(|v| (1..=0xf_ffff).contains(v))
        .map(|v| v as u32)
        .ok_or_else(|| "expected an IPv6 flow label 1-0xfffff".into())
}

/// `-A n[,m]`: as iperf3 reads it (a number, anything after it up to an optional `,m`
/// ignored, so the checklist's `2/2` means CPU 2).
fn affinity(s: &str) -> Result<(usize, Option<u16>), String> {
    let what = "expected a CPU number 0-1024, optionally ,M for the server's";
    let digits = s.trim().chars().take_while(char::is_ascii_digit).count();
    let n: usize = s.trim()[..digits].parse().map_err(|_| what)?;
    if n > 1024 {
        return Err(what.into());
    }
    let server = match s.split_once(',') {
        Some((_, m)) => Some(values::ranged(0u16, 1024)(m).map_err(|_| what)?),
        None => None,
    };
    Ok((n, server))
}

/// `RATE[/N]`: a bit rate (powers of 1000) and an optional count after a slash.
fn rate_and<T: std::str::FromStr + PartialOrd + Copy>(
    s: &str,
    lo: T,
    hi: T,
    what: &str,
) -> Result<(f64, Option<T>), String> {
    let (rate, count) = match s.split_once('/') {
        Some((r, c)) => (r, Some(c)),
        None => (s, None),
    };
    let rate = values::bit_rate(0.0, 1e15)(rate)?;
    let count = match count {
        Some(c) => Some(
            c.trim()
                .parse::<T>()
                .ok()
                .filter(|v| *v >= lo && *v <= hi)
                .ok_or_else(|| what.to_string())?,
        ),
        None => None,
    };
    Ok((rate, count))
}

/// `-b RATE[/BURST]`: burst of 1-1000 blocks.
fn rate_burst(s: &str) -> Result<(f64, Option<u32>), String> {
    rate_and(
        s,
        1u32,
        1000,
        "expected RATE/BURST with a burst of 1-1000 blocks",
    )
}

/// `--server-bitrate-limit RATE[/S]`: averaging window 0.1-60 s.
fn rate_limit(s: &str) -> Result<(f64, Option<f64>), String> {
    rate_and(s, 0.0f64, 60.0, "expected RATE/SECONDS with 0.1-60 seconds")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iperf3_number_forms() {
        assert_eq!(tos("52"), Ok(52));
        assert_eq!(tos("064"), Ok(52));
        assert_eq!(tos("0x34"), Ok(52));
        assert!(tos("256").is_err() && tos("x").is_err());
        assert_eq!(dscp("ef"), Ok(0xb8));
        assert_eq!(dscp("AF41"), Ok(0x88));
        assert_eq!(dscp("10"), Ok(40));
        assert!(dscp("64").is_err());
        assert_eq!(flowlabel("0xfffff"), Ok(0xfffff));
        assert!(flowlabel("0").is_err());
        assert_eq!(affinity("2/2"), Ok((2, None)));
        assert_eq!(affinity("1,0"), Ok((1, Some(0))));
        assert!(affinity("x").is_err());
        assert_eq!(rate_burst("1G/100"), Ok((1e9, Some(100))));
        assert_eq!(rate_burst("50M"), Ok((50e6, None)));
        assert!(rate_burst("1G/0").is_err() && rate_burst("1G/1001").is_err());
        assert_eq!(rate_limit("10M/2.5"), Ok((10e6, Some(2.5))));
        assert_eq!(format_unit("K"), Ok('K'));
        assert!(format_unit("x").is_err());
        assert!(host_and_dev("fe80::1%eth0").is_ok() && host_and_dev("198.18.0.1").is_ok());
        assert!(host_and_dev("bogus!").is_err() && host_and_dev("h%a/b").is_err());
        assert!(congestion_name("cubic").is_ok() && congestion_name("bogus!").is_err());
        assert!(user_name("u").is_ok() && user_name("a/b").is_err());
        assert!(text("a b!").is_ok() && text("a\nb").is_err());
    }
}
