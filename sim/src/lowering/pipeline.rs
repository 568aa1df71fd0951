//! Lowering's first phase for Megatron-style training: schedule actions →
//! the program of one iteration.
//!
//! For every tensor-parallel group (one per stage and data-parallel index)
//! the stage's actions are walked in program order. Each action becomes, per
//! pass (recompute inserts a `Recompute` before every `Backward`, or before
//! a split backward's `InputGradient`), one
//! [`Step::Pass`](super::program::Step::Pass): a compute task per rank and
//! the pass's blocking tensor all-reduces (Megatron issues them
//! synchronously between kernels, so they occupy the compute stream; the
//! pass is split into "kernels" and "all-reduces" rather than layer by
//! layer: the sum is the same because nothing overlaps them).
//!
//! Pipeline transfers are steps on the sender's `PipelineSendNext` /
//! `PipelineSendPrevious` streams: they depend on the sender's pass and feed
//! the receiver's pass (the gradient feeds the recompute when there is one).
//! A split backward's input-gradient pass sends the gradient as a backward
//! does; its weight-gradient pass sends nothing and has no tensor all-reduce,
//! and a chunk's gradients are ready after its last weight-gradient pass.
//! Sends are blocking as in Megatron's `send_forward_recv_backward`: the
//! sender's next pass waits for its send. After the last action, the
//! data-parallel all-reduce (when d > 1; not overlapped, as in Megatron SC21)
//! and the optimizer step follow. With `overlap_grad_reduce` the all-reduce
//! is one per chunk, after the chunk's last backward; with
//! `grad_reduce_bucket_params` that last backward is emitted as several
//! pieces of whole layers (gradient buckets), each with its own all-reduce.
//! Under context parallelism the replicas are the d·cp ranks of Megatron's
//! dp-cp group: each runs every microbatch on its s/cp tokens, and the
//! gradient reduction and the distributed optimizer span all of them.

use super::passes::{backward_buckets, layers_per_bucket, BucketLayers, PassPiece};
use super::program::{Program, StepId, TensorGroup};
use super::sharded::{self, ShardPlan, ShardedPiece};
use crate::cost::gradients;
use crate::placement::Placement;
use crate::scenario::{Recompute, Scenario};
use crate::schedule::{Pass, PipelineSchedule};
use crate::task::{StreamKind, Task, TaskKind, NO_MICROBATCH};
use crate::task_graph::{ComputePass, Dependency, TaskGraphBuilder, Work};
use models::sharding::{parameters_of_layers, parameters_on_rank};

/// Passes per (data index, virtual stage, microbatch): forward, recompute,
/// backward (or a split backward's input-gradient pass, which receives the
/// gradient in its place), weight-gradient pass.
const PASSES: usize = 4;

fn pass_slot(pass: ComputePass) -> usize {
    match pass {
        ComputePass::Forward => 0,
        ComputePass::Recompute => 1,
        ComputePass::Backward | ComputePass::InputGradient => 2,
        ComputePass::WeightGradient => 3,
    }
}

/// Where the gradients of a chunk (or of one bucket of it) are ready, and how many parameters they hold.
#[derive(Debug, Clone, Copy)]
struct GradientsReady {
    step: StepId,
    params: u64,
}

/// The program of one iteration of a pipeline schedule.
pub fn program(
    scenario: &Scenario,
    schedule: &PipelineSchedule,
    builder: &mut TaskGraphBuilder,
) -> Program {
    let layout = scenario.layout;
    let sharding = layout.sharding();
    // With context parallelism every (data index, context index) pair is a
    // replica of the stage's tensor group running all m microbatches on its
    // s/cp tokens; gradients are reduced over the d·cp ranks (Megatron's
    // dp-cp group), so `d` here counts replicas: d·cp ([`Placement`]).
    let (t, p, d, m) = (
        layout.tensor_parallel,
        layout.pipeline_parallel,
        layout.replicas(),
        layout.microbatches,
    );
    let virtual_stages = layout.virtual_stages();
    // The most layers a chunk builds (all, unless the split counts the
    // embedding or the loss as a layer: then the first and last build fewer).
    let layers_per_chunk = sharding.layers_per_chunk(scenario.model.layers) as u32;
    let placement = Placement::new(layout, scenario.topology.node.gpus_per_node);
    let recompute = scenario.recompute != Recompute::None;
    let chunks = layout.chunks as usize;
    let mut program = Program::default();

    let slot = |data_index: u32, virtual_stage: u32, microbatch: u32, pass: ComputePass| -> usize {
        ((data_index as usize * virtual_stages as usize + virtual_stage as usize) * m as usize
            + microbatch as usize)
            * PASSES
            + pass_slot(pass)
    };
    // The first step of every pass, by slot: where transfers are received.
    let mut pass_steps: Vec<Option<StepId>> =
        vec![None; d as usize * virtual_stages as usize * m as usize * PASSES];
    // Transfers whose receiving pass may not exist yet: (transfer, receiver slot).
    let mut pending_receives: Vec<(StepId, usize)> = Vec::new();
    // Last compute step of each (data index, stage) group, and the sends
    // still in flight after it (the optimizer waits for them).
    let mut stage_tails: Vec<Option<StepId>> = vec![None; d as usize * p as usize];
    let mut trailing_sends: Vec<Vec<StepId>> = vec![Vec::new(); d as usize * p as usize];
    // With overlapped gradient reduction: where each (data index, stage,
    // chunk)'s gradients become ready (per bucket), and the order chunks finish.
    let mut gradients_ready: Vec<Vec<GradientsReady>> =
        vec![Vec::new(); d as usize * p as usize * chunks];
    let mut chunk_finish_order: Vec<Vec<u32>> = vec![Vec::new(); p as usize];
    // The host lane (when the stack simulates the host): the first-issue
    // step of every pass by slot, for receives the host must wait for.
    let host = scenario.stack.host;
    let synchronize_after_p2p = host.is_some_and(|costs| costs.synchronize_after_p2p);
    let mut host_first_steps: Vec<Option<StepId>> = vec![None; pass_steps.len()];
    let bucket_layers = scenario.options.grad_reduce_bucket_params.map(|bucket| {
        let per_layer = parameters_of_layers(&scenario.model, sharding, 1, false, false);
        layers_per_bucket(bucket, per_layer, layers_per_chunk)
    });
    // ZeRO-2/3 (`sharded.rs`): the pieces of every pass, per (data index, stage).
    let shard_plan = ShardPlan::new(scenario);
    let mut sharded_pieces: Vec<Vec<ShardedPiece>> = vec![
        Vec::new();
        if shard_plan.is_some() {
            d as usize * p as usize
        } else {
            0
        }
    ];

    for data_index in 0..d {
        for stage in 0..p {
            let tensor_ranks = placement.tensor_group(stage, data_index);
            let group =
                program.add_tensor_group(TensorGroup::new(builder, &placement, stage, data_index));
            let tensor_group = program.tensor_group(group).tensor_group;
            let mut tail: Option<StepId> = None;
            // Sends the next compute pass must wait for (blocking p2p).
            let mut blocking_sends: Vec<StepId> = Vec::new();
            // GPU work the host waits for before it issues more (synchronize).
            let mut host_waits: Vec<StepId> = Vec::new();

            for action in &schedule.actions[stage as usize] {
                let virtual_stage = action.chunk * p + stage;
                let chunk_layers =
                    sharding.layers_of_chunk(scenario.model.layers, stage, action.chunk) as u32;
                let embedding = virtual_stage == 0;
                let head = virtual_stage == virtual_stages - 1;
                let passes: &[ComputePass] = match (action.pass, recompute) {
                    (Pass::Forward, _) => &[ComputePass::Forward],
                    (Pass::Backward, true) => &[ComputePass::Recompute, ComputePass::Backward],
                    (Pass::Backward, false) => &[ComputePass::Backward],
                    // A split backward recomputes before its input-gradient pass.
                    (Pass::InputGradient, true) => {
                        &[ComputePass::Recompute, ComputePass::InputGradient]
                    }
                    (Pass::InputGradient, false) => &[ComputePass::InputGradient],
                    (Pass::WeightGradient, _) => &[ComputePass::WeightGradient],
                };
                for &pass in passes {
                    // The recompute pass re-runs the layers only (not embedding or head).
                    let (with_embedding, with_head) = if pass == ComputePass::Recompute {
                        (false, false)
                    } else {
                        (embedding, head)
                    };
                    // The chunk's last backward (split: its last weight-gradient
                    // pass) is cut into gradient buckets when they are
                    // all-reduced as they become ready; sharded data
                    // parallelism cuts passes its own way.
                    let makes_gradients =
                        matches!(pass, ComputePass::Backward | ComputePass::WeightGradient);
                    let sharded = shard_plan.and_then(|plan| {
                        plan.pieces(
                            pass,
                            action.microbatch,
                            chunk_layers,
                            with_embedding,
                            with_head,
                        )
                    });
                    let pieces = match (sharded, bucket_layers) {
                        (Some(pieces), _) => pieces,
                        (None, Some(per_bucket))
                            if makes_gradients && action.microbatch + 1 == m =>
                        {
                            backward_buckets(chunk_layers, per_bucket, with_embedding, with_head)
                        }
                        (None, _) => vec![BucketLayers {
                            layers: chunk_layers,
                            embedding: with_embedding,
                            head: with_head,
                        }],
                    };
                    let mut first_piece = None;
                    let mut first_host = None;
                    let mut ready = Vec::with_capacity(pieces.len());
                    for piece in pieces {
                        let issue = |first| Work::HostIssuePass {
                            pass,
                            layers: piece.layers,
                            embedding: piece.embedding,
                            head: piece.head,
                            first,
                        };
                        let host_issue = host.map(|_| {
                            let first = program.task(host_task(
                                builder,
                                tensor_group,
                                stage,
                                action.chunk,
                                action.microbatch,
                                issue(true),
                            ));
                            for wait in host_waits.drain(..) {
                                program.depend(wait, first, Dependency::Data);
                            }
                            program.task(host_task(
                                builder,
                                tensor_group,
                                stage,
                                action.chunk,
                                action.microbatch,
                                issue(false),
                            ));
                            first
                        });
                        first_host = first_host.or(host_issue);
                        let step = program.pass(
                            builder,
                            group,
                            PassPiece {
                                pass,
                                chunk: action.chunk,
                                microbatch: action.microbatch,
                                iteration: 0,
                                layers: piece.layers,
                                embedding: piece.embedding,
                                head: piece.head,
                                // Megatron-Core marks each iteration's first
                                // microbatch; TE casts and caches FP8 weights then.
                                fp8_weight_cast: scenario.options.precision
                                    == crate::scenario::Precision::Fp8
                                    && pass == ComputePass::Forward
                                    && action.microbatch == 0,
                            },
                        );
                        for send in blocking_sends.drain(..) {
                            program.depend(send, step, Dependency::ProgramOrder);
                        }
                        if let Some(issued) = host_issue {
                            program.depend(issued, step, Dependency::Data);
                        }
                        first_piece.get_or_insert(step);
                        tail = Some(step);
                        let params = parameters_of_layers(
                            &scenario.model,
                            sharding,
                            piece.layers as u64,
                            piece.embedding,
                            piece.head,
                        );
                        ready.push(GradientsReady { step, params });
                        if shard_plan.is_some() {
                            sharded_pieces[(data_index * p + stage) as usize].push(ShardedPiece {
                                pass,
                                chunk: action.chunk,
                                microbatch: action.microbatch,
                                step,
                                params,
                            });
                        }
                    }
                    let pass_slot = slot(data_index, virtual_stage, action.microbatch, pass);
                    pass_steps[pass_slot] = first_piece;
                    host_first_steps[pass_slot] = first_host;
                    if makes_gradients {
                        gradients_ready[((data_index * p + stage) as usize) * chunks
                            + action.chunk as usize] = ready;
                        if data_index == 0 {
                            let order = &mut chunk_finish_order[stage as usize];
                            order.retain(|&c| c != action.chunk);
                            order.push(action.chunk);
                        }
                    }
                }

                // Sends produced by this action.
                let send = match action.pass {
                    Pass::Forward if virtual_stage + 1 < virtual_stages => Some((
                        TaskKind::PipelineActivation,
                        StreamKind::PipelineSendNext,
                        virtual_stage + 1,
                        ComputePass::Forward,
                    )),
                    Pass::Backward | Pass::InputGradient if virtual_stage > 0 => Some((
                        TaskKind::PipelineGradient,
                        StreamKind::PipelineSendPrevious,
                        virtual_stage - 1,
                        if recompute {
                            ComputePass::Recompute
                        } else {
                            ComputePass::Backward
                        },
                    )),
                    _ => None,
                };
                if let Some((kind, stream, peer_virtual_stage, peer_pass)) = send {
                    let peer_stage = peer_virtual_stage % p;
                    let peer_first = placement.tensor_group(peer_stage, data_index)[0];
                    let crosses_nodes =
                        placement.node(tensor_ranks[0]) != placement.node(peer_first);
                    // A context-parallel rank sends its own s/cp tokens.
                    let bytes = layout.microbatch_size as u64
                        * (scenario.model.seq_len / layout.context_parallel as u64)
                        * scenario.model.hidden
                        * models::ops::FP16_BYTES;
                    let work = builder.work(Work::PipelineTransfer {
                        bytes,
                        tensor_parallel: t,
                        crosses_nodes,
                        scatter_gather: scenario.options.pipeline_scatter_gather
                            && crosses_nodes
                            && t > 1,
                    });
                    let call = host.map(|_| {
                        program.task(host_task(
                            builder,
                            tensor_group,
                            stage,
                            action.chunk,
                            action.microbatch,
                            Work::HostCall,
                        ))
                    });
                    let transfer = program.task(Task {
                        kind,
                        stream,
                        chunk: action.chunk as u16,
                        stage,
                        microbatch: action.microbatch,
                        group: tensor_group,
                        work,
                        iteration: 0,
                    });
                    program.depend(
                        tail.expect("a pass was just added"),
                        transfer,
                        Dependency::Data,
                    );
                    if let Some(call) = call {
                        program.depend(call, transfer, Dependency::Data);
                    }
                    if synchronize_after_p2p {
                        host_waits.extend([transfer, tail.expect("a pass was just added")]);
                    }
                    blocking_sends.push(transfer);
                    pending_receives.push((
                        transfer,
                        slot(data_index, peer_virtual_stage, action.microbatch, peer_pass),
                    ));
                }
            }
            let index = (data_index * p + stage) as usize;
            stage_tails[index] = Some(tail.expect("every stage runs at least one action"));
            trailing_sends[index] = blocking_sends;
        }
    }

    // Every transfer feeds the pass that receives it.
    for (transfer, receiver) in pending_receives {
        let received =
            pass_steps[receiver].expect("every receiving pass exists in a valid schedule");
        program.depend(transfer, received, Dependency::Data);
        // A synchronizing exchange returns to the host only once the data is in.
        if let (true, Some(issued)) = (synchronize_after_p2p, host_first_steps[receiver]) {
            program.depend(transfer, issued, Dependency::Data);
        }
    }

    // Data-parallel all-reduce (or, with the distributed optimizer,
    // reduce-scatter) and optimizer step (on a 1/d shard, then an all-gather
    // of the updated parameters).
    let distributed = scenario.options.distributed_optimizer && d > 1;
    // (With only the optimizer sharded, the reductions below are ZeRO-1's.)
    let sharded_reductions = shard_plan.and_then(|plan| {
        let reductions = sharded::emit(
            &mut program,
            builder,
            scenario,
            &placement,
            &plan,
            &sharded_pieces,
        );
        plan.shards_gradients().then_some(reductions)
    });
    let gradient_bytes_per_param =
        gradients::main_grad_bytes_per_param(scenario.options.gradient_accumulation_fusion);
    let mut reductions_by_stage: Vec<Vec<Vec<StepId>>> = Vec::with_capacity(p as usize);
    for stage in 0..p {
        let params = parameters_on_rank(&scenario.model, sharding, stage);
        let gradient_bytes =
            gradients::main_grad_bytes_per_param(scenario.options.gradient_accumulation_fusion);
        let mut data_all_reduces: Vec<Vec<StepId>> = vec![Vec::new(); t as usize];
        if let Some(reductions) = &sharded_reductions {
            data_all_reduces = reductions[stage as usize].clone();
        } else if d > 1 {
            // Without overlap: one all-reduce of all the stage's gradients after
            // the last pass. With overlap: one per chunk (or bucket), as soon as
            // its backward is done, in the order chunks finish.
            let reductions: Vec<(Option<(u32, usize)>, u64)> =
                if scenario.options.overlap_grad_reduce {
                    let index = stage as usize * chunks;
                    chunk_finish_order[stage as usize]
                        .iter()
                        .flat_map(|&chunk| {
                            gradients_ready[index + chunk as usize]
                                .iter()
                                .enumerate()
                                .map(move |(bucket, ready)| {
                                    (Some((chunk, bucket)), ready.params * gradient_bytes)
                                })
                        })
                        .collect()
                } else {
                    vec![(None, params * gradient_bytes)]
                };
            for tensor_index in 0..t {
                let ranks = placement.data_group(stage, tensor_index);
                let group = builder.group(&ranks);
                let nodes = placement.nodes_spanned(&ranks);
                for &(bucket, bytes) in &reductions {
                    let (work, kind) = if distributed {
                        (
                            Work::DataParallelReduceScatter {
                                bytes,
                                group_size: d,
                                nodes,
                            },
                            TaskKind::DataParallelReduceScatter,
                        )
                    } else {
                        (
                            Work::DataParallelAllReduce {
                                bytes,
                                group_size: d,
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
                        iteration: 0,
                    });
                    for data_index in 0..d {
                        let index = (data_index * p + stage) as usize;
                        let ready = match bucket {
                            Some((chunk, bucket)) => {
                                gradients_ready[index * chunks + chunk as usize][bucket].step
                            }
                            None => stage_tails[index].expect("set for every stage"),
                        };
                        program.depend(ready, all_reduce, Dependency::Data);
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
        reductions_by_stage.push(data_all_reduces);
    }

    // The word embedding's gradient, held by the first stage (embedding) and
    // the last (the tied output layer), is all-reduced between them after the
    // data-parallel reduction and before the optimizer (megatron/training.py
    // train_step, 2021: "All-reduce word_embeddings' grad across first and
    // last stages", torch.distributed.all_reduce(main_grad,
    // group=mpu.get_embedding_group())). Untied output layers have none.
    let mut embedding_all_reduces: std::collections::BTreeMap<(u32, u32, u32), StepId> =
        std::collections::BTreeMap::new();
    if p > 1 && scenario.model.tied_embeddings {
        let embedding_params = scenario.model.vocab / t as u64 * scenario.model.hidden;
        let ends = [0, p - 1];
        for data_index in 0..d {
            let firsts = placement.tensor_group(0, data_index);
            let lasts = placement.tensor_group(p - 1, data_index);
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
                    iteration: 0,
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
                    embedding_all_reduces.insert((stage, data_index, tensor_index), all_reduce);
                }
            }
        }
    }

    for stage in 0..p {
        let params = parameters_on_rank(&scenario.model, sharding, stage);
        let optimizer_params = if let Some(plan) = shard_plan {
            params.div_ceil(plan.group as u64)
        } else if distributed {
            params.div_ceil(d as u64)
        } else {
            params
        };
        let mut optimizer_steps: Vec<Vec<StepId>> = vec![Vec::new(); t as usize];
        let data_all_reduces = &reductions_by_stage[stage as usize];
        for data_index in 0..d {
            let ranks = placement.tensor_group(stage, data_index);
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
                    if let Some(&embedding) =
                        embedding_all_reduces.get(&(stage, data_index, tensor_index))
                    {
                        program.depend(embedding, issue, Dependency::Data);
                    }
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
                    0,
                );
                optimizer_steps[tensor_index].push(step);
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
        if let Some(plan) = &shard_plan {
            for tensor_index in 0..t {
                sharded::parameter_all_gathers(
                    &mut program,
                    builder,
                    &placement,
                    plan,
                    stage,
                    tensor_index,
                    params,
                    &optimizer_steps[tensor_index as usize],
                );
            }
        } else if distributed {
            // Each data-parallel group all-gathers its ranks' updated shards
            // of fp16/bf16 parameters once every rank has stepped.
            for tensor_index in 0..t {
                let ranks = placement.data_group(stage, tensor_index);
                let group = builder.group(&ranks);
                let work = builder.work(Work::DataParallelAllGather {
                    bytes: params * models::memory::WEIGHT_BYTES_PER_PARAM,
                    group_size: d,
                    nodes: placement.nodes_spanned(&ranks),
                });
                let all_gather = program.task(Task {
                    kind: TaskKind::DataParallelAllGather,
                    stream: StreamKind::DataParallel,
                    chunk: 0,
                    stage,
                    microbatch: NO_MICROBATCH,
                    group,
                    work,
                    iteration: 0,
                });
                for &step in &optimizer_steps[tensor_index as usize] {
                    program.depend(step, all_gather, Dependency::Data);
                }
            }
        }
    }
    program
}

/// A task of the host lane of a tensor group.
fn host_task(
    builder: &mut TaskGraphBuilder,
    group: crate::ids::GroupId,
    stage: u32,
    chunk: u32,
    microbatch: u32,
    work: Work,
) -> Task {
    Task {
        kind: TaskKind::HostIssue,
        stream: StreamKind::Host,
        chunk: chunk as u16,
        stage,
        microbatch,
        group,
        work: builder.work(work),
        iteration: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ScenarioFile;

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
        let schedule = PipelineSchedule::generate(scenario.schedule, 2, 1, 2);
        let mut builder = TaskGraphBuilder::default();
        let program = program(&scenario, &schedule, &mut builder);
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
        // the tied embedding's all-reduce between them and two optimizer steps.
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
}
