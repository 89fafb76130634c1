//! The report section of a `linklab serial --selftest` result: goodput against the line's raw
//! byte rate per payload size, what it cost (retransmissions, errors), and per size the
//! round-trip and inter-arrival histograms (CBA's link speed tests' plots, for the link).

use std::fmt::Write as _;

use super::rtt_section::{size_histograms, SizeHistograms};
use super::svg::{esc, num, Axis, Chart, Mark, Series};
use super::sweep_section::fact;
use linklab_results::serial::SerialReport;
use linklab_results::units::format_rate;

/// Renders one self-test result as a `<section>`.
pub fn render(r: &SerialReport, source: &str, index: usize) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<section class="card serial"><h2>Serial link self-test · {} baud</h2><p class="source">{} · {} · {} bytes/s raw each way · window {} frames · {} round-trip and {} streamed frames per size</p>"#,
        r.baud,
        esc(source),
        esc(&r.device),
        r.line_bytes_per_s,
        r.window,
        r.rtt_frames,
        r.stream_frames
    );
    let lost = r.sizes.iter().fold(0u64, |a, x| a.saturating_add(x.lost));
    let sent = r.sizes.iter().fold(0u64, |a, x| a.saturating_add(x.sent));
    let retx = r
        .counters
        .iter()
        .find(|(k, _)| k == "tx_retransmissions")
        .map_or(0, |(_, v)| *v);
    let best = r.sizes.iter().map(|x| x.efficiency).fold(0.0, f64::max);
    s.push_str(r#"<div class="facts">"#);
    fact(
        &mut s,
        "",
        &format!("{} %", num(best * 100.0)),
        "best goodput / raw byte rate",
    );
    fact(
        &mut s,
        if lost > 0 { "bad" } else { "good" },
        &format!("{lost} / {sent}"),
        "frames lost after recovery",
    );
    fact(&mut s, "", &retx.to_string(), "retransmissions by this end");
    fact(
        &mut s,
        if r.conservation == "ok" {
            "good"
        } else {
            "bad"
        },
        &esc(&r.conservation),
        "counter conservation",
    );
    s.push_str("</div>");

    charts(&mut s, r, index);

    histograms(&mut s, r, index);

    sizes_table(&mut s, r);
    s
}

/// The charts: efficiency and round trip against the payload size.
fn charts(s: &mut String, r: &SerialReport, index: usize) {
    let max_size = r.sizes.iter().map(|x| x.size as f64).fold(1.0, f64::max);
    s.push_str(r#"<div class="charts">"#);
    let mut c = Chart::new(
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
    c.subtitle = "echoed payload each way while streaming".into();
    c.series.push(Series {
        name: "raw line".into(),
        color: "#9ca3af",
        mark: Mark::Line { dashed: true },
        right: false,
        points: vec![(0.0, 100.0), (max_size, 100.0)],
    });
    c.series.push(Series {
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
    s.push_str(&c.render());
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
    s.push_str(&c.render());
    s.push_str("</div>");
}

/// Per size, the round trips' and the streamed echoes' inter-arrival histograms.
fn histograms(s: &mut String, r: &SerialReport, index: usize) {
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
        s,
        &sizes,
        (
            r#"<h3>Round-trip time histograms per payload size</h3><div class="charts">"#,
            &format!("serial-{index}-rtt"),
        ),
        (
            r#"<h3>Inter-arrival times of the streamed echoes per payload size</h3><div class="charts">"#,
            &format!("serial-{index}-gaps"),
        ),
    );
}

/// The table: per size, what was sent and received, goodput, its cost and the round trip.
fn sizes_table(s: &mut String, r: &SerialReport) {
    s.push_str(r#"<h3>Per size</h3><div class="tablewrap"><table><tr><th>size (B)</th><th>sent</th><th>received</th><th>lost</th><th>corrupt</th><th>goodput</th><th>efficiency</th><th>transmissions</th><th>retransmissions</th><th>timeouts</th><th>rx errors</th><th>loss before recovery</th><th>rtt p50 (µs)</th><th>rtt p99 (µs)</th><th>gap p50 (µs)</th></tr>"#);
    for x in &r.sizes {
        let cls = if x.lost > 0 || x.corrupt > 0 {
            "warn"
        } else {
            "ok"
        };
        let _ = write!(
            s,
            r#"<tr><td>{}</td><td>{}</td><td>{}</td><td class="{cls}">{}</td><td>{}</td><td>{}</td><td>{} %</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} %</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
            x.size,
            x.sent,
            x.received,
            x.lost,
            x.corrupt,
            format_rate(x.goodput_bytes_per_s * 8.0),
            num(x.efficiency * 100.0),
            x.transmissions,
            x.retransmissions,
            x.timeouts,
            x.rx_errors,
            num(x.loss_before_recovery_pct),
            num(x.rtt.p50_us),
            num(x.rtt.p99_us),
            num(x.interarrival.p50_us)
        );
    }
    s.push_str("</table></div></section>");
}
