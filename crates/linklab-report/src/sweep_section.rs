//! The report section of a `linklab sweep` result: offered vs sent and received with loss on a
//! second axis, each step's limit marked (a sender that could not keep up drawn apart from
//! receiver loss), the knee and the collapse, and the step table, where a rate measured again
//! shows each attempt on a row of its own.

use std::fmt::Write as _;

use super::svg::{esc, num, Axis, Chart, Mark, Series, VLine};
use linklab_results::sweep::text::limit_line;
use linklab_results::sweep::{describe_all, Limit};
use linklab_results::sweep::{Step, SweepReport};
use linklab_results::units::format_rate;

/// How each limit is drawn on the chart: legend text, colour, dot radius. The sender's ring is
/// the largest so a step limited at both ends shows both.
const LIMIT_MARKS: [(Limit, &str, &str, f64); 3] = [
    (Limit::Sender, "sender could not keep up", "#f59e0b", 8.0),
    (Limit::ReceiverLoss, "receiver loss", "#dc2626", 4.5),
    (
        Limit::NotTracking,
        "received rate stopped tracking",
        "#0891b2",
        4.5,
    ),
];

/// Renders one sweep as a `<section>`; `note` (from [`SweepReport::upgrade`]) says when the
/// file predates the limits and its knee was recomputed.
pub fn render(r: &SweepReport, note: Option<&str>, source: &str, index: usize) -> String {
    let mut s = String::new();
    let direction = if r.reverse {
        "server → client (-R)"
    } else {
        "client → server"
    };
    let _ = write!(
        s,
        r#"<section class="card sweep"><h2>Offered-rate sweep · {} {}</h2><p class="source">{} · {} {}:{} · {} · {} s per step{}</p>"#,
        r.protocol.to_uppercase(),
        esc(direction),
        esc(source),
        if r.is_iperf2() {
            "iperf 2 (the server's reports)"
        } else {
            "iperf3"
        },
        esc(&r.host),
        r.port,
        esc(direction),
        r.duration_s,
        r.length
            .map_or(String::new(), |l| format!(" · {l} B per write"))
    );
    if let Some(n) = note {
        let _ = write!(s, r#"<p class="note">{}</p>"#, esc(n));
    }

    // Key facts.
    facts(&mut s, r);

    // The chart.
    chart(&mut s, r, index);

    // The table.
    steps_table(&mut s, r);
    s
}

/// The key facts: the knee, the limit above it, the peak, the collapse, the highest loss.
fn facts(s: &mut String, r: &SweepReport) {
    let tcp = r.tcp();
    s.push_str(r#"<div class="facts">"#);
    fact(
        s,
        "good",
        &r.knee_bps.map_or("none".into(), format_rate),
        &format!(
            "knee (highest offered rate with {})",
            r.rule().describe(tcp)
        ),
    );
    match &r.limited_at {
        Some(at) => fact(
            s,
            "bad",
            &describe_all(&at.limits),
            &format!(
                "limit above the knee, at {} offered{}",
                format_rate(at.offered_bps),
                match (at.attempts, at.confirmed) {
                    (1, true) => String::new(),
                    (n, true) => format!(", in each of {n} attempts"),
                    (n, false) => format!(", not confirmed ({n} attempt(s): out of time)"),
                }
            ),
        ),
        None => fact(s, "", "none reached", &limit_line(r)),
    }
    if let Some(p) = r.peak {
        fact(
            s,
            "",
            &format_rate(p.received_bps),
            &format!("peak received, at {} offered", format_rate(p.offered_bps)),
        );
    }
    match r.collapse {
        Some(c) => fact(
            s,
            "bad",
            &format!("−{:.0} %", c.drop_pct),
            &format!(
                "collapse: {} at {} offered",
                format_rate(c.received_bps),
                format_rate(c.offered_bps)
            ),
        ),
        None => fact(s, "good", "none", "collapse (received falls past the peak)"),
    }
    let max_loss = r.steps.iter().map(|x| x.loss_pct).fold(0.0, f64::max);
    if !tcp {
        fact(
            s,
            if max_loss > 1.0 { "bad" } else { "" },
            &format!("{} %", num(max_loss)),
            "highest loss",
        );
    }
    s.push_str("</div>");
}

/// The chart: received (or goodput) and sent against offered, the right axis, the marks.
fn chart(s: &mut String, r: &SweepReport, index: usize) {
    let tcp = r.tcp();
    let mbit = |b: f64| b / 1e6;
    let max_rate = r
        .steps
        .iter()
        .map(|x| mbit(x.offered_bps.max(x.received_bps)))
        .fold(1.0, f64::max);
    let x = Axis::new("offered rate (Mbit/s)", 0.0, max_rate);
    let y = Axis::new(
        if tcp {
            "goodput (Mbit/s)"
        } else {
            "received (Mbit/s)"
        },
        0.0,
        max_rate,
    );
    let mut c = Chart::new(
        &format!("sweep-{index}"),
        "Received vs offered rate",
        1080.0,
        440.0,
        x.clone(),
        y,
    );
    c.subtitle = if tcp {
        "sender retransmits on the right axis".into()
    } else {
        "datagram loss on the right axis".into()
    };
    c.series.push(Series {
        name: "received = offered".into(),
        color: "#9ca3af",
        mark: Mark::Line { dashed: true },
        right: false,
        points: vec![(0.0, 0.0), (x.hi, x.hi)],
    });
    c.series.push(Series {
        name: "sent".into(),
        color: "#a16207",
        mark: Mark::Line { dashed: false },
        right: false,
        points: r
            .steps
            .iter()
            .map(|st| (mbit(st.offered_bps), mbit(st.sent_bps)))
            .collect(),
    });
    c.series.push(Series {
        name: if tcp {
            "goodput".into()
        } else {
            "received".into()
        },
        color: "#2563eb",
        mark: Mark::LinePoints,
        right: false,
        points: r
            .steps
            .iter()
            .map(|st| (mbit(st.offered_bps), mbit(st.received_bps)))
            .collect(),
    });
    right_axis(&mut c, r, tcp);
    limit_marks(&mut c, r);
    s.push_str(r#"<div class="charts">"#);
    s.push_str(&c.render());
    s.push_str("</div>");
}

/// The step table, a row per attempt, and the note on what each limit means.
fn steps_table(s: &mut String, r: &SweepReport) {
    let tcp = r.tcp();
    s.push_str(r#"<h3>Steps</h3><div class="tablewrap"><table><tr>"#);
    let heads: &[&str] = if tcp {
        &["offered", "sent", "goodput", "retransmits", "limit"]
    } else {
        &[
            "offered",
            "sent",
            "received",
            "loss %",
            "lost / datagrams",
            "jitter (ms)",
            "out of order",
            "limit",
        ]
    };
    for h in heads {
        let class = if *h == "limit" { r#" class="l""# } else { "" };
        let _ = write!(s, "<th{class}>{h}</th>");
    }
    s.push_str("</tr>");
    for st in &r.steps {
        step_row(s, st, tcp);
    }
    s.push_str("</table></div>");
    let _ = write!(
        s,
        r#"<p class="note">limit: <b>receiver loss</b> = loss ≥ {loss} %; <b>sender could not keep up</b> (rows shaded) = sent below {keep} % of offered (UDP: its NIC, qdisc, socket or CPU, whatever the link carries); <b>received rate stopped tracking</b> = received below {keep} % of offered with neither to explain it{tcp_note}. {confirm}: a rate that tracked once tracks (a busy host can spoil a second, not add capacity).</p></section>"#,
        loss = r.rule().loss_pct,
        keep = 100.0 - r.rule().tolerance_pct,
        confirm = {
            let c = r.rule().describe_confirm();
            let mut chars = c.chars();
            chars
                .next()
                .map_or(String::new(), |f| f.to_uppercase().chain(chars).collect())
        },
        tcp_note = if tcp {
            " (TCP slows its sender whoever the bottleneck is, so a TCP step is only ever this)"
        } else {
            ""
        }
    );
}

/// The right axis: TCP's retransmits or UDP's loss, per step.
fn right_axis(c: &mut Chart, r: &SweepReport, tcp: bool) {
    let mbit = |b: f64| b / 1e6;
    if tcp {
        let retr: Vec<(f64, f64)> = r
            .steps
            .iter()
            .map(|st| (mbit(st.offered_bps), st.retransmits.unwrap_or(0) as f64))
            .collect();
        c.y2 = Some(Axis::from_zero(
            "retransmits",
            retr.iter().map(|p| p.1),
            10.0,
        ));
        c.series.push(Series {
            name: "retransmits".into(),
            color: "#dc2626",
            mark: Mark::LinePoints,
            right: true,
            points: retr,
        });
    } else {
        c.y2 = Some(Axis::from_zero(
            "loss (%)",
            r.steps.iter().map(|st| st.loss_pct),
            1.0,
        ));
        c.series.push(Series {
            name: "loss".into(),
            color: "#dc2626",
            mark: Mark::LinePoints,
            right: true,
            points: r
                .steps
                .iter()
                .map(|st| (mbit(st.offered_bps), st.loss_pct))
                .collect(),
        });
    }
}

/// Each step's limit, the peak, the knee and the collapse, marked on the chart.
fn limit_marks(c: &mut Chart, r: &SweepReport) {
    let mbit = |b: f64| b / 1e6;
    for (limit, name, color, radius) in LIMIT_MARKS {
        let points: Vec<(f64, f64)> = r
            .steps
            .iter()
            .filter(|st| st.limits.contains(&limit))
            .map(|st| (mbit(st.offered_bps), mbit(st.received_bps)))
            .collect();
        if !points.is_empty() {
            c.series.push(Series {
                name: name.into(),
                color,
                mark: Mark::Points { r: radius },
                right: false,
                points,
            });
        }
    }
    if let Some(p) = r.peak {
        c.series.push(Series {
            name: "peak".into(),
            color: "#7c3aed",
            mark: Mark::Points { r: 6.5 },
            right: false,
            points: vec![(mbit(p.offered_bps), mbit(p.received_bps))],
        });
    }
    if let Some(k) = r.knee_bps {
        c.vlines.push(VLine {
            x: mbit(k),
            label: format!("knee {}", format_rate(k)),
            color: "#15803d",
        });
    }
    if let Some(col) = r.collapse {
        c.vlines.push(VLine {
            x: mbit(col.offered_bps),
            label: format!("collapse −{:.0} %", col.drop_pct),
            color: "#ea580c",
        });
    }
}

/// One step's row of the table: shaded when refined, measured again or limited by the sender.
fn step_row(s: &mut String, st: &Step, tcp: bool) {
    let mut classes = Vec::new();
    if st.refined {
        classes.push("refined");
    }
    if st.attempt > 1 {
        classes.push("again");
    }
    if st.limits.contains(&Limit::Sender) {
        classes.push("sender");
    }
    if classes.is_empty() {
        s.push_str("<tr>");
    } else {
        let _ = write!(s, r#"<tr class="{}">"#, classes.join(" "));
    }
    let mark = match (st.refined, st.attempt > 1) {
        (true, true) => format!(" (refine, attempt {})", st.attempt),
        (false, true) => format!(" (attempt {})", st.attempt),
        (true, false) => " (refine)".into(),
        (false, false) => String::new(),
    };
    let _ = write!(
        s,
        "<td>{}{mark}</td><td>{}</td><td>{}</td>",
        format_rate(st.offered_bps),
        format_rate(st.sent_bps),
        format_rate(st.received_bps)
    );
    if tcp {
        let _ = write!(
            s,
            "<td>{}</td>",
            st.retransmits.map_or("–".into(), |x| x.to_string())
        );
    } else {
        let cls = if st.limits.contains(&Limit::ReceiverLoss) {
            "warn"
        } else {
            "ok"
        };
        let _ = write!(
            s,
            r#"<td class="{cls}">{:.3}</td><td>{} / {}</td><td>{:.3}</td><td>{}</td>"#,
            st.loss_pct,
            st.lost,
            st.packets,
            st.jitter_ms,
            st.out_of_order.map_or("–".into(), |n| n.to_string())
        );
    }
    let limit_class = match st.limits.first() {
        None => "ok",
        Some(Limit::Sender) => "sender",
        Some(_) => "warn",
    };
    let _ = write!(
        s,
        r#"<td class="l {limit_class}">{}</td></tr>"#,
        if st.limits.is_empty() {
            "tracks".into()
        } else {
            esc(&describe_all(&st.limits))
        }
    );
}

/// One key figure in a box.
pub fn fact(s: &mut String, class: &str, value: &str, what: &str) {
    let _ = write!(
        s,
        r#"<div class="fact {class}"><b>{}</b><span>{}</span></div>"#,
        esc(value),
        esc(what)
    );
}
