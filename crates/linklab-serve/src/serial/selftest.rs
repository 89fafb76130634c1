//! `--selftest`: linklab-serial's self-test over the port, histograms per size (the rtt
//! command's HDR summaries), a table on stdout, and its document (the input of `linklab report`).

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::bail;
use linklab_serial::selftest::{Event, PhaseKind, Plan, Tester};
use linklab_serial::State;

use super::bridge::Stop;
use super::counters_line;
use super::port::Port;
use linklab_results::rtt::{new_histogram, Distribution};
use linklab_results::serial::{SerialReport, SizeResult};

/// How long the other end gets to answer the handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The validated `--selftest` options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Payload sizes, each in `MIN_SIZE..=MAX_PAYLOAD`.
    pub sizes: Vec<usize>,
    /// Frames sent one at a time per size.
    pub rtt_frames: u32,
    /// Frames streamed per size.
    pub stream_frames: u32,
}

/// Per size: the histograms and the two phases' results.
struct Gathered {
    rtt: hdrhistogram::Histogram<u64>,
    gaps: hdrhistogram::Histogram<u64>,
    result: SizeResult,
}

/// Runs the self-test, prints its table and returns its document.
pub fn run(
    port: &mut Port,
    options: &Options,
    signals: &impl Stop,
) -> anyhow::Result<SerialReport> {
    let line = port.line.bytes_per_s();
    let dev = port.line.describe();
    // The line's bit rate: a UART's baud, an SPI bus's clock.
    let baud = u32::try_from(line * if dev.contains(" baud") { 10 } else { 8 }).unwrap_or(u32::MAX);
    let started = std::time::Instant::now();
    while port.link.state() != State::Established {
        if signals.take().is_some() {
            bail!("stopped by a signal before the other end answered");
        }
        if started.elapsed() > CONNECT_TIMEOUT {
            bail!(
                "{dev}: no linklab link answered within {} s (is `linklab serial` or a linklab device at the other end, at that rate?)",
                CONNECT_TIMEOUT.as_secs()
            );
        }
        step(port, signals)?;
    }
    println!(
        "linklab serial: self-test on {dev} ({line} bytes/s each way), sizes {:?}",
        options.sizes
    );
    let plan = Plan {
        sizes: &options.sizes,
        rtt_frames: options.rtt_frames,
        stream_frames: options.stream_frames,
    };
    let mut tester = Tester::new(plan, port.now() as u32 | 1);
    let mut gathered: Vec<Gathered> = Vec::new();
    // Generous: every frame at a tenth of the line rate, plus a minute.
    let bytes: usize = options.sizes.iter().map(|s| (s + 40) * 2).sum();
    let frames = (options.rtt_frames + options.stream_frames) as u64;
    let budget = Duration::from_secs(60 + bytes as u64 * frames * 10 / line.max(1));
    while !tester.is_done() {
        if started.elapsed() > budget {
            bail!(
                "self-test incomplete after {} s at size {:?}: the other end stopped answering",
                budget.as_secs(),
                tester.current_size()
            );
        }
        let now = port.now();
        tester.poll(&mut port.link, now, |e| record(&mut gathered, e, line));
        step(port, signals)?;
        if signals.take().is_some() {
            bail!("stopped by a signal");
        }
    }
    let c = port.link.counters();
    let report = SerialReport {
        kind: "serial-selftest".into(),
        device: dev.clone(),
        baud,
        line_bytes_per_s: line,
        window: 8,
        rtt_frames: options.rtt_frames,
        stream_frames: options.stream_frames,
        sizes: gathered
            .into_iter()
            .map(|g| SizeResult {
                rtt: Distribution::from_histogram(&g.rtt),
                interarrival: Distribution::from_histogram(&g.gaps),
                ..g.result
            })
            .collect(),
        counters: c
            .fields()
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        conservation: match c.check_conservation() {
            Ok(()) => "ok".into(),
            Err(e) => e.to_string(),
        },
    };
    print!("{}", render_text(&report));
    println!("{}", counters_line(port));
    Ok(report)
}

/// One round of the port: read, write, wait for the next event (at most 50 ms).
fn step(port: &mut Port, signals: &impl Stop) -> anyhow::Result<()> {
    port.read()?;
    port.write()?;
    let timeout = port.timeout().map_or(Duration::from_millis(50), |t| {
        t.min(Duration::from_millis(50))
    });
    port.wait(&[signals.as_fd()], Some(timeout))?;
    port.read()
}

fn record(gathered: &mut Vec<Gathered>, e: Event, line: u64) {
    let size = match e {
        Event::Reply(s) => s.size,
        Event::PhaseDone(p) => p.size,
    };
    if gathered.last().is_none_or(|g| g.result.size != size) {
        gathered.push(Gathered {
            rtt: new_histogram(),
            gaps: new_histogram(),
            result: SizeResult {
                size,
                sent: 0,
                received: 0,
                lost: 0,
                corrupt: 0,
                goodput_bytes_per_s: 0.0,
                efficiency: 0.0,
                transmissions: 0,
                retransmissions: 0,
                timeouts: 0,
                rx_errors: 0,
                loss_before_recovery_pct: 0.0,
                rtt: Distribution::default(),
                interarrival: Distribution::default(),
            },
        });
    }
    let Some(g) = gathered.last_mut() else { return };
    match e {
        Event::Reply(s) => match s.phase {
            PhaseKind::RoundTrip => {
                let _ = g.rtt.record(s.rtt_us.max(1) * 1000);
            }
            PhaseKind::Stream => {
                if let Some(gap) = s.gap_us {
                    let _ = g.gaps.record(gap.max(1) * 1000);
                }
            }
        },
        Event::PhaseDone(p) => {
            let r = &mut g.result;
            r.sent += u64::from(p.sent);
            r.received += u64::from(p.received);
            r.corrupt += u64::from(p.corrupt);
            r.lost = r.sent - r.received - r.corrupt;
            if p.kind == PhaseKind::Stream {
                let (b, a) = (&p.before, &p.after);
                r.goodput_bytes_per_s = p.goodput_bytes_per_s();
                r.efficiency = r.goodput_bytes_per_s / line.max(1) as f64;
                r.transmissions = a.tx_packets - b.tx_packets;
                r.retransmissions = a.tx_retransmissions - b.tx_retransmissions;
                r.timeouts = a.tx_timeouts - b.tx_timeouts;
                let errors = |c: &linklab_serial::Counters| {
                    c.rx_crc_errors + c.rx_frame_errors + c.rx_length_errors
                };
                r.rx_errors = errors(a) - errors(b);
                r.loss_before_recovery_pct = if r.transmissions > 0 {
                    r.retransmissions as f64 * 100.0 / r.transmissions as f64
                } else {
                    0.0
                };
            }
        }
    }
}

/// The text table: one row per size.
fn render_text(r: &SerialReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n{:>6} {:>6} {:>6} {:>5} {:>10} {:>7} {:>6} {:>6} {:>6} {:>10} {:>10} {:>10} {:>10}",
        "size",
        "sent",
        "recv",
        "lost",
        "goodput",
        "eff%",
        "retx",
        "rto",
        "rxerr",
        "rtt p50",
        "rtt p99",
        "gap p50",
        "gap p99"
    );
    for x in &r.sizes {
        let _ = writeln!(
            s,
            "{:>6} {:>6} {:>6} {:>5} {:>8.0}/s {:>7.2} {:>6} {:>6} {:>6} {:>8.0}µs {:>8.0}µs {:>8.0}µs {:>8.0}µs",
            x.size,
            x.sent,
            x.received,
            x.lost,
            x.goodput_bytes_per_s,
            x.efficiency * 100.0,
            x.retransmissions,
            x.timeouts,
            x.rx_errors,
            x.rtt.p50_us,
            x.rtt.p99_us,
            x.interarrival.p50_us,
            x.interarrival.p99_us
        );
    }
    s
}
