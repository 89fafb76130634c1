//! `linklab rtt`: round-trip and inter-arrival histograms per packet size against an echo
//! endpoint (as CBA's link speed tests measured by hand), and `linklab rtt -s`, the echo server.
//!
//! For every size the client sends `-n` probes paced every `--interval` µs. Each reply gives a
//! round-trip time (from the send time carried in the probe) and an inter-arrival time (since
//! the previous reply). Per size it reports both distributions (min, p50, p90, p99, p99.9, max,
//! mean, stddev from an HDR histogram), the loss, and the realized bandwidth of the returning
//! stream.

pub mod client;
mod icmp;
mod probe;
mod server;

use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;

pub use client::Transport;
use client::{Connection, RunConfig};
use linklab_results::rtt::{Distribution, RttReport, SizeReport};
use probe::HEADER_LEN;

use linklab_results::{bail_usage, values};

/// The largest UDP probe: a UDP datagram's largest payload over IPv4.
const MAX_UDP_PROBE_LEN: usize = 65_507;

/// Options of `linklab rtt`.
#[derive(clap::Args)]
pub struct Args {
    /// Run the echo server (UDP and TCP) instead of measuring.
    #[arg(short = 's', long, conflicts_with = "client")]
    server: bool,
    /// Echo endpoint to measure (a host running `linklab rtt -s`, or the soft NIC).
    #[arg(short = 'c', long, value_name = "HOST")]
    client: Option<String>,
    /// Echo port (RFC 862 uses 7).
    #[arg(short = 'p', long, default_value_t = 7)]
    port: u16,
    /// Server: address to listen on.
    #[arg(short = 'B', long, value_name = "ADDR", default_value = "0.0.0.0")]
    bind: IpAddr,
    /// Probe over UDP, one probe per datagram (the default).
    #[arg(long, conflicts_with = "tcp")]
    udp: bool,
    /// Probe over one TCP connection per size.
    #[arg(long, conflicts_with = "icmp")]
    tcp: bool,
    /// Probe with ICMP echo (ping; the sizes are the echo payload, as ping's -s). Needs a
    /// group in net.ipv4.ping_group_range, or root.
    #[arg(long, conflicts_with = "udp")]
    icmp: bool,
    /// Probe sizes in bytes (UDP payload or TCP frame), comma separated; 16..=65507 (UDP),
    /// 16..=65536 (TCP).
    #[arg(
        long,
        value_name = "LIST",
        default_value = "32,64,128,256,512,768,1024,1472",
        value_delimiter = ',',
        value_parser = values::ranged(HEADER_LEN, client::MAX_PROBE_LEN)
    )]
    sizes: Vec<usize>,
    /// Probes per size.
    #[arg(short = 'n', long, value_name = "COUNT", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(2..=10_000_000))]
    count: u32,
    /// Send spacing in microseconds (0 = back to back).
    #[arg(long, value_name = "US", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    interval: u64,
    /// How long to wait for late replies after the last probe, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    timeout: u64,
    /// Also write the results as JSON to FILE (input of `linklab report`).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// Runs `linklab rtt`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.server {
        return server::serve(SocketAddr::new(args.bind, args.port));
    }
    let Some(host) = args.client.clone() else {
        bail_usage!("give -c HOST to measure an echo endpoint, or -s to run the echo server");
    };
    let transport = if args.tcp {
        Transport::Tcp
    } else if args.icmp {
        Transport::Icmp
    } else {
        Transport::Udp
    };
    let sizes = args.sizes;
    if let Some(big) = sizes.iter().find(|&&n| !args.tcp && n > MAX_UDP_PROBE_LEN) {
        bail_usage!("--sizes: {big} is larger than a UDP datagram's payload ({MAX_UDP_PROBE_LEN})");
    }
    let peer = (host.as_str(), args.port)
        .to_socket_addrs()
        .with_context(|| format!("-c: cannot resolve {host:?}"))?
        .next()
        .with_context(|| format!("-c: {host:?} has no address"))?;

    let plan = Plan {
        host,
        peer,
        transport,
        sizes,
        count: args.count,
        interval: Duration::from_micros(args.interval),
        drain: Duration::from_millis(args.timeout),
    };
    println!(
        "linklab rtt: {} {}, {} probes per size, every {} µs",
        plan.target(),
        plan.protocol(),
        args.count,
        args.interval
    );
    let Measured { report, error } = measure(&plan);
    if let Some(e) = error {
        return Err(e);
    }
    print!("{}", render_text(&report));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).expect("report serializes");
        std::fs::write(path, text + "\n")
            .with_context(|| format!("--json: cannot write {}", path.display()))?;
    }
    Ok(())
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

/// The human-readable tables: round trips, then inter-arrival times, one row per size.
fn render_text(r: &RttReport) -> String {
    let mut s = String::new();
    for (title, pick) in [
        (
            "round-trip time (µs)",
            (|x: &SizeReport| &x.rtt) as fn(&SizeReport) -> &Distribution,
        ),
        (
            "inter-arrival time of the replies (µs)",
            |x: &SizeReport| &x.interarrival,
        ),
    ] {
        let _ = writeln!(s, "\n{title}");
        let _ = writeln!(
            s,
            "{:>6} {:>7} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
            "size",
            "sent",
            "recv",
            "loss%",
            "min",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "max",
            "mean",
            "stddev",
            "Mbit/s"
        );
        for x in &r.sizes {
            let d = pick(x);
            let _ =
                writeln!(
                s,
                "{:>6} {:>7} {:>7} {:>7.2} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.3}",
                x.size, x.sent, x.received, x.loss_pct, d.min_us, d.p50_us, d.p90_us, d.p99_us, d.p999_us, d.max_us,
                d.mean_us, d.stddev_us, x.realized_bps / 1e6
            );
        }
    }
    s
}
