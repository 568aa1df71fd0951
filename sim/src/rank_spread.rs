//! A spread of GPU speeds (issue 35 item 4, "a distribution of per-rank
//! slowdowns"): no two GPUs of a large cluster run at the same clock under
//! the same power cap and cooling, and a synchronous step waits for the
//! slowest. Each rank's compute kernels take the profile's time × a factor
//! drawn from a log-normal distribution of median 1 and log-scale σ (the
//! profile's GPU is taken as the median one). The draw is a seeded ChaCha8
//! stream in rank order, so a rank keeps its factor whatever the layout and
//! the same seed gives the same bytes. The factors then act as slow ranks'
//! do ([`crate::straggler`]): the replicas differ, so every rank is simulated.
//!
//! The spread's width is the user's: no default is set, for no measured
//! spread of training-step speed across the GPUs of one cluster was found as
//! text (docs/dev/goodput.md).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::straggler::StragglerError;

/// The widest log-scale σ accepted. A Box–Muller draw from 53-bit uniforms
/// is at most √(−2 ln 2⁻⁵³) = 8.57 standard deviations out, so at σ = 0.5
/// no factor leaves [e^−4.29, e^4.29] = [0.014, 73], inside the slow ranks'
/// bound of 100.
pub const MAX_SIGMA: f64 = 0.5;

/// A log-normal spread of kernel-time factors, median 1.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct RankSpread {
    /// The standard deviation of ln(factor).
    pub sigma: f64,
}

/// A spread drawn for one run: each rank's factor, by rank.
#[derive(Debug, Clone, PartialEq)]
pub struct DrawnSpread {
    pub spread: RankSpread,
    pub seed: u64,
    factors: Vec<f64>,
}

impl RankSpread {
    /// A log-normal spread of log-scale `sigma`, finite and in (0, [`MAX_SIGMA`]].
    pub fn lognormal(sigma: f64) -> Result<RankSpread, StragglerError> {
        if !(sigma.is_finite() && sigma > 0.0 && sigma <= MAX_SIGMA) {
            return Err(StragglerError::Spread { sigma });
        }
        Ok(RankSpread { sigma })
    }

    /// The factors of ranks 0..`gpus`, drawn in rank order from `seed`.
    pub fn draw(&self, gpus: u32, seed: u64) -> DrawnSpread {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let factors = (0..gpus)
            .map(|_| (self.sigma * standard_normal(&mut rng)).exp())
            .collect();
        DrawnSpread {
            spread: *self,
            seed,
            factors,
        }
    }
}

/// One standard normal draw (Box–Muller, the cosine half; the uniform
/// feeding the logarithm is taken in (0, 1], so it is never ln 0).
fn standard_normal(rng: &mut ChaCha8Rng) -> f64 {
    let radius_u = 1.0 - rng.random::<f64>();
    let angle_u = rng.random::<f64>();
    (-2.0 * radius_u.ln()).sqrt() * (std::f64::consts::TAU * angle_u).cos()
}

impl DrawnSpread {
    /// Rank `rank`'s factor.
    pub fn factor(&self, rank: u32) -> f64 {
        self.factors[rank as usize]
    }

    /// Every rank's factor, by rank.
    pub fn factors(&self) -> &[f64] {
        &self.factors
    }

    /// The slowest rank and its factor (the lowest rank of equals).
    pub fn slowest(&self) -> (u32, f64) {
        self.extreme(|candidate, best| candidate > best)
    }

    /// The fastest rank and its factor (the lowest rank of equals).
    pub fn fastest(&self) -> (u32, f64) {
        self.extreme(|candidate, best| candidate < best)
    }

    fn extreme(&self, beats: impl Fn(f64, f64) -> bool) -> (u32, f64) {
        let mut best = (0, self.factors[0]);
        for (rank, &factor) in self.factors.iter().enumerate().skip(1) {
            if beats(factor, best.1) {
                best = (rank as u32, factor);
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_draw_has_the_asked_median_and_width_and_repeats_with_its_seed() {
        let spread = RankSpread::lognormal(0.05).unwrap();
        let drawn = spread.draw(20_000, 7);
        assert_eq!(drawn, spread.draw(20_000, 7));
        assert_ne!(drawn.factors(), spread.draw(20_000, 8).factors());
        // A rank keeps its factor whatever the layout's size.
        assert_eq!(&drawn.factors()[..100], spread.draw(100, 7).factors());
        let logs: Vec<f64> = drawn.factors().iter().map(|f| f.ln()).collect();
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let sd = (logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        // Standard errors: σ/√n = 0.00035 for the mean, σ/√(2n) = 0.00025 for sd.
        assert!(mean.abs() < 4.0 * 0.05 / n.sqrt(), "mean of ln {mean}");
        assert!(
            (sd - 0.05).abs() < 4.0 * 0.05 / (2.0 * n).sqrt(),
            "sd of ln {sd}"
        );
        let (slow_rank, slow) = drawn.slowest();
        let (_, fast) = drawn.fastest();
        assert_eq!(drawn.factor(slow_rank), slow);
        assert!(drawn.factors().iter().all(|&f| fast <= f && f <= slow));
        assert!(slow > 1.15 && fast < 1.0 / 1.15, "{fast}..{slow}");
    }

    #[test]
    fn widths_outside_the_bound_are_refused() {
        for sigma in [0.0, -0.1, 0.51, f64::NAN, f64::INFINITY] {
            assert!(
                matches!(
                    RankSpread::lognormal(sigma),
                    Err(StragglerError::Spread { .. })
                ),
                "{sigma}"
            );
        }
        assert!(RankSpread::lognormal(MAX_SIGMA).is_ok());
    }
}
