//! The report section of a `linklab rtt` result: realized bandwidth and latency vs probe size,
//! and per size the round-trip and inter-arrival histograms (as in CBA's link speed tests).

use maud::{html, Markup};

use super::layout::fact;
use super::svg::{num, Axis, Chart, Mark, Series, VLine};
use linklab_results::rtt::Distribution;
use linklab_results::rtt::RttReport;
use linklab_results::units::format_rate;

/// Bars per histogram.
const BINS: usize = 40;

/// Renders one rtt result as a `<section>`.
pub fn render(r: &RttReport, source: &str, index: usize) -> Markup {
    let pacing = if r.interval_us == 0 {
        "back to back".to_string()
    } else {
        format!("one every {} µs", r.interval_us)
    };
    // Saturating: the counts come from a JSON file and may be anything.
    let sent = r.sizes.iter().fold(0u64, |a, x| a.saturating_add(x.sent));
    let lost = r.sizes.iter().fold(0u64, |a, x| a.saturating_add(x.lost));
    let best_bw = r.sizes.iter().map(|x| x.realized_bps).fold(0.0, f64::max);
    let min_rtt = lowest_rtt_p50(r);
    let max_size = r.sizes.iter().map(|x| x.size as f64).fold(1.0, f64::max);
    html! {
        section class="card rtt" {
            h2 { "Round trips per probe size · " (r.protocol.to_uppercase()) }
            p class="source" {
                (source) " · echo at " (r.host) ":" (r.port) " · " (r.count)
                " probes per size, " (pacing)
            }
            div class="facts" {
                @if min_rtt.is_finite() {
                    (fact("", &format!("{} µs", num(min_rtt)), "lowest median round trip"))
                }
                (fact("", &format_rate(best_bw), "highest realized bandwidth"))
                (fact(if lost > 0 { "bad" } else { "good" }, &format!("{lost} / {sent}"), "probes lost"))
            }
            div class="charts" {
                (bandwidth_chart(r, index, max_size))
                (latency_chart(r, index, max_size))
            }
            (histograms(r, index))
            (sizes_table(r))
        }
    }
}

/// The realized (and offered) bandwidth against the probe size.
fn bandwidth_chart(r: &RttReport, index: usize, max_size: f64) -> Chart {
    // Bandwidth vs size.
    let mut bw_values: Vec<f64> = r.sizes.iter().map(|x| x.realized_bps / 1e6).collect();
    bw_values.extend(
        r.sizes
            .iter()
            .filter_map(|x| x.offered_bps)
            .map(|b| b / 1e6),
    );
    let mut c = Chart::new(
        &format!("rtt-{index}-bandwidth"),
        "Realized bandwidth vs probe size",
        533.0,
        340.0,
        Axis::new("probe size (bytes)", 0.0, max_size),
        Axis::from_zero("bandwidth (Mbit/s)", bw_values, 0.001),
    );
    c.subtitle = "payload bit rate of the returning stream".into();
    if r.sizes.iter().any(|x| x.offered_bps.is_some()) {
        c.series.push(Series {
            name: "offered".into(),
            color: "#9ca3af",
            mark: Mark::Line { dashed: true },
            right: false,
            points: r
                .sizes
                .iter()
                .filter_map(|x| x.offered_bps.map(|b| (x.size as f64, b / 1e6)))
                .collect(),
        });
    }
    c.series.push(Series {
        name: "realized".into(),
        color: "#2563eb",
        mark: Mark::LinePoints,
        right: false,
        points: r
            .sizes
            .iter()
            .map(|x| (x.size as f64, x.realized_bps / 1e6))
            .collect(),
    });
    c
}

/// The round trip's percentiles against the probe size.
fn latency_chart(r: &RttReport, index: usize, max_size: f64) -> Chart {
    // Latency vs size.
    let max_us = r.sizes.iter().map(|x| x.rtt.p99_us).fold(0.0, f64::max);
    let min_p50 = lowest_rtt_p50(r);
    let (unit, div) = time_unit(max_us);
    let mut c = Chart::new(
        &format!("rtt-{index}-latency"),
        "Round-trip time vs probe size",
        533.0,
        340.0,
        Axis::new("probe size (bytes)", 0.0, max_size),
        if min_p50 > 0.0 && max_us > 10.0 * min_p50 {
            Axis::log(
                &format!("round trip ({unit}, log scale)"),
                min_p50 / div,
                max_us / div,
            )
        } else {
            Axis::from_zero(&format!("round trip ({unit})"), [max_us / div], 0.001)
        },
    );
    c.subtitle = "percentiles per size".into();
    for (name, color, pick) in [
        (
            "p50",
            "#2563eb",
            (|d: &Distribution| d.p50_us) as fn(&Distribution) -> f64,
        ),
        ("p90", "#0d9488", |d: &Distribution| d.p90_us),
        ("p99", "#dc2626", |d: &Distribution| d.p99_us),
    ] {
        c.series.push(Series {
            name: name.into(),
            color,
            mark: Mark::LinePoints,
            right: false,
            points: r
                .sizes
                .iter()
                .filter(|x| x.rtt.count > 0)
                .map(|x| (x.size as f64, pick(&x.rtt) / div))
                .collect(),
        });
    }
    c
}

/// Per size, the round trips' and the paced replies' inter-arrival histograms.
fn histograms(r: &RttReport, index: usize) -> Markup {
    let sizes: Vec<SizeHistograms<'_>> = r
        .sizes
        .iter()
        .map(|x| SizeHistograms {
            size: x.size,
            rtt: &x.rtt,
            gaps: &x.interarrival,
            bps: x.realized_bps,
        })
        .collect();
    let gaps_note = html! {
        p class="note" {
            "Dashed: the bandwidth a gap of that length means at this probe size (right axis), as in CBA's link speed tests."
        }
    };
    size_histograms(
        &sizes,
        (
            "Round-trip time histograms per probe size",
            &format!("rtt-{index}-hist"),
        ),
        (
            "Inter-arrival times of the paced replies per probe size",
            gaps_note,
            &format!("rtt-{index}-gaps"),
        ),
    )
}

/// One size's histograms: its round trips, its replies' inter-arrival gaps, and the rate
/// (bit/s) those carried.
pub(super) struct SizeHistograms<'r> {
    /// The probe's or payload's size (bytes).
    pub size: usize,
    /// Its round trips.
    pub rtt: &'r Distribution,
    /// The gaps between its replies.
    pub gaps: &'r Distribution,
    /// The rate its replies carried, bit/s.
    pub bps: f64,
}

/// Per size, the round trips' histograms, then the inter-arrival ones: each group under its
/// heading (the inter-arrival one followed by `gaps_note`), each chart's id `{id}-{size}`. The
/// rtt and serial sections share it.
pub(super) fn size_histograms(
    sizes: &[SizeHistograms<'_>],
    (rtt_heading, rtt_id): (&str, &str),
    (gaps_heading, gaps_note, gaps_id): (&str, Markup, &str),
) -> Markup {
    html! {
        h3 { (rtt_heading) }
        div class="charts" {
            @for x in sizes.iter().filter(|x| x.rtt.count > 0) {
                (histogram_chart(
                    &format!("{rtt_id}-{}", x.size),
                    &format!("{} B round trips", x.size),
                    "round trip",
                    x.rtt,
                    None,
                ).0)
            }
        }
        h3 { (gaps_heading) }
        (gaps_note)
        div class="charts" {
            @for x in sizes.iter().filter(|x| x.gaps.count > 0) {
                (histogram_chart(
                    &format!("{gaps_id}-{}", x.size),
                    &format!("{} B inter-arrival · {}", x.size, format_rate(x.bps)),
                    "inter-arrival",
                    x.gaps,
                    Some(x.size),
                ).0)
            }
        }
    }
}

/// The table: per size, what was sent and received, the round trip's distribution, the gap.
fn sizes_table(r: &RttReport) -> Markup {
    html! {
        h3 { "Per size" }
        div class="tablewrap" {
            table {
                tr {
                    th rowspan="2" { "size (B)" }
                    th rowspan="2" { "sent" }
                    th rowspan="2" { "received" }
                    th rowspan="2" { "loss %" }
                    th rowspan="2" { "dup" }
                    th rowspan="2" { "corrupt" }
                    th colspan="8" class="group" { "round trip (µs)" }
                    th rowspan="2" { "gap p50 (µs)" }
                    th rowspan="2" { "realized" }
                }
                tr {
                    @for h in ["min", "p50", "p90", "p99", "p99.9", "max", "mean", "stddev"] {
                        th { (h) }
                    }
                }
                @for x in &r.sizes {
                    @let d = &x.rtt;
                    @let cls = if x.lost > 0 || x.corrupt > 0 { "warn" } else { "ok" };
                    tr {
                        td { (x.size) }
                        td { (x.sent) }
                        td { (x.received) }
                        td class=(cls) { (format_args!("{:.2}", x.loss_pct)) }
                        td { (x.duplicates) }
                        td { (x.corrupt) }
                        @for v in [
                            d.min_us, d.p50_us, d.p90_us, d.p99_us, d.p999_us, d.max_us, d.mean_us,
                            d.stddev_us,
                        ] {
                            td { (num(v)) }
                        }
                        td { (num(x.interarrival.p50_us)) }
                        td { (format_rate(x.realized_bps)) }
                    }
                }
            }
        }
    }
}

/// The lowest round-trip median over the sizes that got replies (infinity if none did).
fn lowest_rtt_p50(r: &RttReport) -> f64 {
    r.sizes
        .iter()
        .filter(|x| x.rtt.count > 0)
        .map(|x| x.rtt.p50_us)
        .fold(f64::INFINITY, f64::min)
}

/// Picks µs or ms for times up to `max_us`: the label and the divisor from µs.
fn time_unit(max_us: f64) -> (&'static str, f64) {
    if max_us >= 2000.0 {
        ("ms", 1000.0)
    } else {
        ("µs", 1.0)
    }
}

/// A histogram chart of one distribution. A tight distribution gets linear bins from its min to
/// its p99.9 (the few samples above are counted in the subtitle); one with a long tail (max more
/// than four times the median) gets log-uniform bins over min..max on a logarithmic axis, so the
/// bulk and the tail both show. With `size`, overlays the equivalent bandwidth `size * 8 / gap`
/// on a second axis (as in CBA's link speed tests). Returns the chart and the samples beyond its axis.
pub(super) fn histogram_chart(
    id: &str,
    title: &str,
    what: &str,
    d: &Distribution,
    size: Option<usize>,
) -> (Chart, u64) {
    let long_tail = d.min_us > 0.0 && d.max_us > 4.0 * d.p50_us.max(d.min_us);
    let mut counts = vec![0u64; BINS];
    let mut above = 0u64;
    let (unit, div, x, bar);
    let centres: Vec<f64>; // bin centres in µs
    if long_tail {
        let (lo, hi) = (d.min_us, d.max_us * 1.0001);
        let ratio = (hi / lo).powf(1.0 / BINS as f64);
        for &(v, n) in &d.histogram {
            let i = ((v.max(lo) / lo).ln() / ratio.ln()) as usize;
            let c = &mut counts[i.min(BINS - 1)];
            *c = c.saturating_add(n);
        }
        (unit, div) = time_unit(d.p50_us);
        x = Axis::log(&format!("{what} ({unit}, log scale)"), lo / div, hi / div);
        bar = Mark::LogBars { ratio };
        centres = (0..BINS).map(|i| lo * ratio.powf(i as f64 + 0.5)).collect();
    } else {
        let lo = d.min_us;
        let hi = if d.p999_us > lo { d.p999_us } else { lo + 1.0 };
        let span = hi - lo;
        let (lo, hi) = ((lo - span * 0.02).max(0.0), hi + span * 0.02);
        let width = (hi - lo) / BINS as f64;
        for &(v, n) in &d.histogram {
            if v > hi {
                above = above.saturating_add(n);
            } else {
                let c = &mut counts[(((v - lo) / width) as usize).min(BINS - 1)];
                *c = c.saturating_add(n);
            }
        }
        (unit, div) = time_unit(hi);
        x = Axis::new(&format!("{what} ({unit})"), lo / div, hi / div);
        bar = Mark::Bars { width: width / div };
        centres = (0..BINS).map(|i| lo + width * (i as f64 + 0.5)).collect();
    }
    let points: Vec<(f64, f64)> = counts
        .iter()
        .enumerate()
        .filter(|&(_, &n)| n > 0)
        .map(|(i, &n)| (centres[i] / div, n as f64))
        .collect();
    let y = Axis::from_zero("probes", points.iter().map(|p| p.1), 1.0);
    let mut c = Chart::new(id, title, 352.0, 250.0, x.clone(), y);
    c.legend = false;
    c.subtitle = format!(
        "p50 {} · p99 {} · max {} {unit}{}",
        num(d.p50_us / div),
        num(d.p99_us / div),
        num(d.max_us / div),
        if above > 0 {
            format!(" · {above} off axis")
        } else {
            String::new()
        }
    );
    c.series.push(Series {
        name: "probes".into(),
        color: "#3b82f6",
        mark: bar,
        right: false,
        points,
    });
    c.vlines.push(VLine {
        x: d.p50_us / div,
        label: "p50".into(),
        color: "#15803d",
    });
    if d.p99_us > d.p50_us && d.p99_us / div <= x.hi {
        c.vlines.push(VLine {
            x: d.p99_us / div,
            label: "p99".into(),
            color: "#dc2626",
        });
    }
    if let Some(size) = size {
        // Equivalent bandwidth of a gap: size * 8 bits / gap (in Mbit/s when the gap is in µs).
        let x0 = if x.log { x.lo } else { x.lo.max(x.hi / 20.0) }.max(1e-9);
        let at = |t: f64| {
            if x.log {
                x0 * (x.hi / x0).powf(t)
            } else {
                x0 + (x.hi - x0) * t
            }
        };
        let curve: Vec<(f64, f64)> = (0..=60)
            .map(|i| at(i as f64 / 60.0))
            .map(|g| (g, size as f64 * 8.0 / (g * div)))
            .collect();
        let label = "equiv. Mbit/s";
        c.y2 = Some(if x.log {
            let (lo, hi) = (curve.last().map_or(1.0, |p| p.1), curve[0].1);
            Axis::log(label, lo, hi)
        } else {
            Axis::from_zero(label, curve.iter().map(|p| p.1), 0.001)
        });
        c.series.push(Series {
            name: "Mbit/s".into(),
            color: "#ea580c",
            mark: Mark::Line { dashed: true },
            right: true,
            points: curve,
        });
    }
    (c, above)
}

#[cfg(test)]
mod tests {
    use super::*;
    use linklab_results::rtt::SizeReport;
    use maud::Render;

    fn dist(histogram: Vec<(f64, u64)>, p50: f64, p999: f64) -> Distribution {
        Distribution {
            count: histogram.iter().map(|h| h.1).sum(),
            min_us: histogram[0].0,
            p50_us: p50,
            p90_us: p50,
            p99_us: p999,
            p999_us: p999,
            max_us: histogram.last().unwrap().0,
            mean_us: 0.0,
            stddev_us: 0.0,
            histogram,
        }
    }

    #[test]
    fn tight_histogram_is_linear_and_counts_what_is_off_axis() {
        let d = dist(vec![(10.0, 1), (12.0, 2), (20.0, 2), (30.0, 1)], 12.0, 20.0);
        let (c, above) = histogram_chart("h", "t", "rtt", &d, Some(100));
        assert!(!c.x.log);
        assert_eq!(above, 1);
        let bars: f64 = c.series[0].points.iter().map(|p| p.1).sum();
        assert_eq!(bars, 5.0);
        assert!(c.y2.is_some());
    }

    #[test]
    fn long_tail_histogram_is_logarithmic_and_holds_every_sample() {
        let d = dist(
            vec![(10.0, 1), (12.0, 2), (20.0, 2), (500.0, 1)],
            12.0,
            20.0,
        );
        let (c, above) = histogram_chart("h", "t", "rtt", &d, None);
        assert!(c.x.log);
        assert_eq!(above, 0);
        let bars: f64 = c.series[0].points.iter().map(|p| p.1).sum();
        assert_eq!(bars, 6.0);
        assert!(c.render().into_string().matches(r#"class="data""#).count() >= 4);
    }

    /// Counts read from a JSON file may sum past u64::MAX: the chart saturates, never panics.
    #[test]
    fn huge_counts_from_a_file_saturate() {
        let mut d = dist(vec![(10.0, 1), (12.0, 1), (500.0, 1)], 12.0, 20.0);
        d.histogram = vec![(10.0, u64::MAX), (10.0, u64::MAX), (500.0, u64::MAX)];
        let (c, _) = histogram_chart("h", "t", "rtt", &d, None);
        assert!(c.series[0].points.iter().all(|p| p.1 == u64::MAX as f64));
        d.max_us = 20.0; // tight: the 500 µs bucket lies beyond the axis
        let (_, above) = histogram_chart("h", "t", "rtt", &d, None);
        assert_eq!(above, u64::MAX);
        let size = |sent| SizeReport {
            size: 64,
            sent,
            received: 0,
            lost: sent,
            loss_pct: 100.0,
            duplicates: 0,
            corrupt: 0,
            offered_bps: None,
            realized_bps: 0.0,
            rtt: d.clone(),
            interarrival: d.clone(),
        };
        let r = RttReport {
            kind: "rtt".into(),
            host: "h".into(),
            port: 7,
            protocol: "udp".into(),
            count: 1,
            interval_us: 0,
            sizes: vec![size(u64::MAX), size(u64::MAX)],
        };
        assert!(render(&r, "f.json", 0)
            .into_string()
            .contains(&u64::MAX.to_string()));
    }
}
