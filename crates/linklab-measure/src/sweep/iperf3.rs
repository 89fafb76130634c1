//! A sweep step through an **iperf3** server: a test at a fixed offered rate run by our own
//! client (`linklab_perf_host::iperf3::run_client`) against any iperf3 server, and the tests
//! the probe runs through the same client (TCP each way, sliced; its loads).

use std::io;
use std::time::Duration;

use linklab_perf::iperf::json::{Params, Protocol};
use linklab_perf::iperf::{Failure, TestReport};
use linklab_perf_host::iperf3::{run_client_with, ClientConfig, Error};
use linklab_results::sweep::Step;

use super::step::{Busy, NotListening, StepConfig, StepRunner};

/// Steps through an iperf3 server.
#[derive(Debug, Clone, Copy, Default)]
pub struct Iperf3;

/// Runs one iperf3 test of `params` against the server in `cfg` (its host, port and
/// watchdog); a server that refuses because it runs another test is a [`Busy`] error.
pub fn run_test(cfg: &StepConfig, params: Params) -> anyhow::Result<TestReport> {
    run_test_sliced(cfg, params, Duration::ZERO).map(|(report, _)| report)
}

/// [`run_test`], also giving the test's rate in each `slice` of it (bit/s over every stream,
/// this side's bytes: what the client sent, or with `-R` received), slices shorter than half
/// of `slice` left out; none when `slice` is zero. A figure of one test then carries how much
/// it varied while it ran.
pub fn run_test_sliced(
    cfg: &StepConfig,
    params: Params,
    slice: Duration,
) -> anyhow::Result<(TestReport, Vec<f64>)> {
    let client = client_config(cfg, params, slice);
    let mut rates = Vec::new();
    let report = run_client_with(&client, &mut |iv| {
        let seconds = iv.end_s - iv.start_s;
        if iv.omitted || seconds < slice.as_secs_f64() / 2.0 {
            return;
        }
        let bytes: u64 = iv.streams.iter().map(|s| s.bytes).sum();
        rates.push(bytes as f64 * 8.0 / seconds);
    })
    .map_err(|e| client_error(cfg, e))?;
    Ok((report, rates))
}

/// Our iperf3 client's configuration for a test of `params` against the server in `cfg`,
/// reporting every `slice` (none when zero).
pub fn client_config(cfg: &StepConfig, params: Params, slice: Duration) -> ClientConfig {
    let mut client = ClientConfig::new(&cfg.host);
    client.port = cfg.port;
    client.connect_timeout = Duration::from_secs(3);
    client.watchdog = cfg.watchdog;
    client.params = params;
    client.interval = slice;
    client
}

/// A client error in one sentence naming the server: [`Busy`] for a server running another
/// test, [`NotListening`] for one still resetting after the last.
pub fn client_error(cfg: &StepConfig, e: Error) -> anyhow::Error {
    let message = format!("iperf3 server {}:{}: {e}", cfg.host, cfg.port);
    match e {
        Error::Test(Failure::AccessDenied) => anyhow::Error::new(Busy(message)),
        Error::Iperf { code: 103, errno }
            if matches!(
                io::Error::from_raw_os_error(errno).kind(),
                io::ErrorKind::ConnectionRefused | io::ErrorKind::ConnectionReset
            ) =>
        {
            anyhow::Error::new(NotListening(message))
        }
        _ => anyhow::anyhow!(message),
    }
}

impl StepRunner for Iperf3 {
    /// One iperf3 test at `offered` bit/s, its direction's results as the step.
    fn run_step(&self, cfg: &StepConfig, offered: f64) -> anyhow::Result<Step> {
        let params = Params {
            protocol: if cfg.tcp {
                Protocol::Tcp
            } else {
                Protocol::Udp
            },
            duration_s: cfg.seconds,
            reverse: cfg.reverse,
            len: cfg.length.unwrap_or(0),
            rate_bps: offered.round() as u64,
            ..Params::default()
        };
        let report = run_test(cfg, params)?;
        let dir = if cfg.reverse {
            report.reverse
        } else {
            report.forward
        };
        let d = dir.ok_or_else(|| {
            anyhow::anyhow!(
                "iperf3 server {}:{}: the test reported no data for this direction",
                cfg.host,
                cfg.port
            )
        })?;
        Ok(Step {
            offered_bps: offered,
            sent_bps: d.bits_per_second_sent,
            received_bps: d.bits_per_second_received,
            loss_pct: d.lost_percent,
            lost: d.lost,
            packets: d.packets,
            jitter_ms: d.jitter_ms,
            out_of_order: d.out_of_order,
            retransmits: d.retransmits,
            refined: false,
            limits: Vec::new(),
            attempt: 1,
        })
    }
}
