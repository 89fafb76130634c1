//! `linklab iperf2`: the options checked as stock iperf 2 would refuse them, turned into a
//! server or client run, its events printed.

use std::sync::mpsc;

use linklab_perf::iperf2::{Amount, HeaderStyle, Mode, Protocol};

use super::options::Options;
use super::text::Printer;
use super::version::VERSION;
use crate::command_error::CommandError;
use crate::iperf2::{run_client, ClientConfig, ClientError, Server, ServerConfig};
use crate::{dates, sys};

/// Runs `linklab iperf2` with `a`: prints the version (`-v`), or runs the server (`-s`,
/// until the process is stopped) or the client (`-c HOST`), printing as iperf 2.1.8 does.
pub fn run(a: Options) -> Result<(), CommandError> {
    if a.version {
        println!("{VERSION}");
        return Ok(());
    }
    check(&a)?;
    // The local time zone, read while this is the only thread (CSV lines carry local time).
    dates::local_offset();
    let csv = a.reportstyle == Some('C');
    let interval_us = a.interval.map_or(0, |s| (s * 1e6) as u64);
    if a.server {
        let mut cfg = ServerConfig {
            udp: a.udp,
            interval_us,
            ..ServerConfig::default()
        };
        if let Some(p) = a.port {
            cfg.port = p;
        }
        if let Some(l) = a.len {
            cfg.write_len = l as usize;
        }
        cfg.window = a.window.map(|w| w as usize);
        let port = cfg.port;
        // As `linklab iperf -s`: stop on SIGINT even when started with it ignored (a script's
        // background job inherits SIGINT ignored).
        sys::default_stop_signals();
        let server = Server::bind(cfg)
            .map_err(|e| CommandError::failed(format!("cannot listen on port {port}: {e}")))?;
        let (tx, rx) = mpsc::channel();
        let t = std::thread::spawn(move || server.run(tx));
        let mut printer = Printer::new(csv, None);
        for e in rx {
            printer.event(&e);
        }
        return match t.join() {
            Ok(r) => r.map_err(|e| CommandError::failed(format!("server stopped: {e}"))),
            Err(_) => Err(CommandError::failed("server stopped")),
        };
    }
    let host = a.client.clone().unwrap_or_default();
    let mut cfg = ClientConfig::new(&host);
    cfg.protocol = if a.udp { Protocol::Udp } else { Protocol::Tcp };
    cfg.mode = if a.tradeoff {
        Mode::Tradeoff
    } else if a.dualtest {
        Mode::Dual
    } else if a.reverse {
        Mode::Reverse
    } else if a.full_duplex {
        Mode::FullDuplex
    } else {
        Mode::Normal
    };
    cfg.amount = match (a.num, a.time) {
        (Some(n), _) => Amount::Bytes(n),
        (None, Some(t)) => Amount::Time(((t * 100.0).round() as u32).max(1)),
        (None, None) => Amount::Time(1000),
    };
    if let Some(p) = a.port {
        cfg.port = p;
    }
    cfg.parallel = a.parallel.unwrap_or(1);
    cfg.buf_len = a.len.map(|l| l as u32);
    cfg.rate_bps = a.bandwidth;
    cfg.listen_port = a.listenport;
    cfg.style = if a.compatibility {
        HeaderStyle::None
    } else if a.v20_header {
        HeaderStyle::V20
    } else {
        HeaderStyle::V21
    };
    cfg.peer_detect = a.peer_detect;
    cfg.interval_us = interval_us;
    cfg.window = a.window.map(|w| w as usize);
    let (tx, rx) = mpsc::channel();
    let parallel = cfg.parallel;
    let runner = std::thread::spawn(move || run_client(&cfg, &tx));
    let mut printer = Printer::new(csv, Some(parallel));
    for e in rx {
        printer.event(&e);
    }
    match runner.join() {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(ClientError::Iperf3Server)) => Err(CommandError::failed(format!(
            "{host} port {} speaks iperf3, not iperf 2: use `linklab iperf -c {host}`",
            a.port.unwrap_or(5001)
        ))),
        Ok(Err(e)) => Err(CommandError::failed(e)),
        Err(_) => Err(CommandError::failed("the client stopped")),
    }
}

/// Combinations stock iperf 2 refuses, or that cannot mean anything, as one usage line.
fn check(a: &Options) -> Result<(), CommandError> {
    match (a.server, &a.client) {
        (true, Some(_)) => return Err(CommandError::usage("-s and -c exclude each other")),
        (false, None) => return Err(CommandError::usage("give -s (server) or -c HOST (client)")),
        _ => {}
    }
    if a.enhanced {
        return Err(CommandError::usage(
            "-e (enhanced reports) is not supported by linklab iperf2",
        ));
    }
    let modes = [a.tradeoff, a.dualtest, a.reverse, a.full_duplex]
        .iter()
        .filter(|m| **m)
        .count();
    if modes > 1 {
        return Err(CommandError::usage(
            "-r, -d, -R and --full-duplex exclude each other",
        ));
    }
    if a.server {
        let client_only = a.tradeoff
            || a.dualtest
            || a.reverse
            || a.full_duplex
            || a.num.is_some()
            || a.time.is_some()
            || a.bandwidth.is_some()
            || a.parallel.is_some()
            || a.peer_detect
            || a.compatibility
            || a.listenport.is_some();
        if client_only {
            return Err(CommandError::usage(
                "-r, -d, -R, --full-duplex, -t, -n, -b, -P, -X, -C and -L are client options",
            ));
        }
        return Ok(());
    }
    if a.num.is_some() && a.time.is_some() {
        return Err(CommandError::usage("-t and -n exclude each other"));
    }
    if a.peer_detect && a.udp {
        return Err(CommandError::usage(
            "-X (peer detect) is TCP only, as in iperf 2",
        ));
    }
    if a.compatibility && (modes > 0 || a.peer_detect) {
        return Err(CommandError::usage(
            "-C sends no header: no -r, -d, -R, --full-duplex or -X",
        ));
    }
    if a.v20_header && (a.reverse || a.full_duplex || a.peer_detect) {
        return Err(CommandError::usage(
            "iperf 2.0's header has no -R, --full-duplex or -X",
        ));
    }
    if a.full_duplex && a.udp {
        return Err(CommandError::usage("--full-duplex is served over TCP only"));
    }
    if a.udp {
        if let Some(l) = a.len {
            if !(76..=65_507).contains(&l) {
                return Err(CommandError::usage(
                    "-l for UDP must be 76..=65507 bytes (the datagram and test headers are 76)",
                ));
            }
        }
    }
    Ok(())
}
