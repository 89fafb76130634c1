//! The probe's TCP and UDP steps through an **iperf 2** server — what lwIP's lwiperf,
//! ESP-IDF, Zephyr's zperf and NuttX run — with our iperf 2 client
//! (`linklab_perf_host::iperf2::run_client`).
//!
//! TCP, in rounds as time allows, each way with what the server answers:
//! - to the device: a plain test; iperf 2 reports nothing back on TCP, so the figure is what
//!   we sent over the time until the server closed — it reads to our end before it closes,
//!   so every byte counted arrived;
//! - from the device: `-R` on the one connection when the server replied with its version
//!   (iperf 2.1); otherwise `-r` (tradeoff): after our test the server connects back to a
//!   port we listen on and sends (lwiperf does; ESP-IDF, Zephyr and NuttX do not). A server
//!   that answers neither gets its one direction and a plain line for the other.
//!
//! UDP: `steps::sweep_one_way` with iperf 2 steps (`sweep::Iperf2`), judged by the server's
//! report; a server without reports gets a plain line, never a zero.

use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use linklab_perf::iperf2::{Amount, Mode, Protocol};
use linklab_perf_host::iperf2::{run_client, ClientConfig, ClientError, Event, FlowReport};

use linklab_results::probe::figures;
use linklab_results::probe::{NotMeasured, TcpTest, Unmeasured};
use linklab_results::quantity::Quantity;
use linklab_results::sweep::SweepReport;

use super::plan::Iperf;
use super::steps::{self, tcp_plan, Outcome};

/// What one way of a test moved: `(bytes, seconds, slices in bit/s)`.
type Way = (u64, f64, Vec<f64>);

/// Each test's rate is also taken in slices this long: its figure's spread.
const SLICE_US: u64 = 250_000;
/// Pause between two tests (the server closes the last one's sockets).
const PAUSE: Duration = Duration::from_millis(300);

/// One iperf 2 TCP test in `mode` for `seconds` through our iperf 2 client (it writes as
/// stock 2.1.8 does, which lwiperf's `-r` needs); what it moved each way (to, from) and
/// the error that ended it, if any.
fn one_test(
    host: &str,
    port: u16,
    mode: Mode,
    seconds: u32,
) -> (Option<Way>, Option<Way>, Option<ClientError>) {
    let mut cfg = ClientConfig::new(host);
    cfg.port = port;
    cfg.protocol = Protocol::Tcp;
    cfg.mode = mode;
    cfg.amount = Amount::from_us(u64::from(seconds) * 1_000_000);
    cfg.interval_us = SLICE_US;
    if mode.connects_back() {
        // A port of our own for the connect-back (the header carries it).
        cfg.listen_port = TcpListener::bind(("0.0.0.0", 0))
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .ok();
    }
    let (tx, rx) = mpsc::channel();
    let result = run_client(&cfg, &tx);
    drop(tx);
    let events: Vec<Event> = rx.into_iter().collect();
    let way = |sent: bool| -> Option<Way> {
        let last: Option<FlowReport> = events.iter().rev().find_map(|e| match e {
            Event::Final(r) if r.sent == sent => Some(*r),
            _ => None,
        });
        let r = last?;
        let mut slices: Vec<f64> = events
            .iter()
            .filter_map(|e| match e {
                Event::Interval(i) if i.sent == sent => Some(*i),
                _ => None,
            })
            .filter(|i| i.end_s - i.start_s >= SLICE_US as f64 / 2e6)
            .map(|i| i.bits_per_second())
            .collect();
        // The slices after the last byte are the wait for the peer's close, not the link.
        while slices.last() == Some(&0.0) {
            slices.pop();
        }
        Some((r.bytes, r.end_s - r.start_s, slices))
    };
    let to = way(true).filter(|_| mode != Mode::Reverse);
    let from = way(false).filter(|_| mode != Mode::Normal);
    (to, from, result.err())
}

/// A test of one way as the document keeps it.
fn test(direction: &str, via: &str, round: u32, w: &Way) -> TcpTest {
    let (bytes, seconds, slices) = w;
    let rate = *bytes as f64 * 8.0 / seconds.max(1e-9);
    TcpTest {
        iperf: "iperf2".into(),
        via: Some(via.into()),
        direction: direction.into(),
        streams: 1,
        round,
        time: Quantity::new(*seconds, "s"),
        sent: Quantity::new(rate, "bit/s"),
        received: Quantity::new(rate, "bit/s"),
        retransmits: None,
        slices: slices.clone(),
    }
}

/// TCP to and from the device through iperf 2, in rounds as `time` allows (see the module).
pub fn tcp_tests(host: &str, iperf: &Iperf, time: Duration) -> Outcome<Vec<TcpTest>> {
    let end = Instant::now() + time;
    let (rounds, seconds) = tcp_plan(time, 2);
    let server = format!("iperf 2 server {host}:{}", iperf.port);
    let mut out: Vec<TcpTest> = Vec::new();
    let mut not_measured = Vec::new();
    // How the way back is asked for; `None` once the server showed it answers neither.
    let mut back = Some(if iperf.replies {
        Mode::Reverse
    } else {
        Mode::Tradeoff
    });
    let mut error = None;
    let cost = Duration::from_secs(u64::from(seconds) * 2) + Duration::from_millis(800);
    'rounds: for round in 1..=rounds {
        if !out.is_empty() && Instant::now() + cost > end {
            break;
        }
        // -r gives both ways in one test; -R and a plain test one each.
        let modes: Vec<Mode> = match back {
            Some(Mode::Tradeoff) => vec![Mode::Tradeoff],
            Some(m) => vec![Mode::Normal, m],
            None => vec![Mode::Normal],
        };
        for mode in modes {
            std::thread::sleep(PAUSE);
            let (to, from, e) = one_test(host, iperf.port, mode, seconds);
            for (way, w, via) in [
                ("to_device", &to, "iperf 2"),
                ("from_device", &from, via_back(mode)),
            ] {
                let Some(w) = w else { continue };
                if w.0 == 0 {
                    error = Some(anyhow::anyhow!(
                        "{server}: the TCP test {} moved nothing (0 bytes counted)",
                        if way == "to_device" {
                            "to the device"
                        } else {
                            "from the device"
                        }
                    ));
                    break 'rounds;
                }
                out.push(test(way, via, round, w));
            }
            match e {
                None => {}
                Some(ClientError::NoConnectBack(port)) if mode == Mode::Tradeoff => {
                    back = None;
                    not_measured.push(NotMeasured {
                        id: "iperf2.tcp.from_device".into(),
                        label: "TCP from the device (iperf 2)".into(),
                        state: Unmeasured::Absent,
                        reason: format!(
                            "{server} sent no version reply (no -R) and did not connect back for -r (nothing connected to port {port} within 3 s of the test): it answers neither way back (lwiperf does -r; ESP-IDF, Zephyr and NuttX do neither)"
                        ),
                    });
                }
                Some(e) => {
                    error = Some(anyhow::anyhow!(
                        "{server}: {} test: {e}",
                        via_back(mode).trim_end_matches(" (the device connected back)")
                    ));
                    break 'rounds;
                }
            }
        }
    }
    let ran = out.iter().map(|t| t.round).max().unwrap_or(0);
    let detail = format!(
        "{} iperf 2 tests of {seconds} s in {ran} rounds ({})",
        out.len(),
        match back {
            Some(Mode::Reverse) => "-R for the way back",
            Some(_) => "-r: the device connects back",
            None => "one way only",
        }
    );
    Outcome {
        figures: figures::tcp(&out),
        not_measured,
        value: out,
        error,
        detail,
    }
}

/// How a test of `mode` measured the way back.
fn via_back(mode: Mode) -> &'static str {
    match mode {
        Mode::Reverse => "iperf 2 -R",
        Mode::Tradeoff => "iperf 2 -r (the device connected back)",
        Mode::Dual => "iperf 2 -d (the device connected back)",
        _ => "iperf 2",
    }
}

/// A UDP sweep one way through iperf 2: to the device judged by the server's reports; from
/// it only with `-R` (a server that sent its version). `no_udp`: why the sweep to the device
/// found no UDP server (then none is asked for the way back).
pub fn sweep_one_way(
    host: &str,
    iperf: &Iperf,
    reverse: bool,
    anchor_bps: Option<f64>,
    no_udp: Option<String>,
    time: Duration,
) -> Outcome<Option<SweepReport>> {
    let direction = if reverse { "from_device" } else { "to_device" };
    let absent = |reason: String| Outcome {
        value: None,
        figures: Vec::new(),
        not_measured: vec![figures::knee_not_measured(
            direction,
            true,
            Unmeasured::Absent,
            reason,
        )],
        error: None,
        detail: "not run".into(),
    };
    if reverse {
        if no_udp.is_some() {
            return absent(format!(
                "iperf 2 server {host}:{}: no UDP report to the device (above), so no UDP server to ask the other way",
                iperf.port
            ));
        }
        if !iperf.replies {
            return absent(format!(
                "iperf 2 server {host}:{}: UDP from the device needs -R (iperf 2.1), and this server sent no version reply",
                iperf.port
            ));
        }
    }
    steps::sweep_one_way(host, iperf.port, true, reverse, anchor_bps, time)
}
