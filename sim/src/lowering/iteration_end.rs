//! The end of one pipeline iteration (lowering phase 1, after every
//! stage's passes, `pipeline.rs`): the data-parallel reductions (all-reduce,
//! or the distributed optimizer's reduce-scatter, or ZeRO-2/3's from
//! `sharded.rs`), the tied word embedding's all-reduce between the stages
//! holding the embedding and the head (DualPipe: the two copies'
//! gradients all-reduced between mirrored ranks), the optimizer steps and the
//! distributed optimizer's parameter all-gather.

use super::pipeline::{host_task, GradientsReady};
use super::post_validation::{self, Carry};
use super::program::{Program, StepId};
use super::sharded::{self, ShardPlan, ShardedPiece};
use crate::cost::gradients;
use crate::placement::Placement;
use crate::scenario::{LocalDdpKernels, Scenario};
use crate::task::{StreamKind, Task, TaskKind, NO_MICROBATCH};
use crate::task_graph::{Dependency, TaskGraphBuilder, Work};
use models::sharding::{expert_parameters_of_stage, parameters_on_rank};
use std::collections::BTreeMap;

/// What every stage's passes left for the iteration's end, per (data index, stage).
/// A data-parallel reduction's (chunk, bucket) when overlapped (None: the
/// stage's one reduction after its last pass).
type BucketKey = Option<(u32, usize)>;

pub(super) struct StagesDone {
    /// Replicas lowered: all d·cp, or 1 (the representative, `crate::symmetry`).
    pub lowered_replicas: u32,
    /// The iteration (0 unless optimizer post-validation simulates several).
    pub iteration: u16,
    /// Last compute step of each (data index, stage) group.
    pub stage_tails: Vec<Option<StepId>>,
    /// Sends still in flight after it (the optimizer waits for them).
    pub trailing_sends: Vec<Vec<StepId>>,
    /// Where each (data index, stage, chunk)'s gradients become ready (per bucket).
    pub gradients_ready: Vec<Vec<GradientsReady>>,
    /// The order each stage's chunks finish their gradients (data index 0).
    pub chunk_finish_order: Vec<Vec<u32>>,
    /// ZeRO-2/3: the pieces of every pass.
    pub sharded_pieces: Vec<Vec<ShardedPiece>>,
}

/// (t, p, d): d counts the d·cp replicas of each stage's tensor group.
fn degrees(scenario: &Scenario) -> (u32, u32, u32) {
    let layout = scenario.layout;
    (
        layout.tensor_parallel,
        layout.pipeline_parallel,
        layout.replicas(),
    )
}

/// What the data-parallel reductions left for the rest of the iteration's end.
struct Reductions {
    /// Per stage, per tensor index: the reductions the optimizer waits for.
    by_stage: Vec<Vec<Vec<StepId>>>,
    /// Local DDP's copy back after the all-reduce, per rank, by
    /// `(data index · p + stage) · t + tensor index` (empty without one).
    copy_backs: Vec<StepId>,
}

impl Reductions {
    fn copy_back(
        &self,
        scenario: &Scenario,
        stage: u32,
        data_index: u32,
        tensor_index: u32,
    ) -> Option<StepId> {
        let (t, p, _) = degrees(scenario);
        let index = ((data_index * p + stage) * t + tensor_index) as usize;
        self.copy_backs.get(index).copied()
    }
}

/// Emits the iteration's end after the stages' passes; returns what the
/// next iteration waits for (read only under optimizer post-validation).
pub(super) fn emit(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    scenario: &Scenario,
    placement: &Placement,
    shard_plan: Option<ShardPlan>,
    done: &StagesDone,
) -> Carry {
    let reductions =
        data_parallel_reductions(program, builder, scenario, placement, shard_plan, done);
    let embedding_all_reduces = embedding_all_reduces(
        program,
        builder,
        scenario,
        placement,
        shard_plan,
        done,
        &reductions,
    );
    // Post-validation: the partial norm and inf/NaN flag passed stage to
    // stage, each stage's optimizer waiting only for the previous stage's.
    let norm_received = if scenario.options.optimizer_post_validation {
        post_validation::norm_exchanges(
            program,
            builder,
            scenario,
            placement,
            done,
            |stage, data_index| {
                // The stage's reductions (collectives over its data groups)
                // and this replica's local-DDP copies back.
                let (t, _, _) = degrees(scenario);
                let mut ready: Vec<StepId> = reductions.by_stage[stage as usize].concat();
                ready.extend((0..t).filter_map(|tensor_index| {
                    reductions.copy_back(scenario, stage, data_index, tensor_index)
                }));
                ready
            },
        )
    } else {
        Vec::new()
    };
    let params_ready = optimizer_steps(
        program,
        builder,
        scenario,
        placement,
        shard_plan,
        done,
        &reductions,
        &embedding_all_reduces,
        &norm_received,
    );
    Carry {
        params_ready,
        norm_received,
    }
}

/// The stack's local-DDP kernels, where its blocking reduction after the
/// last pass is the one that runs: its own choice for the all-reduce; the
/// in-place divide of the contiguous buffer for Megatron-LM's distributed
/// optimizer, which requires that buffer (megatron/optimizer/distrib_optimizer.py
/// at 3f4e71d, `reduce_model_grads`: `gbuf.data /= data_parallel_world_size`,
/// then the reduce-scatter). None under ZeRO-2/3 or an overlapped, bucketed
/// reduction (PyTorch's and Megatron-Core's DDP: their scaling is not modeled).
fn local_ddp_kernels(
    scenario: &Scenario,
    shard_plan: Option<ShardPlan>,
) -> Option<LocalDdpKernels> {
    let options = &scenario.options;
    if shard_plan.is_some() || options.overlap_grad_reduce {
        return None;
    }
    scenario.stack.local_ddp.map(|kernels| {
        if options.distributed_optimizer {
            LocalDdpKernels::Divide
        } else {
            kernels
        }
    })
}

/// Local DDP's kernels on one rank before (`after` false) or after its
/// all-reduce: `kernels` passes over the stage's gradients on the compute
/// stream, after its last pass (program order).
#[allow(clippy::too_many_arguments)]
fn gradient_copy(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    rank: crate::ids::Rank,
    stage: u32,
    gradient_bytes: u64,
    kernels: u32,
    iteration: u16,
) -> StepId {
    program.rank_task(
        builder,
        rank,
        TaskKind::GradientCopy,
        StreamKind::Compute,
        Work::GradientCopy {
            // Read and written once per kernel.
            bytes: gradient_bytes.saturating_mul(2),
            kernels,
        },
        stage,
        NO_MICROBATCH,
        iteration,
    )
}

/// The data-parallel reductions of every stage, per tensor index.
fn data_parallel_reductions(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    scenario: &Scenario,
    placement: &Placement,
    shard_plan: Option<ShardPlan>,
    done: &StagesDone,
) -> Reductions {
    let StagesDone {
        lowered_replicas,
        stage_tails,
        trailing_sends,
        gradients_ready,
        chunk_finish_order,
        sharded_pieces,
        ..
    } = done;
    let (t, p, d) = degrees(scenario);
    let sharding = scenario.layout.sharding();
    let chunks = scenario.layout.chunks as usize;
    // Data-parallel all-reduce (or, with the distributed optimizer,
    // reduce-scatter) and optimizer step (on a 1/d shard, then an all-gather
    // of the updated parameters).
    let distributed = scenario.options.distributed_optimizer && d > 1;
    // (With only the optimizer sharded, the reductions below are ZeRO-1's.)
    let sharded_reductions = shard_plan.and_then(|plan| {
        let reductions =
            sharded::emit(program, builder, scenario, placement, &plan, sharded_pieces);
        plan.shards_gradients().then_some(reductions)
    });
    let mut reductions_by_stage: Vec<Vec<Vec<StepId>>> = Vec::with_capacity(p as usize);
    let expert_data_parallel = scenario.layout.expert_replicas();
    let local_ddp = local_ddp_kernels(scenario, shard_plan);
    // Local DDP's kernels before the all-reduce, per (data index, tensor index)
    // of the stage being lowered, and after it, per rank.
    let mut flattens: Vec<StepId> = Vec::new();
    let mut copy_backs: Vec<StepId> = Vec::new();
    if local_ddp.is_some() {
        copy_backs = vec![StepId(u32::MAX); (d * p * t) as usize];
    }
    for stage in 0..p {
        let params = parameters_on_rank(&scenario.model, sharding, stage);
        let expert_params = expert_parameters_of_stage(&scenario.model, sharding, stage);
        let gradient_bytes =
            gradients::main_grad_bytes_per_param(scenario.options.gradient_accumulation_fusion);
        let (kernels_before, kernels_after) =
            local_ddp.map_or((0, 0), LocalDdpKernels::kernels_before_and_after);
        flattens.clear();
        if kernels_before > 0 {
            let replica_loop = program.begin_replicas(builder);
            for data_index in 0..*lowered_replicas {
                for rank in placement.tensor_group(stage, data_index) {
                    let step = gradient_copy(
                        program,
                        builder,
                        rank,
                        stage,
                        params * gradient_bytes,
                        kernels_before,
                        done.iteration,
                    );
                    flattens.push(step);
                }
            }
            program.end_replicas(builder, replica_loop);
        }
        let mut data_all_reduces: Vec<Vec<StepId>> = vec![Vec::new(); t as usize];
        if let Some(reductions) = &sharded_reductions {
            data_all_reduces = reductions[stage as usize].clone();
        } else if d > 1 {
            // Without overlap: one all-reduce of all the stage's gradients after
            // the last pass. With overlap: one per chunk (or bucket), as soon as
            // its backward is done, in the order chunks finish.
            let reductions: Vec<(BucketKey, u64, u64)> = if scenario.options.overlap_grad_reduce {
                let index = stage as usize * chunks;
                chunk_finish_order[stage as usize]
                    .iter()
                    .flat_map(|&chunk| {
                        gradients_ready[index + chunk as usize]
                            .iter()
                            .enumerate()
                            .map(move |(bucket, ready)| {
                                (
                                    Some((chunk, bucket)),
                                    (ready.params - ready.expert_params) * gradient_bytes,
                                    ready.expert_params * gradient_bytes,
                                )
                            })
                    })
                    .collect()
            } else {
                vec![(
                    None,
                    (params - expert_params) * gradient_bytes,
                    expert_params * gradient_bytes,
                )]
            };
            for tensor_index in 0..t {
                let ranks = placement.data_group(stage, tensor_index);
                let group = builder.group(&ranks);
                let nodes = placement.nodes_spanned(&ranks);
                // A mixture of experts' routed experts reduce over their
                // expert-data-parallel groups (d/ep ranks each, all at once on
                // the data group's ranks), after the dense gradients.
                let expert_nodes =
                    placement.nodes_spanned(&placement.expert_data_group(stage, 0, tensor_index));
                // (bucket, bytes, group size, nodes)
                let mut all: Vec<(BucketKey, u64, u32, u32)> = Vec::new();
                for &(bucket, dense, experts) in &reductions {
                    all.push((bucket, dense, d, nodes));
                    if experts > 0 && expert_data_parallel > 1 {
                        all.push((bucket, experts, expert_data_parallel, expert_nodes));
                    }
                }
                for &(bucket, bytes, group_size, nodes) in &all {
                    let (work, kind) = if distributed {
                        (
                            Work::DataParallelReduceScatter {
                                bytes,
                                group_size,
                                nodes,
                            },
                            TaskKind::DataParallelReduceScatter,
                        )
                    } else {
                        (
                            Work::DataParallelAllReduce {
                                bytes,
                                group_size,
                                nodes,
                            },
                            TaskKind::DataParallelAllReduce,
                        )
                    };
                    let work = builder.work(work);
                    let all_reduce = program.task(Task {
                        kind,
                        stream: StreamKind::DataParallel,
                        chunk: bucket.map_or(0, |(chunk, _)| chunk) as u16,
                        stage,
                        microbatch: NO_MICROBATCH,
                        group,
                        work,
                        iteration: done.iteration,
                    });
                    for data_index in 0..*lowered_replicas {
                        let index = (data_index * p + stage) as usize;
                        let ready = match bucket {
                            Some((chunk, bucket)) => {
                                gradients_ready[index * chunks + chunk as usize][bucket].step
                            }
                            None => stage_tails[index].expect("set for every stage"),
                        };
                        program.depend(ready, all_reduce, Dependency::Data);
                        if let Some(&flatten) =
                            flattens.get((data_index * t + tensor_index) as usize)
                        {
                            program.depend(flatten, all_reduce, Dependency::Data);
                        }
                        if bucket.is_none() {
                            for &send in &trailing_sends[index] {
                                program.depend(send, all_reduce, Dependency::ProgramOrder);
                            }
                        }
                    }
                    data_all_reduces[tensor_index as usize].push(all_reduce);
                }
            }
        }
        if kernels_after > 0 {
            let replica_loop = program.begin_replicas(builder);
            for data_index in 0..*lowered_replicas {
                let ranks = placement.tensor_group(stage, data_index);
                for (tensor_index, rank) in ranks.into_iter().enumerate() {
                    let step = gradient_copy(
                        program,
                        builder,
                        rank,
                        stage,
                        params * gradient_bytes,
                        kernels_after,
                        done.iteration,
                    );
                    for &all_reduce in &data_all_reduces[tensor_index] {
                        program.depend(all_reduce, step, Dependency::Data);
                    }
                    let index = ((data_index * p + stage) * t) as usize + tensor_index;
                    copy_backs[index] = step;
                }
            }
            program.end_replicas(builder, replica_loop);
        }
        reductions_by_stage.push(data_all_reduces);
    }
    if local_ddp.is_none_or(|kernels| kernels.kernels_before_and_after().1 == 0) {
        copy_backs.clear();
    }

    Reductions {
        by_stage: reductions_by_stage,
        copy_backs,
    }
}

/// The tied word embedding's all-reduces, by (stage, data index, tensor index).
fn embedding_all_reduces(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    scenario: &Scenario,
    placement: &Placement,
    shard_plan: Option<ShardPlan>,
    done: &StagesDone,
    reductions: &Reductions,
) -> BTreeMap<(u32, u32, u32), StepId> {
    let reductions_by_stage = &reductions.by_stage;
    let StagesDone {
        lowered_replicas,
        stage_tails,
        trailing_sends,
        ..
    } = done;
    let (t, p, _) = degrees(scenario);
    let sharding = scenario.layout.sharding();
    let gradient_bytes_per_param =
        gradients::main_grad_bytes_per_param(scenario.options.gradient_accumulation_fusion);
    // The word embedding's gradient, held by the first stage (embedding) and
    // the last (the tied output layer), is all-reduced between them after the
    // data-parallel reduction and before the optimizer (megatron/training.py
    // train_step, 2021: "All-reduce word_embeddings' grad across first and
    // last stages", torch.distributed.all_reduce(main_grad,
    // group=mpu.get_embedding_group())). Untied output layers have none, and
    // on the V map both ends are on stage 0 (their sum is a local add, not modeled).
    let mut embedding_all_reduces: BTreeMap<(u32, u32, u32), StepId> = BTreeMap::new();
    let ((first_stage, _), (last_stage, _)) = sharding.ends();
    if first_stage != last_stage && scenario.model.tied_embeddings {
        let embedding_params = scenario.model.vocab / t as u64 * scenario.model.hidden;
        let ends = [first_stage, last_stage];
        let replica_loop = program.begin_replicas(builder);
        for data_index in 0..*lowered_replicas {
            let firsts = placement.tensor_group(first_stage, data_index);
            let lasts = placement.tensor_group(last_stage, data_index);
            for tensor_index in 0..t {
                let ranks = [firsts[tensor_index as usize], lasts[tensor_index as usize]];
                let group = builder.group(&ranks);
                let work = builder.work(Work::DataParallelAllReduce {
                    bytes: (embedding_params * gradient_bytes_per_param).div_ceil(
                        shard_plan
                            .filter(ShardPlan::shards_gradients)
                            .map_or(1, |plan| plan.group as u64),
                    ),
                    group_size: 2,
                    nodes: placement.nodes_spanned(&ranks),
                });
                let all_reduce = program.task(Task {
                    kind: TaskKind::EmbeddingAllReduce,
                    stream: StreamKind::DataParallel,
                    chunk: 0,
                    stage: 0,
                    microbatch: NO_MICROBATCH,
                    group,
                    work,
                    iteration: done.iteration,
                });
                for stage in ends {
                    let index = (data_index * p + stage) as usize;
                    program.depend(
                        stage_tails[index].expect("set for every stage"),
                        all_reduce,
                        Dependency::Data,
                    );
                    for &send in &trailing_sends[index] {
                        program.depend(send, all_reduce, Dependency::ProgramOrder);
                    }
                    for &reduction in &reductions_by_stage[stage as usize][tensor_index as usize] {
                        program.depend(reduction, all_reduce, Dependency::Data);
                    }
                    if let Some(copy_back) =
                        reductions.copy_back(scenario, stage, data_index, tensor_index)
                    {
                        program.depend(copy_back, all_reduce, Dependency::Data);
                    }
                    embedding_all_reduces.insert((stage, data_index, tensor_index), all_reduce);
                }
            }
        }
        program.end_replicas(builder, replica_loop);
    }
    // DualPipe's two copies: rank r holds stages r (copy A) and p−1−r
    // (copy B), rank p−1−r the same two stages the other way round; each
    // copy's gradients are summed with the other's before the optimizer
    // (deepseek-ai/DualPipe `examples/example_dualpipe.py`: "p0.grad +=
    // p1all[pp_size - 1 - rank]", and the same for p1). Modeled as one
    // all-reduce of all the rank's gradients between the two mirrored
    // ranks (after the data-parallel reduction, like the tied embedding's);
    // the example gathers them over the whole pipeline group, a check, not
    // a training step. Both ends of each copy are on ranks 0 and p−1, so
    // this sum also covers the tied embedding.
    if sharding.map.copies() > 1 {
        for stage in 0..p / 2 {
            let mirror = p - 1 - stage;
            let params = parameters_on_rank(&scenario.model, sharding, stage);
            let replica_loop = program.begin_replicas(builder);
            for data_index in 0..*lowered_replicas {
                let ours = placement.tensor_group(stage, data_index);
                let theirs = placement.tensor_group(mirror, data_index);
                for tensor_index in 0..t {
                    let ranks = [ours[tensor_index as usize], theirs[tensor_index as usize]];
                    let group = builder.group(&ranks);
                    let work = builder.work(Work::DataParallelAllReduce {
                        bytes: params * gradient_bytes_per_param,
                        group_size: 2,
                        nodes: placement.nodes_spanned(&ranks),
                    });
                    let all_reduce = program.task(Task {
                        kind: TaskKind::DataParallelAllReduce,
                        stream: StreamKind::DataParallel,
                        chunk: 0,
                        stage,
                        microbatch: NO_MICROBATCH,
                        group,
                        work,
                        iteration: done.iteration,
                    });
                    for stage in [stage, mirror] {
                        let index = (data_index * p + stage) as usize;
                        program.depend(
                            stage_tails[index].expect("set for every stage"),
                            all_reduce,
                            Dependency::Data,
                        );
                        for &send in &trailing_sends[index] {
                            program.depend(send, all_reduce, Dependency::ProgramOrder);
                        }
                        for &reduction in
                            &reductions_by_stage[stage as usize][tensor_index as usize]
                        {
                            program.depend(reduction, all_reduce, Dependency::Data);
                        }
                        embedding_all_reduces.insert((stage, data_index, tensor_index), all_reduce);
                    }
                }
            }
            program.end_replicas(builder, replica_loop);
        }
    }

    embedding_all_reduces
}

/// Every rank's optimizer step, and the distributed optimizer's (or
/// ZeRO's) parameter all-gathers after them; under post-validation each
/// waits for the partial norm from the previous stage (`norm_received`, by
/// data index · p + stage). Returns, by data index · p + stage, the steps
/// after which the stage's parameters are updated (its ranks' optimizer
/// steps and the distributed optimizer's all-gathers).
#[allow(clippy::too_many_arguments)]
fn optimizer_steps(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    scenario: &Scenario,
    placement: &Placement,
    shard_plan: Option<ShardPlan>,
    done: &StagesDone,
    reductions: &Reductions,
    embedding_all_reduces: &BTreeMap<(u32, u32, u32), StepId>,
    norm_received: &[Option<StepId>],
) -> Vec<Vec<StepId>> {
    let reductions_by_stage = &reductions.by_stage;
    let StagesDone {
        lowered_replicas,
        stage_tails,
        trailing_sends,
        ..
    } = done;
    let (t, p, d) = degrees(scenario);
    let sharding = scenario.layout.sharding();
    let host = scenario.stack.host;
    let distributed = scenario.options.distributed_optimizer && d > 1;
    let expert_data_parallel = scenario.layout.expert_replicas();
    let mut params_ready: Vec<Vec<StepId>> = vec![Vec::new(); (*lowered_replicas * p) as usize];
    for stage in 0..p {
        let params = parameters_on_rank(&scenario.model, sharding, stage);
        let expert_params = expert_parameters_of_stage(&scenario.model, sharding, stage);
        let optimizer_params = if let Some(plan) = shard_plan {
            params.div_ceil(plan.group as u64)
        } else if distributed {
            // Experts' states shard over their expert-data-parallel group.
            (params - expert_params).div_ceil(d as u64)
                + expert_params.div_ceil(expert_data_parallel as u64)
        } else {
            params
        };
        let mut optimizer_steps: Vec<Vec<StepId>> = vec![Vec::new(); t as usize];
        let data_all_reduces = &reductions_by_stage[stage as usize];
        let replica_loop = program.begin_replicas(builder);
        for data_index in 0..*lowered_replicas {
            let ranks = placement.tensor_group(stage, data_index);
            let received = norm_received
                .get((data_index * p + stage) as usize)
                .copied()
                .flatten();
            // The host issues the optimizer after loss scaling's `.item()`
            // (megatron/optimizer/optimizer.py: found_inf) waited for the
            // gradients: the last pass and the data-parallel all-reduces.
            let host_optimizer = host.map(|_| {
                let group = builder.group(&ranks);
                let issue = program.task(host_task(
                    builder,
                    group,
                    stage,
                    0,
                    NO_MICROBATCH,
                    Work::HostOptimizer,
                    done.iteration,
                ));
                let index = (data_index * p + stage) as usize;
                program.depend(
                    stage_tails[index].expect("set for every stage"),
                    issue,
                    Dependency::Data,
                );
                for &all_reduce in data_all_reduces.iter().flatten() {
                    program.depend(all_reduce, issue, Dependency::Data);
                }
                for tensor_index in 0..t {
                    if let Some(copy_back) =
                        reductions.copy_back(scenario, stage, data_index, tensor_index)
                    {
                        program.depend(copy_back, issue, Dependency::Data);
                    }
                }
                for tensor_index in 0..t {
                    if let Some(&embedding) =
                        embedding_all_reduces.get(&(stage, data_index, tensor_index))
                    {
                        program.depend(embedding, issue, Dependency::Data);
                    }
                }
                // Post-validation: the host's blocking receive of the partial norm.
                if let Some(received) = received {
                    program.depend(received, issue, Dependency::Data);
                }
                issue
            });
            for (tensor_index, &rank) in ranks.iter().enumerate() {
                let step = program.rank_task(
                    builder,
                    rank,
                    TaskKind::OptimizerStep,
                    StreamKind::Compute,
                    Work::OptimizerStep {
                        params: optimizer_params,
                    },
                    stage,
                    NO_MICROBATCH,
                    done.iteration,
                );
                optimizer_steps[tensor_index].push(step);
                params_ready[(data_index * p + stage) as usize].push(step);
                if let Some(received) = received {
                    program.depend(received, step, Dependency::Data);
                }
                for &all_reduce in &data_all_reduces[tensor_index] {
                    program.depend(all_reduce, step, Dependency::Data);
                }
                if let Some(issue) = host_optimizer {
                    program.depend(issue, step, Dependency::Data);
                }
                if let Some(&embedding) =
                    embedding_all_reduces.get(&(stage, data_index, tensor_index as u32))
                {
                    program.depend(embedding, step, Dependency::Data);
                }
                for &send in &trailing_sends[(data_index * p + stage) as usize] {
                    program.depend(send, step, Dependency::ProgramOrder);
                }
            }
        }
        program.end_replicas(builder, replica_loop);
        if let Some(plan) = &shard_plan {
            for tensor_index in 0..t {
                sharded::parameter_all_gathers(
                    program,
                    builder,
                    placement,
                    plan,
                    stage,
                    tensor_index,
                    params,
                    &optimizer_steps[tensor_index as usize],
                );
            }
        } else if distributed {
            // Each data-parallel group all-gathers its ranks' updated shards
            // of fp16/bf16 parameters once every rank has stepped; a mixture
            // of experts' routed experts, sharded over their expert-data
            // groups, are gathered there (all at once on the data group's
            // ranks), after the dense parameters.
            for tensor_index in 0..t {
                let ranks = placement.data_group(stage, tensor_index);
                let group = builder.group(&ranks);
                let expert_nodes =
                    placement.nodes_spanned(&placement.expert_data_group(stage, 0, tensor_index));
                let mut gathers =
                    vec![(params - expert_params, d, placement.nodes_spanned(&ranks))];
                if expert_params > 0 && expert_data_parallel > 1 {
                    gathers.push((expert_params, expert_data_parallel, expert_nodes));
                }
                for (gathered, group_size, nodes) in gathers {
                    let work = builder.work(Work::DataParallelAllGather {
                        bytes: gathered * models::memory::WEIGHT_BYTES_PER_PARAM,
                        group_size,
                        nodes,
                    });
                    let all_gather = program.task(Task {
                        kind: TaskKind::DataParallelAllGather,
                        stream: StreamKind::DataParallel,
                        chunk: 0,
                        stage,
                        microbatch: NO_MICROBATCH,
                        group,
                        work,
                        iteration: done.iteration,
                    });
                    for &step in &optimizer_steps[tensor_index as usize] {
                        program.depend(step, all_gather, Dependency::Data);
                    }
                    for data_index in 0..*lowered_replicas {
                        params_ready[(data_index * p + stage) as usize].push(all_gather);
                    }
                }
            }
        }
    }
    params_ready
}
