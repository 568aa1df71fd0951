//! The iteration's optimizer steps (lowering phase 1, `iteration_end.rs`):
//! every rank's step after its gradients are reduced and summed, the host's
//! issue of it, and the distributed optimizer's (or ZeRO's) parameter
//! all-gathers after the steps.

use super::end_context::{EndContext, Reductions};
use super::gradient_sums::GradientSums;
use super::program::{Program, StepId};
use super::sharded;
use super::walk_context::host_task;
use models::sharding::{expert_parameters_of_stage, parameters_on_rank};
use taskgraph::task::{StreamKind, Task, TaskKind, NO_MICROBATCH};
use taskgraph::task_graph::{Dependency, TaskGraphBuilder, Work};

/// Every rank's optimizer step, and the distributed optimizer's (or
/// ZeRO's) parameter all-gathers after them; under post-validation each
/// waits for the partial norm from the previous stage (`norm_received`, by
/// data index · p + stage). Returns, by data index · p + stage, the steps
/// after which the stage's parameters are updated (its ranks' optimizer
/// steps and the distributed optimizer's all-gathers).
pub(super) fn optimizer_steps(
    cx: &EndContext,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    reductions: &Reductions,
    sums: &GradientSums,
    norm_received: &[Option<StepId>],
) -> Vec<Vec<StepId>> {
    let (t, p) = (cx.t, cx.p);
    let mut params_ready: Vec<Vec<StepId>> =
        vec![Vec::new(); (cx.done.lowered_replicas * p) as usize];
    for stage in 0..p {
        let optimizer_params = optimizer_params(cx, stage);
        let mut steps: Vec<Vec<StepId>> = vec![Vec::new(); t as usize];
        let replica_loop = program.begin_replicas(builder);
        for data_index in 0..cx.done.lowered_replicas {
            let received = norm_received
                .get(cx.stage_index(data_index, stage))
                .copied()
                .flatten();
            let issue = cx.scenario.stack.host.map(|_| {
                host_issue(
                    cx,
                    program,
                    builder,
                    reductions,
                    sums,
                    (stage, data_index),
                    received,
                )
            });
            let ranks = cx.placement.tensor_group(stage, data_index);
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
                    cx.done.iteration,
                );
                steps[tensor_index].push(step);
                params_ready[cx.stage_index(data_index, stage)].push(step);
                if let Some(received) = received {
                    program.depend(received, step, Dependency::Data);
                }
                for &all_reduce in &reductions.by_stage[stage as usize][tensor_index] {
                    program.depend(all_reduce, step, Dependency::Data);
                }
                if let Some(issue) = issue {
                    program.depend(issue, step, Dependency::Data);
                }
                if let Some(&sum) = sums.get(&(stage, data_index, tensor_index as u32)) {
                    program.depend(sum, step, Dependency::Data);
                }
                for &send in cx.trailing_sends(data_index, stage) {
                    program.depend(send, step, Dependency::ProgramOrder);
                }
            }
        }
        program.end_replicas(builder, replica_loop);
        parameter_all_gathers(cx, program, builder, stage, &steps, &mut params_ready);
    }
    params_ready
}

/// Parameters whose optimizer state one rank of `stage` steps: 1/group of
/// them under ZeRO, the distributed optimizer's shard (experts' states over
/// their expert-data-parallel group), or all.
fn optimizer_params(cx: &EndContext, stage: u32) -> u64 {
    let sharding = cx.scenario.layout.sharding();
    let params = parameters_on_rank(&cx.scenario.model, sharding, stage);
    let expert_params = expert_parameters_of_stage(&cx.scenario.model, sharding, stage);
    if let Some(plan) = cx.shard_plan {
        params.div_ceil(plan.group as u64)
    } else if cx.distributed_optimizer() {
        (params - expert_params).div_ceil(cx.d as u64)
            + expert_params.div_ceil(cx.scenario.layout.expert_replicas() as u64)
    } else {
        params
    }
}

/// The host's issue of the optimizer of (stage, data index), after loss
/// scaling's `.item()` (megatron/optimizer/optimizer.py: found_inf) waited
/// for the gradients: the last pass, the data-parallel reductions, local
/// DDP's copies back and the gradient sums; under post-validation also the
/// host's blocking receive of the partial norm.
fn host_issue(
    cx: &EndContext,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    reductions: &Reductions,
    sums: &GradientSums,
    (stage, data_index): (u32, u32),
    received: Option<StepId>,
) -> StepId {
    let ranks = cx.placement.tensor_group(stage, data_index);
    let group = builder.group(&ranks);
    let issue = program.task(host_task(
        builder,
        group,
        stage,
        0,
        NO_MICROBATCH,
        Work::HostOptimizer,
        cx.done.iteration,
    ));
    program.depend(cx.stage_tail(data_index, stage), issue, Dependency::Data);
    for &all_reduce in reductions.by_stage[stage as usize].iter().flatten() {
        program.depend(all_reduce, issue, Dependency::Data);
    }
    for tensor_index in 0..cx.t {
        if let Some(copy_back) = reductions.copy_back(cx, stage, data_index, tensor_index) {
            program.depend(copy_back, issue, Dependency::Data);
        }
    }
    for tensor_index in 0..cx.t {
        if let Some(&sum) = sums.get(&(stage, data_index, tensor_index)) {
            program.depend(sum, issue, Dependency::Data);
        }
    }
    if let Some(received) = received {
        program.depend(received, issue, Dependency::Data);
    }
    issue
}

/// The updated parameters gathered after `stage`'s optimizer `steps` (per
/// tensor index): ZeRO's per-unit all-gathers, or the distributed
/// optimizer's: each data-parallel group all-gathers its ranks' updated
/// shards of fp16/bf16 parameters once every rank has stepped, a mixture of
/// experts' routed experts (sharded over their expert-data groups) gathered
/// there, all at once on the data group's ranks, after the dense ones.
fn parameter_all_gathers(
    cx: &EndContext,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    stage: u32,
    steps: &[Vec<StepId>],
    params_ready: &mut [Vec<StepId>],
) {
    let sharding = cx.scenario.layout.sharding();
    let params = parameters_on_rank(&cx.scenario.model, sharding, stage);
    if let Some(plan) = &cx.shard_plan {
        for tensor_index in 0..cx.t {
            sharded::parameter_all_gathers(
                program,
                builder,
                cx.placement,
                plan,
                stage,
                tensor_index,
                params,
                &steps[tensor_index as usize],
            );
        }
        return;
    }
    if !cx.distributed_optimizer() {
        return;
    }
    let expert_params = expert_parameters_of_stage(&cx.scenario.model, sharding, stage);
    let expert_data_parallel = cx.scenario.layout.expert_replicas();
    for tensor_index in 0..cx.t {
        let ranks = cx.placement.data_group(stage, tensor_index);
        let group = builder.group(&ranks);
        let expert_spread =
            cx.placement
                .spread(&cx.placement.expert_data_group(stage, 0, tensor_index));
        let mut gathers = vec![(params - expert_params, cx.d, cx.placement.spread(&ranks))];
        if expert_params > 0 && expert_data_parallel > 1 {
            gathers.push((expert_params, expert_data_parallel, expert_spread));
        }
        for (gathered, group_size, spread) in gathers {
            let work = builder.work(Work::DataParallelAllGather {
                bytes: gathered * models::memory::WEIGHT_BYTES_PER_PARAM,
                group_size,
                spread,
            });
            let all_gather = program.task(Task {
                kind: TaskKind::DataParallelAllGather,
                stream: StreamKind::DataParallel,
                chunk: 0,
                stage,
                microbatch: NO_MICROBATCH,
                group,
                work,
                iteration: cx.done.iteration,
            });
            for &step in &steps[tensor_index as usize] {
                program.depend(step, all_gather, Dependency::Data);
            }
            for data_index in 0..cx.done.lowered_replicas {
                params_ready[cx.stage_index(data_index, stage)].push(all_gather);
            }
        }
    }
}
