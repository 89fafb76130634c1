//! `linklab iperf`: an iperf3-compatible server (`-s`) and client (`-c HOST`) on the host,
//! built on `linklab_perf::iperf` (the same sans-IO core the device runs). Human output
//! follows iperf3's layout; `-J` prints a JSON document in iperf3's schema.

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_perf::iperf::host::{self, ClientConfig, Server};
use linklab_perf::iperf::wire::{DEFAULT_UDP_RATE, MAX_BLOCK_LEN, MAX_PARALLEL, MAX_UDP_BLOCK_LEN};
use linklab_perf::iperf::{DirectionReport, Interval, Params, Protocol, TestReport};
use serde_json::{json, Value};

use crate::values;

/// Options of `linklab iperf` (the iperf3 flags with the same meaning).
#[derive(clap::Args)]
pub struct Args {
    /// Run as a server.
    #[arg(short = 's', long, conflicts_with = "client")]
    server: bool,
    /// Run as a client of the iperf3 server at HOST.
    #[arg(short = 'c', long, value_name = "HOST")]
    client: Option<String>,
    /// Server port (1-65535).
    #[arg(short = 'p', long, value_name = "PORT", default_value = "5201")]
    port: String,
    /// Server: handle one test, then exit.
    #[arg(short = '1', long = "one-off")]
    one_off: bool,
    /// Use UDP instead of TCP.
    #[arg(short = 'u', long)]
    udp: bool,
    /// Target rate per stream in bit/s, k/M/G suffix (UDP default 1M, TCP unlimited).
    #[arg(short = 'b', long = "bitrate", value_name = "RATE")]
    bitrate: Option<String>,
    /// Seconds to transmit (1-86400, default 10).
    #[arg(short = 't', long, value_name = "S")]
    time: Option<String>,
    /// Bytes to transmit instead of a time, K/M/G suffix.
    #[arg(short = 'n', long = "bytes", value_name = "BYTES", conflicts_with_all = ["time", "blockcount"],
          value_parser = values::byte_count(1, u64::MAX / 2))]
    bytes: Option<u64>,
    /// Blocks (writes / datagrams) to transmit instead of a time, K/M/G suffix.
    #[arg(
        short = 'k',
        long = "blockcount",
        value_name = "BLOCKS",
        conflicts_with = "time",
        value_parser = values::byte_count(1, u64::MAX / 2)
    )]
    blockcount: Option<u64>,
    /// Block length: bytes per write (TCP, default 128K) or datagram size (UDP, default 1460).
    #[arg(short = 'l', long = "length", value_name = "LEN")]
    length: Option<String>,
    /// Parallel streams (1-8).
    #[arg(short = 'P', long, value_name = "N", default_value = "1")]
    parallel: String,
    /// Reverse: the server sends.
    #[arg(short = 'R', long)]
    reverse: bool,
    /// Both directions at once.
    #[arg(long, conflicts_with = "reverse")]
    bidir: bool,
    /// Seconds at the start not counted (0-60).
    #[arg(short = 'O', long, value_name = "S", default_value = "0")]
    omit: String,
    /// Seconds between interval reports (0 = none, else 0.1-60).
    #[arg(short = 'i', long, value_name = "S", default_value = "1")]
    interval: String,
    /// 64-bit UDP sequence numbers.
    #[arg(long = "udp-counters-64bit")]
    udp_counters_64bit: bool,
    /// Print the results as JSON in iperf3's schema.
    #[arg(short = 'J', long)]
    json: bool,
}

/// Runs `linklab iperf`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let port = parse_int("-p/--port", &args.port, 1, 65535, 1)? as u16;
    if args.server {
        return run_server(port, args.one_off);
    }
    let Some(host) = args.client.clone() else {
        bail!("give -s (server) or -c HOST (client)");
    };
    let cfg = client_config(&args, host, port)?;
    run_client(&cfg, args.json)
}

/// Parses an integer with an optional K/M/G suffix (`unit` = 1000 or 1024) in `lo..=hi`.
fn parse_int(name: &str, s: &str, lo: u64, hi: u64, unit: u64) -> anyhow::Result<u64> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') if unit > 1 => (&t[..t.len() - 1], unit),
        Some('m') if unit > 1 => (&t[..t.len() - 1], unit * unit),
        Some('g') if unit > 1 => (&t[..t.len() - 1], unit * unit * unit),
        _ => (t, 1),
    };
    let v: f64 = num
        .parse()
        .ok()
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
        .with_context(|| {
            format!(
                "{name} must be a number in {lo}..={hi}{}, got {s:?}",
                if unit > 1 {
                    " (K/M/G suffix allowed)"
                } else {
                    ""
                }
            )
        })?;
    let v = v * mult as f64;
    if v < lo as f64 || v > hi as f64 || (unit == 1 && v.fract() != 0.0) {
        bail!("{name} must be in {lo}..={hi}, got {s:?}");
    }
    Ok(v as u64)
}

fn client_config(a: &Args, host: String, port: u16) -> anyhow::Result<ClientConfig> {
    let protocol = if a.udp { Protocol::Udp } else { Protocol::Tcp };
    let parallel = parse_int("-P/--parallel", &a.parallel, 1, MAX_PARALLEL as u64, 1)? as u8;
    let omit = parse_int("-O/--omit", &a.omit, 0, 60, 1)? as u32;
    let bytes = a.bytes.unwrap_or(0);
    let blocks = a.blockcount.unwrap_or(0);
    let time = match &a.time {
        Some(s) => parse_int("-t/--time", s, 1, 86_400, 1)? as u32,
        None if bytes != 0 || blocks != 0 => 0,
        None => 10,
    };
    let (min_len, max_len) = match protocol {
        Protocol::Tcp => (1, MAX_BLOCK_LEN as u64),
        Protocol::Udp => (
            if a.udp_counters_64bit { 16 } else { 12 },
            MAX_UDP_BLOCK_LEN as u64,
        ),
    };
    let len = a
        .length
        .as_deref()
        .map(|s| parse_int("-l/--length", s, min_len, max_len, 1024))
        .transpose()?
        .unwrap_or(0) as u32;
    let rate = match &a.bitrate {
        Some(s) => parse_int("-b/--bitrate", s, 0, 1_000_000_000_000, 1000)?,
        None if a.udp => DEFAULT_UDP_RATE,
        None => 0,
    };
    let interval: f64 = a
        .interval
        .trim()
        .parse()
        .ok()
        .filter(|v: &f64| *v == 0.0 || (0.1..=60.0).contains(v))
        .with_context(|| {
            format!(
                "-i/--interval must be 0 or in 0.1..=60 seconds, got {:?}",
                a.interval
            )
        })?;
    let mut cfg = ClientConfig::new(&host);
    cfg.port = port;
    cfg.interval = Duration::from_secs_f64(interval);
    cfg.watchdog = Duration::from_secs(15);
    cfg.params = Params {
        protocol,
        omit_s: omit,
        duration_s: time,
        bytes,
        blocks,
        parallel,
        reverse: a.reverse,
        bidirectional: a.bidir,
        len,
        rate_bps: rate,
        pacing_timer_us: 1000,
        udp_counters_64bit: a.udp_counters_64bit,
    };
    Ok(cfg)
}

fn run_server(port: u16, one_off: bool) -> anyhow::Result<()> {
    // A server started from a script may inherit SIGINT ignored (SIG_IGN survives exec); stop
    // on SIGINT and SIGTERM alike, as iperf3 does.
    // SAFETY: restoring the default disposition of two signals; no handler is installed.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
    let addr = format!("0.0.0.0:{port}").parse().expect("literal address");
    let mut server = Server::bind(addr).with_context(|| format!("cannot listen on port {port}"))?;
    println!("-----------------------------------------------------------");
    println!("Server listening on {port} (linklab, iperf3 compatible)");
    println!("-----------------------------------------------------------");
    let stop = AtomicBool::new(false);
    loop {
        let Some(outcome) = server.serve_one_until(&stop)? else {
            return Ok(());
        };
        match outcome {
            Ok(rep) => print_summary(&rep, false),
            Err(e) => println!("iperf3: error - {e}"),
        }
        println!("-----------------------------------------------------------");
        if one_off {
            return Ok(());
        }
        println!("Server listening on {port} (linklab, iperf3 compatible)");
        println!("-----------------------------------------------------------");
    }
}

fn run_client(cfg: &ClientConfig, json_out: bool) -> anyhow::Result<()> {
    let p = cfg.params;
    if !json_out {
        println!("Connecting to host {}, port {}", cfg.host, cfg.port);
        if p.reverse {
            println!("Reverse mode, remote host {} is sending", cfg.host);
        }
    }
    let mut intervals: Vec<Interval> = Vec::new();
    let report = host::run_client_with(cfg, &mut |iv| {
        if !json_out {
            if intervals.is_empty() {
                println!("{}", header(p.protocol));
            }
            print_interval(iv, p.protocol, p.bidirectional);
        }
        intervals.push(iv.clone());
    })
    .map_err(|e| anyhow::anyhow!("{}:{}: {e}", cfg.host, cfg.port))?;
    if json_out {
        let doc = json_document(cfg, &report, &intervals);
        println!("{}", serde_json::to_string_pretty(&doc)?);
    } else {
        print_summary(&report, true);
        println!("\niperf Done.");
    }
    Ok(())
}

fn header(protocol: Protocol) -> &'static str {
    match protocol {
        Protocol::Tcp => "[ ID] Interval           Transfer     Bitrate",
        Protocol::Udp => {
            "[ ID] Interval           Transfer     Bitrate         Jitter    Lost/Total Datagrams"
        }
    }
}

/// iperf3's adaptive units: bytes in 1024 steps, bits in 1000 steps.
fn fmt_unit(v: f64, base: f64, units: [&str; 4]) -> String {
    let mut v = v;
    let mut i = 0;
    while v >= base && i < 3 {
        v /= base;
        i += 1;
    }
    let n = if v < 9.995 {
        format!("{v:4.2}")
    } else if v < 99.95 {
        format!("{v:4.1}")
    } else {
        format!("{v:4.0}")
    };
    format!("{n} {}", units[i])
}

fn fmt_bytes(b: u64) -> String {
    fmt_unit(b as f64, 1024.0, ["Bytes", "KBytes", "MBytes", "GBytes"])
}

fn fmt_bits(bps: f64) -> String {
    fmt_unit(
        bps,
        1000.0,
        ["bits/sec", "Kbits/sec", "Mbits/sec", "Gbits/sec"],
    )
}

fn print_interval(iv: &Interval, protocol: Protocol, bidir: bool) {
    let secs = (iv.end_s - iv.start_s).max(1e-9);
    let omitted = if iv.omitted { "  (omitted)" } else { "" };
    for s in &iv.streams {
        let role = if bidir {
            if s.sender {
                "[TX-C]"
            } else {
                "[RX-C]"
            }
        } else {
            ""
        };
        let base = format!(
            "[{:>3}]{role} {:6.2}-{:<6.2} sec  {:>11}  {:>15}",
            s.id,
            iv.start_s,
            iv.end_s,
            fmt_bytes(s.bytes),
            fmt_bits(s.bytes as f64 * 8.0 / secs)
        );
        if protocol == Protocol::Udp && !s.sender {
            let pct = if s.packets > 0 {
                100.0 * s.lost as f64 / s.packets as f64
            } else {
                0.0
            };
            println!(
                "{base}  {:.3} ms  {}/{} ({:.2}%){omitted}",
                s.jitter_s * 1000.0,
                s.lost,
                s.packets,
                pct
            );
        } else if protocol == Protocol::Udp {
            println!("{base}  {}{omitted}", s.packets);
        } else {
            println!("{base}{omitted}");
        }
    }
}

fn print_summary(rep: &TestReport, client_view: bool) {
    let proto = rep.params.protocol;
    println!("- - - - - - - - - - - - - - - - - - - - - - - - -");
    println!("{}", header(proto));
    let secs = rep.seconds;
    let line = |id: String, tag: &str, bytes: u64, d: &DirectionReport, who: &str| {
        let bps = bytes as f64 * 8.0 / secs.max(1e-9);
        let mut s = format!(
            "[{id:>3}]{tag}   0.00-{secs:<6.2} sec  {:>11}  {:>15}",
            fmt_bytes(bytes),
            fmt_bits(bps)
        );
        if proto == Protocol::Udp {
            s.push_str(&format!(
                "  {:.3} ms  {}/{} ({:.2}%)",
                d.jitter_ms, d.lost, d.packets, d.lost_percent
            ));
        } else if who == "sender" {
            if let Some(r) = d.retransmits {
                s.push_str(&format!("  {r:>4}"));
            }
        }
        s.push_str(&format!("  {who}"));
        s
    };
    let both = rep.forward.is_some() && rep.reverse.is_some();
    for (is_forward, dir) in [(true, rep.forward), (false, rep.reverse)] {
        let Some(d) = dir else { continue };
        // --bidir: tag lines from the client's side (server: the mirror image).
        let tag = match (both, is_forward, client_view) {
            (false, _, _) => "",
            (true, true, true) => "[TX-C]",
            (true, false, true) => "[RX-C]",
            (true, true, false) => "[RX-S]",
            (true, false, false) => "[TX-S]",
        };
        for (id, _, sd) in rep.streams.iter().filter(|(_, f, _)| *f == is_forward) {
            println!("{}", line(id.to_string(), tag, sd.bytes_sent, sd, "sender"));
            println!(
                "{}",
                line(id.to_string(), tag, sd.bytes_received, sd, "receiver")
            );
        }
        if d.streams > 1 {
            println!("{}", line("SUM".into(), tag, d.bytes_sent, &d, "sender"));
            println!(
                "{}",
                line("SUM".into(), tag, d.bytes_received, &d, "receiver")
            );
        }
    }
}

fn sum_json(secs: f64, bytes: u64, d: &DirectionReport, sender: bool, udp: bool) -> Value {
    let mut v = json!({
        "start": 0,
        "end": secs,
        "seconds": secs,
        "bytes": bytes,
        "bits_per_second": if secs > 0.0 { bytes as f64 * 8.0 / secs } else { 0.0 },
        "sender": sender,
    });
    if udp {
        v["jitter_ms"] = json!(d.jitter_ms);
        v["lost_packets"] = json!(d.lost);
        v["packets"] = json!(d.packets);
        v["lost_percent"] = json!(d.lost_percent);
        if let Some(o) = d.out_of_order {
            v["out_of_order"] = json!(o);
        }
    } else if sender {
        v["retransmits"] = json!(d.retransmits.unwrap_or(0));
    }
    v
}

/// The `-J` document in iperf3's schema.
fn json_document(cfg: &ClientConfig, rep: &TestReport, intervals: &[Interval]) -> Value {
    let p = &rep.params;
    let udp = p.protocol == Protocol::Udp;
    let secs = rep.seconds;
    let iv_json: Vec<Value> = intervals
        .iter()
        .map(|iv| {
            let seconds = iv.end_s - iv.start_s;
            let streams: Vec<Value> = iv
                .streams
                .iter()
                .map(|s| {
                    let mut v = json!({
                        "socket": s.id, "start": iv.start_s, "end": iv.end_s, "seconds": seconds,
                        "bytes": s.bytes, "bits_per_second": s.bytes as f64 * 8.0 / seconds.max(1e-9),
                        "omitted": iv.omitted, "sender": s.sender,
                    });
                    if udp {
                        v["packets"] = json!(s.packets);
                        if !s.sender {
                            v["jitter_ms"] = json!(s.jitter_s * 1000.0);
                            v["lost_packets"] = json!(s.lost);
                            v["lost_percent"] = json!(if s.packets > 0 { 100.0 * s.lost as f64 / s.packets as f64 } else { 0.0 });
                        }
                    }
                    v
                })
                .collect();
            let bytes: u64 = iv.streams.iter().filter(|s| s.sender || !p.bidirectional).map(|s| s.bytes).sum();
            json!({
                "streams": streams,
                "sum": { "start": iv.start_s, "end": iv.end_s, "seconds": seconds, "bytes": bytes,
                         "bits_per_second": bytes as f64 * 8.0 / seconds.max(1e-9), "omitted": iv.omitted,
                         "sender": iv.streams.first().is_some_and(|s| s.sender) },
            })
        })
        .collect();
    let streams: Vec<Value> = rep
        .streams
        .iter()
        .map(|(id, fwd, d)| {
            let we_send = *fwd;
            let mut snd = sum_json(secs, d.bytes_sent, d, true, udp);
            let mut rcv = sum_json(secs, d.bytes_received, d, false, udp);
            snd["socket"] = json!(id);
            rcv["socket"] = json!(id);
            if udp {
                let mut u = if we_send { snd } else { rcv };
                u["bytes"] = json!(if we_send {
                    d.bytes_sent
                } else {
                    d.bytes_received
                });
                json!({ "udp": u })
            } else {
                json!({ "sender": snd, "receiver": rcv })
            }
        })
        .collect();
    let mut end = json!({ "streams": streams });
    let (main, other) = if p.reverse {
        (rep.reverse, None)
    } else {
        (rep.forward, rep.reverse)
    };
    if let Some(d) = main {
        end["sum_sent"] = sum_json(secs, d.bytes_sent, &d, true, udp);
        end["sum_received"] = sum_json(secs, d.bytes_received, &d, false, udp);
        if udp {
            end["sum"] = sum_json(secs, d.bytes_sent, &d, !p.reverse, true);
        }
    }
    if let Some(d) = other {
        end["sum_sent_bidir_reverse"] = sum_json(secs, d.bytes_sent, &d, true, udp);
        end["sum_received_bidir_reverse"] = sum_json(secs, d.bytes_received, &d, false, udp);
        if udp {
            end["sum_bidir_reverse"] = sum_json(secs, d.bytes_received, &d, false, true);
        }
    }
    end["cpu_utilization_percent"] = json!({ "host_total": 0.0, "host_user": 0.0, "host_system": 0.0,
                                              "remote_total": 0.0, "remote_user": 0.0, "remote_system": 0.0 });
    json!({
        "start": {
            "connecting_to": { "host": cfg.host, "port": cfg.port },
            "version": "linklab iperf (iperf3 3.12 compatible)",
            "test_start": {
                "protocol": if udp { "UDP" } else { "TCP" }, "num_streams": p.parallel, "blksize": p.len,
                "omit": p.omit_s, "duration": p.duration_s, "bytes": p.bytes, "blocks": p.blocks,
                "reverse": u8::from(p.reverse), "bidir": u8::from(p.bidirectional), "tos": 0,
                "target_bitrate": p.rate_bps,
            },
        },
        "intervals": iv_json,
        "end": end,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_parse_like_iperf3() {
        assert_eq!(
            parse_int("-b", "50M", 0, u64::MAX / 2, 1000).unwrap(),
            50_000_000
        );
        assert_eq!(
            parse_int("-n", "10M", 1, u64::MAX / 2, 1024).unwrap(),
            10 * 1024 * 1024
        );
        assert_eq!(
            parse_int("-n", "1.5K", 1, u64::MAX / 2, 1024).unwrap(),
            1536
        );
        assert!(parse_int("-P", "9", 1, 8, 1)
            .unwrap_err()
            .to_string()
            .contains("-P"));
        assert!(parse_int("-P", "x", 1, 8, 1).is_err());
        assert!(parse_int("-P", "1.5", 1, 8, 1).is_err());
        assert_eq!(fmt_bytes(1536), "1.50 KBytes");
        assert_eq!(fmt_bits(9_430_000_000.0), "9.43 Gbits/sec");
    }
}
