//! Tests of the pipeline program (`pipeline.rs`).

use super::*;
use crate::lowering::program::StepId;
use scenario::ScenarioFile;
use taskgraph::task::{Dependency, StreamKind, TaskKind};

#[test]
fn one_f_one_b_on_two_stages_issues_passes_sends_and_optimizer_in_program_order() {
    let scenario = ScenarioFile {
        tp: Some(1),
        pp: Some(2),
        global_batch: Some(2),
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .unwrap();
    let plan = crate::plan::Plan::of(&scenario);
    let mut builder = TaskGraphBuilder::default();
    let program = program(
        &scenario,
        &plan,
        &mut builder,
        scenario.layout.replicas(),
        super::super::program::TensorRanks::Each,
    );
    let kinds: Vec<&str> = (0..program.steps.len())
        .map(|i| program.first_kind(StepId(i as u32)))
        .filter(|&kind| kind != TaskKind::HostIssue)
        .map(TaskKind::name)
        .collect();
    // The host lane: two issue steps per pass, one call per send, one per optimizer.
    let host_steps = (0..program.steps.len())
        .filter(|&i| program.first_kind(StepId(i as u32)) == TaskKind::HostIssue)
        .count();
    assert_eq!(host_steps, 2 * 8 + 4 + 2);
    // Stage 0: F0 send F1 send B0 B1, stage 1: F0 B0 send F1 B1 send, then
    // (megatron-2021's local DDP, d = 1) each stage's flatten-and-divide and
    // copy back, the tied embedding's all-reduce between them and two
    // optimizer steps.
    assert_eq!(
        kinds,
        [
            "forward",
            "pipeline_activation",
            "forward",
            "pipeline_activation",
            "backward",
            "backward",
            "forward",
            "backward",
            "pipeline_gradient",
            "forward",
            "backward",
            "pipeline_gradient",
            "gradient_copy",
            "gradient_copy",
            "gradient_copy",
            "gradient_copy",
            "embedding_all_reduce",
            "optimizer_step",
            "optimizer_step"
        ]
    );
    // Every transfer feeds exactly one pass, and every send blocks the next pass.
    let data_from_transfers = program
        .dependencies
        .iter()
        .filter(|d| {
            d.why == Dependency::Data
                && program.first_kind(d.to) != TaskKind::HostIssue
                && matches!(
                    program.first_kind(d.from),
                    TaskKind::PipelineActivation | TaskKind::PipelineGradient
                )
        })
        .count();
    assert_eq!(data_from_transfers, 4);
}

#[test]
fn the_host_lane_issues_every_pass_before_the_gpu_runs_it_and_bounds_the_iteration() {
    let scenario = ScenarioFile::tiny_example().resolve().unwrap();
    let host = scenario
        .stack
        .host
        .expect("the default stack simulates the host");
    let report = crate::simulate(&scenario).unwrap();
    let tasks = &report.timeline().tasks;
    let host_tasks: Vec<_> = tasks
        .iter()
        .filter(|t| t.kind == TaskKind::HostIssue)
        .collect();
    assert!(!host_tasks.is_empty());
    assert!(host_tasks.iter().all(|t| t.stream == StreamKind::Host));
    // One rank's host lane is serial, so the iteration lasts at least its busy time.
    let rank0_group = 0u32;
    let busy: u64 = host_tasks
        .iter()
        .filter(|t| report.timeline().header.groups[t.group as usize].contains(&rank0_group))
        .map(|t| t.duration_ns())
        .sum();
    assert!(report.timeline().makespan_ns() >= busy);
    assert!(busy >= host.kernel_issue_ns * 10, "{busy}");
    // Without host costs there is no host lane, and the iteration is shorter.
    let mut hostless = scenario.clone();
    hostless.stack.host = None;
    let fast = crate::simulate(&hostless).unwrap();
    assert!(fast
        .timeline()
        .tasks
        .iter()
        .all(|t| t.kind != TaskKind::HostIssue));
    assert!(fast.timeline().makespan_ns() < report.timeline().makespan_ns());
}
