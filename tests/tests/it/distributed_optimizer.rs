//! Megatron's distributed optimizer (`--distributed-optimizer`, ZeRO-1):
//! gradients reduce-scattered instead of all-reduced, the optimizer step on a
//! 1/d shard, the updated parameters all-gathered, optimizer states 1/d in
//! memory; and nothing changes at d = 1.

use sim::scenario::{ScenarioFile, TrainingOptionsFile};
use timeline::TaskKind;

fn scenario(dp: u32, distributed: bool) -> sim::scenario::Scenario {
    ScenarioFile {
        model: Some("gpt2-1b".into()),
        topology: Some("selene".into()),
        tp: Some(2),
        pp: Some(2),
        dp: Some(dp),
        global_batch: Some(8 * dp),
        // Megatron-LM 2022 (the distributed optimizer's first release):
        // local DDP divides its contiguous buffer in place before the
        // reduction with the distributed optimizer or without it.
        stack: Some("megatron-2022".into()),
        options: TrainingOptionsFile {
            distributed_optimizer: Some(distributed),
            ..TrainingOptionsFile::default()
        },
        ..ScenarioFile::tiny_example()
    }
    .resolve()
    .expect("valid scenario")
}

fn count(result: &sim::SimulationReport, kind: TaskKind) -> usize {
    result
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == kind)
        .count()
}

fn total_ns(result: &sim::SimulationReport, kind: TaskKind) -> u64 {
    result
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == kind)
        .map(|t| t.end_ns - t.start_ns)
        .sum()
}

#[test]
fn gradients_are_reduce_scattered_and_parameters_all_gathered() {
    let (plain, sharded) = (scenario(4, false), scenario(4, true));
    let plain = sim::simulate(&plain).unwrap();
    let sharded = sim::simulate(&sharded).unwrap();
    // One collective per (stage, tensor rank) data-parallel group: 2 × 2.
    assert_eq!(count(&plain, TaskKind::DataParallelAllReduce), 4);
    assert_eq!(count(&plain, TaskKind::DataParallelReduceScatter), 0);
    assert_eq!(count(&sharded, TaskKind::DataParallelAllReduce), 0);
    assert_eq!(count(&sharded, TaskKind::DataParallelReduceScatter), 4);
    assert_eq!(count(&sharded, TaskKind::DataParallelAllGather), 4);
    // Every rank steps a quarter of the parameters.
    let step = |r: &sim::SimulationReport| total_ns(r, TaskKind::OptimizerStep) as f64;
    let ratio = step(&sharded) / step(&plain);
    assert!((ratio - 0.25).abs() < 0.02, "optimizer time ratio {ratio}");
    // Every all-gather starts after the optimizer steps of its group.
    let last_step_end = sharded
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::OptimizerStep)
        .map(|t| t.end_ns)
        .min()
        .unwrap();
    assert!(sharded
        .timeline()
        .tasks
        .iter()
        .filter(|t| t.kind == TaskKind::DataParallelAllGather)
        .all(|t| t.start_ns >= last_step_end));
    // Optimizer states: a quarter per rank; weights and gradients unchanged.
    for (p, s) in plain.memory.iter().zip(&sharded.memory) {
        assert_eq!(s.optimizer_state_bytes, p.optimizer_state_bytes.div_ceil(4));
        assert_eq!(s.weight_bytes, p.weight_bytes);
        assert_eq!(s.gradient_bytes, p.gradient_bytes);
    }
}

#[test]
fn without_data_parallelism_the_distributed_optimizer_changes_nothing() {
    let plain = sim::simulate(&scenario(1, false)).unwrap();
    let sharded = sim::simulate(&scenario(1, true)).unwrap();
    assert_eq!(plain.timeline().tasks.len(), sharded.timeline().tasks.len());
    assert_eq!(
        plain.metrics.iteration_time_s,
        sharded.metrics.iteration_time_s
    );
    assert_eq!(plain.memory, sharded.memory);
}
