//! Summary statistics and the GO / NO-GO rule of A/B comparisons.

use serde_json::json;

/// min / median / mean / max of a sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Smallest value.
    pub min: f64,
    /// Middle value (mean of the two middle ones for even counts).
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summarizes a non-empty sample (an empty one gives zeros).
    pub fn of(xs: &[f64]) -> Self {
        if xs.is_empty() {
            return Self {
                min: 0.0,
                median: 0.0,
                mean: 0.0,
                max: 0.0,
            };
        }
        let mut v = xs.to_vec();
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Self {
            min: v[0],
            median,
            mean: v.iter().sum::<f64>() / n as f64,
            max: v[n - 1],
        }
    }

    /// max − min: the run-to-run noise band.
    pub fn spread(&self) -> f64 {
        self.max - self.min
    }

    /// As JSON.
    pub fn to_json(self) -> serde_json::Value {
        json!({"min": self.min, "median": self.median, "mean": self.mean, "max": self.max})
    }
}

/// The outcome of an A/B comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// True if the variant is faster by more than the baseline's own spread.
    pub go: bool,
    /// variant median / baseline median.
    pub ratio: f64,
    /// One line explaining the decision.
    pub reason: String,
}

/// GO only if the variant's median beats the baseline's by more than the baseline's spread.
pub fn verdict(baseline: &[f64], variant: &[f64]) -> Verdict {
    let (a, b) = (Summary::of(baseline), Summary::of(variant));
    let gain = a.median - b.median;
    let go = gain > a.spread();
    Verdict {
        go,
        ratio: b.median / a.median,
        reason: format!(
            "variant median {:.2} ms vs baseline {:.2} ms: {} by {:.2} ms, baseline spread {:.2} ms",
            b.median,
            a.median,
            if gain >= 0.0 { "faster" } else { "slower" },
            gain.abs(),
            a.spread()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_and_verdict() {
        let s = Summary::of(&[3.0, 1.0, 2.0, 10.0]);
        assert_eq!((s.min, s.median, s.mean, s.max), (1.0, 2.5, 4.0, 10.0));
        assert_eq!(Summary::of(&[5.0]).median, 5.0);
        // Clearly faster, tight baseline: GO.
        assert!(verdict(&[100.0, 101.0, 100.5], &[80.0, 81.0, 80.5]).go);
        // Faster, but within the baseline's noise: NO-GO.
        assert!(!verdict(&[100.0, 130.0, 115.0], &[105.0, 110.0, 100.0]).go);
        // Slower: NO-GO.
        let v = verdict(&[100.0, 100.0], &[120.0, 121.0]);
        assert!(!v.go && v.ratio > 1.0 && v.reason.contains("slower"));
    }
}
