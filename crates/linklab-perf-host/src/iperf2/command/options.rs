//! The options of `linklab iperf2` as plain values (what the command line says, parsed by
//! the CLI's clap arguments): iperf 2.1.8's names and meanings.

/// Every option of `linklab iperf2`; `Default` is an empty command line.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Run as a server.
    pub server: bool,
    /// Run as a client connecting to HOST.
    pub client: Option<String>,
    /// Use UDP rather than TCP.
    pub udp: bool,
    /// Rate, bits/sec (k/m/g = 10^3.., K/M/G = 2^10..; UDP default 1M).
    pub bandwidth: Option<u64>,
    /// Time in seconds to transmit for (default 10).
    pub time: Option<f64>,
    /// Number of bytes to transmit (instead of -t).
    pub num: Option<u64>,
    /// Seconds between periodic reports.
    pub interval: Option<f64>,
    /// Length of the buffer to read or write (TCP default 128K, UDP 1470).
    pub len: Option<u64>,
    /// Number of parallel client threads.
    pub parallel: Option<u32>,
    /// Do a bidirectional test individually (the server connects back after the test).
    pub tradeoff: bool,
    /// Do a bidirectional test simultaneously (the server connects back at once).
    pub dualtest: bool,
    /// Reverse the traffic flow (the server sends, on this connection).
    pub reverse: bool,
    /// Both send at once on the one connection.
    pub full_duplex: bool,
    /// Server port to listen on / connect to (default 5001).
    pub port: Option<u16>,
    /// Port to receive -r/-d connect-backs on (default: -p).
    pub listenport: Option<u16>,
    /// TCP window / UDP buffer size: SO_RCVBUF (and SO_SNDBUF on the client).
    pub window: Option<u64>,
    /// Report style: C for CSV.
    pub reportstyle: Option<char>,
    /// Peer version detect (the client waits for the server's version reply).
    pub peer_detect: bool,
    /// Compatibility mode: send no test header (no -r, -d, -R).
    pub compatibility: bool,
    /// Send iperf 2.0's 24-byte header instead of 2.1's 60 bytes.
    pub v20_header: bool,
    /// Enhanced reports (not served: stock's -e output is not reproduced).
    pub enhanced: bool,
    /// Print version information and quit.
    pub version: bool,
}
