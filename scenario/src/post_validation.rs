//! What zero-bubble optimizer post-validation (Qi et al., "Zero Bubble
//! Pipeline Parallelism", ICLR 2024, Sec. 4; the source's
//! `--enable-optimizer-post-validation`) requires of a scenario, and how
//! many iterations show its steady state.
//!
//! Facts from sail-sg/zero-bubble-pipeline-parallelism at 39f2c18
//! (`megatron/core/zbpp_utils.py`, `validate_arguments`): post-validation
//! is turned off unless a zero-bubble schedule runs (`--enable-zero-bubble`,
//! which ZB-V implies; 1F1B-V asserts it off), it asserts `args.fp16` (its
//! inf/NaN check is the fp16 grad scaler's), and every zero-bubble run
//! asserts untied embeddings (`untie_embeddings_and_output_weights`: a tied
//! embedding's all-reduce between the first and last stage would be a sync
//! across the pipeline); with the distributed optimizer it asserts
//! `overlap_grad_reduce` and `overlap_param_gather` off.

use crate::options::{Precision, TrainingOptions, POST_VALIDATION_ITERATIONS};
use crate::problem::Problem;
use schedules::ScheduleKind;

/// Appends every problem of post-validation in this scenario, naming its key.
pub(super) fn check(
    options: &TrainingOptions,
    schedule: ScheduleKind,
    tied_embeddings: Option<bool>,
    problems: &mut Vec<Problem>,
) {
    if !options.optimizer_post_validation {
        return;
    }
    if !matches!(
        schedule,
        ScheduleKind::ZbH1 | ScheduleKind::ZbH2 | ScheduleKind::ZbV
    ) {
        problems.push(Problem::new("optimizer_post_validation", format!(
            "only with the zero-bubble schedules zb-h1, zb-h2 and zb-v (the source turns it off without --enable-zero-bubble), not {}",
            schedule.name()
        )));
    }
    if options.precision != Precision::Fp16 {
        problems.push(Problem::new("optimizer_post_validation", format!(
            "needs precision fp16 (the source asserts --fp16: its inf/NaN check is the fp16 grad scaler's), not {}",
            options.precision.name()
        )));
    }
    if tied_embeddings == Some(true) {
        problems.push(Problem::new("optimizer_post_validation", "needs untied embeddings (the zero-bubble source asserts untie_embeddings_and_output_weights: the tied embedding's all-reduce between the first and last stage is a sync across the pipeline); use a model with tied_embeddings false"));
    }
    if options.distributed_optimizer
        && (options.overlap_grad_reduce || options.overlap_param_gather)
    {
        problems.push(Problem::new("optimizer_post_validation", "with distributed_optimizer the zero-bubble source asserts overlap_grad_reduce and overlap_param_gather off"));
    }
}

/// The problem with `iterations` under post-validation, if any.
pub(super) fn iterations_problem(iterations: u32) -> Option<Problem> {
    (iterations < POST_VALIDATION_ITERATIONS).then(|| {
        Problem::new(
            "iterations",
            format!(
                "{iterations} cannot show post-validation's steady state (the first iteration, the measured one and one whose warm-up overlaps its end); simulate at least {POST_VALIDATION_ITERATIONS}"
            ),
        )
    })
}
