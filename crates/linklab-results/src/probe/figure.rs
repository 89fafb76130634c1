//! A headline figure of a probe run: its value, unit, range and what measured it; and a
//! figure a step could not make, with the reason.

use serde::{Deserialize, Serialize};

/// Which way a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    /// Throughput: lower is worse.
    Higher,
    /// Round-trip time: higher is worse.
    Lower,
}

/// How a figure's range was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpreadKind {
    /// From its samples (HTTP batches; TCP: the quarter-second slices of its tests):
    /// `low` and `high` are the smallest and largest; the value is their median (TCP: the
    /// median of its tests' goodputs).
    Samples,
    /// A round-trip median over its probes: `low` and `high` are their first and third
    /// quartiles (the middle half of the probes).
    Quartiles,
    /// A knee's range: `low` is the knee, or lower when an attempt at or below it hit a limit
    /// (the sweep saw the link fail down to there); `high` the most the link delivered at or
    /// above the limit a repeat confirmed (what it carried, loss or not), none when no limit
    /// was confirmed (the knee is then a lower bound).
    Bracket,
}

/// A headline figure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Figure {
    /// Stable name, e.g. `tcp.to_device`, `udp.knee.from_device`, `icmp.rtt_p50.64B`.
    pub id: String,
    /// For people.
    pub label: String,
    /// The figure.
    pub value: f64,
    /// Its unit.
    pub unit: String,
    /// Which way is better.
    pub better: Better,
    /// How `low` and `high` were found (`None` in version 1 documents: one measurement).
    #[serde(default)]
    pub spread: Option<SpreadKind>,
    /// The lowest the figure was seen (a knee: see [`SpreadKind::Bracket`]).
    #[serde(default)]
    pub low: Option<f64>,
    /// The highest (a knee: `None` when no limit above it was confirmed).
    #[serde(default)]
    pub high: Option<f64>,
    /// The samples, in the order measured (none for round trips and knees: their probes and
    /// attempts are in their rtt and sweep documents).
    #[serde(default)]
    pub samples: Vec<f64>,
    /// What measured it: `iperf3`, `iperf3 -R`, `iperf 2 -r (the device connected back)`,
    /// `HTTP GET`, `ICMP echo` ... (none in documents before version 3).
    #[serde(default)]
    pub via: Option<String>,
}

/// A figure a step could not make, and why: never a zero in its place.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct NotMeasured {
    /// The id the figure would have had (`http./1MB.txt`, `iperf2.udp.knee.to_device`).
    pub id: String,
    /// For people.
    pub label: String,
    /// Why there is no figure.
    pub state: Unmeasured,
    /// In words, with what the device answered (`HTTP/1.0 404 File not found (565-byte body)`).
    pub reason: String,
}

/// Why a figure is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unmeasured {
    /// The device does not offer it (a 404; an iperf without UDP reports or a way back).
    Absent,
    /// The device answered wrongly (a 5xx, a body short or long, a stall, bytes wrong).
    Failed,
    /// The time budget ended it before anything whole was measured.
    OutOfTime,
}

impl Unmeasured {
    /// The word for people and the page.
    pub fn word(self) -> &'static str {
        match self {
            Unmeasured::Absent => "absent",
            Unmeasured::Failed => "failed",
            Unmeasured::OutOfTime => "out of time",
        }
    }
}

impl Figure {
    /// A figure measured as `samples`: `value` (their median) between their smallest and
    /// largest.
    pub fn sampled(id: String, label: String, unit: &str, value: f64, samples: Vec<f64>) -> Figure {
        let low = samples.iter().copied().reduce(f64::min).unwrap_or(value);
        let high = samples.iter().copied().reduce(f64::max).unwrap_or(value);
        Figure {
            id,
            label,
            value,
            unit: unit.into(),
            better: if unit == "us" {
                Better::Lower
            } else {
                Better::Higher
            },
            spread: Some(SpreadKind::Samples),
            low: Some(low),
            high: Some(high),
            samples,
            via: None,
        }
    }

    /// The figure, saying what measured it.
    pub fn via(mut self, via: &str) -> Figure {
        self.via = Some(via.into());
        self
    }

    /// A round-trip median in µs between its first and third quartiles.
    pub fn quartiles(id: String, label: String, p50_us: f64, p25_us: f64, p75_us: f64) -> Figure {
        Figure {
            id,
            label,
            value: p50_us,
            unit: "us".into(),
            better: Better::Lower,
            spread: Some(SpreadKind::Quartiles),
            low: Some(p25_us.min(p50_us)),
            high: Some(p75_us.max(p50_us)),
            samples: Vec::new(),
            via: None,
        }
    }

    /// A knee in bit/s: the highest rate that tracked (0: none did), in its range from `low`
    /// up to `high` (`None`: unbounded; see [`SpreadKind::Bracket`]).
    pub fn knee(id: String, label: String, knee_bps: f64, low: f64, high: Option<f64>) -> Figure {
        Figure {
            id,
            label,
            value: knee_bps,
            unit: "bit/s".into(),
            better: Better::Higher,
            spread: Some(SpreadKind::Bracket),
            low: Some(low.min(knee_bps)),
            high: high.map(|h| h.max(knee_bps)),
            samples: Vec::new(),
            via: None,
        }
    }

    /// Where the range comes from, for people: `4 samples`, `quartiles of the probes`, `knee
    /// range`, or `one measurement` (a version 1 figure).
    pub fn spread_words(&self) -> String {
        match self.spread {
            None => "one measurement".into(),
            Some(SpreadKind::Samples) if self.samples.len() == 1 => "1 sample".into(),
            Some(SpreadKind::Samples) => format!("{} samples", self.samples.len()),
            Some(SpreadKind::Quartiles) => "quartiles of the probes".into(),
            Some(SpreadKind::Bracket) => "knee range".into(),
        }
    }

    /// The range the figure lies in, `(low, high)`; `high` is `None` when unbounded (a knee
    /// with no confirmed limit above it). A version 1 figure is its one measurement.
    pub fn range(&self) -> (f64, Option<f64>) {
        match self.spread {
            None => (self.value, Some(self.value)),
            Some(_) => (self.low.unwrap_or(self.value), self.high),
        }
    }
}

/// A figure's range for people, in Mbit/s or µs to three significant digits: `640–790
/// Mbit/s`, one value when both ends read the same, `≥ 239 Mbit/s` when unbounded above.
pub fn range_text(low: f64, high: Option<f64>, unit: &str) -> String {
    let (scale, unit) = if unit == "bit/s" {
        (1e-6, "Mbit/s")
    } else {
        (1.0, "µs")
    };
    let bare = |v: f64| {
        let v = v * scale;
        match v.abs() {
            a if a >= 100.0 => format!("{v:.0}"),
            a if a >= 10.0 => format!("{v:.1}"),
            _ => format!("{v:.2}"),
        }
    };
    match high.map(bare) {
        Some(h) if h == bare(low) => format!("{h} {unit}"),
        Some(h) => format!("{}–{h} {unit}", bare(low)),
        None => format!("≥ {} {unit}", bare(low)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_in_words() {
        assert_eq!(range_text(640e6, Some(790e6), "bit/s"), "640–790 Mbit/s");
        assert_eq!(range_text(48.91e6, Some(48.94e6), "bit/s"), "48.9 Mbit/s");
        assert_eq!(range_text(239e6, None, "bit/s"), "≥ 239 Mbit/s");
        assert_eq!(range_text(0.35e6, Some(1.8e6), "bit/s"), "0.35–1.80 Mbit/s");
        assert_eq!(range_text(57.6, Some(72.9), "us"), "57.6–72.9 µs");
    }

    /// A version 1 figure is its one measurement; a knee with no confirmed limit is unbounded.
    #[test]
    fn ranges_of_figures() {
        let mut v1 = Figure::sampled("x".into(), "x".into(), "bit/s", 5.0, vec![4.0, 6.0]);
        assert_eq!(v1.range(), (4.0, Some(6.0)));
        assert_eq!(v1.spread_words(), "2 samples");
        v1.spread = None;
        assert_eq!(v1.range(), (5.0, Some(5.0)));
        assert_eq!(v1.spread_words(), "one measurement");
        let knee = Figure::knee("k".into(), "k".into(), 90.0, 95.0, None);
        assert_eq!(knee.range(), (90.0, None), "low is never above the knee");
        let rtt = Figure::quartiles("r".into(), "r".into(), 50.0, 40.0, 70.0);
        assert_eq!(rtt.range(), (40.0, Some(70.0)));
        assert_eq!(rtt.better, Better::Lower);
    }
}
