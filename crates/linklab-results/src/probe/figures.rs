//! The headline figures of each step, from what it measured (no I/O): a median of samples
//! with their range, a round-trip median with its quartiles, or a knee with its range (see
//! `figure::SpreadKind`).

use super::document::{ProbeReport, TcpTest};
use super::figure::{Figure, NotMeasured, Unmeasured};
use super::http::{HttpDownload, PathState};
use super::repeat::{AcrossRuns, Repeat};
use crate::rtt::RttReport;
use crate::sweep::{analysis, SweepReport};

/// The median of `samples` (the mean of the middle two for an even count; 0 for none).
pub fn median(samples: &[f64]) -> f64 {
    let mut v = samples.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// "to the device" / "from the device".
fn way(direction: &str) -> &'static str {
    if direction == "to_device" {
        "to the device"
    } else {
        "from the device"
    }
}

/// One figure per direction and stream count, over its rounds: the goodputs' median, between
/// the lowest and highest quarter-second slice of its tests but their first (a figure of one
/// test still carries how much it varied; the first slice is the test's start — slow start,
/// and on the sending side the host's socket buffer filling ahead of the device, 140 Mbit/s
/// through a 100 Mbit/s shaper). Tests without slices count as one sample each.
///
/// iperf 2's figures are `iperf2.tcp.*` and say so in their label: a baseline never compares
/// them with iperf3's, which count what the receiver got.
pub fn tcp(tests: &[TcpTest]) -> Vec<Figure> {
    let mut kinds: Vec<(&str, &str, u32)> = Vec::new();
    for t in tests {
        let kind = (t.iperf.as_str(), t.direction.as_str(), t.streams);
        if !kinds.contains(&kind) {
            kinds.push(kind);
        }
    }
    kinds
        .into_iter()
        .map(|(iperf, direction, streams)| {
            let of_kind = || {
                tests.iter().filter(move |t| {
                    t.iperf == iperf && t.direction == direction && t.streams == streams
                })
            };
            let goodputs: Vec<f64> = of_kind().map(|t| t.received.value).collect();
            let samples: Vec<f64> = of_kind()
                .flat_map(|t| match t.slices.get(1..) {
                    Some(steady) if !steady.is_empty() => steady.to_vec(),
                    _ => vec![t.received.value],
                })
                .collect();
            let (suffix, label) = if streams == 1 {
                (String::new(), String::new())
            } else {
                (format!(".p{streams}"), format!(", {streams} streams"))
            };
            let value = median(&goodputs);
            let via = of_kind().find_map(|t| t.via.clone()).unwrap_or_else(|| {
                if direction == "to_device" {
                    "iperf3".into()
                } else {
                    "iperf3 -R".into()
                }
            });
            let (prefix, tool) = if iperf == "iperf2" {
                ("iperf2.", " (iperf 2)")
            } else {
                ("", "")
            };
            let mut figure = Figure::sampled(
                format!("{prefix}tcp.{direction}{suffix}"),
                format!("TCP {}{label}{tool}", way(direction)),
                "bit/s",
                value,
                samples,
            )
            .via(&via);
            // The goodput (the receiver's count) may lie a little outside the sender's slices.
            figure.low = figure.low.map(|l| l.min(value));
            figure.high = figure.high.map(|h| h.max(value));
            figure
        })
        .collect()
}

/// The knee of one sweep (0 when no rate tracked) with its range (`analysis::knee_range`).
pub fn knee(direction: &str, sweep: &SweepReport) -> Figure {
    let (low, high) = analysis::knee_range(&sweep.steps, &sweep.rule(), sweep.tcp());
    let iperf2 = sweep.is_iperf2();
    Figure::knee(
        format!(
            "{}udp.knee.{direction}",
            if iperf2 { "iperf2." } else { "" }
        ),
        format!(
            "UDP knee {}{}",
            way(direction),
            if iperf2 { " (iperf 2)" } else { "" }
        ),
        sweep.knee_bps.unwrap_or(0.0),
        low,
        high,
    )
    .via(match (iperf2, sweep.reverse) {
        (false, false) => "iperf3 -u sweep",
        (false, true) => "iperf3 -u -R sweep",
        (true, false) => "iperf 2 -u sweep (the server's reports)",
        (true, true) => "iperf 2 -u -R sweep",
    })
}

/// The knee a sweep one way could not give, and why.
pub fn knee_not_measured(
    direction: &str,
    iperf2: bool,
    state: Unmeasured,
    reason: String,
) -> NotMeasured {
    NotMeasured {
        id: format!(
            "{}udp.knee.{direction}",
            if iperf2 { "iperf2." } else { "" }
        ),
        label: format!(
            "UDP knee {}{}",
            way(direction),
            if iperf2 { " (iperf 2)" } else { "" }
        ),
        state,
        reason,
    }
}

/// One figure per HTTP path downloaded whole and checked (state `done`): its samples' rates
/// (batches of downloads), their median. A path absent, failed or out of time has none.
pub fn http(downloads: &[HttpDownload]) -> Vec<Figure> {
    downloads
        .iter()
        .filter(|h| h.state == PathState::Done)
        .filter_map(|h| {
            let samples: Vec<f64> = h.samples.iter().map(|s| s.rate.value).collect();
            let rate = h.rate.as_ref()?;
            Some(
                Figure::sampled(
                    format!("http.{}", h.path),
                    format!("HTTP GET {}", h.path),
                    "bit/s",
                    rate.value,
                    samples,
                )
                .via("HTTP GET"),
            )
        })
        .collect()
}

/// What each HTTP path without a rate lacks, in words, for `not_measured`.
pub fn http_not_measured(downloads: &[HttpDownload]) -> Vec<NotMeasured> {
    downloads
        .iter()
        .filter_map(|h| {
            let state = match h.state {
                PathState::Done => return None,
                PathState::Absent => Unmeasured::Absent,
                PathState::Failed => Unmeasured::Failed,
                PathState::OutOfTime => Unmeasured::OutOfTime,
            };
            Some(NotMeasured {
                id: format!("http.{}", h.path),
                label: format!("HTTP GET {}", h.path),
                state,
                reason: h.reason.clone().unwrap_or_default(),
            })
        })
        .collect()
}

/// One figure per size of a round-trip step: the median of its probes between their first and
/// third quartiles. `kind` is `icmp`, `echo_udp` or `echo_tcp`.
pub fn round_trips(kind: &str, report: &RttReport) -> Vec<Figure> {
    let what = match kind {
        "icmp" => "ICMP echo",
        "echo_udp" => "UDP echo",
        _ => "TCP echo",
    };
    let via = match kind {
        "icmp" => "ICMP echo",
        "echo_udp" => "UDP echo (RFC 862)",
        _ => "TCP echo (RFC 862)",
    };
    report
        .sizes
        .iter()
        .filter(|s| s.rtt.count > 0)
        .map(|s| {
            Figure::quartiles(
                format!("{kind}.rtt_p50.{}B", s.size),
                format!("{what} round trip p50, {} B", s.size),
                s.rtt.p50_us,
                quantile(&s.rtt.histogram, 0.25),
                quantile(&s.rtt.histogram, 0.75),
            )
            .via(via)
        })
        .collect()
}

/// The sizes of a round-trip step where no probe came back: no median, a line saying so.
pub fn round_trips_not_measured(kind: &str, report: &RttReport) -> Vec<NotMeasured> {
    report
        .sizes
        .iter()
        .filter(|s| s.rtt.count == 0)
        .map(|s| NotMeasured {
            id: format!("{kind}.rtt_p50.{}B", s.size),
            label: format!("{kind} round trip p50, {} B", s.size),
            state: Unmeasured::Failed,
            reason: format!("none of the {} probes of {} B came back", s.sent, s.size),
        })
        .collect()
}

/// The value at quantile `q` (0..=1) of a recorded histogram (`[value, count]` ascending): the
/// first bucket whose cumulative count reaches `q` of the total (0 for an empty one).
pub fn quantile(histogram: &[(f64, u64)], q: f64) -> f64 {
    let total: u64 = histogram.iter().map(|b| b.1).sum();
    let want = (q * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for &(value, count) in histogram {
        seen += count;
        if seen >= want {
            return value;
        }
    }
    0.0
}

/// Where a figure goes in the list: throughput first (TCP, knees, HTTP), then round trips.
pub fn rank(id: &str) -> usize {
    let id = id.strip_prefix("iperf2.").unwrap_or(id);
    [
        "tcp.",
        "udp.knee.",
        "http.",
        "icmp.",
        "echo_udp.",
        "echo_tcp.",
        "latency.",
    ]
    .iter()
    .position(|p| id.starts_with(p))
    .unwrap_or(7)
}

/// The figures of `runs` side by side.
pub fn across(runs: &[ProbeReport]) -> Repeat {
    let mut ids: Vec<&str> = Vec::new();
    for r in runs {
        for f in &r.figures {
            if !ids.contains(&f.id.as_str()) {
                ids.push(&f.id);
            }
        }
    }
    let figures = ids
        .into_iter()
        .filter_map(|id| {
            let first = runs.iter().find_map(|r| r.figure(id))?;
            let values: Vec<Option<f64>> =
                runs.iter().map(|r| r.figure(id).map(|f| f.value)).collect();
            let mut seen: Vec<f64> = values.iter().flatten().copied().collect();
            seen.sort_by(f64::total_cmp);
            let m = median(&seen);
            let (low, high) = (seen[0], seen[seen.len() - 1]);
            Some(AcrossRuns {
                id: id.into(),
                label: first.label.clone(),
                unit: first.unit.clone(),
                better: first.better,
                values,
                low,
                median: m,
                high,
                spread_pct: (m != 0.0).then(|| (high - low) / m * 100.0),
            })
        })
        .collect();
    Repeat {
        runs: runs.len() as u32,
        figures,
    }
}

#[cfg(test)]
mod tests {
    use super::super::figure::SpreadKind;
    use super::*;
    use crate::quantity::Quantity;

    fn test(direction: &str, streams: u32, round: u32, mbit: f64) -> TcpTest {
        TcpTest {
            iperf: "iperf3".into(),
            via: None,
            direction: direction.into(),
            streams,
            round,
            time: Quantity::new(1.0, "s"),
            sent: Quantity::new(mbit * 1e6, "bit/s"),
            received: Quantity::new(mbit * 1e6, "bit/s"),
            retransmits: None,
            slices: Vec::new(),
        }
    }

    #[test]
    fn quantiles_of_a_histogram() {
        let h = [(10.0, 1), (20.0, 1), (30.0, 1), (40.0, 1)];
        assert_eq!(quantile(&h, 0.25), 10.0);
        assert_eq!(quantile(&h, 0.5), 20.0);
        assert_eq!(quantile(&h, 0.75), 30.0);
        assert_eq!(quantile(&h, 1.0), 40.0);
        assert_eq!(quantile(&[(5.0, 100)], 0.25), 5.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[]), 0.0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    }

    #[test]
    fn tcp_rounds_make_one_figure_per_kind() {
        let tests = [
            test("to_device", 1, 1, 900.0),
            test("from_device", 1, 1, 500.0),
            test("to_device", 2, 1, 800.0),
            test("to_device", 1, 2, 1500.0),
            test("from_device", 1, 2, 520.0),
            test("to_device", 2, 2, 700.0),
            test("to_device", 1, 3, 1200.0),
        ];
        let f = tcp(&tests);
        let ids: Vec<&str> = f.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(
            ids,
            ["tcp.to_device", "tcp.from_device", "tcp.to_device.p2"]
        );
        assert_eq!(f[0].value, 1200e6);
        assert_eq!(f[0].range(), (900e6, Some(1500e6)));
        assert_eq!(f[0].samples, [900e6, 1500e6, 1200e6]);
        assert_eq!(f[0].spread, Some(SpreadKind::Samples));
        assert_eq!(f[2].label, "TCP to the device, 2 streams");
        assert_eq!(f[1].value, 510e6);
    }

    #[test]
    fn a_tcp_figure_spans_its_tests_slices() {
        let mut one = test("to_device", 1, 1, 100.0);
        one.slices = vec![140e6, 90e6, 104e6, 98e6, 101e6];
        let mut two = test("to_device", 1, 2, 110.0);
        two.slices = vec![30e6, 108e6, 111e6];
        let f = tcp(&[one, two]);
        assert_eq!(f[0].value, 105e6, "the goodputs' median");
        assert_eq!(
            f[0].range(),
            (90e6, Some(111e6)),
            "the extremes of the slices after each test's first"
        );
        assert_eq!(f[0].samples.len(), 6);
        // A goodput outside its slices widens the range to include it.
        let mut three = test("from_device", 1, 1, 50.0);
        three.slices = vec![10e6, 52e6, 55e6];
        let f = tcp(&[three]);
        assert_eq!(f[0].range(), (50e6, Some(55e6)));
        // One slice (or none) is no spread: the goodput is the sample.
        let mut four = test("from_device", 1, 1, 50.0);
        four.slices = vec![52e6];
        assert_eq!(tcp(&[four])[0].range(), (50e6, Some(50e6)));
    }

    #[test]
    fn ranks_put_throughput_first() {
        let mut ids = [
            "icmp.rtt_p50.64B",
            "http./1MB.txt",
            "udp.knee.to_device",
            "tcp.to_device",
        ];
        ids.sort_by_key(|id| rank(id));
        assert_eq!(
            ids,
            [
                "tcp.to_device",
                "udp.knee.to_device",
                "http./1MB.txt",
                "icmp.rtt_p50.64B"
            ]
        );
    }
}
