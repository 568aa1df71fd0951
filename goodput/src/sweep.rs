//! Series for charts: expected time to train against the checkpoint
//! interval, and against the GPU count (with the iteration time at each
//! count supplied by the caller, e.g. from the simulator). Closed form only,
//! so a series of hundreds of points costs microseconds.

use serde::Serialize;

use crate::closed_form::expected_run;
use crate::error::{GoodputError, Problems};
use crate::plan::{choose_interval, model_at, resolve_plan, RunPlan};

/// One point of expected time against checkpoint interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct IntervalPoint {
    /// Work between checkpoints, seconds.
    pub interval_s: f64,
    /// Expected wall-clock time, seconds.
    pub expected_wall_clock_s: f64,
    /// Useful time / expected wall-clock.
    pub goodput: f64,
    /// Expected interruptions.
    pub interruptions: f64,
}

/// The plan's expected time at each interval in `intervals_s` (seconds of
/// work; each must be positive), in the order given.
pub fn by_interval(
    plan: &RunPlan,
    intervals_s: &[f64],
) -> Result<Vec<IntervalPoint>, GoodputError> {
    let mut problems = Problems::new();
    for (i, &tau) in intervals_s.iter().enumerate() {
        problems.positive(&format!("intervals_s[{i}]"), tau);
    }
    problems.finish()?;
    let resolved = resolve_plan(plan)?;
    intervals_s
        .iter()
        .map(|&tau| {
            let run = expected_run(&model_at(&resolved, tau.min(resolved.work_s)))?;
            Ok(IntervalPoint {
                interval_s: tau,
                expected_wall_clock_s: run.wall_clock_s,
                goodput: run.goodput,
                interruptions: run.interruptions,
            })
        })
        .collect()
}

/// A GPU count and the failure-free iteration time at that count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ScaleInput {
    /// GPUs (a whole number of the plan's nodes).
    pub gpus: u64,
    /// Failure-free iteration time at that count, seconds.
    pub iteration_time_s: f64,
    /// Bytes per rank at that count, when it differs from the plan's
    /// (ZeRO shards shrink as data parallelism grows).
    pub checkpoint_bytes_per_rank: Option<u64>,
}

/// One point of expected time against GPU count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ScalePoint {
    /// GPUs.
    pub gpus: u64,
    /// Failure-free training time, seconds.
    pub useful_time_s: f64,
    /// The checkpoint interval used (the plan's choice at this count), s.
    pub interval_s: f64,
    /// Expected wall-clock time, seconds.
    pub expected_wall_clock_s: f64,
    /// Useful time / expected wall-clock.
    pub goodput: f64,
    /// Expected interruptions.
    pub interruptions: f64,
    /// GPUs × expected wall-clock hours.
    pub gpu_hours: f64,
}

/// The plan at each GPU count of `points`, everything else kept, in the
/// order given. The interval follows the plan's choice at each count.
pub fn by_gpu_count(
    plan: &RunPlan,
    points: &[ScaleInput],
) -> Result<Vec<ScalePoint>, GoodputError> {
    points
        .iter()
        .map(|point| {
            let mut at = plan.clone();
            at.gpus = point.gpus;
            at.iteration_time_s = point.iteration_time_s;
            if let Some(bytes) = point.checkpoint_bytes_per_rank {
                at.checkpoint_bytes_per_rank = bytes;
            }
            let resolved = resolve_plan(&at)?;
            let interval = choose_interval(&at, &resolved)?;
            let run = expected_run(&model_at(&resolved, interval.chosen_s))?;
            Ok(ScalePoint {
                gpus: point.gpus,
                useful_time_s: resolved.work_s,
                interval_s: interval.chosen_s,
                expected_wall_clock_s: run.wall_clock_s,
                goodput: run.goodput,
                interruptions: run.interruptions,
                gpu_hours: point.gpus as f64 * run.wall_clock_s / 3600.0,
            })
        })
        .collect()
}
