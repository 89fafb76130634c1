//! One figure of a tracked run: its name and unit, which way is better, the rule that compares
//! it, and every sample a run took of it.

use serde::{Deserialize, Serialize};

/// Which way a figure is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Fewer bytes, fewer instructions.
    Lower,
    /// More bits per second.
    Higher,
}

impl Better {
    /// The word stored and shown (`lower`, `higher`).
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

/// The kind of a figure, which names the rule `linklab track compare` judges it by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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
    /// The word stored and shown (`exact`, `count`, `rate`).
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
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_range() {
        let f = |s: &[f64]| Figure::new("f", "B", Better::Lower, Rule::Count, s.to_vec());
        assert_eq!(f(&[3.0, 1.0, 2.0]).median(), 2.0);
        assert_eq!(f(&[4.0, 1.0, 2.0, 3.0]).median(), 2.5);
        assert!(f(&[]).median().is_nan());
        assert_eq!(f(&[3.0, 1.0, 2.0]).range(), (1.0, 3.0));
    }

    #[test]
    fn words_read_back() {
        for b in [Better::Lower, Better::Higher] {
            assert_eq!(Better::parse(b.word()), Some(b));
        }
        for r in [Rule::Exact, Rule::Count, Rule::Rate] {
            assert_eq!(Rule::parse(r.word()), Some(r));
        }
        assert_eq!(Better::parse("up"), None);
        assert_eq!(Rule::parse("fuzzy"), None);
    }
}
