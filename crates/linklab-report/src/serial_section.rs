//! The report section of a `linklab serial --selftest` result: goodput against the line's raw
//! byte rate per payload size, what it cost (retransmissions, errors), and per size the
//! round-trip and inter-arrival histograms (CBA's link speed tests' plots, for the link).

use maud::{html, Markup};

use super::layout::fact;
use super::rtt_section::{size_histograms, SizeHistograms};
use super::svg::{num, Axis, Chart, Mark, Series};
use linklab_results::serial::SerialReport;
use linklab_results::units::format_rate;

/// Renders one self-test result as a `<section>`.
pub fn render(r: &SerialReport, source: &str, index: usize) -> Markup {
    let lost = r.sizes.iter().fold(0u64, |a, x| a.saturating_add(x.lost));
    let sent = r.sizes.iter().fold(0u64, |a, x| a.saturating_add(x.sent));
    let retx = r
        .counters
        .iter()
        .find(|(k, _)| k == "tx_retransmissions")
        .map_or(0, |(_, v)| *v);
    let best = r.sizes.iter().map(|x| x.efficiency).fold(0.0, f64::max);
    let conserved = if r.conservation == "ok" {
        "good"
    } else {
        "bad"
    };
    html! {
        section class="card serial" {
            h2 { "Serial link self-test · " (r.baud) " baud" }
            p class="source" {
                (source) " · " (r.device) " · " (r.line_bytes_per_s) " bytes/s raw each way · window "
                (r.window) " frames · " (r.rtt_frames) " round-trip and " (r.stream_frames)
                " streamed frames per size"
            }
            div class="facts" {
                (fact("", &format!("{} %", num(best * 100.0)), "best goodput / raw byte rate"))
                (fact(
                    if lost > 0 { "bad" } else { "good" },
                    &format!("{lost} / {sent}"),
                    "frames lost after recovery",
                ))
                (fact("", &retx.to_string(), "retransmissions by this end"))
                (fact(conserved, &r.conservation, "counter conservation"))
            }
            (charts(r, index))
            (histograms(r, index))
            (sizes_table(r))
        }
    }
}

/// The charts: efficiency and round trip against the payload size.
fn charts(r: &SerialReport, index: usize) -> Markup {
    let max_size = r.sizes.iter().map(|x| x.size as f64).fold(1.0, f64::max);
    let mut efficiency = Chart::new(
        &format!("serial-{index}-efficiency"),
        "Goodput / raw byte rate vs payload size",
        533.0,
        340.0,
        Axis::new("payload size (bytes)", 0.0, max_size),
        Axis::from_zero(
            "efficiency (%)",
            r.sizes.iter().map(|x| x.efficiency * 100.0).chain([100.0]),
            1.0,
        ),
    );
    efficiency.subtitle = "echoed payload each way while streaming".into();
    efficiency.series.push(Series {
        name: "raw line".into(),
        color: "#9ca3af",
        mark: Mark::Line { dashed: true },
        right: false,
        points: vec![(0.0, 100.0), (max_size, 100.0)],
    });
    efficiency.series.push(Series {
        name: "goodput".into(),
        color: "#2563eb",
        mark: Mark::LinePoints,
        right: false,
        points: r
            .sizes
            .iter()
            .map(|x| (x.size as f64, x.efficiency * 100.0))
            .collect(),
    });
    let mut c = Chart::new(
        &format!("serial-{index}-rtt"),
        "Round trip vs payload size",
        533.0,
        340.0,
        Axis::new("payload size (bytes)", 0.0, max_size),
        Axis::from_zero(
            "round trip (ms)",
            r.sizes.iter().map(|x| x.rtt.p99_us / 1000.0),
            0.001,
        ),
    );
    c.subtitle = "one frame at a time: p50 and p99".into();
    for (name, color, p99) in [("p50", "#2563eb", false), ("p99", "#dc2626", true)] {
        c.series.push(Series {
            name: name.into(),
            color,
            mark: Mark::LinePoints,
            right: false,
            points: r
                .sizes
                .iter()
                .filter(|x| x.rtt.count > 0)
                .map(|x| {
                    let v = if p99 { x.rtt.p99_us } else { x.rtt.p50_us };
                    (x.size as f64, v / 1000.0)
                })
                .collect(),
        });
    }
    html! {
        div class="charts" { (efficiency) (c) }
    }
}

/// Per size, the round trips' and the streamed echoes' inter-arrival histograms.
fn histograms(r: &SerialReport, index: usize) -> Markup {
    let sizes: Vec<SizeHistograms<'_>> = r
        .sizes
        .iter()
        .map(|x| SizeHistograms {
            size: x.size,
            rtt: &x.rtt,
            gaps: &x.interarrival,
            bps: x.goodput_bytes_per_s * 8.0,
        })
        .collect();
    size_histograms(
        &sizes,
        (
            "Round-trip time histograms per payload size",
            &format!("serial-{index}-rtt"),
        ),
        (
            "Inter-arrival times of the streamed echoes per payload size",
            html! {},
            &format!("serial-{index}-gaps"),
        ),
    )
}

/// The table: per size, what was sent and received, goodput, its cost and the round trip.
fn sizes_table(r: &SerialReport) -> Markup {
    let heads = [
        "size (B)",
        "sent",
        "received",
        "lost",
        "corrupt",
        "goodput",
        "efficiency",
        "transmissions",
        "retransmissions",
        "timeouts",
        "rx errors",
        "loss before recovery",
        "rtt p50 (µs)",
        "rtt p99 (µs)",
        "gap p50 (µs)",
    ];
    html! {
        h3 { "Per size" }
        div class="tablewrap" {
            table {
                tr {
                    @for h in heads {
                        th { (h) }
                    }
                }
                @for x in &r.sizes {
                    tr {
                        td { (x.size) }
                        td { (x.sent) }
                        td { (x.received) }
                        td class=(if x.lost > 0 || x.corrupt > 0 { "warn" } else { "ok" }) { (x.lost) }
                        td { (x.corrupt) }
                        td { (format_rate(x.goodput_bytes_per_s * 8.0)) }
                        td { (num(x.efficiency * 100.0)) " %" }
                        td { (x.transmissions) }
                        td { (x.retransmissions) }
                        td { (x.timeouts) }
                        td { (x.rx_errors) }
                        td { (num(x.loss_before_recovery_pct)) " %" }
                        td { (num(x.rtt.p50_us)) }
                        td { (num(x.rtt.p99_us)) }
                        td { (num(x.interarrival.p50_us)) }
                    }
                }
            }
        }
    }
}
