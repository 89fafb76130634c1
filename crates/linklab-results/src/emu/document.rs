//! What every `linklab emu` document starts with: its kind and its schema's version.

/// The version of a document written before documents carried one.
pub const UNVERSIONED: u32 = 0;

/// The version of a document whose `schema_version` is absent (written before it existed).
pub fn unversioned() -> u32 {
    UNVERSIONED
}

/// Rounds `x` to `digits` decimals, as the documents give their figures.
pub fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Mean, least and most of a figure over several runs.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spread {
    /// The mean.
    pub mean: f64,
    /// The least.
    pub min: f64,
    /// The most.
    pub max: f64,
}

impl Spread {
    /// Mean, least and most of `xs` (the mean of none is NaN, written as null).
    pub fn of(xs: &[f64]) -> Spread {
        let mean = xs.iter().sum::<f64>() / xs.len().max(1) as f64;
        let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
        let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Spread { mean, min, max }
    }

    /// Each of the three through `f` (rounding, a unit).
    pub fn map(self, f: impl Fn(f64) -> f64) -> Spread {
        Spread {
            mean: f(self.mean),
            min: f(self.min),
            max: f(self.max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_min_max() {
        assert_eq!(
            Spread::of(&[3.0, 1.0, 2.0]),
            Spread {
                mean: 2.0,
                min: 1.0,
                max: 3.0
            }
        );
        assert_eq!(round(1.23456, 2), 1.23);
    }
}
