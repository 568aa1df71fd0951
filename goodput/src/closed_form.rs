//! Expected wall-clock time of a run with exponential failures, in closed
//! form, and its decomposition into work, checkpoints, lost (recomputed)
//! work and restarts.
//!
//! # The model
//!
//! The run is `work_s` of useful work cut into segments of `interval_s`
//! (τ) of work, the last one shorter when τ does not divide the work. Every
//! segment ends with a checkpoint that stops training for `checkpoint_s`
//! (C); the last one too. Failures of the whole job arrive as a Poisson
//! process of rate λ (`failures_per_s`) while the job runs. A failure loses
//! the segment in progress (work and any partial checkpoint) and costs a
//! downtime before the segment starts again from the last checkpoint:
//!
//! - `immune_s` (R₀): detection and rescheduling, during which the job holds
//!   no running hardware, so no new failure can strike;
//! - `exposed_s` (R₁): initialization and checkpoint load, during which the
//!   job runs and a failure starts the whole downtime again.
//!
//! With X = τ + C, the expected time of one segment is
//!
//! ```text
//! E(X) = (e^{λX} − 1) · e^{λR₁} · (1/λ + R₀)
//! ```
//!
//! the exact result for exponential failures: each attempt of the segment
//! succeeds with probability e^{−λX}, so e^{λX} − 1 attempts fail in
//! expectation, each after (1/λ − X/(e^{λX} − 1)) on average; each failure
//! costs R₀ plus the expected time to get through R₁ uninterrupted,
//! (e^{λR₁} − 1)/λ, itself restarting R₀ on each of its e^{λR₁} − 1 failures.
//! With R₀ = 0 this is Daly's exact expression (J. T. Daly, "A higher order
//! estimate of the optimum checkpoint interval for restart dumps", Future
//! Generation Computer Systems 22 (2006) 303–312: the wall-clock time
//! T_w = M·e^{R/M}·(e^{(τ+δ)/M} − 1)·T_s/τ with M = 1/λ, δ = C, R = R₁,
//! for T_s/τ whole segments; I recalled this form and checked it against
//! the derivation above, the equation's number in the paper is not
//! verified here), where restarts can fail; with R₁ = 0 it is (1/λ + R)(e^{λ(τ+C)} − 1),
//! where they cannot. At λ = 0 it is X: no failures, work plus checkpoints.
//!
//! # Checkpoints that become durable later
//!
//! An asynchronous checkpoint is safe only once its persist ends, `d`
//! (`durability_delay_s`) after training resumes: a failure in those first
//! d seconds of the next segment loses that segment's progress *and* the
//! segment before, back to the last durable checkpoint. Counting from the
//! moment each checkpoint becomes durable, the run is a chain of windows:
//!
//! - after a restart (and at the start) the job redoes a whole segment and
//!   then d more before its checkpoint is durable: one window of X + d,
//!   whose expected time is E(X + d);
//! - otherwise a window runs from d into one segment to d into the next, X
//!   long, and a failure in it also costs the d already run plus the
//!   restart's window: (1 − e^{−λX})·(K + E(X + d)) with K = e^{λR₁}(1/λ +
//!   R₀), which is e^{λd}·E(X).
//!
//! So the first segment costs E(X + d) and every later one e^{λd}·E(X); the
//! interruptions and the downtime scale the same way. With d = 0 this is the
//! model above; at λ = 0 the run ends d after its last checkpoint's copy
//! (the wait for the last persist, counted with the checkpoints). The
//! factor e^{λd} does not depend on τ, so the optimal interval is the same.

use serde::Serialize;

use crate::error::{GoodputError, Problems};

/// The largest λ·X the closed form accepts; past it e^{λX} overflows.
const LARGEST_EXPONENT: f64 = 700.0;

/// The downtime after each failure, seconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Downtime {
    /// Detection and rescheduling: no failure can strike (R₀).
    pub immune_s: f64,
    /// Initialization and checkpoint load: a failure restarts the downtime (R₁).
    pub exposed_s: f64,
}

impl Downtime {
    /// Both parts together.
    pub fn total_s(&self) -> f64 {
        self.immune_s + self.exposed_s
    }
}

/// One run: how much work, how it is cut, what each failure costs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunModel {
    /// Useful work to finish, seconds of failure-free training.
    pub work_s: f64,
    /// Work between checkpoints (τ), seconds.
    pub interval_s: f64,
    /// Training time each checkpoint blocks (C), seconds.
    pub checkpoint_s: f64,
    /// The job's failure rate (λ), failures per second.
    pub failures_per_s: f64,
    /// The downtime after each failure.
    pub downtime: Downtime,
    /// Time after a checkpoint's blocking part until it is durable (d): the
    /// persist of an asynchronous checkpoint, 0 for a synchronous one.
    pub durability_delay_s: f64,
}

/// The run cut into segments: `full_segments` of τ and one of
/// `remainder_s` (absent when zero).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Segments {
    /// Segments of exactly τ of work.
    pub full_segments: u64,
    /// Work of the last, shorter segment (0 when τ divides the work).
    pub remainder_s: f64,
}

/// Expected times of a run, seconds, and its expected interruptions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ExpectedRun {
    /// Expected wall-clock time to finish.
    pub wall_clock_s: f64,
    /// Useful work (the input).
    pub work_s: f64,
    /// Checkpoints that completed.
    pub checkpoint_s: f64,
    /// Work and partial checkpoints lost to failures and done again.
    pub lost_work_s: f64,
    /// Downtime: detection, rescheduling, initialization, checkpoint load.
    pub restart_s: f64,
    /// Expected failures that interrupt the job (during work, checkpoints
    /// and the exposed part of restarts).
    pub interruptions: f64,
    /// work_s / wall_clock_s.
    pub goodput: f64,
}

impl RunModel {
    /// Checks every field, reporting all problems together.
    pub fn validate(&self) -> Result<(), GoodputError> {
        let mut problems = Problems::new();
        problems.positive("work_s", self.work_s);
        problems.positive("interval_s", self.interval_s);
        problems.non_negative("checkpoint_s", self.checkpoint_s);
        problems.non_negative("failures_per_s", self.failures_per_s);
        problems.non_negative("downtime.immune_s", self.downtime.immune_s);
        problems.non_negative("downtime.exposed_s", self.downtime.exposed_s);
        problems.non_negative("durability_delay_s", self.durability_delay_s);
        problems.finish()?;
        if self.work_s / self.interval_s > u64::MAX as f64 / 2.0 {
            return Err(crate::error::invalid(
                "interval_s",
                format!(
                    "{} s cuts {} s of work into too many segments",
                    self.interval_s, self.work_s
                ),
            ));
        }
        Ok(())
    }

    /// The run cut into segments.
    pub fn segments(&self) -> Segments {
        let full = (self.work_s / self.interval_s).floor();
        let remainder_s = (self.work_s - full * self.interval_s).max(0.0);
        // A remainder below a part in 10¹² of τ is rounding, not a segment.
        let remainder_s = if remainder_s <= self.interval_s * 1e-12 {
            0.0
        } else {
            remainder_s
        };
        Segments {
            full_segments: full as u64,
            remainder_s,
        }
    }

    /// Checks that the expected time is finite for a segment of `work_s`.
    pub(crate) fn check_finite(&self, segment_work_s: f64) -> Result<(), GoodputError> {
        let segment_s = segment_work_s + self.checkpoint_s + self.durability_delay_s;
        let exponent = self.failures_per_s * (segment_s + self.downtime.exposed_s);
        if exponent > LARGEST_EXPONENT {
            return Err(GoodputError::NeverFinishes {
                failures_per_s: self.failures_per_s,
                segment_s,
                exponent,
            });
        }
        Ok(())
    }
}

/// The expected-time parts of one window of `window_s` that must run
/// uninterrupted, after a restart or at the start: `segment_work_s` of it
/// is work, `window_s − segment_work_s` checkpoint (its blocking part and,
/// where the checkpoint becomes durable later, the delay).
fn fresh_window(model: &RunModel, segment_work_s: f64, window_s: f64) -> ExpectedRun {
    let lambda = model.failures_per_s;
    let r0 = model.downtime.immune_s;
    let r1 = model.downtime.exposed_s;
    let (lost_work_s, restart_s, interruptions) = if lambda == 0.0 {
        (0.0, 0.0, 0.0)
    } else {
        let failed_attempts = (lambda * window_s).exp_m1();
        let lost = (failed_attempts / lambda - window_s).max(0.0);
        let per_failure_restart = r0 * (lambda * r1).exp() + (lambda * r1).exp_m1() / lambda;
        let interruptions = failed_attempts * (lambda * r1).exp();
        (lost, failed_attempts * per_failure_restart, interruptions)
    };
    let wall_clock_s = window_s + lost_work_s + restart_s;
    ExpectedRun {
        wall_clock_s,
        work_s: segment_work_s,
        checkpoint_s: window_s - segment_work_s,
        lost_work_s,
        restart_s,
        interruptions,
        goodput: segment_work_s / wall_clock_s,
    }
}

/// The expected-time parts of a segment of `segment_work_s` of work that
/// follows a durable checkpoint: e^{λd} × those of a fresh window of X.
fn steady_segment(model: &RunModel, segment_work_s: f64) -> ExpectedRun {
    let x = segment_work_s + model.checkpoint_s;
    let fresh = fresh_window(model, segment_work_s, x);
    let scale = (model.failures_per_s * model.durability_delay_s).exp();
    if scale == 1.0 {
        return fresh;
    }
    let wall_clock_s = scale * fresh.wall_clock_s;
    let restart_s = scale * fresh.restart_s;
    ExpectedRun {
        wall_clock_s,
        lost_work_s: wall_clock_s - x - restart_s,
        restart_s,
        interruptions: scale * fresh.interruptions,
        goodput: segment_work_s / wall_clock_s,
        ..fresh
    }
}

/// The first segment of `segment_work_s`: X + d before its checkpoint is durable.
fn first_segment(model: &RunModel, segment_work_s: f64) -> ExpectedRun {
    let window_s = segment_work_s + model.checkpoint_s + model.durability_delay_s;
    fresh_window(model, segment_work_s, window_s)
}

/// Expected wall-clock time of one segment of τ + C after a durable
/// checkpoint: e^{λd}·E(X), the E(X) above when d = 0.
pub fn expected_segment_s(model: &RunModel) -> Result<f64, GoodputError> {
    model.validate()?;
    model.check_finite(model.interval_s)?;
    Ok(steady_segment(model, model.interval_s).wall_clock_s)
}

impl std::ops::AddAssign for ExpectedRun {
    /// Sums every part but the goodput, which the caller sets from the total.
    fn add_assign(&mut self, other: ExpectedRun) {
        self.wall_clock_s += other.wall_clock_s;
        self.work_s += other.work_s;
        self.checkpoint_s += other.checkpoint_s;
        self.lost_work_s += other.lost_work_s;
        self.restart_s += other.restart_s;
        self.interruptions += other.interruptions;
    }
}

impl ExpectedRun {
    /// `self` `count` times over (every part but the goodput).
    fn times(self, count: f64) -> ExpectedRun {
        ExpectedRun {
            wall_clock_s: count * self.wall_clock_s,
            work_s: count * self.work_s,
            checkpoint_s: count * self.checkpoint_s,
            lost_work_s: count * self.lost_work_s,
            restart_s: count * self.restart_s,
            interruptions: count * self.interruptions,
            goodput: 0.0,
        }
    }
}

/// Expected wall-clock time of the whole run and its decomposition: the
/// first segment from the start, every other one after a durable checkpoint.
pub fn expected_run(model: &RunModel) -> Result<ExpectedRun, GoodputError> {
    model.validate()?;
    let segments = model.segments();
    model.check_finite(model.interval_s.min(model.work_s))?;
    let mut total = if segments.full_segments == 0 {
        first_segment(model, segments.remainder_s)
    } else {
        let mut total = first_segment(model, model.interval_s);
        let later = (segments.full_segments - 1) as f64;
        if later > 0.0 {
            total += steady_segment(model, model.interval_s).times(later);
        }
        if segments.remainder_s > 0.0 {
            total += steady_segment(model, segments.remainder_s);
        }
        total
    };
    total.goodput = model.work_s / total.wall_clock_s;
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(lambda: f64) -> RunModel {
        RunModel {
            work_s: 1000.0,
            interval_s: 100.0,
            checkpoint_s: 10.0,
            failures_per_s: lambda,
            downtime: Downtime {
                immune_s: 30.0,
                exposed_s: 20.0,
            },
            durability_delay_s: 0.0,
        }
    }

    #[test]
    fn no_failures_is_work_plus_checkpoints() {
        let run = expected_run(&model(0.0)).unwrap();
        assert_eq!(run.wall_clock_s, 1000.0 + 10.0 * 10.0);
        assert_eq!(run.interruptions, 0.0);
    }

    #[test]
    fn the_parts_add_up_to_the_whole() {
        let run = expected_run(&model(1e-3)).unwrap();
        let parts = run.work_s + run.checkpoint_s + run.lost_work_s + run.restart_s;
        assert!((parts - run.wall_clock_s).abs() < 1e-9 * run.wall_clock_s);
        // E(X) = (e^{λX} − 1) e^{λR₁} (1/λ + R₀) per segment, 10 segments.
        let lambda: f64 = 1e-3;
        let e = (lambda * 110.0).exp_m1() * (lambda * 20.0).exp() * (1.0 / lambda + 30.0);
        assert!((run.wall_clock_s - 10.0 * e).abs() < 1e-9 * run.wall_clock_s);
    }

    #[test]
    fn reduces_to_daly_when_restarts_can_fail() {
        let mut m = model(1.0 / 3600.0);
        m.downtime = Downtime {
            immune_s: 0.0,
            exposed_s: 300.0,
        };
        let big_m = 3600.0_f64;
        let daly = big_m * (300.0 / big_m).exp() * ((110.0 / big_m).exp() - 1.0) * 1000.0 / 100.0;
        let run = expected_run(&m).unwrap();
        assert!((run.wall_clock_s - daly).abs() < 1e-9 * daly);
    }

    #[test]
    fn a_checkpoint_durable_later_costs_the_first_window_and_e_to_the_lambda_d() {
        let lambda: f64 = 1e-3;
        let mut m = model(lambda);
        m.durability_delay_s = 40.0;
        let run = expected_run(&m).unwrap();
        // K = e^{λR₁}(1/λ + R₀); the first segment E(X + d) = K(e^{λ(110 + 40)} − 1),
        // the other nine e^{λ·40}·K(e^{λ·110} − 1).
        let k = (lambda * 20.0).exp() * (1.0 / lambda + 30.0);
        let first = k * (lambda * 150.0).exp_m1();
        let later = 9.0 * (lambda * 40.0).exp() * k * (lambda * 110.0).exp_m1();
        assert!((run.wall_clock_s - (first + later)).abs() < 1e-9 * run.wall_clock_s);
        let parts = run.work_s + run.checkpoint_s + run.lost_work_s + run.restart_s;
        assert!((parts - run.wall_clock_s).abs() < 1e-9 * run.wall_clock_s);
        // Counting the checkpoint safe at the copy's end is optimistic.
        m.durability_delay_s = 0.0;
        assert!(expected_run(&m).unwrap().wall_clock_s < run.wall_clock_s);
        // Without failures the run ends with the wait for the last persist.
        let mut calm = model(0.0);
        calm.durability_delay_s = 40.0;
        assert_eq!(
            expected_run(&calm).unwrap().wall_clock_s,
            1000.0 + 10.0 * 10.0 + 40.0
        );
    }

    #[test]
    fn a_remainder_segment_is_counted() {
        let mut m = model(0.0);
        m.work_s = 1050.0;
        let run = expected_run(&m).unwrap();
        assert_eq!(m.segments().full_segments, 10);
        assert_eq!(run.wall_clock_s, 1050.0 + 11.0 * 10.0);
    }

    #[test]
    fn hopeless_runs_and_bad_inputs_are_errors() {
        let mut m = model(1.0);
        m.interval_s = 1000.0;
        assert!(matches!(
            expected_run(&m),
            Err(GoodputError::NeverFinishes { .. })
        ));
        let mut bad = model(f64::NAN);
        bad.interval_s = 0.0;
        let text = expected_run(&bad).unwrap_err().to_string();
        assert!(
            text.contains("interval_s") && text.contains("failures_per_s"),
            "{text}"
        );
    }
}
