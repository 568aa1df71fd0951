//! Lowering: a pipeline schedule on a placement becomes a task graph.
//!
//! For every tensor-parallel group (one per stage and data-parallel index) the
//! stage's actions are walked in program order. Each action becomes, per
//! pass (recompute inserts a `Recompute` before every `Backward`):
//! - one compute task per rank of the tensor group (on its compute stream), then
//! - one `TensorAllReduce` group task holding the pass's blocking all-reduces
//!   (Megatron issues them synchronously between kernels, so they occupy the
//!   compute stream; the pass is split into "kernels" and "all-reduces" rather
//!   than layer by layer: the sum is the same because nothing overlaps them).
//!
//! Pipeline transfers are group tasks on the sender's `PipelineSendNext` /
//! `PipelineSendPrevious` streams: they depend on the sender's pass and feed
//! the receiver's pass (the gradient feeds the recompute when there is one).
//! Sends are blocking as in Megatron's `send_forward_recv_backward`: the
//! sender's next compute waits for its send. After the last action, the
//! data-parallel all-reduce (when d > 1; not overlapped, as in Megatron SC21)
//! and the optimizer step follow. With `overlap_grad_reduce` the all-reduce
//! is one per chunk, after the chunk's last backward; with
//! `grad_reduce_bucket_params` that last backward is emitted as several
//! pieces of whole layers (gradient buckets), each with its own all-reduce.
//!
//! Program order is encoded as edges, so a stream never runs two tasks at once
//! and the engine needs no resource queues.

use crate::cost::gradients;
use crate::ids::TaskId;
use crate::memory::{parameters_of_layers, parameters_on_rank};
use crate::placement::Placement;
use crate::scenario::{Recompute, Scenario};
use crate::schedule::{Pass, PipelineSchedule};
use crate::task::{StreamKind, Task, TaskKind, NO_MICROBATCH};
use crate::task_graph::{ComputePass, Dependency, TaskGraph, TaskGraphBuilder, Work};
use crate::tensor_pass::{
    backward_buckets, emit_pass, layers_per_bucket, BucketLayers, PassPiece, Tail, TensorGroup,
};

/// Where one pass of one (data index, virtual stage, microbatch) begins:
/// the first of its t per-rank compute tasks (consecutive ids).
#[derive(Debug, Clone, Copy)]
struct PassTasks {
    first: TaskId,
}

const PASSES: usize = 3;

fn pass_slot(pass: ComputePass) -> usize {
    match pass {
        ComputePass::Forward => 0,
        ComputePass::Recompute => 1,
        ComputePass::Backward => 2,
    }
}

/// Builds the task graph of one iteration.
pub fn lower(scenario: &Scenario, schedule: &PipelineSchedule) -> TaskGraph {
    let layout = scenario.layout;
    let (t, p, d, m) = (
        layout.tensor_parallel,
        layout.pipeline_parallel,
        layout.data_parallel,
        layout.microbatches,
    );
    let virtual_stages = layout.virtual_stages();
    let layers_per_chunk = (scenario.model.layers / virtual_stages as u64) as u32;
    let placement = Placement::new(layout, scenario.topology.node.gpus_per_node);
    let recompute = scenario.recompute != Recompute::None;

    let passes_per_microbatch: u64 = if recompute { 3 } else { 2 };
    let estimated_tasks = (d as u64
        * p as u64
        * layout.chunks as u64
        * m as u64
        * passes_per_microbatch
        * (t as u64 + 1)) as usize;
    let mut builder = TaskGraphBuilder::with_capacity(estimated_tasks, estimated_tasks * 2);

    let slot = |data_index: u32, virtual_stage: u32, microbatch: u32, pass: ComputePass| -> usize {
        ((data_index as usize * virtual_stages as usize + virtual_stage as usize) * m as usize
            + microbatch as usize)
            * PASSES
            + pass_slot(pass)
    };
    let mut pass_tasks: Vec<Option<PassTasks>> =
        vec![None; d as usize * virtual_stages as usize * m as usize * PASSES];
    // Transfers whose receiving pass may not exist yet: (transfer, receiver slot).
    let mut pending_receives: Vec<(TaskId, usize)> = Vec::new();
    // Final compute-stream tail of each (data index, stage) tensor group, and
    // the sends still in flight after its last pass (the optimizer waits for them).
    let mut stage_tails: Vec<Option<Tail>> = vec![None; d as usize * p as usize];
    // With overlapped gradient reduction: where the gradients of every (data
    // index, stage, chunk) become ready — the tail of its last backward, or of
    // each gradient bucket of it — with their parameters, and the order in
    // which chunks finish.
    let chunks = layout.chunks as usize;
    let mut gradients_ready: Vec<Vec<(Tail, u64)>> =
        vec![Vec::new(); d as usize * p as usize * chunks];
    let bucket_layers = scenario.options.grad_reduce_bucket_params.map(|bucket| {
        let per_layer = parameters_of_layers(&scenario.model, &layout, 1, false, false);
        layers_per_bucket(bucket, per_layer, layers_per_chunk)
    });
    let mut chunk_finish_order: Vec<Vec<u32>> = vec![Vec::new(); p as usize];
    let mut trailing_sends: Vec<Vec<TaskId>> = vec![Vec::new(); d as usize * p as usize];

    for data_index in 0..d {
        for stage in 0..p {
            let tensor_ranks = placement.tensor_group(stage, data_index);
            let tensor_group = TensorGroup::new(&mut builder, &placement, stage, data_index);
            let mut tail: Option<Tail> = None;
            // Sends the next compute pass must wait for (blocking p2p).
            let mut blocking_sends: Vec<TaskId> = Vec::new();
            let mut last_send = [None::<TaskId>; 2];

            for action in &schedule.actions[stage as usize] {
                let virtual_stage = action.chunk * p + stage;
                let embedding = virtual_stage == 0;
                let head = virtual_stage == virtual_stages - 1;
                let passes: &[ComputePass] = match (action.pass, recompute) {
                    (Pass::Forward, _) => &[ComputePass::Forward],
                    (Pass::Backward, true) => &[ComputePass::Recompute, ComputePass::Backward],
                    (Pass::Backward, false) => &[ComputePass::Backward],
                };
                for &pass in passes {
                    // The recompute pass re-runs the layers only (not embedding or head).
                    let (with_embedding, with_head) = if pass == ComputePass::Recompute {
                        (false, false)
                    } else {
                        (embedding, head)
                    };
                    // The chunk's last backward is split into gradient buckets
                    // when they are all-reduced as they become ready.
                    let pieces = match bucket_layers {
                        Some(per_bucket)
                            if pass == ComputePass::Backward && action.microbatch + 1 == m =>
                        {
                            backward_buckets(
                                layers_per_chunk,
                                per_bucket,
                                with_embedding,
                                with_head,
                            )
                        }
                        _ => vec![BucketLayers {
                            layers: layers_per_chunk,
                            embedding: with_embedding,
                            head: with_head,
                        }],
                    };
                    let mut pass_first = None;
                    let mut ready = Vec::with_capacity(pieces.len());
                    for piece in pieces {
                        let first = emit_pass(
                            &mut builder,
                            &tensor_group,
                            PassPiece {
                                pass,
                                chunk: action.chunk,
                                microbatch: action.microbatch,
                                iteration: 0,
                                layers: piece.layers,
                                embedding: piece.embedding,
                                head: piece.head,
                            },
                            &mut tail,
                            &mut blocking_sends,
                        );
                        pass_first.get_or_insert(first);
                        let params = parameters_of_layers(
                            &scenario.model,
                            &layout,
                            piece.layers as u64,
                            piece.embedding,
                            piece.head,
                        );
                        ready.push((tail.expect("a pass was just added"), params));
                    }
                    pass_tasks[slot(data_index, virtual_stage, action.microbatch, pass)] =
                        Some(PassTasks {
                            first: pass_first.expect("a pass has at least one piece"),
                        });
                    if pass == ComputePass::Backward {
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
                    Pass::Backward if virtual_stage > 0 => Some((
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
                    let bytes = layout.microbatch_size as u64
                        * scenario.model.seq_len
                        * scenario.model.hidden
                        * models::ops::FP16_BYTES;
                    let work = builder.work(Work::PipelineTransfer {
                        bytes,
                        tensor_parallel: t,
                        crosses_nodes,
                        scatter_gather: scenario.options.pipeline_scatter_gather && crosses_nodes && t > 1,
                    });
                    let transfer = builder.add_task(Task {
                        kind,
                        stream,
                        chunk: action.chunk as u16,
                        stage,
                        microbatch: action.microbatch,
                        group: tensor_group.tensor_group,
                        work,
                        iteration: 0,
                    });
                    let source = tail.expect("a pass was just added");
                    match source.count {
                        1 => builder.add_edge(source.first, transfer, Dependency::Data),
                        count => (0..count).for_each(|i| {
                            builder.add_edge(TaskId(source.first.0 + i), transfer, Dependency::Data)
                        }),
                    }
                    let stream_slot = (stream == StreamKind::PipelineSendPrevious) as usize;
                    if let Some(previous) = last_send[stream_slot].replace(transfer) {
                        builder.add_edge(previous, transfer, Dependency::ProgramOrder);
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

    // Wire every transfer to the pass that receives it.
    for (transfer, receiver) in pending_receives {
        let received =
            pass_tasks[receiver].expect("every receiving pass exists in a valid schedule");
        Tail {
            first: transfer,
            count: 1,
        }
        .precede(&mut builder, received.first, t, Dependency::Data);
    }

    // Data-parallel all-reduce and optimizer step.
    for stage in 0..p {
        let params = parameters_on_rank(&scenario.model, &layout, stage);
        let gradient_bytes =
            gradients::main_grad_bytes_per_param(scenario.options.gradient_accumulation_fusion);
        let mut data_all_reduces: Vec<Vec<TaskId>> = vec![Vec::new(); t as usize];
        if d > 1 {
            // Without overlap: one all-reduce of all the stage's gradients after
            // the last pass. With overlap: one per chunk, as soon as that chunk's
            // last backward is done, in the order chunks finish.
            let reductions: Vec<(Option<(u32, usize)>, u64)> = if scenario.options.overlap_grad_reduce {
                let index = stage as usize * chunks;
                chunk_finish_order[stage as usize]
                    .iter()
                    .flat_map(|&chunk| {
                        gradients_ready[index + chunk as usize]
                            .iter()
                            .enumerate()
                            .map(move |(bucket, &(_, params))| {
                                (Some((chunk, bucket)), params * gradient_bytes)
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
                let mut previous: Option<TaskId> = None;
                for &(bucket, bytes) in &reductions {
                    let work = builder.work(Work::DataParallelAllReduce {
                        bytes,
                        group_size: d,
                        nodes,
                    });
                    let all_reduce = builder.add_task(Task {
                        kind: TaskKind::DataParallelAllReduce,
                        stream: StreamKind::DataParallel,
                        chunk: bucket.map_or(0, |(chunk, _)| chunk) as u16,
                        stage,
                        microbatch: NO_MICROBATCH,
                        group,
                        work,
                        iteration: 0,
                    });
                    if let Some(previous) = previous.replace(all_reduce) {
                        builder.add_edge(previous, all_reduce, Dependency::ProgramOrder);
                    }
                    for data_index in 0..d {
                        let index = (data_index * p + stage) as usize;
                        let ready = match bucket {
                            Some((chunk, bucket)) => {
                                gradients_ready[index * chunks + chunk as usize][bucket].0
                            }
                            None => stage_tails[index].expect("set for every stage"),
                        };
                        let source = if ready.count == 1 {
                            ready.first
                        } else {
                            TaskId(ready.first.0 + tensor_index)
                        };
                        builder.add_edge(source, all_reduce, Dependency::Data);
                        if bucket.is_none() {
                            for &send in &trailing_sends[index] {
                                builder.add_edge(send, all_reduce, Dependency::ProgramOrder);
                            }
                        }
                    }
                    data_all_reduces[tensor_index as usize].push(all_reduce);
                }
            }
        }
        let optimizer_work = builder.work(Work::OptimizerStep { params });
        for data_index in 0..d {
            let tail = stage_tails[(data_index * p + stage) as usize].expect("set for every stage");
            let ranks = placement.tensor_group(stage, data_index);
            let mut first = None;
            for &rank in &ranks {
                let group = builder.group(&[rank]);
                let id = builder.add_task(Task {
                    kind: TaskKind::OptimizerStep,
                    stream: StreamKind::Compute,
                    chunk: 0,
                    stage,
                    microbatch: NO_MICROBATCH,
                    group,
                    work: optimizer_work,
                    iteration: 0,
                });
                first.get_or_insert(id);
            }
            let first = first.expect("non-empty");
            tail.precede(&mut builder, first, t, Dependency::ProgramOrder);
            for (tensor_index, reductions) in data_all_reduces.iter().enumerate() {
                for &all_reduce in reductions {
                    builder.add_edge(
                        all_reduce,
                        TaskId(first.0 + tensor_index as u32),
                        Dependency::Data,
                    );
                }
            }
            for &send in &trailing_sends[(data_index * p + stage) as usize] {
                Tail {
                    first: send,
                    count: 1,
                }
                .precede(&mut builder, first, t, Dependency::ProgramOrder);
            }
        }
    }
    builder.finish(layout.gpus())
}
