//! `linklab rtt`: its options, then one call of `linklab_measure::rtt` (the measurement, or
//! with `-s` the echo server); the tables, and `--json`.

use std::io::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;

use linklab_measure::rtt::{self, EchoServer, Measured, RttOptions, Transport};
use linklab_measure::rtt::{HEADER_LEN, MAX_PACKET_LEN};
use linklab_results::rtt::text::tables;
use linklab_results::{bail_usage, values};

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
        value_parser = values::ranged(HEADER_LEN, MAX_PACKET_LEN)
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
        let addr = SocketAddr::new(args.bind, args.port);
        let server = EchoServer::bind(addr)?;
        println!("linklab rtt: echo server on {addr} (UDP and TCP)");
        std::io::stdout().flush().ok();
        server.serve(|e| eprintln!("linklab rtt: accept failed: {e}"));
        return Ok(());
    }
    let Some(host) = args.client.clone() else {
        bail_usage!("give -c HOST to measure an echo endpoint, or -s to run the echo server");
    };
    let options = RttOptions {
        host,
        port: args.port,
        transport: if args.tcp {
            Transport::Tcp
        } else if args.icmp {
            Transport::Icmp
        } else {
            Transport::Udp
        },
        sizes: args.sizes,
        count: args.count,
        interval: Duration::from_micros(args.interval),
        drain: Duration::from_millis(args.timeout),
    };
    let plan = options.plan()?;
    println!(
        "linklab rtt: {} {}, {} probes per size, every {} µs",
        plan.target(),
        plan.protocol(),
        args.count,
        args.interval
    );
    let Measured { report, error } = rtt::measure(&plan);
    if let Some(e) = error {
        return Err(e);
    }
    print!("{}", tables(&report));
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report).expect("report serializes");
        std::fs::write(path, text + "\n")
            .with_context(|| format!("--json: cannot write {}", path.display()))?;
    }
    Ok(())
}
