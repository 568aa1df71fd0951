//! Gradient sums between two ranks after the data-parallel reductions and
//! before the optimizer (lowering phase 1, `iteration_end.rs`): the tied word
//! embedding's all-reduce between the first and last stage, and DualPipe's
//! all-reduce of its two model copies between mirrored ranks.

use super::end_context::{EndContext, Reductions};
use super::program::{Program, StepId};
use crate::plan::ShardPlan;
use models::sharding::parameters_on_rank;
use std::collections::BTreeMap;
use taskgraph::task::{StreamKind, Task, TaskKind, NO_MICROBATCH};
use taskgraph::task_graph::{Dependency, TaskGraphBuilder, Work};

/// Gradient sums between two ranks after the data-parallel reductions, by
/// (stage, data index, tensor index): the tied word embedding's, and
/// DualPipe's two model copies'.
pub(super) type GradientSums = BTreeMap<(u32, u32, u32), StepId>;

/// One all-reduce of `bytes` between the two `ranks`, after both stages'
/// ends and their reductions (`after`: per stage, its reductions and copy
/// back for this data and tensor index), recorded for both stages.
#[allow(clippy::too_many_arguments)]
fn pair_all_reduce(
    cx: &EndContext,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    (kind, task_stage): (TaskKind, u32),
    ranks: [taskgraph::ids::Rank; 2],
    bytes: u64,
    (data_index, tensor_index): (u32, u32),
    stages: [u32; 2],
    after: impl Fn(&mut Program, u32, StepId),
    sums: &mut GradientSums,
) {
    let group = builder.group(&ranks);
    let work = builder.work(Work::DataParallelAllReduce {
        bytes,
        group_size: 2,
        spread: cx.placement.spread(&ranks),
    });
    let all_reduce = program.task(Task {
        kind,
        stream: StreamKind::DataParallel,
        chunk: 0,
        stage: task_stage,
        microbatch: NO_MICROBATCH,
        group,
        work,
        iteration: cx.done.iteration,
    });
    for stage in stages {
        program.depend(
            cx.stage_tail(data_index, stage),
            all_reduce,
            Dependency::Data,
        );
        for &send in cx.trailing_sends(data_index, stage) {
            program.depend(send, all_reduce, Dependency::ProgramOrder);
        }
        after(program, stage, all_reduce);
        sums.insert((stage, data_index, tensor_index), all_reduce);
    }
}

/// The tied word embedding's gradient, held by the first stage (embedding)
/// and the last (the tied output layer), all-reduced between them after the
/// data-parallel reduction and before the optimizer (megatron/training.py
/// train_step, 2021: "All-reduce word_embeddings' grad across first and last
/// stages", torch.distributed.all_reduce(main_grad,
/// group=mpu.get_embedding_group())). Untied output layers have none, and on
/// the V map both ends are on stage 0 (their sum is a local add, not modeled).
pub(super) fn tied_embedding_all_reduces(
    cx: &EndContext,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    reductions: &Reductions,
) -> GradientSums {
    let mut sums = GradientSums::new();
    let scenario = cx.scenario;
    let ((first_stage, _), (last_stage, _)) = scenario.layout.sharding().ends();
    if first_stage == last_stage || !scenario.model.tied_embeddings {
        return sums;
    }
    let embedding_params = scenario.model.vocab / cx.t as u64 * scenario.model.hidden;
    let bytes = (embedding_params * cx.gradient_bytes_per_param()).div_ceil(
        cx.shard_plan
            .filter(ShardPlan::shards_gradients)
            .map_or(1, |plan| plan.group as u64),
    );
    let replica_loop = program.begin_replicas(builder);
    for data_index in 0..cx.done.lowered_replicas {
        let firsts = cx.placement.tensor_group(first_stage, data_index);
        let lasts = cx.placement.tensor_group(last_stage, data_index);
        for tensor_index in 0..cx.t {
            let after = |program: &mut Program, stage: u32, all_reduce: StepId| {
                for &reduction in &reductions.by_stage[stage as usize][tensor_index as usize] {
                    program.depend(reduction, all_reduce, Dependency::Data);
                }
                if let Some(copy_back) = reductions.copy_back(cx, stage, data_index, tensor_index) {
                    program.depend(copy_back, all_reduce, Dependency::Data);
                }
            };
            pair_all_reduce(
                cx,
                program,
                builder,
                (TaskKind::EmbeddingAllReduce, 0),
                [firsts[tensor_index as usize], lasts[tensor_index as usize]],
                bytes,
                (data_index, tensor_index),
                [first_stage, last_stage],
                after,
                &mut sums,
            );
        }
    }
    program.end_replicas(builder, replica_loop);
    sums
}

/// DualPipe's two copies: rank r holds stages r (copy A) and p−1−r (copy B),
/// rank p−1−r the same two stages the other way round; each copy's gradients
/// are summed with the other's before the optimizer
/// (deepseek-ai/DualPipe `examples/example_dualpipe.py`: "p0.grad +=
/// p1all[pp_size - 1 - rank]", and the same for p1). Modeled as one
/// all-reduce of all the rank's gradients between the two mirrored ranks
/// (after the data-parallel reduction, like the tied embedding's); the
/// example gathers them over the whole pipeline group, a check, not a
/// training step. Both ends of each copy are on ranks 0 and p−1, so this sum
/// also covers the tied embedding.
pub(super) fn dualpipe_copy_all_reduces(
    cx: &EndContext,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    reductions: &Reductions,
    sums: &mut GradientSums,
) {
    let sharding = cx.scenario.layout.sharding();
    if sharding.map.copies() <= 1 {
        return;
    }
    for stage in 0..cx.p / 2 {
        let mirror = cx.p - 1 - stage;
        let params = parameters_on_rank(&cx.scenario.model, sharding, stage);
        let replica_loop = program.begin_replicas(builder);
        for data_index in 0..cx.done.lowered_replicas {
            let ours = cx.placement.tensor_group(stage, data_index);
            let theirs = cx.placement.tensor_group(mirror, data_index);
            for tensor_index in 0..cx.t {
                let after = |program: &mut Program, stage: u32, all_reduce: StepId| {
                    for &reduction in &reductions.by_stage[stage as usize][tensor_index as usize] {
                        program.depend(reduction, all_reduce, Dependency::Data);
                    }
                };
                pair_all_reduce(
                    cx,
                    program,
                    builder,
                    (TaskKind::DataParallelAllReduce, stage),
                    [ours[tensor_index as usize], theirs[tensor_index as usize]],
                    params * cx.gradient_bytes_per_param(),
                    (data_index, tensor_index),
                    [stage, mirror],
                    after,
                    sums,
                );
            }
        }
        program.end_replicas(builder, replica_loop);
    }
}
