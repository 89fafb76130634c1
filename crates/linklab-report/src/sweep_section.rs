//! The report section of a `linklab sweep` result: offered vs sent and received with loss on a
//! second axis, each step's limit marked (a sender that could not keep up drawn apart from
//! receiver loss), the knee and the collapse, and the step table, where a rate measured again
//! shows each attempt on a row of its own.

use maud::{html, Markup};

use super::layout::fact;
use super::svg::{num, Axis, Chart, Mark, Series, VLine};
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
pub fn render(r: &SweepReport, note: Option<&str>, source: &str, index: usize) -> Markup {
    let direction = if r.reverse {
        "server → client (-R)"
    } else {
        "client → server"
    };
    let peer = if r.is_iperf2() {
        "iperf 2 (the server's reports)"
    } else {
        "iperf3"
    };
    html! {
        section class="card sweep" {
            h2 { "Offered-rate sweep · " (r.protocol.to_uppercase()) " " (direction) }
            p class="source" {
                (source) " · " (peer) " " (r.host) ":" (r.port) " · " (direction) " · "
                (r.duration_s) " s per step"
                @if let Some(l) = r.length { " · " (l) " B per write" }
            }
            @if let Some(n) = note {
                p class="note" { (n) }
            }
            (facts(r))
            (chart(r, index))
            (steps_table(r))
        }
    }
}

/// The key facts: the knee, the limit above it, the peak, the collapse, the highest loss.
fn facts(r: &SweepReport) -> Markup {
    let tcp = r.tcp();
    let max_loss = r.steps.iter().map(|x| x.loss_pct).fold(0.0, f64::max);
    html! {
        div class="facts" {
            (fact(
                "good",
                &r.knee_bps.map_or("none".into(), format_rate),
                &format!("knee (highest offered rate with {})", r.rule().describe(tcp)),
            ))
            @match &r.limited_at {
                Some(at) => (fact(
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
                )),
                None => (fact("", "none reached", &limit_line(r))),
            }
            @if let Some(p) = r.peak {
                (fact(
                    "",
                    &format_rate(p.received_bps),
                    &format!("peak received, at {} offered", format_rate(p.offered_bps)),
                ))
            }
            @match r.collapse {
                Some(c) => (fact(
                    "bad",
                    &format!("−{:.0} %", c.drop_pct),
                    &format!(
                        "collapse: {} at {} offered",
                        format_rate(c.received_bps),
                        format_rate(c.offered_bps)
                    ),
                )),
                None => (fact("good", "none", "collapse (received falls past the peak)")),
            }
            @if !tcp {
                (fact(
                    if max_loss > 1.0 { "bad" } else { "" },
                    &format!("{} %", num(max_loss)),
                    "highest loss",
                ))
            }
        }
    }
}

/// The chart: received (or goodput) and sent against offered, the right axis, the marks.
fn chart(r: &SweepReport, index: usize) -> Markup {
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
    html! {
        div class="charts" { (c) }
    }
}

/// The step table, a row per attempt, and the note on what each limit means.
fn steps_table(r: &SweepReport) -> Markup {
    let tcp = r.tcp();
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
    let rule = r.rule();
    let keep = 100.0 - rule.tolerance_pct;
    let confirm = {
        let c = rule.describe_confirm();
        let mut chars = c.chars();
        chars
            .next()
            .map_or(String::new(), |f| f.to_uppercase().chain(chars).collect())
    };
    html! {
        h3 { "Steps" }
        div class="tablewrap" {
            table {
                tr {
                    @for h in heads {
                        th class=[(*h == "limit").then_some("l")] { (h) }
                    }
                }
                @for st in &r.steps {
                    (step_row(st, tcp))
                }
            }
        }
        p class="note" {
            "limit: " b { "receiver loss" } " = loss ≥ " (rule.loss_pct) " %; "
            b { "sender could not keep up" } " (rows shaded) = sent below " (keep)
            " % of offered (UDP: its NIC, qdisc, socket or CPU, whatever the link carries); "
            b { "received rate stopped tracking" } " = received below " (keep)
            " % of offered with neither to explain it"
            @if tcp {
                " (TCP slows its sender whoever the bottleneck is, so a TCP step is only ever this)"
            }
            ". " (confirm)
            ": a rate that tracked once tracks (a busy host can spoil a second, not add capacity)."
        }
    }
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
fn step_row(st: &Step, tcp: bool) -> Markup {
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
    let mark = match (st.refined, st.attempt > 1) {
        (true, true) => format!(" (refine, attempt {})", st.attempt),
        (false, true) => format!(" (attempt {})", st.attempt),
        (true, false) => " (refine)".into(),
        (false, false) => String::new(),
    };
    let loss_class = if st.limits.contains(&Limit::ReceiverLoss) {
        "warn"
    } else {
        "ok"
    };
    let limit_class = match st.limits.first() {
        None => "ok",
        Some(Limit::Sender) => "sender",
        Some(_) => "warn",
    };
    html! {
        tr class=[(!classes.is_empty()).then(|| classes.join(" "))] {
            td { (format_rate(st.offered_bps)) (mark) }
            td { (format_rate(st.sent_bps)) }
            td { (format_rate(st.received_bps)) }
            @if tcp {
                td { (st.retransmits.map_or("–".into(), |x| x.to_string())) }
            } @else {
                td class=(loss_class) { (format_args!("{:.3}", st.loss_pct)) }
                td { (st.lost) " / " (st.packets) }
                td { (format_args!("{:.3}", st.jitter_ms)) }
                td { (st.out_of_order.map_or("–".into(), |n| n.to_string())) }
            }
            td class={ "l " (limit_class) } {
                @if st.limits.is_empty() {
                    "tracks"
                } @else {
                    (describe_all(&st.limits))
                }
            }
        }
    }
}
