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
//! sender's next pass waits for its send — except under the zero-bubble
//! runtime (ZB-H1, ZB-H2, ZB-V: `ScheduleKind::sends_block`), whose sends
//! only the receiver waits for. Virtual stages sit on the ranks the
//! layout's stage map says (interleaved, or V: a send between two virtual
//! stages of one rank is a local hand-off, no transfer; DualPipe's two
//! copies: nothing is sent past a copy's last or first stage); an
//! overlapped F&B pair (DualPipe, DualPipeV) is lowered as its two passes
//! back to back, as one unit.
//! After the last action (`iteration_end.rs`), the
//! data-parallel all-reduce (when d > 1; not overlapped, as in Megatron SC21)
//! and the optimizer step follow. With `overlap_grad_reduce` the all-reduce
//! is one per chunk, after the chunk's last backward; with
//! `grad_reduce_bucket_params` that last backward is emitted as several
//! pieces of whole layers (gradient buckets), each with its own all-reduce.
//! Under context parallelism the replicas are the d·cp ranks of Megatron's
//! dp-cp group: each runs every microbatch on its s/cp tokens, and the
//! gradient reduction and the distributed optimizer span all of them.

use super::iteration_end::{self, StagesDone};
use super::pair_overlap::{lower_pair, PairHalf, PairWaits};
use super::passes::{backward_buckets, layers_per_bucket, BucketLayers, PassPiece};
use super::post_validation::{Carry, PostValidation};
use super::program::{Program, StepId, TensorGroup};
use super::sharded::{ShardPlan, ShardedPiece};
use crate::placement::Placement;
use crate::scenario::{Recompute, Scenario};
use crate::schedule::{Pass, PipelineSchedule};
use crate::task::{StreamKind, Task, TaskKind};
use crate::task_graph::{ComputePass, Dependency, TaskGraphBuilder, Work};
use models::sharding::parameters_of_layers;

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
pub(super) struct GradientsReady {
    pub step: StepId,
    pub params: u64,
    /// Of `params`, a mixture of experts' routed experts (reduced over the
    /// expert-data-parallel group).
    pub expert_params: u64,
}

/// The program of one iteration of a pipeline schedule, for the first
/// `lowered_replicas` replicas: all d·cp of them, or replica 0 alone
/// ([`crate::symmetry`]; the collectives across replicas keep their whole
/// groups, so they are costed for d·cp).
pub fn program(
    scenario: &Scenario,
    schedule: &PipelineSchedule,
    builder: &mut TaskGraphBuilder,
    lowered_replicas: u32,
) -> Program {
    let layout = scenario.layout;
    let sharding = layout.sharding();
    // With context parallelism every (data index, context index) pair is a
    // replica of the stage's tensor group running all m microbatches on its
    // s/cp tokens; gradients are reduced over the d·cp ranks (Megatron's
    // dp-cp group), so `d` here counts replicas: d·cp ([`Placement`]),
    // of which the first `lowered_replicas` are lowered.
    debug_assert!((1..=layout.replicas()).contains(&lowered_replicas));
    let (t, p, d, m) = (
        layout.tensor_parallel,
        layout.pipeline_parallel,
        lowered_replicas,
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
    // With optimizer post-validation (`post_validation.rs`) several
    // iterations, each stage's next one after its own optimizer step; every
    // other run lowers one.
    let iterations = if scenario.options.optimizer_post_validation {
        scenario.iterations
    } else {
        1
    };
    let mut carry: Option<Carry> = None;
    for iteration in 0..iterations {
        let iteration = iteration as u16;
        // Each (stage, chunk)'s last gradient-making action (microbatch 0 in looped BFS).
        let last_gradient_actions = schedule.last_gradient_actions();

        let slot =
            |data_index: u32, virtual_stage: u32, microbatch: u32, pass: ComputePass| -> usize {
                ((data_index as usize * virtual_stages as usize + virtual_stage as usize)
                    * m as usize
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
        // The zero-bubble runtime's sends hold neither the next pass nor the
        // host (`ScheduleKind::sends_block`: it posts isend/irecv and never
        // synchronizes); the iteration end still follows them.
        let sends_block = scenario.schedule.sends_block();
        let synchronize_after_p2p =
            sends_block && host.is_some_and(|costs| costs.synchronize_after_p2p);
        let mut host_first_steps: Vec<Option<StepId>> = vec![None; pass_steps.len()];
        // The forward of an F&B pair, by the slot of the pair's receiving
        // backward (or recompute): it waits for that gradient too.
        let mut pair_forwards: Vec<Option<StepId>> = vec![None; pass_steps.len()];
        // The 2021 interleaved schedule's combined forward/backward exchange
        // (megatron/schedules.py at de7dc40: in the steady state the output of
        // forward k + warm-up goes out with backward k's gradient, in one
        // `send_forward_backward_recv_forward_backward` after both). That code
        // has the SC21 order only (groups of p), and with m = p every forward is
        // a warm-up one (`all_warmup_microbatches`): no steady state, no holding.
        let combined_exchange = scenario.stack.combined_interleaved_exchange
            && scenario.schedule == crate::scenario::ScheduleKind::Interleaved
            && layout.chunks > 1
            && layout.microbatch_group_size() == p
            && m != p;
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

        // The post-validation sends and the passes they gate, per (data index, stage).
        let mut validation = PostValidation::new(d, p);
        let replica_loop = program.begin_replicas(builder);
        for data_index in 0..d {
            for stage in 0..p {
                let tensor_ranks = placement.tensor_group(stage, data_index);
                let group = program
                    .add_tensor_group(TensorGroup::new(builder, &placement, stage, data_index));
                let tensor_group = program.tensor_group(group).tensor_group;
                let mut tail: Option<StepId> = None;
                // Sends since the last pass: the next compute pass waits for
                // them when sends block; the iteration end after the last pass.
                let mut blocking_sends: Vec<StepId> = Vec::new();
                // GPU work the host waits for before it issues more (synchronize).
                let mut host_waits: Vec<StepId> = Vec::new();

                // An overlapped F&B pair is lowered as its two passes back to
                // back on the compute stream: the overlap of the pair is not
                // modeled (costed as sequential). The pair is one unit, as its
                // interleaved kernels make it: its forward starts once the
                // backward's gradient is in too, and the forward's output is
                // sent when the pair ends. `pair_half`: 0 or 1 within a pair.
                let mut held_pair_send = None;
                let mut pair_forward_step: Option<StepId> = None;
                let mut pair_overlapped = false;
                let actions: Vec<_> = schedule.actions[stage as usize]
                    .iter()
                    .flat_map(|a| {
                        let pair = a.pass == Pass::ForwardBackward;
                        a.halves()
                            .enumerate()
                            .map(move |(half, action)| (action, pair.then_some(half)))
                    })
                    .collect();
                let group_index = (data_index * p + stage) as usize;
                // Post-validation of the previous iteration, before this action.
                let validation_point = carry
                    .as_ref()
                    .and_then(|_| schedule.post_validation_point(stage));
                for (index, &(action, pair_half)) in actions.iter().enumerate() {
                    let validates_here = validation_point == Some(index);
                    if validates_here {
                        let carried = carry.as_ref().expect("only after a first iteration");
                        validation.send(
                            &mut program,
                            builder,
                            scenario,
                            &placement,
                            carried,
                            (data_index, stage),
                            iteration - 1,
                        );
                    }
                    // Megatron-LM 2021's interleaved steady state: a forward
                    // directly followed by a backward sends its output together
                    // with that backward's gradient, after it.
                    let held_for_backward = combined_exchange
                        && action.pass == Pass::Forward
                        && actions
                            .get(index + 1)
                            .is_some_and(|(next, _)| next.pass == Pass::Backward);
                    let virtual_stage = sharding.virtual_stage(stage, action.chunk);
                    let chunk_layers =
                        sharding.layers_of_chunk(scenario.model.layers, stage, action.chunk) as u32;
                    // The model's index of the chunk's first layer: which of its
                    // layers are dense in a model with experts.
                    let chunk_first =
                        sharding.first_layer_of_chunk(scenario.model.layers, stage, action.chunk);
                    // The first and last stage of the chunk's model copy (DualPipe
                    // has two copies, each with its embedding and its head).
                    let (embedding, head) = sharding.is_end(virtual_stage);
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
                        (Pass::ForwardBackward, _) => {
                            unreachable!("pairs are lowered as their halves")
                        }
                    };
                    // `pair_overlap`: both halves lowered at the forward's turn.
                    // A pair whose backward is its chunk's last, cut into
                    // gradient buckets, stays unoverlapped (back to back).
                    // So does one with a half the sharded-data-parallel plan
                    // cuts (the overlapped parameter gather's first forward).
                    if pair_half == Some(0) {
                        let backward = actions[index + 1].0;
                        let cut_by_plan = |half: &crate::schedule::Action, pass| {
                            let (half, _, _) = PairHalf::of(scenario, &sharding, stage, half, pass);
                            shard_plan.is_some_and(|plan| {
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
                        pair_overlapped = scenario.options.pair_overlap
                            && (bucket_layers.is_none()
                                || last_gradient_actions[stage as usize][backward.chunk as usize]
                                    != Some(backward))
                            && !cut_by_plan(&action, ComputePass::Forward)
                            && !cut_by_plan(&backward, ComputePass::Backward);
                    }
                    let overlapped = pair_overlapped && pair_half.is_some();
                    if overlapped && pair_half == Some(0) {
                        let backward = actions[index + 1].0;
                        let (forward_half, _, _) =
                            PairHalf::of(scenario, &sharding, stage, &action, ComputePass::Forward);
                        let (backward_half, backward_stage, backward_first) = PairHalf::of(
                            scenario,
                            &sharding,
                            stage,
                            &backward,
                            ComputePass::Backward,
                        );
                        let pair = lower_pair(
                            &mut program,
                            builder,
                            scenario,
                            group,
                            stage,
                            iteration,
                            [forward_half, backward_half],
                            PairWaits {
                                blocking_sends: &mut blocking_sends,
                                host_waits: &mut host_waits,
                            },
                        );
                        let forward_slot = slot(
                            data_index,
                            virtual_stage,
                            action.microbatch,
                            ComputePass::Forward,
                        );
                        let backward_slot = slot(
                            data_index,
                            backward_stage,
                            backward.microbatch,
                            ComputePass::Backward,
                        );
                        pass_steps[forward_slot] = Some(pair.first[0]);
                        pass_steps[backward_slot] = Some(pair.first[1]);
                        host_first_steps[forward_slot] = pair.first_host[0];
                        host_first_steps[backward_slot] = pair.first_host[1];
                        // DualPipe waits for both inputs before the pair.
                        pair_forwards[backward_slot] = Some(pair.first[0]);
                        gradients_ready[((data_index * p + stage) as usize) * chunks
                            + backward.chunk as usize] = vec![GradientsReady {
                            step: pair.last[1],
                            params: models::sharding::parameters_of_layer_range(
                                &scenario.model,
                                sharding,
                                backward_first,
                                backward_half.layers as u64,
                                backward_half.embedding,
                                backward_half.head,
                            ),
                            expert_params: models::sharding::expert_parameters_of_layer_range(
                                &scenario.model,
                                sharding,
                                backward_first,
                                backward_half.layers as u64,
                            ),
                        }];
                        if data_index == 0 {
                            let order = &mut chunk_finish_order[stage as usize];
                            order.retain(|&c| c != backward.chunk);
                            order.push(backward.chunk);
                        }
                        tail = Some(pair.tail);
                    }
                    for &pass in if overlapped { &[][..] } else { passes } {
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
                        // One piece, the whole chunk (most passes), needs no Vec.
                        let whole = [BucketLayers {
                            layers: chunk_layers,
                            embedding: with_embedding,
                            head: with_head,
                        }];
                        let cut: Vec<BucketLayers>;
                        let pieces: &[BucketLayers] = match (sharded, bucket_layers) {
                            (Some(pieces), _) => {
                                cut = pieces;
                                &cut
                            }
                            (None, Some(per_bucket))
                                if makes_gradients
                                    && last_gradient_actions[stage as usize]
                                        [action.chunk as usize]
                                        == Some(action) =>
                            {
                                cut = backward_buckets(
                                    chunk_layers,
                                    per_bucket,
                                    with_embedding,
                                    with_head,
                                );
                                &cut
                            }
                            (None, _) => &whole,
                        };
                        let mut first_piece = None;
                        let mut first_host = None;
                        let mut ready =
                            Vec::with_capacity(if makes_gradients { pieces.len() } else { 0 });
                        // Pieces cover the chunk's layers from the top in a
                        // backward, from the bottom otherwise.
                        let mut below = chunk_first;
                        let mut above = chunk_first + chunk_layers as u64;
                        for &piece in pieces {
                            let piece_first = if pass.is_backward() {
                                above -= piece.layers as u64;
                                above
                            } else {
                                below += piece.layers as u64;
                                below - piece.layers as u64
                            };
                            let dense_layers = models::sharding::dense_layers_in(
                                &scenario.model,
                                piece_first,
                                piece.layers as u64,
                            ) as u32;
                            // With a host lane a pass is cut at its host
                            // synchronizations (the MoE token dispatcher's
                            // device-to-host read): the host issues each segment
                            // only once the GPU has run the one before, as it
                            // waits after a synchronizing exchange.
                            // Padded to capacity, the dispatcher never
                            // synchronizes: whole passes, as without a host lane.
                            let segments: std::ops::RangeInclusive<u16> =
                                if host.is_some() && !crate::cost::pads_to_capacity(scenario) {
                                    let syncs = crate::cost::host_syncs(
                                        scenario,
                                        pass,
                                        piece.layers,
                                        dense_layers,
                                    );
                                    0..=syncs as u16
                                } else {
                                    crate::task_graph::WHOLE_PASS..=crate::task_graph::WHOLE_PASS
                                };
                            let mut first_segment = None;
                            let mut previous_segment: Option<StepId> = None;
                            let mut step = None;
                            for segment in segments {
                                let issue = |first| Work::HostIssuePass {
                                    pass,
                                    layers: piece.layers,
                                    dense_layers,
                                    embedding: piece.embedding,
                                    head: piece.head,
                                    first,
                                    segment,
                                };
                                let host_issue = host.map(|_| {
                                    let first = program.task(host_task(
                                        builder,
                                        tensor_group,
                                        stage,
                                        action.chunk,
                                        action.microbatch,
                                        issue(true),
                                        iteration,
                                    ));
                                    for wait in host_waits.drain(..) {
                                        program.depend(wait, first, Dependency::Data);
                                    }
                                    // The synchronization: the host waits for
                                    // the GPU's segment before this one.
                                    if let Some(previous) = previous_segment {
                                        program.depend(previous, first, Dependency::Data);
                                    }
                                    program.task(host_task(
                                        builder,
                                        tensor_group,
                                        stage,
                                        action.chunk,
                                        action.microbatch,
                                        issue(false),
                                        iteration,
                                    ));
                                    first
                                });
                                first_host = first_host.or(host_issue);
                                let segment_step = program.pass(
                                    builder,
                                    group,
                                    PassPiece {
                                        pass,
                                        chunk: action.chunk,
                                        microbatch: action.microbatch,
                                        iteration,
                                        layers: piece.layers,
                                        dense_layers,
                                        embedding: piece.embedding,
                                        head: piece.head,
                                        // Megatron-Core marks each iteration's first
                                        // microbatch; TE casts and caches FP8 weights then.
                                        fp8_weight_cast: scenario.options.precision
                                            == crate::scenario::Precision::Fp8
                                            && pass == ComputePass::Forward
                                            && action.microbatch == 0,
                                        segment,
                                    },
                                );
                                for send in blocking_sends.drain(..) {
                                    if sends_block {
                                        program.depend(
                                            send,
                                            segment_step,
                                            Dependency::ProgramOrder,
                                        );
                                    }
                                }
                                // The stage's first pass uses the parameters its
                                // previous iteration's optimizer updated.
                                if let (None, None, Some(carried)) = (tail, first_segment, &carry) {
                                    for &ready in &carried.params_ready[group_index] {
                                        program.depend(ready, segment_step, Dependency::Data);
                                    }
                                }
                                if let Some(issued) = host_issue {
                                    program.depend(issued, segment_step, Dependency::Data);
                                }
                                first_segment.get_or_insert(segment_step);
                                previous_segment = Some(segment_step);
                                step = Some(segment_step);
                            }
                            let step = step.expect("a pass has at least one segment");
                            let first_segment =
                                first_segment.expect("a pass has at least one segment");
                            first_piece.get_or_insert(first_segment);
                            tail = Some(step);
                            // Parameter counts only where they are used:
                            // gradients made, or a sharded plan's pieces.
                            if !makes_gradients && shard_plan.is_none() {
                                continue;
                            }
                            let params = models::sharding::parameters_of_layer_range(
                                &scenario.model,
                                sharding,
                                piece_first,
                                piece.layers as u64,
                                piece.embedding,
                                piece.head,
                            );
                            let expert_params = models::sharding::expert_parameters_of_layer_range(
                                &scenario.model,
                                sharding,
                                piece_first,
                                piece.layers as u64,
                            );
                            if makes_gradients {
                                ready.push(GradientsReady {
                                    step,
                                    params,
                                    expert_params,
                                });
                            }
                            if shard_plan.is_some() {
                                sharded_pieces[(data_index * p + stage) as usize].push(
                                    ShardedPiece {
                                        pass,
                                        chunk: action.chunk,
                                        microbatch: action.microbatch,
                                        step: first_segment,
                                        end_step: step,
                                        params,
                                        expert_params,
                                    },
                                );
                            }
                        }
                        let pass_slot = slot(data_index, virtual_stage, action.microbatch, pass);
                        pass_steps[pass_slot] = first_piece;
                        if validates_here {
                            validation.gate(
                                (data_index, stage),
                                first_piece.expect("a pass has a piece"),
                                first_host,
                            );
                        }
                        match (pair_half, pass) {
                            (Some(0), _) => pair_forward_step = first_piece,
                            (Some(1), ComputePass::Recompute | ComputePass::Backward) => {
                                pair_forwards[pass_slot] = pair_forward_step;
                            }
                            _ => {}
                        }
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
                        Pass::Forward if !head => Some((
                            TaskKind::PipelineActivation,
                            StreamKind::PipelineSendNext,
                            virtual_stage + 1,
                            ComputePass::Forward,
                        )),
                        Pass::Backward | Pass::InputGradient if !embedding => Some((
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
                    // This action's send, then a held one (no Vec: at most two).
                    let sends: [Option<_>; 2] = match pair_half {
                        Some(0) => {
                            held_pair_send = send.map(|send| (action, send));
                            [None, None]
                        }
                        _ if held_for_backward => {
                            held_pair_send = send.map(|send| (action, send));
                            [None, None]
                        }
                        _ => [send.map(|send| (action, send)), held_pair_send.take()],
                    };
                    for (action, send) in sends.into_iter().flatten() {
                        // On the V map the turn between chunks stays on one rank: a
                        // local hand-off, the receiving pass waits for this one.
                        let send = Some(send).filter(|&(_, _, peer_virtual_stage, peer_pass)| {
                            let peer_stage = sharding.map.place(p, peer_virtual_stage).0;
                            if peer_stage == stage {
                                let receiver = slot(
                                    data_index,
                                    peer_virtual_stage,
                                    action.microbatch,
                                    peer_pass,
                                );
                                pending_receives
                                    .push((tail.expect("a pass was just added"), receiver));
                            }
                            peer_stage != stage
                        });
                        if let Some((kind, stream, peer_virtual_stage, peer_pass)) = send {
                            let peer_stage = sharding.map.place(p, peer_virtual_stage).0;
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
                                    iteration,
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
                                iteration,
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
                }
                let index = (data_index * p + stage) as usize;
                stage_tails[index] = Some(tail.expect("every stage runs at least one action"));
                trailing_sends[index] = blocking_sends;
            }
        }
        program.end_replicas(builder, replica_loop);

        // Every transfer (or local hand-off's pass) feeds the pass that receives it.
        for (transfer, receiver) in pending_receives {
            let received =
                pass_steps[receiver].expect("every receiving pass exists in a valid schedule");
            program.depend(transfer, received, Dependency::Data);
            if let Some(forward) = pair_forwards[receiver] {
                program.depend(transfer, forward, Dependency::Data);
            }
            // A synchronizing exchange returns to the host only once the data is in.
            if let (true, Some(issued)) = (synchronize_after_p2p, host_first_steps[receiver]) {
                program.depend(transfer, issued, Dependency::Data);
            }
        }

        validation.connect(&mut program, p);

        let done = StagesDone {
            lowered_replicas,
            iteration,
            stage_tails,
            trailing_sends,
            gradients_ready,
            chunk_finish_order,
            sharded_pieces,
        };
        carry = Some(iteration_end::emit(
            &mut program,
            builder,
            scenario,
            &placement,
            shard_plan,
            &done,
        ));
    }
    program
}

/// A task of the host lane of a tensor group.
pub(super) fn host_task(
    builder: &mut TaskGraphBuilder,
    group: crate::ids::GroupId,
    stage: u32,
    chunk: u32,
    microbatch: u32,
    work: Work,
    iteration: u16,
) -> Task {
    Task {
        kind: TaskKind::HostIssue,
        stream: StreamKind::Host,
        chunk: chunk as u16,
        stage,
        microbatch,
        group,
        work: builder.work(work),
        iteration,
    }
}
#[cfg(test)]
#[path = "pipeline_tests.rs"]
mod tests;
