//! `linklab iperf -c HOST`: iperf3's client options checked as iperf3 checks them, turned
//! into a [`ClientConfig`], one test run and printed (text or `-J`).

use std::net::{IpAddr, ToSocketAddrs};
use std::time::Duration;

use linklab_perf::iperf::errors;
use linklab_perf::iperf::wire::DEFAULT_UDP_RATE;
use linklab_perf::iperf::{Params, Protocol};

use super::json::JsonView;
use super::options::{host_and_dev, Options};
use super::output::Printer;
use super::pidfile::PidFile;
use super::summary::Role;
use super::text::TextView;
use crate::command_error::CommandError;
use crate::iperf3::{run_client_observed, ClientConfig, Family, TestText};

/// Fails with iperf3's text if a server-only option was given to the client.
fn check_client_options(a: &Options) -> Result<(), CommandError> {
    let server_only =
        a.daemon || a.one_off || a.server_bitrate_limit.is_some() || a.idle_timeout.is_some();
    if server_only {
        return Err(CommandError::usage(errors::text(3).0));
    }
    if a.reverse && a.bidir {
        return Err(CommandError::usage(errors::text(25).0));
    }
    let ends = [a.time.is_some(), a.bytes.is_some(), a.blockcount.is_some()];
    if ends.iter().filter(|e| **e).count() > 1 {
        return Err(CommandError::usage(errors::text(16).0));
    }
    if a.interval.is_some_and(|i| i > 0.0 && i < 0.1) {
        return Err(CommandError::usage(errors::text(9).0));
    }
    if a.udp && a.length.is_some_and(|l| !(16..=65507).contains(&l)) {
        return Err(CommandError::usage(errors::text(20).0));
    }
    if a.rcv_timeout.is_some() && !a.reverse && !a.bidir {
        return Err(CommandError::usage(errors::text(32).0));
    }
    if a.version4 && a.version6 {
        return Err(CommandError::usage("-4 and -6 cannot be used together"));
    }
    Ok(())
}

/// `-B HOST`: the first address HOST resolves to.
fn bind_address(spec: &str) -> Result<IpAddr, CommandError> {
    (spec, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(|a| a.ip())
        .ok_or_else(|| CommandError::usage(format!("cannot resolve the -B address {spec:?}")))
}

/// The test `a` asks for.
fn config(a: &Options, host: &str) -> Result<ClientConfig, CommandError> {
    let (host, dev) = host_and_dev(host);
    let (bind, bind_dev) = match &a.bind {
        Some(b) => {
            let (h, d) = host_and_dev(b);
            (Some(bind_address(&h)?), d)
        }
        None => (None, None),
    };
    let protocol = if a.udp { Protocol::Udp } else { Protocol::Tcp };
    let (rate, burst) = match a.bitrate {
        Some((r, b)) => (r as u64, b.unwrap_or(0)),
        None if a.udp => (DEFAULT_UDP_RATE, 0),
        None => (0, 0),
    };
    let bytes = a.bytes.unwrap_or(0);
    let blocks = a.blockcount.unwrap_or(0);
    let duration_s = match a.time {
        Some(t) => t,
        None if bytes != 0 || blocks != 0 => 0,
        None => 10,
    };
    let mut cfg = ClientConfig::new(&host);
    cfg.port = a.port;
    cfg.params = Params {
        protocol,
        sctp: false,
        omit_s: a.omit.unwrap_or(0),
        duration_s,
        bytes,
        blocks,
        parallel: a.parallel.unwrap_or(1),
        reverse: a.reverse,
        bidirectional: a.bidir,
        len: a.length.unwrap_or(0) as u32,
        rate_bps: rate,
        burst,
        pacing_timer_us: a.pacing_timer.unwrap_or(1000) as u32,
        fq_rate_bps: a.fq_rate.unwrap_or(0.0) as u64,
        udp_counters_64bit: a.udp_counters_64bit,
        window: a.window.unwrap_or(0) as u32,
        mss: a.set_mss.unwrap_or(0),
        nodelay: a.no_delay,
        tos: a.dscp.or(a.tos).unwrap_or(0),
        flowlabel: a.flowlabel.unwrap_or(0),
        server_affinity: a.affinity.and_then(|(_, m)| m),
        get_server_output: a.get_server_output,
        repeating_payload: a.repeating_payload,
        zerocopy: a.zerocopy,
        dont_fragment: a.dont_fragment,
    };
    cfg.title = a.title.clone();
    cfg.extra_data = a.extra_data.clone();
    cfg.congestion = a.congestion.clone();
    cfg.interval = Duration::from_secs_f64(a.interval.unwrap_or(1.0));
    cfg.connect_timeout = Duration::from_millis(a.connect_timeout.unwrap_or(120_000));
    cfg.watchdog =
        Duration::from_millis(a.rcv_timeout.unwrap_or(120_000)).max(Duration::from_secs(15));
    cfg.family = match (a.version4, a.version6) {
        (true, _) => Family::V4,
        (_, true) => Family::V6,
        _ => Family::Any,
    };
    cfg.bind = bind;
    cfg.bind_dev = a.bind_dev.clone().or(dev).or(bind_dev);
    cfg.cport = a.cport;
    cfg.affinity = a.affinity.map(|(n, _)| n);
    cfg.rcv_timeout = a.rcv_timeout.map(Duration::from_millis);
    cfg.snd_timeout = a
        .snd_timeout
        .filter(|t| *t > 0)
        .map(|t| Duration::from_millis(u64::from(t)));
    cfg.file = a.file.clone();
    Ok(cfg)
}

/// Runs the client.
pub fn run(a: Options, host: String) -> Result<(), CommandError> {
    check_client_options(&a)?;
    if a.json && a.format.is_some() {
        eprintln!("warning: Report format (-f) flag ignored with JSON output (-J)");
    }
    if a.json && a.verbose {
        eprintln!("warning: Verbose output (-v) may interfere with JSON output (-J)");
    }
    if a.no_fq_socket_pacing {
        eprintln!("Warning:  --no-fq-socket-pacing is deprecated");
    }
    let cfg = config(&a, &host)?;
    let _pid = PidFile::create(a.pidfile.as_deref())?;
    let mut out = Printer::new(
        a.logfile.as_deref(),
        a.title.clone(),
        a.timestamps.clone(),
        a.forceflush,
    )?;
    if a.debug.is_some() {
        out.raw(&format!("debug: {cfg:?}\n"));
    }
    if a.json {
        let text = TestText {
            title: cfg.title.clone(),
            extra_data: cfg.extra_data.clone(),
            congestion: cfg.congestion.clone(),
        };
        let mut view = JsonView::new(Role::Client, cfg.params, text, Some((&cfg.host, cfg.port)));
        let result = run_client_observed(&cfg, &mut view);
        match &result {
            Ok(r) => view.end(r),
            Err(e) => view.set_error(&e.to_string()),
        }
        out.raw(&format!(
            "{}\n",
            serde_json::to_string_pretty(&view.document())?
        ));
        result.map(|_| ()).map_err(CommandError::failed)?;
        return Ok(());
    }
    let mut view = TextView::new(&mut out, Role::Client, a.verbose, a.format.unwrap_or('a'));
    view.target = (cfg.host.clone(), cfg.port);
    view.params = cfg.params;
    view.preamble();
    let report = run_client_observed(&cfg, &mut view).map_err(CommandError::failed)?;
    view.summary(&report);
    view.done();
    Ok(())
}
