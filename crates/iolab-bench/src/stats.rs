//! Summary statistics across repeated runs (mean, median, min, max, sd).

use serde::{Deserialize, Serialize};

/// Mean, median, min, max and sample standard deviation of a series.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Median (mean of the middle two for an even count).
    pub median: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Sample standard deviation (n - 1); 0 for fewer than two values.
    pub stddev: f64,
}

impl Stats {
    /// Statistics of `values` (NaNs are ignored); all zero when empty.
    pub fn of(values: &[f64]) -> Stats {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return Stats::default();
        }
        v.sort_by(|a, b| a.total_cmp(b));
        let n = v.len();
        let mean = v.iter().sum::<f64>() / n as f64;
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        let stddev = if n > 1 {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        Stats {
            n,
            mean,
            median,
            min: v[0],
            max: v[n - 1],
            stddev,
        }
    }
}

/// Median of `values` (NaN when empty).
pub fn median(values: &[f64]) -> f64 {
    if values.is_empty() {
        f64::NAN
    } else {
        Stats::of(values).median
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        let s = Stats::of(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!(
            (s.n, s.min, s.max, s.mean, s.median),
            (4, 1.0, 4.0, 2.5, 2.5)
        );
        assert!((s.stddev - 1.290_994).abs() < 1e-5);
        assert_eq!(Stats::of(&[5.0]).stddev, 0.0);
        assert_eq!(Stats::of(&[]).n, 0);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    }
}
