//! The walk of one tensor group's actions in program order (phase 1 of the
//! pipeline program, `pipeline.rs`): per action, the previous iteration's
//! post-validation where the schedule places it, its passes (or an
//! overlapped F&B pair's two halves at once, `pair_overlap.rs`), then its
//! sends (`pipeline_sends.rs`). What the walk carries from one action to
//! the next — the group's last compute step, the sends and host waits the
//! next pass waits for, a send held for a later action — is [`StageWalk`].

use super::end_context::GradientsReady;
use super::pair_overlap::{lower_pair, PairHalf, PairWaits};
use super::pass_lowering::{lower_pass, PassAt};
use super::pipeline_sends::{action_send, lower_send};
use super::post_validation::Carry;
use super::program::{Program, TensorGroup};
use super::walk_context::{ChunkAt, IterationSteps, Lowering, StageWalk};
use schedules::{Action, Pass};
use taskgraph::task_graph::{ComputePass, TaskGraphBuilder};

/// The compute passes of an action: recompute inserts a `Recompute` before
/// every `Backward`, or before a split backward's `InputGradient`.
fn passes_of(pass: Pass, recompute: bool) -> &'static [ComputePass] {
    match (pass, recompute) {
        (Pass::Forward, _) => &[ComputePass::Forward],
        (Pass::Backward, true) => &[ComputePass::Recompute, ComputePass::Backward],
        (Pass::Backward, false) => &[ComputePass::Backward],
        // A split backward recomputes before its input-gradient pass.
        (Pass::InputGradient, true) => &[ComputePass::Recompute, ComputePass::InputGradient],
        (Pass::InputGradient, false) => &[ComputePass::InputGradient],
        (Pass::WeightGradient, _) => &[ComputePass::WeightGradient],
        (Pass::ForwardBackward, _) => unreachable!("pairs are lowered as their halves"),
    }
}

/// Walks the actions of tensor group (`data_index`, `stage`) in program
/// order for `iteration` (with the previous iteration's `carry`).
pub(super) fn lower_tensor_group(
    cx: &Lowering,
    steps: &mut IterationSteps,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    (carry, iteration): (Option<&Carry>, u16),
    data_index: u32,
    stage: u32,
) {
    let tensor_ranks = cx.placement.tensor_group(stage, data_index);
    let group = program.add_tensor_group(TensorGroup::new(
        builder,
        &cx.placement,
        (stage, data_index),
        cx.tensor_ranks,
    ));
    let mut walk = StageWalk {
        data_index,
        stage,
        group_index: (data_index * cx.stages + stage) as usize,
        group,
        tensor_group: program.tensor_group(group).tensor_group,
        tensor_ranks,
        iteration,
        carry,
        tail: None,
        blocking_sends: Vec::new(),
        host_waits: Vec::new(),
        held_send: None,
        pair_forward_step: None,
        pair_overlapped: false,
        transfer_works: Vec::new(),
    };
    // The actions in program order, an F&B pair as its two halves with
    // their place in the pair (`pair_half`: 0 or 1). Without `pair_overlap`
    // a pair is lowered as its two passes back to back on the compute
    // stream (costed as sequential), as one unit, as its interleaved
    // kernels make it: its forward starts once the backward's gradient is
    // in too, and the forward's output is sent when the pair ends.
    let actions: Vec<(Action, Option<usize>)> = cx.schedule.actions[stage as usize]
        .iter()
        .flat_map(|a| {
            let pair = a.pass == Pass::ForwardBackward;
            a.halves()
                .enumerate()
                .map(move |(half, action)| (action, pair.then_some(half)))
        })
        .collect();
    // Post-validation of the previous iteration, before this action.
    let validation_point = carry.and_then(|_| cx.schedule.post_validation_point(stage));
    for (index, &(action, pair_half)) in actions.iter().enumerate() {
        let validates_here = validation_point == Some(index);
        if validates_here {
            let carried = carry.expect("only after a first iteration");
            steps.validation.send(
                program,
                builder,
                cx.scenario,
                &cx.placement,
                carried,
                (data_index, stage),
                iteration - 1,
            );
        }
        // Megatron-LM 2021's interleaved steady state: a forward directly
        // followed by a backward sends its output together with that
        // backward's gradient, after it.
        let held_for_backward = cx.combined_exchange
            && action.pass == Pass::Forward
            && actions
                .get(index + 1)
                .is_some_and(|(next, _)| next.pass == Pass::Backward);
        let chunk = ChunkAt::of(cx, stage, action.chunk);
        if pair_half == Some(0) {
            walk.pair_overlapped = pair_is_overlapped(cx, stage, &action, &actions[index + 1].0);
        }
        let overlapped = walk.pair_overlapped && pair_half.is_some();
        if overlapped && pair_half == Some(0) {
            lower_overlapped_pair(
                cx,
                steps,
                program,
                builder,
                &mut walk,
                action,
                actions[index + 1].0,
            );
        }
        if !overlapped {
            for &pass in passes_of(action.pass, cx.recompute) {
                let at = PassAt {
                    action,
                    pass,
                    pair_half,
                    validates_here,
                    chunk,
                };
                lower_pass(cx, steps, program, builder, &mut walk, at);
            }
        }
        let send = action_send(cx, action.pass, chunk);
        for (action, send) in walk.sends_now(action, pair_half, held_for_backward, send) {
            lower_send(cx, steps, program, builder, &mut walk, action, send);
        }
    }
    let index = walk.group_index;
    steps.stage_tails[index] = Some(walk.tail.expect("every stage runs at least one action"));
    steps.trailing_sends[index] = walk.blocking_sends;
}

/// `pair_overlap`: both halves lowered at the forward's turn. A pair whose
/// backward is its chunk's last, cut into gradient buckets, stays
/// unoverlapped (back to back). So does one with a half the
/// sharded-data-parallel plan cuts (the overlapped parameter gather's first
/// forward).
fn pair_is_overlapped(cx: &Lowering, stage: u32, forward: &Action, backward: &Action) -> bool {
    let cut_by_plan = |half: &Action, pass| {
        let (half, _, _) = PairHalf::of(cx.scenario, &cx.sharding, stage, half, pass);
        cx.shard_plan.is_some_and(|plan| {
            plan.pieces(
                pass,
                half.microbatch,
                half.layers,
                half.embedding,
                half.head,
            )
            .is_some()
        })
    };
    cx.scenario.options.pair_overlap
        && (cx.bucket_layers.is_none()
            || cx.last_gradient_actions[stage as usize][backward.chunk as usize] != Some(*backward))
        && !cut_by_plan(forward, ComputePass::Forward)
        && !cut_by_plan(backward, ComputePass::Backward)
}

/// Lowers an overlapped F&B pair (`forward`, `backward`) at the forward's
/// turn (`pair_overlap.rs`) and records its passes as the walk of two
/// separate passes would.
fn lower_overlapped_pair(
    cx: &Lowering,
    steps: &mut IterationSteps,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    walk: &mut StageWalk,
    forward: Action,
    backward: Action,
) {
    let stage = walk.stage;
    let (forward_half, forward_stage, _) = PairHalf::of(
        cx.scenario,
        &cx.sharding,
        stage,
        &forward,
        ComputePass::Forward,
    );
    let (backward_half, backward_stage, backward_first) = PairHalf::of(
        cx.scenario,
        &cx.sharding,
        stage,
        &backward,
        ComputePass::Backward,
    );
    let pair = lower_pair(
        program,
        builder,
        cx.scenario,
        walk.group,
        stage,
        walk.iteration,
        [forward_half, backward_half],
        PairWaits {
            blocking_sends: &mut walk.blocking_sends,
            host_waits: &mut walk.host_waits,
        },
    );
    let forward_slot = cx.slot(
        walk.data_index,
        forward_stage,
        forward.microbatch,
        ComputePass::Forward,
    );
    let backward_slot = cx.slot(
        walk.data_index,
        backward_stage,
        backward.microbatch,
        ComputePass::Backward,
    );
    steps.pass_steps[forward_slot] = Some(pair.first[0]);
    steps.pass_steps[backward_slot] = Some(pair.first[1]);
    steps.host_first_steps[forward_slot] = pair.first_host[0];
    steps.host_first_steps[backward_slot] = pair.first_host[1];
    // DualPipe waits for both inputs before the pair.
    steps.pair_forwards[backward_slot] = Some(pair.first[0]);
    steps.gradients_ready[walk.group_index * cx.chunks + backward.chunk as usize] =
        vec![GradientsReady {
            step: pair.last[1],
            params: models::sharding::parameters_of_layer_range(
                &cx.scenario.model,
                cx.sharding,
                backward_first,
                backward_half.layers as u64,
                backward_half.embedding,
                backward_half.head,
            ),
            expert_params: models::sharding::expert_parameters_of_layer_range(
                &cx.scenario.model,
                cx.sharding,
                backward_first,
                backward_half.layers as u64,
            ),
        }];
    walk.chunk_finished(steps, backward.chunk);
    walk.tail = Some(pair.tail);
}
