//! The rule `track compare` judges each figure by, per kind of figure:
//!
//! - **exact** (flash, static RAM: read from the ELF): any change counts, the bad way worse;
//! - **count** (instructions per byte, stack peak): worse only when the two runs' ranges lie
//!   apart, the bad way, by a gap larger than `--count-threshold` percent of the base's
//!   median *and* larger than either run's own spread (its highest sample less its lowest);
//! - **rate** (throughput, the simulator's download rates): probe's baseline rule, the same
//!   gap test with `--rate-tolerance` percent.
//!
//! Better is the same test the good way. A figure in one run only is `new` or `gone`; an
//! entry that failed in HEAD but not in BASE is worse (`failed`), named with its reason.

use linklab_results::track::{Better, Figure, Rule};

use crate::run::Run;

/// The count threshold's default, percent: above the spread of an unchanged image's
/// instructions per byte across boots (docs/track.md, Noise: under 0.7 % for main, compact and
/// lwIP; the minimal image's 3.4 % received, its sent 5.8 % needs repeats).
pub const DEFAULT_COUNT_PCT: f64 = 5.0;

/// The rate tolerance's default, percent: probe's `--tolerance`.
pub const DEFAULT_RATE_PCT: f64 = 10.0;

/// The percentages of the rule.
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    /// Gap needed for a count figure, percent of the base's median.
    pub count_pct: f64,
    /// Gap needed for a rate, percent of the base's median (probe's --tolerance).
    pub rate_pct: f64,
}

impl Default for Thresholds {
    /// [`DEFAULT_COUNT_PCT`] and [`DEFAULT_RATE_PCT`].
    fn default() -> Thresholds {
        Thresholds {
            count_pct: DEFAULT_COUNT_PCT,
            rate_pct: DEFAULT_RATE_PCT,
        }
    }
}

/// What happened to one figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Moved the good way beyond its noise.
    Better,
    /// Moved the bad way beyond its noise.
    Worse,
    /// Within its noise (or exactly equal).
    Unchanged,
    /// In HEAD only.
    New,
    /// In BASE only.
    Gone,
    /// Its entry failed in HEAD.
    Failed,
}

impl Verdict {
    /// The word shown.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Unchanged => "unchanged",
            Verdict::New => "new",
            Verdict::Gone => "gone",
            Verdict::Failed => "failed",
        }
    }

    /// Whether it fails the comparison (exit 3).
    pub fn fails(self) -> bool {
        matches!(self, Verdict::Worse | Verdict::Failed)
    }
}

/// One figure of BASE beside HEAD.
#[derive(Clone, Debug)]
pub struct Row {
    /// The entry's name.
    pub entry: String,
    /// The figure's name (or `-` for a failed entry).
    pub figure: String,
    /// Its unit.
    pub unit: String,
    /// BASE's figure.
    pub base: Option<Figure>,
    /// HEAD's figure.
    pub head: Option<Figure>,
    /// HEAD's median against BASE's, percent.
    pub change_pct: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why (a failed entry's reason).
    pub note: String,
}

impl Row {
    /// `entry figure` (`entry failed` for a failed entry), how a worse figure is named.
    pub fn id(&self) -> String {
        match self.verdict {
            Verdict::Failed => format!("{} failed", self.entry),
            _ => format!("{} {}", self.entry, self.figure),
        }
    }
}

/// The names of the rows that fail the comparison (`entry figure`, `entry failed`), in order.
pub fn worse(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.verdict.fails())
        .map(Row::id)
        .collect()
}

/// Every figure of `base` beside `head`.
pub fn compare(base: &Run, head: &Run, t: Thresholds) -> Vec<Row> {
    let mut rows = Vec::new();
    for h in &head.entries {
        let b = base.entry(&h.name);
        if let (Some(why), Some(b)) = (&h.failed, b) {
            if b.failed.is_none() {
                rows.push(Row {
                    entry: h.name.clone(),
                    figure: "-".into(),
                    unit: String::new(),
                    base: None,
                    head: None,
                    change_pct: None,
                    verdict: Verdict::Failed,
                    note: why.clone(),
                });
                continue;
            }
        }
        for f in &h.figures {
            let old = b.and_then(|b| b.figure(&f.name));
            rows.push(row(&h.name, old, Some(f), t));
        }
        for o in b.map(|b| b.figures.as_slice()).unwrap_or(&[]) {
            if h.figure(&o.name).is_none() && h.failed.is_none() {
                rows.push(row(&h.name, Some(o), None, t));
            }
        }
    }
    for b in &base.entries {
        if head.entry(&b.name).is_none() {
            for o in &b.figures {
                rows.push(row(&b.name, Some(o), None, t));
            }
        }
    }
    rows
}

fn row(entry: &str, base: Option<&Figure>, head: Option<&Figure>, t: Thresholds) -> Row {
    let any = head.or(base).expect("a figure of either run");
    let verdict = match (base, head) {
        (Some(b), Some(h)) => judge(b, h, t),
        (None, _) => Verdict::New,
        (_, None) => Verdict::Gone,
    };
    let change_pct = match (base, head) {
        (Some(b), Some(h)) if b.median() != 0.0 => {
            Some((h.median() - b.median()) / b.median() * 100.0)
        }
        _ => None,
    };
    Row {
        entry: entry.into(),
        figure: any.name.clone(),
        unit: any.unit.clone(),
        base: base.cloned(),
        head: head.cloned(),
        change_pct,
        verdict,
        note: String::new(),
    }
}

/// The rule for one figure (see the module).
pub fn judge(base: &Figure, head: &Figure, t: Thresholds) -> Verdict {
    let pct = match head.rule {
        Rule::Exact => return exact(base.median(), head.median(), head.better),
        Rule::Count => t.count_pct,
        Rule::Rate => t.rate_pct,
    };
    let (b_lo, b_hi) = base.range();
    let (h_lo, h_hi) = head.range();
    let beyond = |gap: f64| {
        gap > base.median().abs() * pct / 100.0 && gap > b_hi - b_lo && gap > h_hi - h_lo
    };
    let (up, down) = (beyond(h_lo - b_hi), beyond(b_lo - h_hi));
    match (head.better, up, down) {
        (Better::Lower, true, _) | (Better::Higher, _, true) => Verdict::Worse,
        (Better::Lower, _, true) | (Better::Higher, true, _) => Verdict::Better,
        _ => Verdict::Unchanged,
    }
}

fn exact(base: f64, head: f64, better: Better) -> Verdict {
    if head == base {
        return Verdict::Unchanged;
    }
    match (better, head > base) {
        (Better::Lower, true) | (Better::Higher, false) => Verdict::Worse,
        _ => Verdict::Better,
    }
}
