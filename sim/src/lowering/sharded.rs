//! Sharded data parallelism beyond the optimizer (`--zero-stage 2|3`,
//! `--shard-group-size`): what the pipeline program adds for ZeRO-2 and
//! ZeRO-3/FSDP, and HSDP's replication across shard groups. (ZeRO-1, the
//! distributed optimizer, stays in `iteration_end.rs`: one reduce-scatter
//! after the last pass and one parameter all-gather after the optimizer.)
//!
//! - **ZeRO-2** (Rajbhandari et al. 2020, Sec. 5.2, P_os+g): every backward
//!   (every microbatch, as DeepSpeed's stage-2 `reduce_ipg_grads` and FSDP's
//!   `SHARD_GRAD_OP` do) is cut into gradient buckets of whole layers
//!   ([`crate::plan::buckets::backward_buckets`]; `grad_reduce_bucket_params`, else
//!   DeepSpeed's `reduce_bucket_size` of 5e8), each reduce-scattered as soon
//!   as its layers are done; the optimizer steps 1/N of the parameters, whose
//!   updated half-precision copies are all-gathered after it.
//! - **ZeRO-3 / FSDP** (Sec. 5.3, P_os+g+p; PyTorch FSDP, Zhao et al. 2023):
//!   one unit per transformer layer (the auto-wrap policy of every FSDP
//!   recipe: `transformer_auto_wrap_policy`), the embedding's parameters
//!   joining the first layer's unit and the head's the last one's. Every pass
//!   (forward, recompute, backward) of every unit waits for the all-gather
//!   of the unit's parameters; the all-gather of unit j is issued when the
//!   compute of unit j − 1 starts: FSDP's `limit_all_gathers=True` keeps at
//!   most two all-gathers in flight (`_FreeEventQueue`, `_max_num_inflight_all_gathers
//!   = 2`, torch/distributed/fsdp/_limiter_utils.py), so the issue of unit j's
//!   waits for the free of unit j − 2, i.e. the end of its compute; in the
//!   backward this is `BackwardPrefetch.BACKWARD_PRE`, the default
//!   (torch/distributed/fsdp/api.py), which issues the next unit's all-gather
//!   before the current unit's gradient reduce-scatter. After each unit's
//!   backward its gradients are reduce-scattered. All of them run on the
//!   rank's data-parallel stream in issue order: FSDP's all-gathers and
//!   reduce-scatters use one process group, whose ProcessGroupNCCL runs them
//!   on one NCCL stream, so they serialize. No parameter all-gather after the
//!   optimizer: each rank's shard is what the next forward gathers.
//! - **Overlapped parameter gather** of the distributed optimizer
//!   (`--overlap-param-gather`, Megatron-Core 2024,
//!   megatron/core/optimizer/distrib_optimizer.py): the optimizer's
//!   `zero_grad` dispatches the first bucket's all-gather before the forward,
//!   and each bucket's forward pre-hook waits for its own all-gather and
//!   dispatches the next bucket's. In the simulated (steady-state) iteration
//!   the first forward of every chunk is cut into the gradient buckets (in
//!   forward order), each waiting for its all-gather, issued by the same
//!   two-in-flight rule as FSDP's; no all-gather follows the optimizer. The
//!   gradients still go as ZeRO-1's reduce-scatters (`iteration_end.rs`).
//! - **HSDP** (`ShardingStrategy.HYBRID_SHARD`): shard groups of N
//!   consecutive data-parallel indices; a gradient reduce-scatter inside each
//!   group is followed by an all-reduce of each shard across the d/N groups
//!   (ranks at the same position), and parameters are all-gathered inside the
//!   group. Collectives over one rank are left out.
//!
//! Bytes: parameters all-gathered at 2 B/param (fp16/bf16), gradients
//! reduce-scattered at the main-gradient width (`cost::gradients`).

use super::program::{Program, StepId};
use crate::cost::gradients;
use crate::placement::Placement;
use crate::plan::shard_plan::{ShardPlan, INFLIGHT_ALL_GATHERS};
use models::memory::WEIGHT_BYTES_PER_PARAM;
use models::sharding::parameters_of_layers;
use scenario::{Scenario, ZeroStage};
use taskgraph::task::{StreamKind, Task, TaskKind, NO_MICROBATCH};
use taskgraph::task_graph::{ComputePass, Dependency, TaskGraphBuilder, Work};

/// One piece of a pass on one tensor group, as the pipeline program emitted it.
#[derive(Debug, Clone, Copy)]
pub struct ShardedPiece {
    pub pass: ComputePass,
    pub chunk: u32,
    pub microbatch: u32,
    /// The piece's first step (its parameters must be gathered before it).
    pub step: StepId,
    /// Its last step: a pass cut at host synchronizations
    /// ([`crate::cost::host_syncs`]) ends with its last segment.
    pub end_step: StepId,
    /// Parameters of the piece's layers on one tensor rank.
    pub params: u64,
    /// Of those, a mixture of experts' routed experts (E/ep per layer):
    /// sharded, and gathered, over the expert-data group (0 for dense).
    pub expert_params: u64,
}

/// A collective over the ranks `ranks` on the data-parallel stream.
#[allow(clippy::too_many_arguments)]
fn collective(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    placement: &Placement,
    ranks: &[taskgraph::ids::Rank],
    kind: TaskKind,
    bytes: u64,
    piece: &ShardedPiece,
    stage: u32,
) -> StepId {
    let group_size = ranks.len() as u32;
    let spread = placement.spread(ranks);
    let work = match kind {
        TaskKind::DataParallelAllGather => Work::DataParallelAllGather {
            bytes,
            group_size,
            spread,
        },
        TaskKind::DataParallelReduceScatter => Work::DataParallelReduceScatter {
            bytes,
            group_size,
            spread,
        },
        _ => Work::DataParallelAllReduce {
            bytes,
            group_size,
            spread,
        },
    };
    piece_task(program, builder, ranks, kind, work, piece, stage)
}

/// One task of `kind` doing `work` on the ranks `ranks`, on the
/// data-parallel stream, in `piece`'s chunk and microbatch.
pub(super) fn piece_task(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    ranks: &[taskgraph::ids::Rank],
    kind: TaskKind,
    work: Work,
    piece: &ShardedPiece,
    stage: u32,
) -> StepId {
    let group = builder.group(ranks);
    let work = builder.work(work);
    program.task(Task {
        kind,
        stream: StreamKind::DataParallel,
        chunk: piece.chunk as u16,
        stage,
        microbatch: piece.microbatch,
        group,
        work,
        iteration: 0,
    })
}

/// The routed experts' parameter all-gather of a piece: one task on the
/// data group's `ranks` (every expert-data group at once, as
/// `iteration_end` reduce-scatters their gradients) costed as an all-gather
/// over one expert-data group of `group_size` ranks.
#[allow(clippy::too_many_arguments)]
fn expert_all_gather(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    placement: &Placement,
    ranks: &[taskgraph::ids::Rank],
    group_size: u32,
    bytes: u64,
    piece: &ShardedPiece,
    stage: u32,
) -> StepId {
    let spread = placement.spread(&expert_group_of(placement, ranks));
    let work = Work::DataParallelAllGather {
        bytes,
        group_size,
        spread,
    };
    piece_task(
        program,
        builder,
        ranks,
        TaskKind::DataParallelAllGather,
        work,
        piece,
        stage,
    )
}

/// The expert-data group of a data group's first rank
/// (`Placement::expert_data_group`: every (ep·etp)-th rank of the stage's
/// expert grid).
fn expert_group_of(
    placement: &Placement,
    ranks: &[taskgraph::ids::Rank],
) -> Vec<taskgraph::ids::Rank> {
    let c = placement.coordinates(ranks[0]);
    placement.expert_data_group(c.stage, c.data_index, c.tensor_index)
}

/// Emits the all-gathers and reduce-scatters of every stage in FSDP's issue
/// order; `pieces[data_index * p + stage]` lists the pieces of that tensor
/// group in program order (the same shape for every data index). Returns,
/// per stage and tensor rank, the last gradient collectives (the optimizer
/// waits for them).
pub fn emit(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    scenario: &Scenario,
    placement: &Placement,
    plan: &ShardPlan,
    pieces: &[Vec<ShardedPiece>],
) -> Vec<Vec<Vec<StepId>>> {
    let layout = scenario.layout;
    let (t, p) = (layout.tensor_parallel.get(), layout.pipeline_parallel.get());
    let gradient_bytes = gradients::main_grad_bytes_per_param(scenario.options.fp32_main_grads());
    let (n, replicas) = (plan.group, plan.replicas);
    // ZeRO++ (checked to be on with ZeRO-3 only).
    let zeropp = scenario.options.zeropp;
    let expert_data_parallel = layout.expert_replicas();
    // Replicas lowered: all, or the representative alone (`crate::symmetry`,
    // one shard group then).
    let lowered = (pieces.len() / p as usize) as u32;
    // Which pieces wait for an all-gather: ZeRO-3 all, the overlapped
    // parameter gather the first forward of each chunk, ZeRO-2 none.
    let gathers = |piece: &ShardedPiece| match plan.mode {
        ZeroStage::Full => true,
        ZeroStage::Optimizer => piece.pass == ComputePass::Forward && piece.microbatch == 0,
        _ => false,
    };
    let mut last: Vec<Vec<Vec<StepId>>> = vec![vec![Vec::new(); t as usize]; p as usize];
    for stage in 0..p {
        let sequence = &pieces[stage as usize];
        for tensor_index in 0..t {
            let data_ranks = placement.data_group(stage, tensor_index);
            let shard_ranks =
                |g: u32| data_ranks[(g * n) as usize..((g + 1) * n) as usize].to_vec();
            let piece_of = |data_index: u32, j: usize| pieces[(data_index * p + stage) as usize][j];
            let gathered: Vec<usize> = (0..sequence.len())
                .filter(|&j| gathers(&sequence[j]))
                .collect();
            // The k-th all-gather, of piece gathered[k], in every shard group;
            // each feeds its piece and waits for the piece two gathers back
            // (at most two in flight).
            let all_gather = |program: &mut Program, builder: &mut TaskGraphBuilder, k: usize| {
                let j = gathered[k];
                let first = piece_of(0, j);
                if n < 2 {
                    return;
                }
                let groups = (0..replicas)
                    .flat_map(|g| super::zeropp::gather_groups(&zeropp, &first, &data_ranks, g, n));
                for (ranks, members) in groups {
                    // A mixture of experts' routed experts are sharded over
                    // their expert-data group (d·cp/ep ranks): gathered
                    // there, after the dense parameters (as the gradients
                    // are reduce-scattered, `iteration_end`). Under qwZ
                    // each gather's scales follow it in a gather of their own.
                    let dense = first.params - first.expert_params;
                    if zeropp.quantized_weights {
                        super::zeropp::quantize_before_gather(
                            program,
                            builder,
                            &ranks,
                            &first,
                            expert_data_parallel,
                            stage,
                        );
                    }
                    let mut steps = Vec::new();
                    for bytes in [
                        zeropp.weight_gather_bytes(dense),
                        zeropp.scale_gather_bytes(dense, ranks.len() as u32),
                    ] {
                        if bytes > 0 {
                            steps.push(collective(
                                program,
                                builder,
                                placement,
                                &ranks,
                                TaskKind::DataParallelAllGather,
                                bytes,
                                &first,
                                stage,
                            ));
                        }
                    }
                    if first.expert_params > 0 && expert_data_parallel > 1 {
                        let experts = first.expert_params;
                        for bytes in [
                            zeropp.weight_gather_bytes(experts),
                            zeropp.scale_gather_bytes(experts, expert_data_parallel),
                        ] {
                            if bytes > 0 {
                                steps.push(expert_all_gather(
                                    program,
                                    builder,
                                    placement,
                                    &ranks,
                                    expert_data_parallel,
                                    bytes,
                                    &first,
                                    stage,
                                ));
                            }
                        }
                    }
                    for step in steps {
                        for data_index in members.start..members.end.min(lowered) {
                            program.depend(step, piece_of(data_index, j).step, Dependency::Data);
                            if k >= INFLIGHT_ALL_GATHERS as usize {
                                let freed = piece_of(
                                    data_index,
                                    gathered[k - INFLIGHT_ALL_GATHERS as usize],
                                );
                                program.depend(freed.end_step, step, Dependency::Data);
                            }
                        }
                    }
                }
            };
            if !gathered.is_empty() {
                all_gather(program, builder, 0);
            }
            for (j, &piece) in sequence.iter().enumerate() {
                if let Ok(k) = gathered.binary_search(&j) {
                    if k + 1 < gathered.len() {
                        all_gather(program, builder, k + 1);
                    }
                }
                if piece.pass != ComputePass::Backward || !plan.shards_gradients() {
                    continue;
                }
                let bytes = piece.params * gradient_bytes;
                let mut scattered = Vec::new();
                for g in 0..replicas {
                    if n < 2 {
                        continue;
                    }
                    let (step, last_step) = if zeropp.quantized_gradients {
                        super::zeropp::quantized_reduce(
                            program,
                            builder,
                            placement,
                            &shard_ranks(g),
                            &piece,
                            gradient_bytes,
                            stage,
                        )
                    } else {
                        let step = collective(
                            program,
                            builder,
                            placement,
                            &shard_ranks(g),
                            TaskKind::DataParallelReduceScatter,
                            bytes,
                            &piece,
                            stage,
                        );
                        (step, step)
                    };
                    for data_index in g * n..((g + 1) * n).min(lowered) {
                        program.depend(piece_of(data_index, j).end_step, step, Dependency::Data);
                    }
                    scattered.push(last_step);
                }
                let mut reduced = Vec::new();
                if replicas > 1 {
                    // Each shard all-reduced across the groups (HSDP).
                    for position in 0..n {
                        let ranks: Vec<_> = (0..replicas)
                            .map(|g| data_ranks[(g * n + position) as usize])
                            .collect();
                        let step = collective(
                            program,
                            builder,
                            placement,
                            &ranks,
                            TaskKind::DataParallelAllReduce,
                            bytes.div_ceil(n as u64),
                            &piece,
                            stage,
                        );
                        for g in 0..replicas {
                            let data_index = g * n + position;
                            program.depend(
                                piece_of(data_index, j).end_step,
                                step,
                                Dependency::Data,
                            );
                        }
                        for &rs in &scattered {
                            program.depend(rs, step, Dependency::Data);
                        }
                        reduced.push(step);
                    }
                }
                last[stage as usize][tensor_index as usize] = if reduced.is_empty() {
                    scattered
                } else {
                    reduced
                };
            }
        }
    }
    last
}

/// ZeRO-2's all-gather of the updated half-precision parameters inside each
/// shard group once its ranks have stepped (`optimizer_steps[data_index]`).
#[allow(clippy::too_many_arguments)]
pub fn parameter_all_gathers(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    placement: &Placement,
    plan: &ShardPlan,
    stage: u32,
    tensor_index: u32,
    params: u64,
    optimizer_steps: &[StepId],
) {
    if plan.mode != ZeroStage::Gradients || plan.group < 2 {
        return;
    }
    let data_ranks = placement.data_group(stage, tensor_index);
    let n = plan.group;
    let piece = ShardedPiece {
        pass: ComputePass::Forward,
        chunk: 0,
        microbatch: NO_MICROBATCH,
        step: optimizer_steps[0],
        end_step: optimizer_steps[0],
        params,
        expert_params: 0,
    };
    for g in 0..plan.replicas {
        let ranks = &data_ranks[(g * n) as usize..((g + 1) * n) as usize];
        let step = collective(
            program,
            builder,
            placement,
            ranks,
            TaskKind::DataParallelAllGather,
            params * WEIGHT_BYTES_PER_PARAM,
            &piece,
            stage,
        );
        // (`optimizer_steps` holds the lowered replicas': all, or the representative's.)
        let lowered = optimizer_steps.len();
        let (first, last) = ((g * n) as usize, ((g + 1) * n) as usize);
        for &optimizer in &optimizer_steps[first.min(lowered)..last.min(lowered)] {
            program.depend(optimizer, step, Dependency::Data);
        }
    }
}

/// The `--explain` lines of sharded data parallelism (None when off).
pub fn explain(scenario: &Scenario) -> Option<String> {
    let options = &scenario.options;
    if options.sharding < ZeroStage::Optimizer {
        return None;
    }
    let d = scenario.layout.replicas();
    let n = options.shard_group(d);
    let sharding = scenario.layout.sharding();
    let per_layer = parameters_of_layers(&scenario.model, sharding, 1, false, false);
    let gradient_bytes = gradients::main_grad_bytes_per_param(options.fp32_main_grads());
    let mut text = format!(
        "\nsharded data parallelism: ZeRO-{} ({}) over shard groups of {n} of the {d} data-parallel{} ranks{}\n",
        options.sharding.stage(),
        options.sharding.name(),
        if scenario.layout.context_parallel.get() > 1 {
            " × context-parallel"
        } else {
            ""
        },
        if n < d {
            format!(", replicated across {} groups (HSDP)", d / n)
        } else {
            String::new()
        }
    );
    let line = match options.sharding {
        ZeroStage::Optimizer if options.overlap_param_gather => "  gradients reduce-scattered as each bucket's last backward ends; optimizer on 1/d; parameters all-gathered bucket by bucket as the next forward reaches them (--overlap-param-gather)\n".to_string(),
        ZeroStage::Optimizer => "  gradients reduce-scattered after the last backward; optimizer on 1/d; parameters all-gathered after it\n".to_string(),
        ZeroStage::Gradients => format!(
            "  every backward's gradient buckets reduce-scattered as produced ({} B per layer per tensor rank); optimizer on 1/N; parameters all-gathered after it\n",
            per_layer * gradient_bytes
        ),
        _ => format!(
            "  per layer unit: parameter all-gather of {} B before every forward, recompute and backward (next unit prefetched, at most {INFLIGHT_ALL_GATHERS} in flight), gradient reduce-scatter of {} B after its backward\n",
            per_layer * WEIGHT_BYTES_PER_PARAM,
            per_layer * gradient_bytes
        ),
    };
    text.push_str(&line);
    if let Some(lines) = super::zeropp::explain(scenario, n, per_layer, gradient_bytes) {
        text.push_str(&lines);
    }
    Some(text)
}
