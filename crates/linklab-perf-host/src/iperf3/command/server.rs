//! `linklab iperf -s`: iperf3's server options turned into a [`ServerConfig`]; one test
//! after another (or one with `-1`), each printed as iperf3's server prints it.

use std::net::ToSocketAddrs;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use linklab_perf::iperf::errors;
use linklab_perf::iperf::Params;

use super::json::JsonView;
use super::options::{host_and_dev, Options};
use super::output::Printer;
use super::pidfile::PidFile;
use super::summary::Role;
use super::text::TextView;
use crate::command_error::CommandError;
use crate::iperf3::{Family, Server, ServerConfig, TestText};
use crate::sys;

/// Fails with iperf3's text if a client-only option was given to the server.
fn check_server_options(a: &Options) -> Result<(), CommandError> {
    let client_only = a.udp
        || a.bitrate.is_some()
        || a.time.is_some()
        || a.bytes.is_some()
        || a.blockcount.is_some()
        || a.length.is_some()
        || a.parallel.is_some()
        || a.reverse
        || a.bidir
        || a.window.is_some()
        || a.set_mss.is_some()
        || a.no_delay
        || a.tos.is_some()
        || a.dscp.is_some()
        || a.flowlabel.is_some()
        || a.zerocopy
        || a.repeating_payload
        || a.omit.is_some()
        || a.title.is_some()
        || a.extra_data.is_some()
        || a.congestion.is_some()
        || a.get_server_output
        || a.pacing_timer.is_some()
        || a.connect_timeout.is_some()
        || a.fq_rate.is_some()
        || a.dont_fragment
        || a.affinity.is_some_and(|(_, m)| m.is_some());
    if client_only {
        return Err(CommandError::usage(errors::text(4).0));
    }
    if a.interval.is_some_and(|i| i > 0.0 && i < 0.1) {
        return Err(CommandError::usage(errors::text(9).0));
    }
    if a.version4 && a.version6 {
        return Err(CommandError::usage("-4 and -6 cannot be used together"));
    }
    Ok(())
}

fn config(a: &Options) -> Result<ServerConfig, CommandError> {
    let mut cfg = ServerConfig::new(a.port);
    if let Some(b) = &a.bind {
        let (h, dev) = host_and_dev(b);
        let ip = (h.as_str(), 0)
            .to_socket_addrs()
            .ok()
            .and_then(|mut it| it.next())
            .map(|s| s.ip())
            .ok_or_else(|| CommandError::usage(format!("cannot resolve the -B address {h:?}")))?;
        cfg.listen.bind = Some(ip);
        cfg.listen.bind_dev = dev;
    }
    if let Some(d) = &a.bind_dev {
        cfg.listen.bind_dev = Some(d.clone());
    }
    cfg.listen.family = match (a.version4, a.version6) {
        (true, _) => Family::V4,
        (_, true) => Family::V6,
        _ => Family::Any,
    };
    cfg.interval = Duration::from_secs_f64(a.interval.unwrap_or(1.0));
    cfg.rcv_timeout = Duration::from_millis(a.rcv_timeout.unwrap_or(120_000));
    cfg.snd_timeout = a
        .snd_timeout
        .filter(|t| *t > 0)
        .map(|t| Duration::from_millis(u64::from(t)));
    cfg.idle_timeout = a.idle_timeout.map(|s| Duration::from_secs(u64::from(s)));
    cfg.bitrate_limit = a
        .server_bitrate_limit
        .filter(|(r, _)| *r > 0.0)
        .map(|(r, w)| (r, w.unwrap_or(5.0)));
    cfg.watchdog = Duration::from_secs(15);
    cfg.file = a.file.clone();
    Ok(cfg)
}

/// Runs the server until interrupted (or after one test with `-1`).
pub fn run(a: Options) -> Result<(), CommandError> {
    check_server_options(&a)?;
    let cfg = config(&a)?;
    sys::default_stop_signals();
    let mut server = Server::listen(cfg).map_err(CommandError::failed)?;
    let port = server.local_addr()?.port();
    if a.daemon {
        sys::daemonize()
            .map_err(|e| CommandError::failed(format!("{}: {e}", errors::text(133).0)))?;
    }
    let _pid = PidFile::create(a.pidfile.as_deref())?;
    if let Some((cpu, _)) = a.affinity {
        sys::set_cpu_affinity(cpu)
            .map_err(|e| CommandError::failed(format!("{}: {e}", errors::text(132).0)))?;
    }
    let mut out = Printer::new(
        a.logfile.as_deref(),
        None,
        a.timestamps.clone(),
        a.forceflush,
    )?;
    let stop = AtomicBool::new(false);
    let mut test = 1;
    loop {
        let outcome = if a.json {
            let mut view =
                JsonView::new(Role::Server, Params::default(), TestText::default(), None);
            let r = server.serve_one_observed(&stop, &mut view)?;
            if let Some(Err(e)) = &r {
                view.set_error(&e.to_string());
            }
            if r.is_some() {
                out.raw(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&view.document())?
                ));
            }
            r
        } else {
            let mut view =
                TextView::new(&mut out, Role::Server, a.verbose, a.format.unwrap_or('a'));
            view.listening(port, test);
            view.preamble();
            server.serve_one_observed(&stop, &mut view)?
        };
        match outcome {
            None if a.one_off => return Ok(()),
            None => continue,
            Some(Ok(_)) => {}
            Some(Err(e)) => eprintln!("linklab: error: {e}"),
        }
        out.flush();
        if a.one_off {
            return Ok(());
        }
        test += 1;
    }
}
