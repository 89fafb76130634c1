//! Round-trip and inter-arrival histograms per packet size against an echo endpoint (as CBA's
//! link speed tests measured by hand): `linklab rtt`, and the echo server of `linklab rtt -s`
//! ([`EchoServer`]).
//!
//! For every size the client sends `count` packets paced every `interval`. Each reply gives a
//! round-trip time (from the send time the packet carries) and an inter-arrival time (since
//! the previous reply). Per size it reports both distributions (min, p50, p90, p99, p99.9,
//! max, mean, stddev from an HDR histogram), the loss, and the realized bandwidth of the
//! returning stream: an [`RttReport`].
//!
//! ```no_run
//! use linklab_measure::rtt::{self, RttOptions, Transport};
//! let mut options = RttOptions::new("192.0.2.10");
//! options.transport = Transport::Icmp;
//! options.sizes = vec![64, 1472];
//! let report = rtt::run(&options)?;
//! for size in &report.sizes {
//!     println!("{} B: median round trip {:.1} µs", size.size, size.rtt.p50_us);
//! }
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod client;
mod icmp;
mod packet;
mod server;

use std::net::{SocketAddr, ToSocketAddrs};
use std::time::{Duration, Instant};

use anyhow::Context;

use client::{Connection, RunConfig};
use linklab_results::bail_usage;
use linklab_results::rtt::{Distribution, RttReport, SizeReport};

pub use client::{Transport, MAX_PACKET_LEN};
pub use packet::HEADER_LEN;
pub use server::EchoServer;

/// The largest UDP packet: a UDP datagram's largest payload over IPv4.
pub const MAX_UDP_PACKET_LEN: usize = 65_507;

/// What to measure: the endpoint, the transport, the sizes and the pacing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RttOptions {
    /// The echo endpoint: a host name or an address.
    pub host: String,
    /// Its echo port (RFC 862 uses 7; unused for ICMP).
    pub port: u16,
    /// UDP, TCP or ICMP echo.
    pub transport: Transport,
    /// Packet sizes in bytes (UDP payload, TCP frame or ICMP echo payload), measured in this
    /// order: [`HEADER_LEN`] to [`MAX_UDP_PACKET_LEN`] (UDP, ICMP) or [`MAX_PACKET_LEN`] (TCP).
    pub sizes: Vec<usize>,
    /// Packets per size.
    pub count: u32,
    /// Send spacing (zero: back to back).
    pub interval: Duration,
    /// How long to wait for late replies after the last packet of a size.
    pub drain: Duration,
}

impl RttOptions {
    /// The options of `linklab rtt -c HOST` with nothing else given: UDP echo on port 7,
    /// sizes 32 to 1472 bytes, 1000 packets per size one every millisecond, a second for late
    /// replies.
    pub fn new(host: &str) -> RttOptions {
        RttOptions {
            host: host.into(),
            port: 7,
            transport: Transport::Udp,
            sizes: vec![32, 64, 128, 256, 512, 768, 1024, 1472],
            count: 1000,
            interval: Duration::from_millis(1),
            drain: Duration::from_secs(1),
        }
    }

    /// The measurement these options ask for: the sizes checked, the host resolved.
    pub fn plan(&self) -> anyhow::Result<Plan> {
        let largest = match self.transport {
            Transport::Tcp => MAX_PACKET_LEN,
            _ => MAX_UDP_PACKET_LEN,
        };
        if let Some(small) = self.sizes.iter().find(|&&n| n < HEADER_LEN) {
            bail_usage!("--sizes: {small} is smaller than the packet header ({HEADER_LEN})");
        }
        if let Some(big) = self.sizes.iter().find(|&&n| n > largest) {
            if self.transport == Transport::Tcp {
                bail_usage!("--sizes: {big} is larger than the largest TCP frame ({largest})");
            }
            bail_usage!("--sizes: {big} is larger than a UDP datagram's payload ({largest})");
        }
        let host = &self.host;
        let peer = (host.as_str(), self.port)
            .to_socket_addrs()
            .with_context(|| format!("-c: cannot resolve {host:?}"))?
            .next()
            .with_context(|| format!("-c: {host:?} has no address"))?;
        Ok(Plan {
            host: host.clone(),
            peer,
            transport: self.transport,
            sizes: self.sizes.clone(),
            count: self.count,
            interval: self.interval,
            drain: self.drain,
        })
    }
}

/// Measures what `options` ask for: every size in turn. An error when the options are wrong,
/// the host does not resolve or a size could not be measured (see [`measure`] for the sizes
/// measured before the error).
pub fn run(options: &RttOptions) -> anyhow::Result<RttReport> {
    let Measured { report, error } = measure(&options.plan()?);
    match error {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// One rtt measurement: where, over what, which sizes, how many probes at what spacing.
pub struct Plan {
    /// The endpoint as given (host name or address).
    pub host: String,
    /// Its address (the port is ignored for ICMP).
    pub peer: SocketAddr,
    /// UDP, TCP or ICMP echo.
    pub transport: Transport,
    /// Probe sizes in bytes, measured in this order.
    pub sizes: Vec<usize>,
    /// Probes per size.
    pub count: u32,
    /// Send spacing (zero: back to back).
    pub interval: Duration,
    /// How long to wait for late replies after the last probe of a size.
    pub drain: Duration,
}

impl Plan {
    /// `"udp"`, `"tcp"` or `"icmp"`, as the JSON names the protocol.
    pub fn protocol(&self) -> &'static str {
        match self.transport {
            Transport::Udp => "udp",
            Transport::Tcp => "tcp",
            Transport::Icmp => "icmp",
        }
    }

    /// The endpoint for people: `ADDR:PORT`, or the address alone for ICMP.
    pub fn target(&self) -> String {
        match self.transport {
            Transport::Icmp => self.peer.ip().to_string(),
            _ => self.peer.to_string(),
        }
    }
}

/// An rtt run's outcome: the sizes measured, and the error that ended it early, if one did.
pub struct Measured {
    /// Every size measured before any error.
    pub report: RttReport,
    /// Why the run stopped before its last size.
    pub error: Option<anyhow::Error>,
}

/// Measures every size of `plan`: checks the endpoint echoes, then one paced run per size.
pub fn measure(plan: &Plan) -> Measured {
    let epoch = Instant::now();
    let mut report = RttReport {
        kind: "rtt".into(),
        host: plan.host.clone(),
        port: match plan.transport {
            Transport::Icmp => 0,
            _ => plan.peer.port(),
        },
        protocol: plan.protocol().into(),
        count: plan.count,
        interval_us: plan.interval.as_micros() as u64,
        sizes: Vec::new(),
    };
    for (i, &size) in plan.sizes.iter().enumerate() {
        match measure_size(plan, epoch, i as u16, size) {
            Ok(s) => report.sizes.push(s),
            Err(error) => {
                return Measured {
                    report,
                    error: Some(error),
                }
            }
        }
    }
    Measured {
        report,
        error: None,
    }
}

/// One size: a fresh connection, the echo check, the paced run, its figures.
fn measure_size(plan: &Plan, epoch: Instant, run: u16, size: usize) -> anyhow::Result<SizeReport> {
    let mut conn = Connection::open(plan.peer, plan.transport, Duration::from_secs(3))?;
    conn.check_echo(epoch, 3, Duration::from_secs(1))?;
    let cfg = RunConfig {
        size,
        count: plan.count,
        interval: plan.interval,
        drain: plan.drain,
        run,
        keep_samples: false,
    };
    let r = conn.measure(epoch, &cfg)?;
    let lost = r.sent.saturating_sub(r.received);
    let realized_bps = match r.arrivals {
        Some((first, last)) if last > first => {
            (r.received - 1) as f64 * size as f64 * 8.0 / ((last - first) as f64 * 1e-9)
        }
        _ => 0.0,
    };
    Ok(SizeReport {
        size,
        sent: r.sent,
        received: r.received,
        lost,
        loss_pct: if r.sent == 0 {
            0.0
        } else {
            lost as f64 * 100.0 / r.sent as f64
        },
        duplicates: r.duplicates,
        corrupt: r.corrupt,
        offered_bps: (!plan.interval.is_zero())
            .then(|| size as f64 * 8.0 / plan.interval.as_secs_f64()),
        realized_bps,
        rtt: Distribution::from_histogram(&r.rtt),
        interarrival: Distribution::from_histogram(&r.gaps),
    })
}
