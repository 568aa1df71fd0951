//! Lines up two timelines of the same task graph (simulated vs measured, or
//! two runs) and says how far apart they are: iteration time, bubble fraction
//! and the tasks whose durations differ most. Per-kind median tables live in
//! `reports` (`comparison_table`), which draws them too.

use crate::metrics;
use crate::{Timeline, TimelineError};
use serde::Serialize;

/// One task whose duration differs between the two timelines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskDifference {
    pub id: u32,
    pub kind: String,
    pub stage: u32,
    pub microbatch: Option<u32>,
    pub reference_ns: u64,
    pub other_ns: u64,
    /// (other − reference) ÷ reference, in percent.
    pub error_percent: f64,
}

/// The headline comparison.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub reference_iteration_time_s: f64,
    pub other_iteration_time_s: f64,
    /// (other − reference) ÷ reference, in percent.
    pub iteration_error_percent: f64,
    pub reference_bubble_fraction: f64,
    pub other_bubble_fraction: f64,
    /// Largest relative duration differences, worst first (empty when the task lists differ).
    pub worst_tasks: Vec<TaskDifference>,
    /// Why tasks were not matched one by one, if they were not.
    pub unmatched: Option<String>,
}

fn peak_flops(timeline: &Timeline) -> f64 {
    timeline.header.scenario["topology"]["gpu"]["peak"]["fp16_flops_per_s"]
        .as_f64()
        .unwrap_or(1.0)
}

fn percent(reference: f64, other: f64) -> f64 {
    if reference == 0.0 {
        if other == 0.0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        100.0 * (other - reference) / reference
    }
}

/// Compares `other` against `reference`, listing the `worst` most different
/// tasks. Both are first checked ([`Timeline::check`]): a degenerate timeline
/// is refused rather than compared.
pub fn compare(
    reference: &Timeline,
    other: &Timeline,
    worst: usize,
) -> Result<Comparison, TimelineError> {
    reference.check("reference timeline")?;
    other.check("other timeline")?;
    let a = metrics::compute(reference, peak_flops(reference));
    let b = metrics::compute(other, peak_flops(other));
    let same_tasks = reference.tasks.len() == other.tasks.len()
        && reference
            .tasks
            .iter()
            .zip(&other.tasks)
            .all(|(x, y)| x.id == y.id && x.kind == y.kind);
    let (worst_tasks, unmatched) = if same_tasks {
        let mut differences: Vec<TaskDifference> = reference
            .tasks
            .iter()
            .zip(&other.tasks)
            .map(|(x, y)| TaskDifference {
                id: x.id,
                kind: x.kind.name().to_string(),
                stage: x.stage,
                microbatch: x.microbatch,
                reference_ns: x.duration_ns(),
                other_ns: y.duration_ns(),
                error_percent: percent(x.duration_ns() as f64, y.duration_ns() as f64),
            })
            .filter(|d| d.reference_ns != d.other_ns)
            .collect();
        differences.sort_by(|x, y| {
            y.error_percent
                .abs()
                .total_cmp(&x.error_percent.abs())
                .then(x.id.cmp(&y.id))
        });
        differences.truncate(worst);
        (differences, None)
    } else {
        (
            Vec::new(),
            Some(format!(
                "the timelines hold different task lists ({} vs {} tasks); only aggregates are compared",
                reference.tasks.len(),
                other.tasks.len()
            )),
        )
    };
    Ok(Comparison {
        reference_iteration_time_s: a.iteration_time_s,
        other_iteration_time_s: b.iteration_time_s,
        iteration_error_percent: percent(a.iteration_time_s, b.iteration_time_s),
        reference_bubble_fraction: a.bubble_fraction,
        other_bubble_fraction: b.bubble_fraction,
        worst_tasks,
        unmatched,
    })
}
