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

/// `Program` hands a pass the works an earlier pass of its tensor group
/// interned (`Program::pass`, `Program::issue_works`): every pass step
/// must hold exactly the works its own piece interns, and each host issue
/// before it those of its segment. Interning again returns the existing id
/// when the work is there, so a cached id for another piece (a key missing
/// a field) or a work never interned fails here. Scenarios: microbatches
/// of a plain layout, interleaved chunks (embedding and head pieces),
/// recomputation, FP8's first-microbatch weight cast, gradient buckets
/// (a cut last backward), and Mixtral with expert parallelism (all-to-alls
/// and host synchronizations cutting passes into segments).
#[test]
fn every_pass_step_holds_the_works_its_own_piece_interns() {
    use taskgraph::task_graph::Work;
    let options = |f: fn(&mut scenario::TrainingOptionsFile)| {
        let mut options = scenario::TrainingOptionsFile::default();
        f(&mut options);
        options
    };
    let cases = [
        ScenarioFile::tiny_example(),
        ScenarioFile {
            pp: Some(2),
            chunks: Some(2),
            schedule: Some(scenario::ScheduleKind::Interleaved),
            recompute: Some(scenario::Recompute::Full),
            ..ScenarioFile::tiny_example()
        },
        ScenarioFile {
            topology: Some("dgx-h100-superpod".into()),
            options: options(|o| o.precision = Some(scenario::Precision::Fp8)),
            ..ScenarioFile::tiny_example()
        },
        ScenarioFile {
            topology: Some("selene".into()),
            dp: Some(2),
            global_batch: Some(16),
            options: options(|o| o.overlap_grad_reduce = Some(true)),
            ..ScenarioFile::tiny_example()
        },
        ScenarioFile {
            model: Some("mixtral-8x7b".into()),
            topology: Some("selene".into()),
            tp: Some(1),
            pp: Some(4),
            ep: Some(4),
            dp: Some(8),
            global_batch: Some(64),
            ..ScenarioFile::tiny_example()
        },
    ];
    for (case, file) in cases.into_iter().enumerate() {
        let scenario = file
            .resolve()
            .unwrap_or_else(|error| panic!("case {case}: {error}"));
        let plan = crate::plan::Plan::of(&scenario);
        let mut builder = TaskGraphBuilder::default();
        let program = program(
            &scenario,
            &plan,
            &mut builder,
            1,
            super::super::program::TensorRanks::Each,
        );
        let mut passes = 0;
        let mut issues = 0;
        let mut all_to_alls = 0;
        for (index, step) in program.steps.iter().enumerate() {
            let super::super::program::Step::Pass {
                group,
                piece,
                compute_work,
                all_reduce_work,
                all_to_all_work,
            } = step
            else {
                continue;
            };
            passes += 1;
            let compute = builder.work(Work::Compute {
                pass: piece.pass,
                layers: piece.layers,
                dense_layers: piece.dense_layers,
                first_layer: piece.first_layer,
                embedding: piece.embedding,
                head: piece.head,
                fp8_weight_cast: piece.fp8_weight_cast,
                segment: piece.segment,
            });
            assert_eq!(*compute_work, compute, "case {case}: step {index}");
            let tensor_group = program.tensor_group(*group);
            if let Some(work) = all_reduce_work {
                let expected = builder.work(Work::TensorAllReduce {
                    pass: piece.pass,
                    layers: piece.layers,
                    first_layer: piece.first_layer,
                    dense_layers: piece.dense_layers,
                    embedding: piece.embedding,
                    head: piece.head,
                    group_size: tensor_group.tensor_parallel,
                    nodes: tensor_group.nodes,
                    segment: piece.segment,
                });
                assert_eq!(*work, expected, "case {case}: step {index}");
            }
            if let Some(work) = all_to_all_work {
                all_to_alls += 1;
                let expected = builder.work(Work::ExpertAllToAll {
                    pass: piece.pass,
                    layers: piece.layers,
                    first_layer: piece.first_layer,
                    dense_layers: piece.dense_layers,
                    embedding: piece.embedding,
                    head: piece.head,
                    group_size: tensor_group.expert_group.0,
                    nodes: tensor_group.expert_group.1,
                    expert_tensor_group: tensor_group.expert_tensor_group,
                    segment: piece.segment,
                });
                assert_eq!(*work, expected, "case {case}: step {index}");
            }
            // The segment's issue, first launch then the rest, just before it.
            let issue = |first| Work::HostIssuePass {
                pass: piece.pass,
                layers: piece.layers,
                dense_layers: piece.dense_layers,
                embedding: piece.embedding,
                head: piece.head,
                first,
                segment: piece.segment,
            };
            if let [super::super::program::Step::Task(first), super::super::program::Step::Task(rest)] =
                &program.steps[index.saturating_sub(2)..index]
            {
                if first.kind == TaskKind::HostIssue && rest.kind == TaskKind::HostIssue {
                    issues += 1;
                    assert_eq!(
                        first.work,
                        builder.work(issue(true)),
                        "case {case}: step {index}"
                    );
                    assert_eq!(
                        rest.work,
                        builder.work(issue(false)),
                        "case {case}: step {index}"
                    );
                }
            }
        }
        assert!(
            passes > 0 && issues > 0,
            "case {case}: {passes} passes, {issues} issues"
        );
        if case == 4 {
            assert!(all_to_alls > 0, "Mixtral's passes have all-to-alls");
        }
    }
}
