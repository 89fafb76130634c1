//! What a run of a suite holds: its stamp, and per entry of the suite the figures measured,
//! each with every sample, its unit, which way is better and the rule that compares it.

use super::stamp::Stamp;

/// Which way a figure is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    /// Fewer bytes, fewer instructions.
    Lower,
    /// More bits per second.
    Higher,
}

impl Better {
    /// The word stored and shown.
    pub fn word(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
        }
    }

    /// Reads [`Better::word`] back.
    pub fn parse(s: &str) -> Option<Better> {
        match s {
            "lower" => Some(Better::Lower),
            "higher" => Some(Better::Higher),
            _ => None,
        }
    }
}

/// The kind of a figure, which names the rule `track compare` judges it by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Read from the ELF (flash, static RAM): any change is a change.
    Exact,
    /// An instruction count, or another figure counted on the device (stack peak): judged
    /// by the runs' spread and a small threshold.
    Count,
    /// A rate (throughput, a download's speed): probe's baseline rule.
    Rate,
}

impl Rule {
    /// The word stored and shown.
    pub fn word(self) -> &'static str {
        match self {
            Rule::Exact => "exact",
            Rule::Count => "count",
            Rule::Rate => "rate",
        }
    }

    /// Reads [`Rule::word`] back.
    pub fn parse(s: &str) -> Option<Rule> {
        match s {
            "exact" => Some(Rule::Exact),
            "count" => Some(Rule::Count),
            "rate" => Some(Rule::Rate),
            _ => None,
        }
    }
}

/// One figure of one entry, with every sample a run took of it.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// Its name within the entry, e.g. `rx_instr_per_byte`.
    pub name: String,
    /// Its unit, e.g. `instr/B`, `B`, `Mbit/s`.
    pub unit: String,
    /// Which way is better.
    pub better: Better,
    /// How it is compared.
    pub rule: Rule,
    /// Every sample, in the order taken (one per repeat).
    pub samples: Vec<f64>,
}

impl Figure {
    /// A figure with its samples.
    pub fn new(name: &str, unit: &str, better: Better, rule: Rule, samples: Vec<f64>) -> Figure {
        Figure {
            name: name.into(),
            unit: unit.into(),
            better,
            rule,
            samples,
        }
    }

    /// The median of the samples (the figure's value; NaN without samples).
    pub fn median(&self) -> f64 {
        let mut s = self.samples.clone();
        s.sort_by(f64::total_cmp);
        match s.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => s[n / 2],
            n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
        }
    }

    /// The lowest and highest sample.
    pub fn range(&self) -> (f64, f64) {
        let lo = self.samples.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = self
            .samples
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    }
}

/// One entry of the suite in one run: what was measured and its figures, or why not.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryResult {
    /// The entry's name in the suite.
    pub name: String,
    /// `image` or `sim`.
    pub kind: String,
    /// The board (images), empty for the simulator.
    pub board: String,
    /// The ELF booted (images).
    pub elf: Option<String>,
    /// The ELF's SHA-256 (images).
    pub elf_sha256: Option<String>,
    /// The build profile the ELF was built with (`release`, `minimal`, or `given` for an
    /// ELF the suite names).
    pub profile: Option<String>,
    /// Why the entry has no figures (`failed`), if it failed.
    pub failed: Option<String>,
    /// The figures.
    pub figures: Vec<Figure>,
}

impl EntryResult {
    /// An entry of `kind` with nothing measured yet.
    pub fn new(name: &str, kind: &str, board: &str) -> EntryResult {
        EntryResult {
            name: name.into(),
            kind: kind.into(),
            board: board.into(),
            elf: None,
            elf_sha256: None,
            profile: None,
            failed: None,
            figures: Vec::new(),
        }
    }

    /// The figure called `name`.
    pub fn figure(&self, name: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.name == name)
    }
}

/// One run of a suite: its stamp and its entries.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// The store's id of the run (None before it is stored).
    pub id: Option<i64>,
    /// Label, time, versions, host load.
    pub stamp: Stamp,
    /// Each entry of the suite.
    pub entries: Vec<EntryResult>,
}

impl Run {
    /// The entry called `name`.
    pub fn entry(&self, name: &str) -> Option<&EntryResult> {
        self.entries.iter().find(|e| e.name == name)
    }
}
