//! A deterministic, seeded Monte-Carlo of the run, segment by segment, to
//! cross-check the closed form and give the spread of the wall-clock time.
//!
//! Each trial replays the model of [`crate::closed_form`]: segments of τ of
//! work plus a checkpoint C, failures as a Poisson process of rate λ, a
//! failure losing the work since the last durable checkpoint and costing R₀
//! (immune) then R₁ (exposed: a failure there starts the downtime again).
//! A checkpoint is durable d after its blocking part: at the start and after
//! each restart the job must run X + d uninterrupted (the segment again and
//! d into the next); after that, windows of X from d into one segment to d
//! into the next.
//!
//! Under a Weibull distribution of the times between failures
//! ([`crate::failure_distribution`]) the failures are a renewal process
//! instead: each trial carries the time left until the next failure across
//! windows and restarts, and draws a new one at each failure.
//!
//! # Cost
//!
//! A trial does not step through time or through segments one by one. The
//! failure-free stretch is one exponential sample t: by memorylessness the
//! first ⌊t/X⌋ windows of X = τ + C complete and the failure falls at
//! t − X·⌊t/X⌋ into the next (a renewal trial takes its carried time the
//! same way). So a trial costs O(its failures), not O(its segments). The total is bounded: at most [`MAX_TRIALS`] trials and
//! at most [`FAILURE_BUDGET`] failures expected over all trials, checked
//! from the closed form before sampling ([`GoodputError::TooCostly`]).
//!
//! # Determinism
//!
//! One `ChaCha8Rng::seed_from_u64(seed)` drives every trial in order, on one
//! thread; the same inputs and seed give bit-identical results.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::closed_form::{expected_run, RunModel};
use crate::error::{invalid, GoodputError};
use crate::failure_distribution::{FailureDistribution, FailureSampler};

/// The most trials one call may run.
pub const MAX_TRIALS: u32 = 100_000;

/// The most failures all trials together may be expected to sample.
pub const FAILURE_BUDGET: u64 = 50_000_000;

/// What the trials found: the wall-clock time's mean and percentiles, and
/// the interruptions per run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MonteCarloSummary {
    /// Trials run.
    pub trials: u32,
    /// The seed of the generator.
    pub seed: u64,
    /// The distribution of the times between failures sampled.
    pub failure_distribution: FailureDistribution,
    /// Mean wall-clock time, seconds.
    pub mean_wall_clock_s: f64,
    /// Standard error of that mean, seconds.
    pub standard_error_s: f64,
    /// 10th percentile of wall-clock time, seconds (nearest rank).
    pub p10_wall_clock_s: f64,
    /// Median wall-clock time, seconds.
    pub p50_wall_clock_s: f64,
    /// 90th percentile of wall-clock time, seconds.
    pub p90_wall_clock_s: f64,
    /// Mean interruptions per run.
    pub mean_interruptions: f64,
    /// Fewest interruptions in a trial.
    pub min_interruptions: u64,
    /// Most interruptions in a trial.
    pub max_interruptions: u64,
}

/// One trial's outcome.
struct Trial {
    wall_clock_s: f64,
    interruptions: u64,
}

/// An exponential sample of rate λ (infinite when λ = 0).
fn exponential(rng: &mut ChaCha8Rng, failures_per_s: f64) -> f64 {
    FailureSampler::new(FailureDistribution::Exponential, failures_per_s).sample(rng)
}

/// The downtime after a failure: R₀, then R₁ that a failure restarts.
fn restart(model: &RunModel, rng: &mut ChaCha8Rng, trial: &mut Trial) {
    loop {
        trial.wall_clock_s += model.downtime.immune_s;
        let t = exponential(rng, model.failures_per_s);
        if t >= model.downtime.exposed_s {
            trial.wall_clock_s += model.downtime.exposed_s;
            return;
        }
        trial.wall_clock_s += t;
        trial.interruptions += 1;
    }
}

/// Where a trial stands: whether the last durable checkpoint is a segment's
/// start (after a restart, or at the start of the run), so the next window
/// is X + d, or d into a segment.
struct Progress {
    fresh: bool,
}

/// `count` segments of `segment_s` (work + checkpoint) each.
fn run_segments(
    model: &RunModel,
    count: u64,
    segment_s: f64,
    progress: &mut Progress,
    rng: &mut ChaCha8Rng,
    trial: &mut Trial,
) {
    let delay_s = model.durability_delay_s;
    let mut remaining = count;
    while remaining > 0 {
        let t = exponential(rng, model.failures_per_s);
        // Without a delay a fresh window is an ordinary one (and the
        // samples fall as they always did).
        if progress.fresh && delay_s > 0.0 {
            if t >= segment_s + delay_s {
                trial.wall_clock_s += segment_s + delay_s;
                remaining -= 1;
                progress.fresh = false;
                continue;
            }
        } else {
            let completed = t / segment_s;
            if completed >= remaining as f64 {
                trial.wall_clock_s += remaining as f64 * segment_s;
                return;
            }
            // completed < remaining ≤ u64::MAX, so the cast is exact enough.
            remaining -= completed.floor() as u64;
        }
        trial.wall_clock_s += t;
        trial.interruptions += 1;
        restart(model, rng, trial);
        progress.fresh = true;
    }
}

fn one_trial(model: &RunModel, rng: &mut ChaCha8Rng) -> Trial {
    let segments = model.segments();
    let mut trial = Trial {
        wall_clock_s: 0.0,
        interruptions: 0,
    };
    let mut progress = Progress { fresh: true };
    run_segments(
        model,
        segments.full_segments,
        model.interval_s + model.checkpoint_s,
        &mut progress,
        rng,
        &mut trial,
    );
    if segments.remainder_s > 0.0 {
        run_segments(
            model,
            1,
            segments.remainder_s + model.checkpoint_s,
            &mut progress,
            rng,
            &mut trial,
        );
    }
    trial
}

/// A renewal trial's state: the trial so far, the failure clock (time the
/// job may still hold its nodes before the next failure), and whether the
/// last durable checkpoint is a segment's start.
struct Renewal<'a> {
    trial: Trial,
    until_failure_s: f64,
    fresh: bool,
    sampler: &'a FailureSampler,
}

impl Renewal<'_> {
    /// Records a failure `at_s` into what is running and draws the next.
    fn fail(&mut self, at_s: f64, rng: &mut ChaCha8Rng) {
        self.trial.wall_clock_s += at_s;
        self.trial.interruptions += 1;
        self.until_failure_s = self.sampler.sample(rng);
    }

    /// R₀ off the clock, then R₁ on it, again after each failure in R₁.
    fn restart(&mut self, model: &RunModel, rng: &mut ChaCha8Rng) {
        loop {
            self.trial.wall_clock_s += model.downtime.immune_s;
            let exposed_s = model.downtime.exposed_s;
            if self.until_failure_s >= exposed_s {
                self.trial.wall_clock_s += exposed_s;
                self.until_failure_s -= exposed_s;
                return;
            }
            self.fail(self.until_failure_s, rng);
        }
    }

    /// `count` segments of `segment_s` (work + checkpoint) each, as
    /// [`run_segments`] runs them, on the carried clock.
    fn run_segments(&mut self, model: &RunModel, count: u64, segment_s: f64, rng: &mut ChaCha8Rng) {
        let delay_s = model.durability_delay_s;
        let mut remaining = count;
        while remaining > 0 {
            let t = self.until_failure_s;
            if self.fresh && delay_s > 0.0 {
                let window_s = segment_s + delay_s;
                if t >= window_s {
                    self.trial.wall_clock_s += window_s;
                    self.until_failure_s -= window_s;
                    remaining -= 1;
                    self.fresh = false;
                    continue;
                }
            } else {
                let completed = t / segment_s;
                if completed >= remaining as f64 {
                    let run_s = remaining as f64 * segment_s;
                    self.trial.wall_clock_s += run_s;
                    self.until_failure_s -= run_s;
                    return;
                }
                remaining -= completed.floor() as u64;
            }
            self.fail(t, rng);
            self.restart(model, rng);
            self.fresh = true;
        }
    }
}

/// One trial under a renewal process of `sampler`'s times between failures.
fn one_renewal_trial(model: &RunModel, sampler: &FailureSampler, rng: &mut ChaCha8Rng) -> Trial {
    let segments = model.segments();
    let mut renewal = Renewal {
        trial: Trial {
            wall_clock_s: 0.0,
            interruptions: 0,
        },
        until_failure_s: sampler.sample(rng),
        fresh: true,
        sampler,
    };
    let checkpoint_s = model.checkpoint_s;
    let full_s = model.interval_s + checkpoint_s;
    renewal.run_segments(model, segments.full_segments, full_s, rng);
    if segments.remainder_s > 0.0 {
        renewal.run_segments(model, 1, segments.remainder_s + checkpoint_s, rng);
    }
    renewal.trial
}

/// Nearest-rank percentile of sorted values, `fraction` in (0, 1].
fn percentile(sorted: &[f64], fraction: f64) -> f64 {
    let rank = (fraction * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs `trials` trials of `model` from `seed`, the times between failures
/// drawn from `distribution` (exponential trials use memorylessness,
/// others carry their failure clock).
pub fn monte_carlo(
    model: &RunModel,
    trials: u32,
    seed: u64,
    distribution: FailureDistribution,
) -> Result<MonteCarloSummary, GoodputError> {
    distribution.check()?;
    if trials == 0 || trials > MAX_TRIALS {
        return Err(invalid(
            "monte_carlo.trials",
            format!("must be within [1, {MAX_TRIALS}], got {trials}"),
        ));
    }
    let expected = expected_run(model)?;
    if expected.interruptions * f64::from(trials) > FAILURE_BUDGET as f64 {
        return Err(GoodputError::TooCostly {
            trials,
            expected_failures_per_trial: expected.interruptions,
            budget: FAILURE_BUDGET,
        });
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut walls = Vec::with_capacity(trials as usize);
    let mut interruptions = Vec::with_capacity(trials as usize);
    let sampler = FailureSampler::new(distribution, model.failures_per_s);
    for _ in 0..trials {
        let trial = match distribution {
            FailureDistribution::Exponential => one_trial(model, &mut rng),
            FailureDistribution::Weibull { .. } => one_renewal_trial(model, &sampler, &mut rng),
        };
        walls.push(trial.wall_clock_s);
        interruptions.push(trial.interruptions);
    }
    let n = f64::from(trials);
    let mean = walls.iter().sum::<f64>() / n;
    let variance = if trials > 1 {
        walls.iter().map(|w| (w - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    let mean_interruptions = interruptions.iter().map(|&i| i as f64).sum::<f64>() / n;
    walls.sort_by(f64::total_cmp);
    Ok(MonteCarloSummary {
        trials,
        seed,
        failure_distribution: distribution,
        mean_wall_clock_s: mean,
        standard_error_s: (variance / n).sqrt(),
        p10_wall_clock_s: percentile(&walls, 0.10),
        p50_wall_clock_s: percentile(&walls, 0.50),
        p90_wall_clock_s: percentile(&walls, 0.90),
        mean_interruptions,
        min_interruptions: interruptions.iter().copied().min().unwrap_or(0),
        max_interruptions: interruptions.iter().copied().max().unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::closed_form::Downtime;

    fn model(lambda: f64) -> RunModel {
        RunModel {
            work_s: 100_000.0,
            interval_s: 600.0,
            checkpoint_s: 30.0,
            failures_per_s: lambda,
            downtime: Downtime {
                immune_s: 120.0,
                exposed_s: 60.0,
            },
            durability_delay_s: 0.0,
        }
    }

    #[test]
    fn no_failures_gives_exactly_work_plus_checkpoints() {
        let summary = monte_carlo(&model(0.0), 10, 1, FailureDistribution::Exponential).unwrap();
        let expected = expected_run(&model(0.0)).unwrap().wall_clock_s;
        assert_eq!(summary.mean_wall_clock_s, expected);
        assert_eq!(summary.max_interruptions, 0);
    }

    #[test]
    fn the_same_seed_gives_the_same_numbers() {
        let a = monte_carlo(&model(1e-4), 200, 7, FailureDistribution::Exponential).unwrap();
        let b = monte_carlo(&model(1e-4), 200, 7, FailureDistribution::Exponential).unwrap();
        assert_eq!(a, b);
        let c = monte_carlo(&model(1e-4), 200, 8, FailureDistribution::Exponential).unwrap();
        assert_ne!(a.mean_wall_clock_s, c.mean_wall_clock_s);
    }

    #[test]
    fn trial_counts_are_bounded() {
        assert!(monte_carlo(&model(1e-4), 0, 1, FailureDistribution::Exponential).is_err());
        assert!(monte_carlo(
            &model(1e-4),
            MAX_TRIALS + 1,
            1,
            FailureDistribution::Exponential
        )
        .is_err());
        let mut costly = model(1e-2);
        costly.work_s = 1e9;
        costly.interval_s = 10.0;
        assert!(matches!(
            monte_carlo(&costly, 1000, 1, FailureDistribution::Exponential),
            Err(GoodputError::TooCostly { .. })
        ));
    }
}
