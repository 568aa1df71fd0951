//! An action's pipeline sends (phase 1 of the pipeline program,
//! `pipeline.rs`): a forward sends its output to the next virtual stage, a
//! backward (or a split backward's input-gradient pass) its gradient to the
//! previous one, as a transfer on the sender's `PipelineSendNext` /
//! `PipelineSendPrevious` stream after the sender's pass. Nothing is sent
//! past a model copy's last or first stage. A send between two virtual
//! stages of one rank (the V map's turn) is a local hand-off: no transfer,
//! the receiving pass waits for the sending one. The receiving pass is
//! joined to the transfer once every group is walked
//! (`IterationSteps::connect_receives`).

use super::program::Program;
use super::walk_context::{host_task_doing, IterationSteps, Lowering};
use super::walk_context::{ChunkAt, Send, StageWalk};
use schedules::{Action, Pass};
use taskgraph::task::{StreamKind, Task, TaskKind};
use taskgraph::task_graph::{ComputePass, Dependency, TaskGraphBuilder, Work};

/// The send an action of `pass` on `chunk` produces, if any.
pub(super) fn action_send(cx: &Lowering, pass: Pass, chunk: ChunkAt) -> Option<Send> {
    match pass {
        Pass::Forward if !chunk.head => Some(Send {
            kind: TaskKind::PipelineActivation,
            stream: StreamKind::PipelineSendNext,
            peer_virtual_stage: chunk.virtual_stage + 1,
            peer_pass: ComputePass::Forward,
        }),
        Pass::Backward | Pass::InputGradient if !chunk.embedding => Some(Send {
            kind: TaskKind::PipelineGradient,
            stream: StreamKind::PipelineSendPrevious,
            peer_virtual_stage: chunk.virtual_stage - 1,
            peer_pass: if cx.recompute {
                ComputePass::Recompute
            } else {
                ComputePass::Backward
            },
        }),
        _ => None,
    }
}

/// Lowers `action`'s `send` after the group's last pass: a transfer (with
/// the host's call for it, when the stack simulates the host), or on the
/// V map's turn a local hand-off.
pub(super) fn lower_send(
    cx: &Lowering,
    steps: &mut IterationSteps,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    walk: &mut StageWalk,
    action: Action,
    send: Send,
) {
    let tail = walk.tail.expect("a pass was just added");
    let receiver = cx.slot(
        walk.data_index,
        send.peer_virtual_stage,
        action.microbatch,
        send.peer_pass,
    );
    let peer_stage = cx.sharding.map.place(cx.stages, send.peer_virtual_stage).0;
    // On the V map the turn between chunks stays on one rank: a local
    // hand-off, the receiving pass waits for this one.
    if peer_stage == walk.stage {
        steps.pending_receives.push((tail, receiver));
        return;
    }
    let known = walk
        .transfer_works
        .iter()
        .find(|&&(peer, _)| peer == peer_stage)
        .map(|&(_, work)| work);
    let work = known.unwrap_or_else(|| {
        let work = builder.work(transfer_work(cx, walk, peer_stage));
        walk.transfer_works.push((peer_stage, work));
        work
    });
    let call = cx.host.map(|_| {
        let call = program.host_call_work(builder);
        program.task(host_task_doing(
            walk.tensor_group,
            walk.stage,
            action.chunk,
            action.microbatch,
            call,
            walk.iteration,
        ))
    });
    let transfer = program.task(Task {
        kind: send.kind,
        stream: send.stream,
        chunk: action.chunk as u16,
        stage: walk.stage,
        microbatch: action.microbatch,
        group: walk.tensor_group,
        work,
        iteration: walk.iteration,
    });
    program.depend(tail, transfer, Dependency::Data);
    if let Some(call) = call {
        program.depend(call, transfer, Dependency::Data);
    }
    if cx.synchronize_after_p2p {
        walk.host_waits.extend([transfer, tail]);
    }
    walk.blocking_sends.push(transfer);
    steps.pending_receives.push((transfer, receiver));
}

/// The work of a send from `walk`'s tensor group to stage `peer_stage`'s.
fn transfer_work(cx: &Lowering, walk: &StageWalk, peer_stage: u32) -> Work {
    let peer_first = cx.placement.tensor_group(peer_stage, walk.data_index)[0];
    let crosses_nodes = cx.placement.node(walk.tensor_ranks[0]) != cx.placement.node(peer_first);
    // A context-parallel rank sends its own s/cp tokens.
    let bytes = cx.layout.microbatch_size.get() as u64
        * (cx.scenario.model.seq_len / cx.layout.context_parallel.get() as u64)
        * cx.scenario.model.hidden
        * models::ops::FP16_BYTES;
    let t = cx.tensor_parallel;
    Work::PipelineTransfer {
        bytes,
        tensor_parallel: t,
        crosses_nodes,
        scatter_gather: cx.scenario.options.pipeline_scatter_gather && crosses_nodes && t > 1,
    }
}
