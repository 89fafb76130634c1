//! `--baseline old.json`: an earlier probe's figures beside this run's, and which are worse.
//!
//! Every figure carries the range it was seen in (`figure::SpreadKind`): its samples' lowest
//! to highest (TCP rounds, HTTP batches), its probes' middle half (round trips), or for a knee
//! from the lowest rate where the sweep saw the link fail up to the most the link delivered
//! above a confirmed limit. A figure is **worse** only when the two runs' ranges lie apart, the
//! bad way, by a gap larger than the tolerance (of the baseline's value) *and* larger than
//! either range is wide: the two runs differ by more than each varied within itself. What one
//! run's own samples disagree about never counts, and on a busy host — whose figures drift
//! from one run to the next by more than they vary within one — a run's range is the only
//! measure of that drift a single baseline gives.
//!
//! - a throughput (TCP each way and with two streams, the UDP knee each way, each HTTP path's
//!   rate): this run's range below the baseline's (a knee: only once this run confirmed a
//!   limit — an unbounded knee makes no claim);
//! - a round-trip median (ICMP, UDP and TCP echo, per size): this run's range above the
//!   baseline's, also by more than [`RTT_SLACK_MS`] (below that it is the host's scheduling
//!   noise, not the device).
//!
//! A figure measured in only one of the two runs is shown but never counts as worse — unless
//! this run's step says the device answered otherwise (`not_measured`: absent, a 404; failed):
//! a baseline figure whose path now answers 404 is worse, named with that answer. A service
//! gone altogether shows in the services table, not as worse. A version 1 baseline (one
//! measurement per figure) is read as one sample per figure: a range of no width.

use anyhow::{bail, Context};
use serde_json::Value;

use super::document::{Compared, Comparison, ProbeReport, OLDEST_SCHEMA_VERSION, SCHEMA_VERSION};
use super::figure::{Better, Figure, NotMeasured, Unmeasured};

/// A round-trip median must also be this much higher to count as worse, milliseconds.
pub const RTT_SLACK_MS: f64 = 0.2;

/// Reads a baseline from its text (the file `name`): a probe JSON document of this schema
/// version or an older one this linklab reads. One clear sentence for a text that is not
/// JSON, not a probe document or of a version it does not read.
pub fn parse(text: &str, name: &str) -> anyhow::Result<ProbeReport> {
    let v: Value =
        serde_json::from_str(text).with_context(|| format!("--baseline {name}: not valid JSON"))?;
    if v.get("kind").and_then(Value::as_str) != Some("probe") {
        bail!("--baseline {name}: not a linklab probe result (no \"kind\": \"probe\")");
    }
    let readable = u64::from(OLDEST_SCHEMA_VERSION)..=u64::from(SCHEMA_VERSION);
    match v.get("schema_version").and_then(Value::as_u64) {
        Some(n) if readable.contains(&n) => {}
        Some(n) => bail!(
            "--baseline {name}: schema version {n}, this linklab reads versions {OLDEST_SCHEMA_VERSION} to {SCHEMA_VERSION} (probe the baseline again)"
        ),
        None => bail!("--baseline {name}: no schema_version"),
    }
    serde_json::from_value(v).with_context(|| format!("--baseline {name}: malformed probe result"))
}

/// Compares every figure of `new` with `old`.
pub fn compare(old: &ProbeReport, new: &ProbeReport, file: &str, tolerance_pct: f64) -> Comparison {
    let mut figures: Vec<Compared> = Vec::new();
    for f in &new.figures {
        figures.push(judge(old.figure(&f.id), Some(f), tolerance_pct));
    }
    for o in old.figures.iter().filter(|o| new.figure(&o.id).is_none()) {
        let mut c = judge(Some(o), None, tolerance_pct);
        if let Some(m) = new.not_measured(&o.id).filter(|m| lost(m)) {
            c.worse = true;
            c.missing = Some(format!("{}: {}", m.state.word(), m.reason));
        }
        figures.push(c);
    }
    // Latency under load is shown beside, never judged worse: it follows the host's own
    // queues and scheduling as much as the device's.
    for c in figures.iter_mut().filter(|c| c.id.starts_with("latency.")) {
        c.worse = false;
    }
    Comparison {
        file: file.into(),
        baseline_started_unix_s: old.started_unix_s,
        baseline_schema_version: old.schema_version,
        tolerance_pct,
        rtt_slack_ms: RTT_SLACK_MS,
        figures,
    }
}

/// Whether a figure this run did not make counts against it: the device answered, not as
/// before (absent or failed), rather than the budget running out.
fn lost(m: &NotMeasured) -> bool {
    matches!(m.state, Unmeasured::Absent | Unmeasured::Failed)
}

/// Whether `new` is worse than `old`: their ranges apart, the bad way, by more than the
/// tolerance and by more than either range's width (see the module).
pub fn worse(old: &Figure, new: &Figure, tolerance_pct: f64) -> bool {
    let (old_low, old_high) = old.range();
    let (new_low, new_high) = new.range();
    // An unbounded baseline knee is as wide as what is known of it.
    let old_high_known = old_high.unwrap_or(old.value);
    let beyond = |gap: f64, new_width: f64| {
        gap > old.value.abs() * tolerance_pct / 100.0
            && gap > old_high_known - old_low
            && gap > new_width
    };
    match new.better {
        Better::Higher => {
            // A knee with no confirmed limit makes no claim about how low it is.
            new_high.is_some_and(|high| beyond(old_low - high, high - new_low))
        }
        Better::Lower => {
            let slack = if new.unit == "us" {
                RTT_SLACK_MS * 1e3
            } else {
                0.0
            };
            let (gap, width) = (
                new_low - old_high_known,
                new_high.unwrap_or(new_low) - new_low,
            );
            old_high.is_some() && gap > slack && beyond(gap, width)
        }
    }
}

/// One figure old beside new, and whether it got worse.
fn judge(old: Option<&Figure>, new: Option<&Figure>, tolerance_pct: f64) -> Compared {
    let any = new.or(old).expect("a figure of either run");
    let change_pct = match (old, new) {
        (Some(o), Some(n)) if o.value != 0.0 => Some((n.value - o.value) / o.value * 100.0),
        _ => None,
    };
    let worse = match (old, new) {
        (Some(o), Some(n)) => worse(o, n, tolerance_pct),
        _ => false,
    };
    Compared {
        id: any.id.clone(),
        label: any.label.clone(),
        unit: any.unit.clone(),
        better: any.better,
        old: old.map(|f| f.value),
        new: new.map(|f| f.value),
        old_low: old.map(|f| f.range().0),
        old_high: old.and_then(|f| f.range().1),
        new_low: new.map(|f| f.range().0),
        new_high: new.and_then(|f| f.range().1),
        change_pct,
        worse,
        missing: None,
    }
}

/// What the comparison says of one figure: the one place that turns a [`Compared`] into the
/// word a page or a summary shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict<'c> {
    /// Measured by both runs, and this run's range lies beyond the baseline's the bad way
    /// (see [`worse`]).
    Worse,
    /// In the baseline, and this run could not make it because the device answered otherwise
    /// (absent, failed): the state and the reason its step gave, e.g. `absent: GET /1MB.txt:
    /// HTTP/1.0 404 File not found`.
    Lost(&'c str),
    /// Only in this run.
    New,
    /// Only in the baseline, and not counted against this run: the budget ran out, the step
    /// was not asked for, or the figure is one never judged (latency under load). The reason
    /// this run's step gave, when it gave one.
    NotMeasured(Option<&'c str>),
    /// Measured by both runs, and not worse.
    Ok,
}

impl Verdict<'_> {
    /// Whether the figure counts against this run (the probe exits 3 for it).
    pub fn is_worse(&self) -> bool {
        matches!(self, Verdict::Worse | Verdict::Lost(_))
    }

    /// The verdict in words: `worse`, `worse: absent: …`, `new`, `not measured`, `ok`.
    pub fn words(&self) -> String {
        match self {
            Verdict::Worse => "worse".into(),
            Verdict::Lost(why) => format!("worse: {why}"),
            Verdict::New => "new".into(),
            Verdict::NotMeasured(None) => "not measured".into(),
            Verdict::NotMeasured(Some(why)) => format!("not measured: {why}"),
            Verdict::Ok => "ok".into(),
        }
    }
}

/// The verdict on one figure of a [`Comparison`].
pub fn verdict(c: &Compared) -> Verdict<'_> {
    match (c.worse, c.missing.as_deref()) {
        (true, Some(why)) => Verdict::Lost(why),
        (true, None) => Verdict::Worse,
        (false, why) if c.old.is_some() && c.new.is_none() => Verdict::NotMeasured(why),
        (false, _) if c.old.is_none() => Verdict::New,
        (false, _) => Verdict::Ok,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rate(samples: &[f64]) -> Figure {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        Figure::sampled(
            "x".into(),
            "x".into(),
            "bit/s",
            sorted[sorted.len() / 2],
            samples.to_vec(),
        )
    }

    /// A round-trip median between its quartiles, µs.
    fn rtt(p25: f64, p50: f64, p75: f64) -> Figure {
        Figure::quartiles("r".into(), "r".into(), p50, p25, p75)
    }

    fn knee(low: f64, k: f64, high: Option<f64>) -> Figure {
        Figure::knee("k".into(), "k".into(), k, low, high)
    }

    /// A version 1 figure: one measurement.
    fn single(value: f64, unit: &str) -> Figure {
        let mut f = Figure::sampled("x".into(), "x".into(), unit, value, vec![value]);
        f.spread = None;
        f.low = None;
        f.high = None;
        f.samples.clear();
        f
    }

    /// A false alarm once seen: on an unchanged device beside a CPU hog, TCP with 2 streams
    /// read -26 % and -38 % as single tests. Sampled, the runs overlap: not worse.
    #[test]
    fn a_drop_inside_the_runs_own_spread_is_not_worse() {
        let old = rate(&[940e6, 1250e6, 700e6]);
        let new = rate(&[580e6, 900e6, 720e6]);
        assert!(
            new.value < old.value * 0.9,
            "the medians moved by more than 10 %"
        );
        assert!(!worse(&old, &new, 10.0));
    }

    /// Two runs apart, but by less than each one varied within itself (serve beside two CPU
    /// hogs: 695–1106 Mbit/s in one run, 166–432 in another): not worse.
    #[test]
    fn runs_apart_by_less_than_their_own_width_are_not_worse() {
        let old = rate(&[695e6, 900e6, 940e6, 1106e6]);
        let new = rate(&[166e6, 230e6, 270e6, 432e6]);
        assert!(!worse(&old, &new, 10.0));
        // The same new run, tighter: now the gap (263) is more than either width.
        let tight = rate(&[400e6, 410e6, 420e6, 432e6]);
        assert!(worse(&rate(&[695e6, 700e6, 720e6]), &tight, 10.0));
    }

    /// A halved link: every sample of the new run far below every sample of the old one.
    #[test]
    fn a_halved_link_is_worse() {
        let old = rate(&[95.8e6, 96.1e6, 95.9e6]);
        let new = rate(&[47.9e6, 48.0e6, 47.7e6]);
        assert!(worse(&old, &new, 10.0));
        // Apart, but by less than the tolerance: not worse.
        let near = rate(&[90e6, 91e6, 92e6]);
        assert!(!worse(&old, &near, 10.0));
        assert!(worse(&old, &near, 2.0));
        // Better is never worse.
        assert!(!worse(&new, &old, 10.0));
    }

    /// A knee is worse when this run confirmed a limit, and delivered at most, below the rate
    /// the baseline carried.
    #[test]
    fn knees_compare_by_their_ranges() {
        let old = knee(97e6, 97e6, Some(100e6));
        assert!(worse(&old, &knee(48e6, 48e6, Some(52e6)), 10.0));
        // The knee fell, but no limit above it was confirmed: no claim.
        assert!(!worse(&old, &knee(48e6, 48e6, None), 10.0));
        // What the new run delivered reaches within the tolerance of the old knee.
        assert!(!worse(&old, &knee(80e6, 80e6, Some(90e6)), 10.0));
        // Nothing tracked at all, and at most 5 Mbit/s delivered: worse.
        assert!(worse(&old, &knee(0.0, 0.0, Some(5e6)), 10.0));
        // The baseline reached no limit (its knee a lower bound): a limit confirmed well
        // below it is still worse.
        assert!(worse(
            &knee(200e6, 200e6, None),
            &knee(90e6, 90e6, Some(100e6)),
            10.0
        ));
        // A stalling host: the new run's loss-free knee is low, but its link delivered 225
        // Mbit/s: not worse than a baseline knee of 234.
        let stalls = knee(14e6, 14e6, Some(225e6));
        assert!(!worse(&knee(234e6, 234e6, Some(260e6)), &stalls, 10.0));
    }

    #[test]
    fn round_trips_are_worse_beyond_the_ranges_the_tolerance_and_the_slack() {
        let old = rtt(980.0, 1000.0, 1050.0);
        assert!(worse(&old, &rtt(1400.0, 1420.0, 1450.0), 10.0));
        assert!(
            !worse(&old, &rtt(1100.0, 1400.0, 1450.0), 10.0),
            "the ranges meet"
        );
        assert!(
            !worse(&old, &rtt(1300.0, 1600.0, 1900.0), 10.0),
            "a gap of 250 µs, narrower than the new range"
        );
        assert!(
            !worse(&rtt(50.0, 55.0, 60.0), &rtt(200.0, 205.0, 210.0), 10.0),
            "within the slack"
        );
        assert!(!worse(&old, &rtt(490.0, 500.0, 510.0), 10.0), "better");
    }

    /// A version 1 baseline's figure is one sample: a range of no width.
    #[test]
    fn version_1_figures_are_one_sample() {
        let old = single(100e6, "bit/s");
        assert_eq!(old.range(), (100e6, Some(100e6)));
        assert!(worse(&old, &rate(&[80e6, 82e6, 85e6]), 10.0));
        assert!(!worse(&old, &rate(&[80e6, 85e6, 95e6]), 10.0));
        assert!(
            !worse(&old, &rate(&[60e6, 75e6, 85e6]), 10.0),
            "wider than the gap"
        );
    }

    /// A run with `figures` and `not_measured`, nothing else.
    fn run(figures: Vec<Figure>, not_measured: Vec<NotMeasured>) -> ProbeReport {
        use crate::quantity::Quantity;
        ProbeReport {
            kind: "probe".into(),
            schema_version: SCHEMA_VERSION,
            linklab_version: "test".into(),
            host: "h".into(),
            address: "198.18.0.2".into(),
            started_unix_s: 0,
            budget: Quantity::new(10.0, "s"),
            wall: Quantity::new(10.0, "s"),
            services: Vec::new(),
            steps: Vec::new(),
            figures,
            not_measured,
            icmp: None,
            echo_udp: None,
            echo_tcp: None,
            http: Vec::new(),
            tcp: Vec::new(),
            sweep_to_device: None,
            sweep_from_device: None,
            failures: Vec::new(),
            baseline: None,
            latency: None,
            conditions: None,
            repeat: None,
        }
    }

    /// A baseline figure whose path now answers 404 (or failed) is worse, with the reason; one
    /// the budget cut short, or simply not measured, is not.
    #[test]
    fn a_figure_the_device_no_longer_gives_is_worse() {
        let mut f = rate(&[10e6, 11e6]);
        f.id = "http./1MB.txt".into();
        let old = run(vec![f], Vec::new());
        let gone = |state| NotMeasured {
            id: "http./1MB.txt".into(),
            label: "HTTP GET /1MB.txt".into(),
            state,
            reason: "GET /1MB.txt: HTTP/1.0 404 File not found (565-byte body)".into(),
        };
        for (state, worse) in [
            (Unmeasured::Absent, true),
            (Unmeasured::Failed, true),
            (Unmeasured::OutOfTime, false),
        ] {
            let c = compare(&old, &run(Vec::new(), vec![gone(state)]), "b.json", 10.0);
            assert_eq!(c.figures.len(), 1);
            assert_eq!(c.figures[0].worse, worse, "{state:?}");
            assert_eq!(c.figures[0].missing.is_some(), worse);
        }
        let c = compare(
            &old,
            &run(Vec::new(), vec![gone(Unmeasured::Absent)]),
            "b",
            10.0,
        );
        assert_eq!(
            c.figures[0].missing.as_deref(),
            Some("absent: GET /1MB.txt: HTTP/1.0 404 File not found (565-byte body)")
        );
        let c = compare(&old, &run(Vec::new(), Vec::new()), "b.json", 10.0);
        assert!(!c.figures[0].worse, "not measured, no reason: not worse");
    }

    /// Only in one run: shown, not worse.
    #[test]
    fn figures_in_one_run_only_are_never_worse() {
        let only_old = judge(Some(&rate(&[1.0])), None, 10.0);
        assert!(!only_old.worse && only_old.change_pct.is_none());
        assert_eq!(only_old.new, None);
        let only_new = judge(None, Some(&rate(&[1.0])), 10.0);
        assert!(!only_new.worse);
    }

    /// Each figure's verdict: worse, lost with the device's answer, new, not measured, ok;
    /// latency under load, never judged, is not measured even when its step failed.
    #[test]
    fn every_figure_gets_one_verdict() {
        let mut f = rate(&[10e6, 11e6]);
        f.id = "http./1MB.txt".into();
        let mut l = rtt(900.0, 1000.0, 1100.0);
        l.id = "latency.icmp.to_device.rtt_p50".into();
        let old = run(vec![f.clone(), l.clone()], Vec::new());
        let failed = |id: &str| NotMeasured {
            id: id.into(),
            label: id.into(),
            state: Unmeasured::Failed,
            reason: "it stopped".into(),
        };
        let c = compare(
            &old,
            &run(Vec::new(), vec![failed("http./1MB.txt"), failed(&l.id)]),
            "b.json",
            10.0,
        );
        let verdicts: Vec<String> = c.figures.iter().map(|x| verdict(x).words()).collect();
        assert_eq!(
            verdicts,
            [
                "worse: failed: it stopped",
                "not measured: failed: it stopped"
            ]
        );
        assert!(verdict(&c.figures[0]).is_worse() && !verdict(&c.figures[1]).is_worse());

        let mut slower = rate(&[1e6, 1.1e6]);
        slower.id = f.id.clone();
        let mut extra = rate(&[5.0]);
        extra.id = "tcp.to_device".into();
        let c = compare(&old, &run(vec![slower, extra, l], Vec::new()), "b", 10.0);
        let verdicts: Vec<Verdict> = c.figures.iter().map(verdict).collect();
        assert_eq!(verdicts, [Verdict::Worse, Verdict::New, Verdict::Ok]);
        let c = compare(&old, &run(Vec::new(), Vec::new()), "b", 10.0);
        assert_eq!(verdict(&c.figures[0]), Verdict::NotMeasured(None));
    }
}
