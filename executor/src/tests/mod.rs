//! CPU tests of the executor's planning and packaging: every task issued
//! once in an order that respects every edge, every cross-stream edge a
//! wait, launches that match the simulator's kernels and durations, and a
//! Timeline packaged exactly as the simulator packages its own. Every
//! schedule over a grid of layouts is in [`schedules`]; the runs that need a
//! GPU (skipped without a driver) are in [`gpu`].

mod gpu;
mod schedules;

use crate::launches::{CollectiveKind, Launch};
use crate::plan::{plan, rank_gpu, simulated_costs, ExecutionMode, ExecutionPlan};
use crate::record::{measured_timeline, spans_from_ms, Span};
use crate::{check, prepare, ExecuteError, ExecuteOptions};
use models::ops::{KernelClass, Step};
use sim::scenario::{Recompute, Scenario, ScenarioFile, ScheduleKind};
use sim::task::{StreamKind, TaskKind};
use sim::task_graph::{TaskGraph, Work};
use timeline::Producer;

fn scenario(
    (tp, pp, dp, chunks): (u32, u32, u32, u32),
    schedule: ScheduleKind,
    recompute: Recompute,
    global_batch: u32,
) -> Scenario {
    ScenarioFile {
        tp: Some(tp),
        pp: Some(pp),
        dp: Some(dp),
        chunks: Some(chunks),
        schedule: Some(schedule),
        recompute: Some(recompute),
        global_batch: Some(global_batch),
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .unwrap()
}

/// One scenario per layout family: 1F1B with TP, GPipe, interleaved, data
/// parallel with recompute, a single rank.
fn layout_families() -> Vec<(&'static str, Scenario)> {
    use Recompute::{Full, None};
    use ScheduleKind::*;
    vec![
        ("1f1b t2 p4", scenario((2, 4, 1, 1), OneFOneB, None, 8)),
        ("gpipe t1 p4", scenario((1, 4, 1, 1), Gpipe, None, 8)),
        (
            "interleaved p2 v2",
            scenario((1, 2, 1, 2), Interleaved, None, 4),
        ),
        (
            "1f1b t2 p2 d2 recompute",
            scenario((2, 2, 2, 1), OneFOneB, Full, 8),
        ),
        ("single rank", scenario((1, 1, 1, 1), OneFOneB, None, 4)),
    ]
}

fn planned(scenario: &Scenario, mode: ExecutionMode, gpus: u32) -> (TaskGraph, ExecutionPlan) {
    let (_, graph) = sim::build_graph(scenario);
    let plan = plan(&graph, scenario, mode, gpus).unwrap();
    (graph, plan)
}

#[test]
fn every_task_is_issued_once_after_all_its_predecessors() {
    for (name, scenario) in layout_families() {
        for mode in [ExecutionMode::Real, ExecutionMode::Synthetic] {
            let (graph, plan) = planned(&scenario, mode, 1);
            let mut position = vec![None; graph.task_count()];
            for (at, task) in plan.tasks.iter().enumerate() {
                assert!(position[task.task as usize].replace(at).is_none(), "{name}");
            }
            assert!(position.iter().all(Option::is_some), "{name}");
            for (from, to, _) in graph.edges() {
                let (from, to) = (from.index(), to.index());
                assert!(position[from] < position[to], "{name}: edge {from} → {to}");
            }
            let verdict = check(&plan, &graph).unwrap();
            assert_eq!(
                verdict.implicit_orderings, 0,
                "{name}: streams add no order"
            );
        }
    }
}

#[test]
fn every_cross_stream_edge_is_a_wait_and_no_same_stream_edge_is() {
    for (name, scenario) in layout_families() {
        let (graph, plan) = planned(&scenario, ExecutionMode::Real, 1);
        let mut stream = vec![0; graph.task_count()];
        let mut waits = vec![Vec::new(); graph.task_count()];
        for task in &plan.tasks {
            stream[task.task as usize] = task.stream;
            waits[task.task as usize] = task.waits.clone();
        }
        let mut cross = 0;
        for (from, to, _) in graph.edges() {
            let (from, to) = (from.index(), to.index());
            let waited = waits[to].contains(&(from as u32));
            assert_eq!(waited, stream[from] != stream[to], "{name}: {from} → {to}");
            cross += waited as usize;
        }
        if scenario.layout.pipeline_parallel.get() > 1 || scenario.layout.tensor_parallel.get() > 1
        {
            assert!(cross > 0, "{name}: some dependencies cross streams");
        }
    }
}

#[test]
fn there_is_one_stream_per_rank_and_stream_kind_and_group_tasks_use_the_lowest_rank() {
    let scenario = scenario((2, 2, 2, 1), ScheduleKind::OneFOneB, Recompute::None, 8);
    let (graph, plan) = planned(&scenario, ExecutionMode::Real, 1);
    let mut slots: Vec<_> = plan.streams.iter().map(|s| (s.rank, s.kind)).collect();
    let before = slots.len();
    slots.dedup();
    assert_eq!(slots.len(), before, "distinct and sorted");
    for task in &plan.tasks {
        let graph_task = graph.task(sim::ids::TaskId(task.task));
        let slot = plan.streams[task.stream as usize];
        let lowest = graph.group_ranks(graph_task.group).iter().min().unwrap();
        assert_eq!((slot.rank, slot.kind), (lowest.0, graph_task.stream));
    }
    // Every rank computes on its own compute stream.
    let compute_ranks: Vec<u32> = plan
        .streams
        .iter()
        .filter(|s| s.kind == StreamKind::Compute)
        .map(|s| s.rank)
        .collect();
    assert_eq!(compute_ranks, (0..8).collect::<Vec<_>>());
}

#[test]
fn synthetic_spins_last_exactly_the_simulated_task_durations() {
    for (name, scenario) in layout_families() {
        let (_, plan) = planned(&scenario, ExecutionMode::Synthetic, 1);
        let simulated = sim::simulate(&scenario).unwrap().into_timeline();
        for task in &plan.tasks {
            let spun: u64 = task
                .launches
                .iter()
                .map(|launch| match launch {
                    Launch::Spin { duration_ns } => *duration_ns,
                    other => panic!("{name}: synthetic mode launched {other:?}"),
                })
                .sum();
            let record = &simulated.tasks[task.task as usize];
            assert_eq!(spun, record.duration_ns(), "{name}: task {}", task.task);
            assert_eq!(task.simulated_start_ns, record.start_ns, "{name}");
        }
        assert_eq!(
            plan.simulated_iteration_ns,
            simulated.makespan_ns(),
            "{name}"
        );
    }
}

#[test]
fn real_mode_launches_the_pass_kernels_and_copies_for_communication_on_one_gpu() {
    let scenario = scenario((2, 2, 2, 1), ScheduleKind::OneFOneB, Recompute::Full, 8);
    let (graph, plan) = planned(&scenario, ExecutionMode::Real, 1);
    let costs = simulated_costs(&scenario, &graph);
    let mut seen = std::collections::BTreeSet::new();
    for task in &plan.tasks {
        assert!(
            task.simulated_duration_ns == 0 || !task.launches.is_empty(),
            "task {} costs time but launches nothing",
            task.task
        );
        let work = graph.work(graph.task(sim::ids::TaskId(task.task)).work);
        seen.insert(task.kind);
        match *work {
            Work::Compute {
                pass,
                layers,
                dense_layers,
                embedding,
                head,
                ..
            } => {
                let kernels: Vec<Launch> = sim::cost::pass_steps_of(
                    &scenario,
                    pass,
                    layers,
                    dense_layers,
                    embedding,
                    head,
                )
                .into_iter()
                .filter_map(|step| match step {
                    Step::Kernel(k) => match k.class {
                        KernelClass::Gemm { shape, layout }
                        | KernelClass::Fp8Gemm { shape, layout } => {
                            Some(Launch::Gemm { shape, layout })
                        }
                        KernelClass::MemoryBound => Some(Launch::DeviceCopy {
                            bytes: (k.bytes / 2.0).ceil() as u64,
                        }),
                        // No real kernel: `plan` refuses it in real mode.
                        KernelClass::FusedAttention(_) => None,
                    },
                    Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => {
                        None
                    }
                })
                .collect();
                assert_eq!(task.launches, kernels);
                assert!(task
                    .launches
                    .iter()
                    .any(|l| matches!(l, Launch::Gemm { .. })));
            }
            Work::OptimizerStep { .. } => {
                let copied: u64 = task
                    .launches
                    .iter()
                    .map(|l| match l {
                        Launch::DeviceCopy { bytes } => *bytes,
                        _ => 0,
                    })
                    .sum();
                let hbm = costs[graph.task(sim::ids::TaskId(task.task)).work.index()].bytes;
                assert!(copied * 2 >= hbm && copied * 2 <= hbm + 2);
            }
            Work::HostIssuePass { .. } | Work::HostCall | Work::HostOptimizer => assert_eq!(
                task.launches,
                vec![Launch::Spin {
                    duration_ns: task.simulated_duration_ns
                }],
                "the stack's host cost is a spin of its modeled duration"
            ),
            _ => assert!(
                task.launches
                    .iter()
                    .all(|l| matches!(l, Launch::DeviceCopy { .. })),
                "communication on one GPU is copies: {:?}",
                task.launches
            ),
        }
    }
    for kind in [
        TaskKind::HostIssue,
        TaskKind::TensorAllReduce,
        TaskKind::PipelineActivation,
        TaskKind::PipelineGradient,
        TaskKind::DataParallelAllReduce,
        TaskKind::Recompute,
        TaskKind::OptimizerStep,
    ] {
        assert!(seen.contains(&kind), "{kind:?} exercised");
    }
}

#[test]
fn communication_spanning_several_gpus_becomes_nccl() {
    let scenario = scenario((2, 2, 2, 1), ScheduleKind::OneFOneB, Recompute::None, 8);
    let (_, plan) = planned(&scenario, ExecutionMode::Real, 8);
    assert_eq!(plan.gpu_count, 8);
    assert_eq!(plan.ranks_per_gpu(), 1);
    let collectives: Vec<_> = plan
        .tasks
        .iter()
        .flat_map(|t| &t.launches)
        .filter_map(|l| match l {
            Launch::Collective { op, gpus, .. } => Some((*op, gpus.len())),
            _ => None,
        })
        .collect();
    assert!(collectives.contains(&(CollectiveKind::AllReduce, 2)));
    assert!(
        collectives.contains(&(CollectiveKind::SendReceive, 4)),
        "2 senders + 2 receivers"
    );
    assert!(!plan
        .tasks
        .iter()
        .flat_map(|t| &t.launches)
        .any(|l| matches!(l, Launch::DeviceCopy { bytes } if *bytes == 0)));
}

#[test]
fn ranks_fold_onto_gpus_in_contiguous_balanced_blocks() {
    assert_eq!(
        (0..8).map(|r| rank_gpu(r, 8, 1)).collect::<Vec<_>>(),
        vec![0; 8]
    );
    assert_eq!(
        (0..8).map(|r| rank_gpu(r, 8, 2)).collect::<Vec<_>>(),
        vec![0, 0, 0, 0, 1, 1, 1, 1]
    );
    assert_eq!(
        (0..4).map(|r| rank_gpu(r, 4, 4)).collect::<Vec<_>>(),
        vec![0, 1, 2, 3]
    );
    let scenario = scenario((1, 4, 1, 1), ScheduleKind::OneFOneB, Recompute::None, 8);
    let (_, plan) = planned(&scenario, ExecutionMode::Synthetic, 16);
    assert_eq!(plan.gpu_count, 4, "never more devices than ranks");
}

#[test]
fn planning_is_deterministic() {
    let scenario = scenario((1, 2, 1, 2), ScheduleKind::Interleaved, Recompute::None, 4);
    let (_, a) = planned(&scenario, ExecutionMode::Real, 1);
    let (_, b) = planned(&scenario, ExecutionMode::Real, 1);
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap()
    );
}

#[test]
fn the_check_rejects_a_dropped_wait_and_a_reordered_plan() {
    let scenario = scenario((2, 4, 1, 1), ScheduleKind::OneFOneB, Recompute::None, 8);
    let (graph, plan) = planned(&scenario, ExecutionMode::Synthetic, 1);
    let mut dropped = plan.clone();
    let with_wait = dropped
        .tasks
        .iter()
        .position(|t| !t.waits.is_empty())
        .unwrap();
    dropped.tasks[with_wait].waits.clear();
    let error = check(&dropped, &graph).unwrap_err();
    assert!(error.to_string().contains("does not wait on"), "{error}");

    let mut reordered = plan.clone();
    reordered.tasks.reverse();
    let error = check(&reordered, &graph).unwrap_err();
    assert!(matches!(error, ExecuteError::InvalidPlan { .. }));
    assert!(error.to_string().contains("issued before"), "{error}");

    let mut missing = plan.clone();
    missing.tasks.pop();
    assert!(check(&missing, &graph)
        .unwrap_err()
        .to_string()
        .contains("never issued"));

    let mut short = plan;
    let spinning = short
        .tasks
        .iter()
        .position(|t| t.simulated_duration_ns > 1)
        .unwrap();
    short.tasks[spinning].launches = vec![Launch::Spin { duration_ns: 1 }];
    assert!(check(&short, &graph)
        .unwrap_err()
        .to_string()
        .contains("spins 1 ns"));
}

#[test]
fn event_milliseconds_become_nanoseconds_from_the_first_start() {
    let spans = spans_from_ms(&[(2.0, 3.5), (1.5, 2.0), (4.0, 3.999_999)]);
    assert_eq!(
        spans,
        vec![
            Span {
                start_ns: 500_000,
                end_ns: 2_000_000
            },
            Span {
                start_ns: 0,
                end_ns: 500_000
            },
            Span {
                start_ns: 2_500_000,
                end_ns: 2_500_000
            },
        ]
    );
    assert!(spans_from_ms(&[]).is_empty());
}

#[test]
fn a_measured_timeline_is_packaged_like_the_simulators() {
    let scenario = scenario((2, 4, 1, 1), ScheduleKind::OneFOneB, Recompute::None, 8);
    let prepared = prepare(
        &scenario,
        &ExecuteOptions {
            mode: ExecutionMode::Synthetic,
            ..ExecuteOptions::default()
        },
    )
    .unwrap();
    let simulated = sim::simulate(&scenario).unwrap().into_timeline();
    let spans: Vec<Span> = simulated
        .tasks
        .iter()
        .map(|t| Span {
            start_ns: t.start_ns,
            end_ns: t.end_ns,
        })
        .collect();
    let measured = measured_timeline(
        &scenario,
        &prepared.graph,
        &prepared.costs,
        ExecutionMode::Synthetic,
        &spans,
        serde_json::json!({"device": "none (test)"}),
    );
    assert_eq!(measured.tasks, simulated.tasks, "same records, same times");
    assert_eq!(measured.header.producer, Producer::Executor);
    assert_eq!(measured.header.executor_mode.as_deref(), Some("synthetic"));
    assert_eq!(measured.header.groups, simulated.header.groups);
    assert_eq!(measured.header.layout, simulated.header.layout);
    assert_eq!(
        measured.header.scenario["executor"]["device"],
        "none (test)"
    );
    assert_eq!(
        measured.header.scenario["title"],
        simulated.header.scenario["title"]
    );
    measured.check("measured").unwrap();
    let comparison = timeline::compare::compare(&simulated, &measured, 3).unwrap();
    assert_eq!(comparison.iteration_error_percent, 0.0);
}

#[test]
fn without_a_driver_execute_fails_with_one_clear_line() {
    if crate::runtime::require_driver().is_ok() {
        eprintln!("skipping: a CUDA driver is present");
        return;
    }
    let scenario = ScenarioFile::tiny_example().resolve().unwrap();
    let error = match crate::execute(&scenario, &ExecuteOptions::default()) {
        Err(error) => error,
        Ok(_) => panic!("executed without a driver"),
    };
    assert!(error.is_user_error());
    let message = error.to_string();
    assert!(message.contains("no CUDA driver"), "{message}");
    assert!(!message.contains('\n'), "one line: {message}");
}

#[test]
fn the_distributed_optimizers_collectives_are_copies_on_one_gpu_and_nccl_across_gpus() {
    let scenario = ScenarioFile {
        tp: Some(2),
        pp: Some(2),
        dp: Some(2),
        global_batch: Some(8),
        options: sim::scenario::TrainingOptionsFile {
            distributed_optimizer: Some(true),
            ..Default::default()
        },
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .unwrap();
    for (gpus, expect_nccl) in [(1, false), (8, true)] {
        let (graph, plan) = planned(&scenario, ExecutionMode::Real, gpus);
        crate::check::check(&plan, &graph).expect("dependency check");
        let sharded: Vec<_> = plan
            .tasks
            .iter()
            .filter(|t| {
                matches!(
                    t.kind,
                    TaskKind::DataParallelReduceScatter | TaskKind::DataParallelAllGather
                )
            })
            .collect();
        // A reduce-scatter and an all-gather per (stage, tensor rank): 2 × 2 × 2.
        assert_eq!(sharded.len(), 8, "{gpus} GPU(s)");
        for task in sharded {
            let nccl = task
                .launches
                .iter()
                .all(|l| matches!(l, Launch::Collective { .. }));
            let copies = task
                .launches
                .iter()
                .all(|l| matches!(l, Launch::DeviceCopy { .. }));
            assert!(!task.launches.is_empty());
            assert!(
                if expect_nccl { nccl } else { copies },
                "{:?}",
                task.launches
            );
        }
    }
}

#[test]
fn context_parallel_scenarios_plan_in_synthetic_mode_and_are_refused_in_real_mode() {
    let scenario = ScenarioFile {
        tp: Some(2),
        pp: Some(2),
        dp: Some(1),
        cp: Some(2),
        global_batch: Some(4),
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .unwrap();
    let (graph, synthetic) = planned(&scenario, ExecutionMode::Synthetic, 1);
    crate::check::check(&synthetic, &graph).expect("dependency check");
    let error = plan(&graph, &scenario, ExecutionMode::Real, 1).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("context parallelism (cp > 1) cannot be executed in real mode"),
        "{error}"
    );
}
