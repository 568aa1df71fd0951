//! How the times between a job's failures are distributed, for the
//! Monte-Carlo ([`crate::monte_carlo`]).
//!
//! - **Exponential** (the default): failures as a Poisson process of the
//!   job's rate λ, the assumption of the closed form and of Young's and
//!   Daly's intervals.
//! - **Weibull of shape k** with the same mean 1/λ: a renewal process whose
//!   clock restarts at every failure. Schroeder and Gibson, "A Large-Scale
//!   Study of Failures in High-Performance Computing Systems" (DSN 2006;
//!   IEEE TDSC 7(4), 2010; 23,000 failures on 22 LANL systems), abstract:
//!   "time between failures is modeled well by a Weibull distribution with
//!   decreasing hazard rate", i.e. k < 1: failures cluster, and a job that
//!   just restarted is likelier to fail again soon. The paper's fitted
//!   shapes were not read here as text, so no shape is defaulted: give your
//!   cluster's.
//!
//! The failure clock runs while the job holds its nodes: through training,
//! checkpoints and the exposed part of a restart (R₁), not through the
//! immune part (R₀), as the exponential trials count it.

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Weibull};
use serde::Serialize;

use crate::error::{invalid, GoodputError};

/// The smallest and largest Weibull shape accepted: below 0.1 the
/// variance exceeds 10⁵ times the squared mean, above 10 failures come
/// nearly periodically; neither is a failure model studies fit.
pub const SHAPE_RANGE: (f64, f64) = (0.1, 10.0);

/// The distribution of the times between failures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FailureDistribution {
    /// Exponential: a constant hazard (memoryless).
    #[default]
    Exponential,
    /// Weibull of this shape and the job's mean time between failures.
    Weibull { shape: f64 },
}

impl FailureDistribution {
    /// Parses `exponential` or `weibull:K`.
    pub fn parse(text: &str) -> Result<FailureDistribution, String> {
        if text == "exponential" {
            return Ok(FailureDistribution::Exponential);
        }
        let shape = text
            .strip_prefix("weibull:")
            .ok_or_else(|| format!("expected 'exponential' or 'weibull:K', got '{text}'"))?;
        let shape: f64 = shape
            .parse()
            .map_err(|_| format!("weibull:K needs a number K, got '{shape}'"))?;
        let (low, high) = SHAPE_RANGE;
        if !(shape.is_finite() && (low..=high).contains(&shape)) {
            return Err(format!(
                "weibull:K needs a shape K within [{low}, {high}], got {shape}"
            ));
        }
        Ok(FailureDistribution::Weibull { shape })
    }

    /// Checks a Weibull shape is finite and within [`SHAPE_RANGE`].
    pub fn check(self) -> Result<(), GoodputError> {
        match self {
            FailureDistribution::Exponential => Ok(()),
            FailureDistribution::Weibull { shape } => {
                let (low, high) = SHAPE_RANGE;
                if shape.is_finite() && (low..=high).contains(&shape) {
                    Ok(())
                } else {
                    Err(invalid(
                        "monte_carlo.failure_distribution.shape",
                        format!("must be within [{low}, {high}], got {shape}"),
                    ))
                }
            }
        }
    }

    /// How a report names it.
    pub fn label(self) -> String {
        match self {
            FailureDistribution::Exponential => "exponential".to_string(),
            FailureDistribution::Weibull { shape } => format!("Weibull (shape {shape})"),
        }
    }
}

/// Draws times between failures of mean 1/λ.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FailureSampler {
    /// λ = 0: never.
    Never,
    Exponential {
        failures_per_s: f64,
    },
    Weibull(Weibull<f64>),
}

impl FailureSampler {
    /// The sampler of `distribution` at `failures_per_s` (checked).
    pub fn new(distribution: FailureDistribution, failures_per_s: f64) -> FailureSampler {
        if failures_per_s == 0.0 {
            return FailureSampler::Never;
        }
        match distribution {
            FailureDistribution::Exponential => FailureSampler::Exponential { failures_per_s },
            FailureDistribution::Weibull { shape } => {
                // Mean = scale · Γ(1 + 1/k).
                let scale = 1.0 / failures_per_s / libm::tgamma(1.0 + 1.0 / shape);
                FailureSampler::Weibull(
                    Weibull::new(scale, shape).expect("a checked shape and a positive scale"),
                )
            }
        }
    }

    /// One time between failures, seconds.
    pub fn sample(&self, rng: &mut ChaCha8Rng) -> f64 {
        match self {
            FailureSampler::Never => f64::INFINITY,
            FailureSampler::Exponential { failures_per_s } => {
                // random::<f64>() is in [0, 1), so 1 − u is in (0, 1] and ln is finite.
                let u: f64 = rng.random();
                -(1.0 - u).ln() / failures_per_s
            }
            FailureSampler::Weibull(weibull) => weibull.sample(rng),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn parses_both_and_refuses_what_it_cannot_sample() {
        assert_eq!(
            FailureDistribution::parse("exponential"),
            Ok(FailureDistribution::Exponential)
        );
        assert_eq!(
            FailureDistribution::parse("weibull:0.7"),
            Ok(FailureDistribution::Weibull { shape: 0.7 })
        );
        for bad in [
            "weibull:0",
            "weibull:-1",
            "weibull:NaN",
            "weibull:11",
            "weibull:",
            "gamma:2",
        ] {
            assert!(FailureDistribution::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn weibull_samples_keep_the_jobs_mean_time_between_failures() {
        // 200,000 samples at a 3-hour MTBF: the mean within four standard
        // errors for every shape; their spread is the shape's (coefficient
        // of variation √(Γ(1+2/k)/Γ(1+1/k)² − 1): 2.236 at k = 0.5, 1.462
        // at 0.7, 1 for the exponential, 0.523 at 2).
        let mtbf_s = 3.0 * 3600.0;
        for (shape, cv) in [(0.5, 2.236), (0.7, 1.462), (1.0, 1.0), (2.0, 0.523)] {
            let sampler = FailureSampler::new(FailureDistribution::Weibull { shape }, 1.0 / mtbf_s);
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            let n = 200_000;
            let samples: Vec<f64> = (0..n).map(|_| sampler.sample(&mut rng)).collect();
            let mean = samples.iter().sum::<f64>() / n as f64;
            let standard_error = cv * mtbf_s / (n as f64).sqrt();
            assert!(
                (mean - mtbf_s).abs() < 4.0 * standard_error,
                "shape {shape}: {mean}"
            );
            let variance = samples.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / n as f64;
            let sampled_cv = variance.sqrt() / mean;
            assert!(
                (sampled_cv / cv - 1.0).abs() < 0.05,
                "shape {shape}: {sampled_cv}"
            );
        }
    }
}
