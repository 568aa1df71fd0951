//! The end of one pipeline iteration (lowering phase 1, after every
//! stage's passes, `pipeline.rs`): the data-parallel reductions (all-reduce,
//! or the distributed optimizer's reduce-scatter, or ZeRO-2/3's from
//! `sharded.rs`), the tied word embedding's all-reduce between the stages
//! holding the embedding and the head (DualPipe: the two copies'
//! gradients all-reduced between mirrored ranks), the optimizer steps and the
//! distributed optimizer's parameter all-gather (`optimizer_steps.rs`).
//!
//! Every part reads one [`EndContext`]: the scenario, the placement, the
//! shard plan, what the stages' passes left, and the degrees.

use super::end_context::{EndContext, Reductions, StagesDone};
use super::gradient_sums::{dualpipe_copy_all_reduces, tied_embedding_all_reduces};
use super::optimizer_steps::optimizer_steps;
use super::post_validation::{self, Carry};
use super::program::{Program, StepId};
use super::sharded;
use crate::placement::Placement;
use crate::plan::ShardPlan;
use models::sharding::{expert_parameters_of_stage, parameters_on_rank};
use scenario::{LocalDdpKernels, Scenario};
use taskgraph::task::{StreamKind, Task, TaskKind, NO_MICROBATCH};
use taskgraph::task_graph::{Dependency, NodeSpread, TaskGraphBuilder, Work};

/// A data-parallel reduction's (chunk, bucket) when overlapped (None: the
/// stage's one reduction after its last pass).
type BucketKey = Option<(u32, usize)>;

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
    let cx = EndContext::new(scenario, placement, shard_plan, done);
    let reductions = data_parallel_reductions(&cx, program, builder);
    let mut gradient_sums = tied_embedding_all_reduces(&cx, program, builder, &reductions);
    dualpipe_copy_all_reduces(&cx, program, builder, &reductions, &mut gradient_sums);
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
                let mut ready: Vec<StepId> = reductions.by_stage[stage as usize].concat();
                ready.extend((0..cx.t).filter_map(|tensor_index| {
                    reductions.copy_back(&cx, stage, data_index, tensor_index)
                }));
                ready
            },
        )
    } else {
        Vec::new()
    };
    let params_ready = optimizer_steps(
        &cx,
        program,
        builder,
        &reductions,
        &gradient_sums,
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
    // PowerSGD and 1-bit Adam run PyTorch's and DeepSpeed's DDP, not local
    // DDP: their own kernels surround the reduction ([`compression_kernels`]).
    if shard_plan.is_some() || options.overlap_grad_reduce || compresses(scenario) {
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

/// Memory-bound kernels every rank of a stage runs on its compute stream
/// before or after the stage's reduction: local DDP's passes over the
/// gradients, or a compressed reduction's own kernels.
#[derive(Debug, Clone, Copy)]
struct RankKernels {
    kind: TaskKind,
    /// HBM bytes of each kernel (read + written).
    bytes_per_kernel: u64,
    kernels: u32,
}

impl RankKernels {
    /// Local DDP's `kernels` passes, each reading and writing `gradient_bytes`.
    fn local_ddp(gradient_bytes: u64, kernels: u32) -> Option<RankKernels> {
        (kernels > 0).then_some(RankKernels {
            kind: TaskKind::GradientCopy,
            bytes_per_kernel: gradient_bytes.saturating_mul(2),
            kernels,
        })
    }

    /// A compressed reduction's kernels, `bytes` in all.
    fn compression(bytes: f64) -> Option<RankKernels> {
        (bytes > 0.0).then_some(RankKernels {
            kind: TaskKind::Compression,
            bytes_per_kernel: bytes.ceil() as u64,
            kernels: 1,
        })
    }
}

/// Whether the stage's reduction is PowerSGD's or 1-bit Adam's.
fn compresses(scenario: &Scenario) -> bool {
    scenario.options.powersgd_rank.is_some() || scenario.options.optimizer.compresses_momentum()
}

/// The kernels of PowerSGD's hook or 1-bit Adam's compression on a rank of
/// `stage` before and after its reduction (`sim::cost::powersgd`,
/// `sim::cost::onebit`); none for any other reduction or at d = 1.
fn compression_kernels(cx: &EndContext, stage: u32) -> (Option<RankKernels>, Option<RankKernels>) {
    let scenario = cx.scenario;
    if cx.d < 2 {
        return (None, None);
    }
    if let Some(rank) = scenario.options.powersgd_rank {
        let rank = u64::from(rank.get());
        let sizes = crate::cost::powersgd::stage_sizes(scenario, stage, rank);
        let b = cx.gradient_bytes_per_param();
        return (
            RankKernels::compression(crate::cost::powersgd::kernel_bytes_before(&sizes, b)),
            RankKernels::compression(crate::cost::powersgd::kernel_bytes_after(&sizes, b, rank)),
        );
    }
    if scenario.options.optimizer.compresses_momentum() {
        let params = parameters_on_rank(&scenario.model, scenario.layout.sharding(), stage);
        let padded = scenario::optimizer::onebit_padded_elements(params, cx.d);
        return (
            RankKernels::compression(crate::cost::onebit::kernel_bytes_before(padded)),
            RankKernels::compression(crate::cost::onebit::kernel_bytes_after(padded, cx.d)),
        );
    }
    (None, None)
}

/// One rank's `kernels` on its compute stream, after its last pass (program order).
fn gradient_copy(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    rank: taskgraph::ids::Rank,
    stage: u32,
    kernels: RankKernels,
    iteration: u16,
) -> StepId {
    program.rank_task(
        builder,
        rank,
        kernels.kind,
        StreamKind::Compute,
        Work::GradientCopy {
            bytes: kernels.bytes_per_kernel,
            kernels: kernels.kernels,
        },
        stage,
        NO_MICROBATCH,
        iteration,
    )
}

/// The data-parallel reductions of every stage, per tensor index: ZeRO-2/3's
/// from `sharded.rs`, else an all-reduce (or the distributed optimizer's
/// reduce-scatter) per tensor index, with local DDP's copies around them.
fn data_parallel_reductions(
    cx: &EndContext,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
) -> Reductions {
    let (t, p) = (cx.t, cx.p);
    // (With only the optimizer sharded, the reductions below are ZeRO-1's.)
    let sharded_reductions = cx.shard_plan.and_then(|plan| {
        let reductions = sharded::emit(
            program,
            builder,
            cx.scenario,
            cx.placement,
            &plan,
            &cx.done.sharded_pieces,
        );
        plan.shards_gradients().then_some(reductions)
    });
    let (kernels_before, kernels_after) = local_ddp_kernels(cx.scenario, cx.shard_plan)
        .map_or((0, 0), LocalDdpKernels::kernels_before_and_after);
    // Local DDP's copies back after the all-reduce (or a compressed
    // reduction's kernels after it), per rank.
    let mut copy_backs: Vec<StepId> = Vec::new();
    if kernels_after > 0 || compression_kernels(cx, 0).1.is_some() {
        copy_backs = vec![StepId(u32::MAX); (cx.d * p * t) as usize];
    }
    let sharding = cx.scenario.layout.sharding();
    let mut by_stage: Vec<Vec<Vec<StepId>>> = Vec::with_capacity(p as usize);
    for stage in 0..p {
        let params = parameters_on_rank(&cx.scenario.model, sharding, stage);
        let gradient_bytes = params * cx.gradient_bytes_per_param();
        let (compress, decompress) = compression_kernels(cx, stage);
        let before = compress.or(RankKernels::local_ddp(gradient_bytes, kernels_before));
        let after = decompress.or(RankKernels::local_ddp(gradient_bytes, kernels_after));
        // The kernels before the all-reduce, per (data index, tensor index).
        let flattens = match before {
            Some(kernels) => copies_before(cx, program, builder, stage, kernels),
            None => Vec::new(),
        };
        let data_all_reduces = if let Some(reductions) = &sharded_reductions {
            reductions[stage as usize].clone()
        } else if cx.d > 1 {
            stage_reductions(cx, program, builder, stage, params, &flattens)
        } else {
            vec![Vec::new(); t as usize]
        };
        if let Some(kernels) = after {
            copies_back(
                cx,
                program,
                builder,
                stage,
                kernels,
                &data_all_reduces,
                &mut copy_backs,
            );
        }
        by_stage.push(data_all_reduces);
    }
    Reductions {
        by_stage,
        copy_backs,
    }
}

/// The kernels before the all-reduce on every rank of `stage`, one replica
/// loop, by data index · t + tensor index.
fn copies_before(
    cx: &EndContext,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    stage: u32,
    kernels: RankKernels,
) -> Vec<StepId> {
    let mut copies = Vec::new();
    let replica_loop = program.begin_replicas(builder);
    for data_index in 0..cx.done.lowered_replicas {
        for rank in cx.placement.tensor_group(stage, data_index) {
            copies.push(gradient_copy(
                program,
                builder,
                rank,
                stage,
                kernels,
                cx.done.iteration,
            ));
        }
    }
    program.end_replicas(builder, replica_loop);
    copies
}

/// The kernels after the all-reduce on every rank of `stage` (local DDP's
/// copies back, or a compressed reduction's second half), each after its
/// tensor index's reductions, into `copy_backs` by (data index · p + stage)
/// · t + tensor index.
fn copies_back(
    cx: &EndContext,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    stage: u32,
    kernels: RankKernels,
    data_all_reduces: &[Vec<StepId>],
    copy_backs: &mut [StepId],
) {
    let replica_loop = program.begin_replicas(builder);
    for data_index in 0..cx.done.lowered_replicas {
        let ranks = cx.placement.tensor_group(stage, data_index);
        for (tensor_index, rank) in ranks.into_iter().enumerate() {
            let step = gradient_copy(program, builder, rank, stage, kernels, cx.done.iteration);
            for &all_reduce in &data_all_reduces[tensor_index] {
                program.depend(all_reduce, step, Dependency::Data);
            }
            copy_backs[cx.stage_index(data_index, stage) * cx.t as usize + tensor_index] = step;
        }
    }
    program.end_replicas(builder, replica_loop);
}

/// The gradients `stage` reduces over its data groups, as (bucket, dense
/// bytes, routed experts' bytes): without overlap one reduction of all of
/// them after the last pass; with overlap one per chunk (or bucket), as soon
/// as its backward is done, in the order chunks finish.
fn reduction_buckets(cx: &EndContext, stage: u32, params: u64) -> Vec<(BucketKey, u64, u64)> {
    let gradient_bytes = cx.gradient_bytes_per_param();
    if !cx.scenario.options.overlap_grad_reduce {
        let sharding = cx.scenario.layout.sharding();
        let expert_params = expert_parameters_of_stage(&cx.scenario.model, sharding, stage);
        return vec![(
            None,
            (params - expert_params) * gradient_bytes,
            expert_params * gradient_bytes,
        )];
    }
    let chunks = cx.scenario.layout.chunks.get() as usize;
    let index = stage as usize * chunks;
    cx.done.chunk_finish_order[stage as usize]
        .iter()
        .flat_map(|&chunk| {
            cx.done.gradients_ready[index + chunk as usize]
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
}

/// The data-parallel reductions of `stage` (d > 1, no ZeRO-2/3), per
/// tensor index: each of [`reduction_buckets`] over the data group, and a
/// mixture of experts' routed experts over their expert-data-parallel
/// groups (d/ep ranks each, all at once on the data group's ranks), after
/// the dense gradients.
fn stage_reductions(
    cx: &EndContext,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    stage: u32,
    params: u64,
    flattens: &[StepId],
) -> Vec<Vec<StepId>> {
    let placement = cx.placement;
    let buckets = reduction_buckets(cx, stage, params);
    let expert_data_parallel = cx.scenario.layout.expert_replicas();
    let mut data_all_reduces: Vec<Vec<StepId>> = vec![Vec::new(); cx.t as usize];
    for tensor_index in 0..cx.t {
        let ranks = placement.data_group(stage, tensor_index);
        let group = builder.group(&ranks);
        let spread = placement.spread(&ranks);
        let expert_spread = placement.spread(&placement.expert_data_group(stage, 0, tensor_index));
        // (bucket, bytes, group size, spread)
        let mut all: Vec<(BucketKey, u64, u32, NodeSpread)> = Vec::new();
        for &(bucket, dense, experts) in &buckets {
            all.push((bucket, dense, cx.d, spread));
            if experts > 0 && expert_data_parallel > 1 {
                all.push((bucket, experts, expert_data_parallel, expert_spread));
            }
        }
        for (bucket, bytes, group_size, spread) in all {
            let all_reduce = reduction_task(cx, program, builder, stage, group, bucket, {
                (bytes, group_size, spread)
            });
            for data_index in 0..cx.done.lowered_replicas {
                let ready = match bucket {
                    Some((chunk, bucket)) => {
                        let index = cx.stage_index(data_index, stage)
                            * cx.scenario.layout.chunks.get() as usize
                            + chunk as usize;
                        cx.done.gradients_ready[index][bucket].step
                    }
                    None => cx.stage_tail(data_index, stage),
                };
                program.depend(ready, all_reduce, Dependency::Data);
                if let Some(&flatten) = flattens.get((data_index * cx.t + tensor_index) as usize) {
                    program.depend(flatten, all_reduce, Dependency::Data);
                }
                if bucket.is_none() {
                    for &send in cx.trailing_sends(data_index, stage) {
                        program.depend(send, all_reduce, Dependency::ProgramOrder);
                    }
                }
            }
            data_all_reduces[tensor_index as usize].push(all_reduce);
        }
    }
    data_all_reduces
}

/// One data-parallel reduction task of (bytes, group size, nodes): the
/// distributed optimizer's reduce-scatter, else an all-reduce.
fn reduction_task(
    cx: &EndContext,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    stage: u32,
    group: taskgraph::ids::GroupId,
    bucket: BucketKey,
    (bytes, group_size, spread): (u64, u32, NodeSpread),
) -> StepId {
    let (work, kind) = if let Some(rank) = cx.scenario.options.powersgd_rank {
        // PowerSGD's hook in place of DDP's all-reduce (checked: plain DDP,
        // no overlap, dense models: one bucket, the stage's gradients).
        let sizes = crate::cost::powersgd::stage_sizes(cx.scenario, stage, u64::from(rank.get()));
        (
            Work::PowerSgdAllReduce {
                elements: sizes.elements,
                matrix_elements: sizes.matrix_elements,
                p_elements: sizes.p_elements,
                q_elements: sizes.q_elements,
                element_bytes: cx.gradient_bytes_per_param(),
                rank: rank.get(),
                group_size,
                spread,
            },
            TaskKind::DataParallelAllReduce,
        )
    } else if cx.scenario.options.optimizer.compresses_momentum() {
        // 1-bit Adam reduces the fp32 momentum, compressed, in place of the
        // gradients (checked: no distributed optimizer).
        (
            Work::OneBitAllReduce {
                elements: bytes / cx.gradient_bytes_per_param(),
                group_size,
                spread,
            },
            TaskKind::DataParallelAllReduce,
        )
    } else if cx.distributed_optimizer() {
        (
            Work::DataParallelReduceScatter {
                bytes,
                group_size,
                spread,
            },
            TaskKind::DataParallelReduceScatter,
        )
    } else {
        (
            Work::DataParallelAllReduce {
                bytes,
                group_size,
                spread,
            },
            TaskKind::DataParallelAllReduce,
        )
    };
    let work = builder.work(work);
    program.task(Task {
        kind,
        stream: StreamKind::DataParallel,
        chunk: bucket.map_or(0, |(chunk, _)| chunk) as u16,
        stage,
        microbatch: NO_MICROBATCH,
        group,
        work,
        iteration: cx.done.iteration,
    })
}
