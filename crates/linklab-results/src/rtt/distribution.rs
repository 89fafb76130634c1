//! Summaries of HDR histograms (nanosecond samples) as the rtt JSON stores them, in microseconds.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest value a histogram records: 60 s in nanoseconds (larger samples are clamped to it).
const MAX_NS: u64 = 60_000_000_000;

/// A new histogram for nanosecond samples with 3 significant digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("static histogram bounds are valid")
}

/// The distribution of one quantity (round trip or inter-arrival time), in microseconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Distribution {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest sample.
    pub max_us: f64,
    /// Arithmetic mean.
    pub mean_us: f64,
    /// Standard deviation.
    pub stddev_us: f64,
    /// The recorded histogram: `[value_us, count]` for every non-empty HDR bucket, ascending.
    pub histogram: Vec<(f64, u64)>,
}

impl Distribution {
    /// Summarises a histogram of nanosecond samples (all zeros when it is empty).
    pub fn from_histogram(h: &Histogram<u64>) -> Distribution {
        if h.is_empty() {
            return Distribution::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Distribution {
            count: h.len(),
            min_us: us(h.min()),
            p50_us: us(h.value_at_quantile(0.50)),
            p90_us: us(h.value_at_quantile(0.90)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
            mean_us: h.mean() / 1000.0,
            stddev_us: h.stdev() / 1000.0,
            histogram: h
                .iter_recorded()
                .map(|v| {
                    (
                        us(h.highest_equivalent(v.value_iterated_to())),
                        v.count_at_value(),
                    )
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_samples() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap(); // 1..1000 µs
        }
        let d = Distribution::from_histogram(&h);
        assert_eq!(d.count, 1000);
        assert!((d.min_us - 1.0).abs() < 0.01);
        assert!((d.p50_us - 500.0).abs() < 1.0, "{}", d.p50_us);
        assert!((d.p99_us - 990.0).abs() < 1.0, "{}", d.p99_us);
        assert!((d.max_us - 1000.0).abs() < 1.0);
        assert!((d.mean_us - 500.5).abs() < 1.0);
        assert_eq!(d.histogram.iter().map(|&(_, c)| c).sum::<u64>(), 1000);
    }

    #[test]
    fn empty_histogram_is_zero() {
        let d = Distribution::from_histogram(&new_histogram());
        assert_eq!(d.count, 0);
        assert!(d.histogram.is_empty());
    }
}
