//! The options of `linklab iperf` as plain values (what the command line says, parsed and
//! range-checked by the CLI's clap arguments): every option of iperf3 3.12's `--help`.

use std::path::PathBuf;

/// Every option of `linklab iperf` (iperf3's names and meanings).
#[derive(Clone, Debug)]
pub struct Options {
    // ---- server or client ----
    /// Server port to listen on / connect to.
    pub port: u16,
    /// Rate units of the report: k, m, g, t (bits) or K, M, G, T (bytes).
    pub format: Option<char>,
    /// Seconds between periodic reports (0 = none, else 0.1-60).
    pub interval: Option<f64>,
    /// Write a PID file.
    pub pidfile: Option<PathBuf>,
    /// Send the contents of FILE (sending streams) or write what arrives into it (receiving).
    pub file: Option<PathBuf>,
    /// CPU affinity: this side's CPU n, and the server's m (`n,m`).
    pub affinity: Option<(usize, Option<u16>)>,
    /// Bind to the address HOST (and interface DEV with `HOST%DEV`).
    pub bind: Option<String>,
    /// Bind to the network interface NAME (SO_BINDTODEVICE).
    pub bind_dev: Option<String>,
    /// More detailed output.
    pub verbose: bool,
    /// Output in iperf3's JSON format.
    pub json: bool,
    /// Append the output to FILE.
    pub logfile: Option<PathBuf>,
    /// Flush the output at every interval.
    pub forceflush: bool,
    /// Prefix each output line with a timestamp (strftime FORMAT, default "%c ").
    pub timestamps: Option<String>,
    /// Idle timeout for receiving data, ms (default 120000).
    pub rcv_timeout: Option<u64>,
    /// Timeout for unacknowledged TCP data, ms (TCP_USER_TIMEOUT).
    pub snd_timeout: Option<u32>,
    /// Debugging output (level 1-4, default 4).
    pub debug: Option<u8>,
    /// Show version information and quit.
    pub version: bool,

    // ---- server ----
    /// Run as a server.
    pub server: bool,
    /// Run the server as a daemon.
    pub daemon: bool,
    /// Server: handle one client, then exit.
    pub one_off: bool,
    /// Server: end a test whose total rate exceeds RATE bit/s (averaged over S seconds, 5).
    pub server_bitrate_limit: Option<(f64, Option<f64>)>,
    /// Server: stop waiting for a client after S seconds (with -1: exit).
    pub idle_timeout: Option<u32>,
    /// Server authentication (not supported).
    pub rsa_private_key_path: Option<String>,
    /// Server authentication (not supported).
    pub authorized_users_path: Option<String>,
    /// Server authentication (not supported).
    pub time_skew_threshold: Option<u32>,

    // ---- client ----
    /// Run as a client of the iperf3 server at HOST (`HOST%DEV` binds to DEV).
    pub client: Option<String>,
    /// Use SCTP (not supported).
    pub sctp: bool,
    /// Bind SCTP associations (not supported).
    pub xbind: Option<String>,
    /// Number of SCTP streams (not supported).
    pub nstreams: Option<u16>,
    /// Use UDP rather than TCP.
    pub udp: bool,
    /// Timeout for the control connection setup, ms.
    pub connect_timeout: Option<u64>,
    /// Target bit rate per stream, k/M/G (0 = unlimited; UDP default 1M), `/N` for bursts
    /// of N blocks.
    pub bitrate: Option<(f64, Option<u32>)>,
    /// How often a paced sender checks its rate, µs (default 1000).
    pub pacing_timer: Option<u64>,
    /// Fair-queuing socket pacing, bit/s (SO_MAX_PACING_RATE).
    pub fq_rate: Option<f64>,
    /// Deprecated in iperf3; socket pacing is only used with --fq-rate.
    pub no_fq_socket_pacing: bool,
    /// Seconds to transmit (1-86400, default 10).
    pub time: Option<u32>,
    /// Bytes to transmit instead of a time, K/M/G (powers of 1024).
    pub bytes: Option<u64>,
    /// Blocks (writes / datagrams) to transmit instead of a time, K/M/G.
    pub blockcount: Option<u64>,
    /// Block length: bytes per write (TCP, default 128K) or datagram (UDP, default the MSS).
    pub length: Option<u64>,
    /// Local port of the data streams (the first; the next ones count up).
    pub cport: Option<u16>,
    /// Parallel streams (1-8).
    pub parallel: Option<u8>,
    /// Reverse: the server sends.
    pub reverse: bool,
    /// Both directions at once.
    pub bidir: bool,
    /// Socket buffer sizes (the TCP window), K/M/G.
    pub window: Option<u64>,
    /// TCP congestion control algorithm.
    pub congestion: Option<String>,
    /// TCP maximum segment size.
    pub set_mss: Option<u32>,
    /// TCP_NODELAY: no Nagle.
    pub no_delay: bool,
    /// IPv4 only.
    pub version4: bool,
    /// IPv6 only.
    pub version6: bool,
    /// IP type of service, 0-255 (52, 064 and 0x34 are the same).
    pub tos: Option<u8>,
    /// DSCP value 0-63 or a name (af11 ... ef, cs0 ... cs7).
    pub dscp: Option<u8>,
    /// IPv6 flow label, 1-0xfffff.
    pub flowlabel: Option<u32>,
    /// Send with sendfile(2) (zero copy).
    pub zerocopy: bool,
    /// Seconds at the start not counted (0-60).
    pub omit: Option<u32>,
    /// Prefix every output line with TEXT.
    pub title: Option<String>,
    /// A string to include in both sides' JSON output.
    pub extra_data: Option<String>,
    /// Get the server's output with the results.
    pub get_server_output: bool,
    /// 64-bit UDP sequence numbers.
    pub udp_counters_64bit: bool,
    /// Repeating `0123456789` payload instead of a pseudo-random one.
    pub repeating_payload: bool,
    /// Set IPv4 Don't Fragment.
    pub dont_fragment: bool,
    /// Client authentication (not supported).
    pub username: Option<String>,
    /// Client authentication (not supported).
    pub rsa_public_key_path: Option<String>,
}

/// Splits `HOST%DEV` (the `%DEV` part means `--bind-dev`), leaving IPv6 link-local
/// literals (`fe80::1%eth0`) whole, as iperf3 does.
pub(super) fn host_and_dev(spec: &str) -> (String, Option<String>) {
    let Some((host, dev)) = spec.split_once('%') else {
        return (spec.into(), None);
    };
    let link_local = host
        .parse::<std::net::Ipv6Addr>()
        .is_ok_and(|a| a.segments()[0] & 0xffc0 == 0xfe80);
    if link_local || dev.is_empty() {
        (spec.into(), None)
    } else {
        (host.into(), Some(dev.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_device() {
        assert_eq!(host_and_dev("h"), ("h".into(), None));
        assert_eq!(host_and_dev("h%eth0"), ("h".into(), Some("eth0".into())));
        assert_eq!(host_and_dev("fe80::1%eth0"), ("fe80::1%eth0".into(), None));
    }
}
