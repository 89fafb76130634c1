//! A sweep step through an **iperf 2** server: a UDP test at a fixed offered rate run by our
//! iperf 2 client (`linklab_perf_host::iperf2::run_client`).
//!
//! To the device, the step is judged by the **server's report** (what it received, lost and
//! its jitter, RFC 1889 as iperf 2 counts them): a server that sends none — lwIP's lwiperf
//! has no UDP server, ESP-IDF's and NuttX's count bytes and answer nothing — gives no step at
//! all ([`NoReport`]), never a loss of 100 % or a rate of zero. From the device (`-R`, an
//! iperf 2.1 server sending on our flow), by what we received: the datagrams' ids say how
//! many the server sent, so loss and out-of-order come from our count, and the sender's
//! rate is those datagrams over the test's time (it sends for the time our header asked;
//! our receiving span is longer by the path's queueing).

use std::sync::mpsc;

use linklab_perf::iperf2::{Amount, Mode, Protocol};
use linklab_perf_host::iperf2::{
    run_client, ClientConfig, ClientError, Event, FlowReport, UdpFigures,
};

use linklab_results::sweep::Step;

use super::step::{NotListening, StepConfig, StepRunner};

/// Steps through an iperf 2 server (UDP only).
#[derive(Debug, Clone, Copy, Default)]
pub struct Iperf2;

/// The iperf 2 server sent no UDP report for a test to it: it has no UDP server, or one that
/// counts and answers nothing.
#[derive(Debug)]
pub struct NoReport(pub String);

impl std::fmt::Display for NoReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NoReport {}

impl StepRunner for Iperf2 {
    /// One iperf 2 UDP test at `offered` bit/s: to the device judged by the server's report,
    /// from it (`-R`) by what we received.
    fn run_step(&self, cfg: &StepConfig, offered: f64) -> anyhow::Result<Step> {
        let mut client = ClientConfig::new(&cfg.host);
        client.port = cfg.port;
        client.protocol = Protocol::Udp;
        client.mode = if cfg.reverse {
            Mode::Reverse
        } else {
            Mode::Normal
        };
        client.amount = Amount::from_us(u64::from(cfg.seconds) * 1_000_000);
        client.rate_bps = Some(offered.round().max(1.0) as u64);
        client.buf_len = cfg.length;
        let server = format!("iperf 2 server {}:{}", cfg.host, cfg.port);
        let (tx, rx) = mpsc::channel();
        let result = run_client(&client, &tx);
        drop(tx);
        let events: Vec<Event> = rx.into_iter().collect();
        let finals = || {
            events.iter().filter_map(|e| match e {
                Event::Final(r) => Some(*r),
                _ => None,
            })
        };
        let reports: Vec<FlowReport> = events
            .iter()
            .filter_map(|e| match e {
                Event::ServerReport(r) => Some(*r),
                _ => None,
            })
            .collect();
        if cfg.reverse {
            result.map_err(|e| match e {
                // Nothing arrived within 3 s of our asking: stock iperf 2.1.8's UDP server once
                // started a -R flow too late for that, right after another (its log showed the
                // flow sent whole). A server that ran our last test a moment ago is asked again
                // (`sweep::measure` retries what `step::is_resetting` says).
                ClientError::Timeout(_) => anyhow::Error::new(NotListening(format!(
                    "{server}: UDP -R: nothing arrived within 3 s of asking"
                ))),
                e => anyhow::anyhow!("{server}: UDP -R: {e}"),
            })?;
            let ours = finals()
                .find(|r| !r.sent && r.udp.is_some())
                .ok_or_else(|| {
                    anyhow::anyhow!("{server}: UDP -R: nothing arrived from the server")
                })?;
            return Ok(received(offered, &ours, cfg.seconds));
        }
        let sent = finals().find(|r| r.sent);
        match (result, sent, reports.first()) {
        (Ok(_), Some(sent), Some(report)) => Ok(reported(offered, &sent, report)),
        (Ok(_), Some(_), None) => Err(anyhow::Error::new(NoReport(format!(
            "{server}: sent {} datagrams at {} and got no UDP report back (the server has no UDP server, or one that sends no report: lwiperf, ESP-IDF, NuttX)",
            datagrams_sent(&events),
            linklab_results::units::format_rate(offered)
        )))),
        (Err(e), _, _) => {
            // A port that refuses UDP (an ICMP port unreachable) reports nothing either.
            let text = e.to_string();
            if text.contains("refused") {
                Err(anyhow::Error::new(NoReport(format!(
                    "{server}: UDP refused ({text}): no UDP server"
                ))))
            } else {
                Err(anyhow::anyhow!("{server}: UDP: {text}"))
            }
        }
        (Ok(_), None, _) => Err(anyhow::anyhow!("{server}: UDP: the test sent nothing")),
    }
    }
}

/// The datagrams our sender counted (its FIN's included).
fn datagrams_sent(events: &[Event]) -> u64 {
    events
        .iter()
        .map(|e| match e {
            Event::Sent { datagrams, .. } => *datagrams,
            _ => 0,
        })
        .sum()
}

/// A step to the device, from our send count and the server's report.
fn reported(offered: f64, sent: &FlowReport, report: &FlowReport) -> Step {
    udp_step(
        offered,
        sent.bits_per_second(),
        report.bits_per_second(),
        report.udp.unwrap_or_default(),
    )
}

/// A step from the device (`-R`), from what we received: the ids' highest is what the server
/// sent, each datagram the size of those that arrived, over the `seconds` it sent for.
fn received(offered: f64, ours: &FlowReport, seconds: u32) -> Step {
    let u = ours.udp.unwrap_or_default();
    let arrived = u.total.saturating_sub(u.lost);
    let sent_bps = if arrived > 0 {
        ours.bytes as f64 / arrived as f64 * u.total as f64 * 8.0 / f64::from(seconds.max(1))
    } else {
        0.0
    };
    udp_step(offered, sent_bps, ours.bits_per_second(), u)
}

/// A step of the rates given, its loss, jitter and order from the UDP figures `u` (the
/// server's report to the device, ours from it).
fn udp_step(offered: f64, sent_bps: f64, received_bps: f64, u: UdpFigures) -> Step {
    Step {
        offered_bps: offered,
        sent_bps,
        received_bps,
        loss_pct: if u.total > 0 {
            u.lost as f64 * 100.0 / u.total as f64
        } else {
            0.0
        },
        lost: u.lost,
        packets: u.total,
        jitter_ms: u.jitter_ms,
        out_of_order: Some(u.out_of_order),
        retransmits: None,
        refined: false,
        limits: Vec::new(),
        attempt: 1,
    }
}
