//! What an iperf 2 client and server run with ([`ClientConfig`], [`ServerConfig`]), what
//! a client run gives back ([`ClientSummary`]) and why it failed ([`ClientError`]).

use std::io;
use std::net::IpAddr;
use std::time::Duration;

use linklab_perf::iperf2::request::{Amount, HeaderStyle, Mode, Protocol, TestRequest};
use linklab_perf::iperf2::tcp_server::TcpServerConfig;
use linklab_perf::iperf2::udp_server::UdpServerConfig;
use linklab_perf::iperf2::wire::{DEFAULT_TCP_LEN, DEFAULT_UDP_RATE};
use linklab_perf::time::Micros;

use super::events::FlowReport;
use crate::clock::wall_offset_us;

/// What the client runs (iperf 2's options).
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// The server (`-c`).
    pub host: String,
    /// Its port (`-p`).
    pub port: u16,
    /// TCP or UDP (`-u`).
    pub protocol: Protocol,
    /// Plain, `-r`, `-d`, `-R`, `--full-duplex`.
    pub mode: Mode,
    /// `-t` or `-n`.
    pub amount: Amount,
    /// `-P`.
    pub parallel: u32,
    /// `-l`, if given.
    pub buf_len: Option<u32>,
    /// `-b` in bit/s, if given.
    pub rate_bps: Option<u64>,
    /// `-L`: where to listen for `-r`/`-d` (else `-p`).
    pub listen_port: Option<u16>,
    /// The header (`-C` sends none).
    pub style: HeaderStyle,
    /// `-X`.
    pub peer_detect: bool,
    /// `-i`, 0 for none.
    pub interval_us: Micros,
    /// SO_SNDBUF and SO_RCVBUF of the test sockets (`-w`), `None` for the system's.
    pub window: Option<usize>,
}

impl ClientConfig {
    /// iperf 2's defaults against `host`: TCP, 10 s, port 5001.
    pub fn new(host: &str) -> Self {
        Self {
            host: host.into(),
            port: linklab_perf::iperf2::wire::DEFAULT_PORT,
            protocol: Protocol::Tcp,
            mode: Mode::Normal,
            amount: Amount::Time(1000),
            parallel: 1,
            buf_len: None,
            rate_bps: None,
            listen_port: None,
            style: HeaderStyle::V21,
            peer_detect: false,
            interval_us: 0,
            window: None,
        }
    }

    pub(super) fn request(&self) -> TestRequest {
        let rate = match self.protocol {
            Protocol::Udp => self.rate_bps.unwrap_or(DEFAULT_UDP_RATE),
            Protocol::Tcp => self.rate_bps.unwrap_or(0),
        };
        TestRequest {
            protocol: self.protocol,
            mode: self.mode,
            amount: self.amount,
            port: u32::from(self.listen_port.unwrap_or(self.port)),
            threads: self.parallel,
            buf_len: self.buf_len.unwrap_or(0),
            rate_bps: rate,
            peer_detect: self.peer_detect,
            ..TestRequest::plain(self.protocol)
        }
    }
}

/// What a finished client run saw.
#[derive(Clone, Debug, Default)]
pub struct ClientSummary {
    /// Every flow's whole (ours, sent and received; the connect-backs').
    pub flows: Vec<FlowReport>,
    /// The servers' UDP reports.
    pub server_reports: Vec<FlowReport>,
    /// The server's version, if it replied.
    pub peer_version: Option<(u32, u32)>,
}

/// Why a client run failed.
#[derive(Debug)]
pub enum ClientError {
    /// A socket call failed (connect refused, no route...).
    Io(String, io::Error),
    /// The server is an iperf3 server.
    Iperf3Server,
    /// The server closed the connection before the test's data was sent.
    ServerClosed,
    /// The connection was reset, after this many bytes were sent and received.
    Reset(u64, u64),
    /// Nothing moved for this long (the watchdog of a TCP flow; a UDP `-R` receiver's
    /// wait for the server's datagrams).
    Timeout(Duration),
    /// `-r`/`-d`: the server did not connect back.
    NoConnectBack(u16),
}

impl core::fmt::Display for ClientError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ClientError::Io(what, e) => write!(f, "{what}: {e}"),
            ClientError::Iperf3Server => {
                f.write_str("the server speaks iperf3, not iperf 2 (use `linklab iperf -c` for it)")
            }
            ClientError::ServerClosed => {
                f.write_str("the server closed the connection before the test ended")
            }
            ClientError::Reset(sent, got) => write!(
                f,
                "the connection was reset during the test ({sent} bytes sent, {got} received)"
            ),
            ClientError::Timeout(waited) => write!(
                f,
                "the server stopped responding (nothing moved for {})",
                seconds(*waited)
            ),
            ClientError::NoConnectBack(p) => {
                write!(
                    f,
                    "expected reverse connect did not occur (nothing connected to port {p})"
                )
            }
        }
    }
}

impl std::error::Error for ClientError {}

/// A wait as people say it: "10 s", "2.5 s".
fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// What the server serves.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// The port (`-p`, default 5001).
    pub port: u16,
    /// UDP (`-u`) instead of TCP.
    pub udp: bool,
    /// `-i`, 0 for none.
    pub interval_us: Micros,
    /// The address to bind (`-B`); `None` for every address, IPv4 and IPv6.
    pub bind: Option<IpAddr>,
    /// Largest TCP write when the server sends (`-l`).
    pub write_len: usize,
    /// SO_RCVBUF of the listener or UDP socket (`-w`), `None` for the system's.
    pub window: Option<usize>,
    /// The TCP sessions' settings.
    pub tcp: TcpServerConfig,
    /// The UDP server's settings.
    pub udp_cfg: UdpServerConfig,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            port: linklab_perf::iperf2::wire::DEFAULT_PORT,
            udp: false,
            interval_us: 0,
            bind: None,
            write_len: DEFAULT_TCP_LEN,
            window: None,
            // A host server caps what it sends at a day, not the device's hour.
            tcp: TcpServerConfig {
                max_send_us: 86_400_000_000,
                ..TcpServerConfig::default()
            },
            udp_cfg: UdpServerConfig {
                wall_offset_us: wall_offset_us(),
                max_send_us: 86_400_000_000,
                ..UdpServerConfig::default()
            },
        }
    }
}
