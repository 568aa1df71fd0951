//! One compute pass of an action, as the stage walk (`stage_walk.rs`)
//! lowers it: the pass is cut into pieces of whole layers — a sharded plan's
//! units (`sharded.rs`), the gradient buckets of a chunk's last backward
//! (`passes.rs`), or the whole chunk — and, with a host lane, each piece
//! into segments at its host synchronizations, each issued by the host
//! before the GPU runs it. The pass's first step is where transfers are
//! received; a gradient-making pass records where its gradients are ready.

use super::end_context::GradientsReady;
use super::passes::PassPiece;
use super::program::{IssueWorkKey, Program, StepId};
use super::sharded::ShardedPiece;
use super::walk_context::{host_task_doing, IterationSteps, Lowering};
use super::walk_context::{ChunkAt, StageWalk};
use crate::plan::buckets::{backward_buckets, BucketLayers};
use schedules::Action;
use taskgraph::task_graph::{ComputePass, Dependency, TaskGraphBuilder, Work};

/// One pass of an action, with where it stands in the walk.
#[derive(Debug, Clone, Copy)]
pub(super) struct PassAt {
    pub action: Action,
    pub pass: ComputePass,
    /// 0 or 1 within an F&B pair lowered back to back.
    pub pair_half: Option<usize>,
    /// The previous iteration's post-validation gates this pass.
    pub validates_here: bool,
    pub chunk: ChunkAt,
}

/// The pieces a pass is cut into. One piece, the whole chunk (most
/// passes), needs no Vec.
enum Pieces {
    Whole([BucketLayers; 1]),
    Cut(Vec<BucketLayers>),
}

impl Pieces {
    fn as_slice(&self) -> &[BucketLayers] {
        match self {
            Pieces::Whole(whole) => whole,
            Pieces::Cut(cut) => cut,
        }
    }
}

/// The first and last step of a piece, its first host issue, and the step
/// its gathered parameters feed (ZeRO++'s dequantization before the piece,
/// else its first step).
struct PieceSteps {
    first: StepId,
    last: StepId,
    first_host: Option<StepId>,
    gathered_into: StepId,
}

/// Lowers one pass of an action (not an overlapped pair's) and records it.
pub(super) fn lower_pass(
    cx: &Lowering,
    steps: &mut IterationSteps,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    walk: &mut StageWalk,
    at: PassAt,
) {
    let (action, pass, chunk) = (at.action, at.pass, at.chunk);
    // The recompute pass re-runs the layers only (not embedding or head).
    let (with_embedding, with_head) = if pass == ComputePass::Recompute {
        (false, false)
    } else {
        (chunk.embedding, chunk.head)
    };
    let makes_gradients = matches!(pass, ComputePass::Backward | ComputePass::WeightGradient);
    let pieces = pieces_of(cx, walk.stage, &at, with_embedding, with_head);
    let pieces = pieces.as_slice();
    let mut first_piece = None;
    let mut first_host = None;
    let mut ready = Vec::with_capacity(if makes_gradients { pieces.len() } else { 0 });
    // Pieces cover the chunk's layers from the top in a backward, from the
    // bottom otherwise.
    let mut below = chunk.first_layer;
    let mut above = chunk.first_layer + chunk.layers as u64;
    for &piece in pieces {
        let piece_first = if pass.is_backward() {
            above -= piece.layers as u64;
            above
        } else {
            below += piece.layers as u64;
            below - piece.layers as u64
        };
        let dense_layers =
            models::sharding::dense_layers_in(&cx.scenario.model, piece_first, piece.layers as u64)
                as u32;
        // Parameter counts only where they are used: gradients made, or a
        // sharded plan's pieces.
        let (params, expert_params) = if makes_gradients || cx.shard_plan.is_some() {
            (
                models::sharding::parameters_of_layer_range(
                    &cx.scenario.model,
                    cx.sharding,
                    piece_first,
                    piece.layers as u64,
                    piece.embedding,
                    piece.head,
                ),
                models::sharding::expert_parameters_of_layer_range(
                    &cx.scenario.model,
                    cx.sharding,
                    piece_first,
                    piece.layers as u64,
                ),
            )
        } else {
            (0, 0)
        };
        let dequantize = crate::cost::zeropp::dequantize_before_pass(
            cx.scenario,
            cx.shard_plan,
            params,
            expert_params,
        );
        let lowered = lower_piece(
            cx,
            program,
            builder,
            walk,
            &at,
            piece,
            (
                dense_layers,
                crate::cost::work_first_layer(cx.scenario, piece_first),
            ),
            dequantize,
        );
        first_host = first_host.or(lowered.first_host);
        first_piece.get_or_insert(lowered.first);
        walk.tail = Some(lowered.last);
        if !makes_gradients && cx.shard_plan.is_none() {
            continue;
        }
        if makes_gradients {
            ready.push(GradientsReady {
                step: lowered.last,
                params,
                expert_params,
            });
        }
        if cx.shard_plan.is_some() {
            steps.sharded_pieces[walk.group_index].push(ShardedPiece {
                pass,
                chunk: action.chunk,
                microbatch: action.microbatch,
                step: lowered.gathered_into,
                end_step: lowered.last,
                params,
                expert_params,
            });
        }
    }
    let pass_slot = cx.slot(
        walk.data_index,
        chunk.virtual_stage,
        action.microbatch,
        pass,
    );
    steps.pass_steps[pass_slot] = first_piece;
    if at.validates_here {
        steps.validation.gate(
            (walk.data_index, walk.stage),
            first_piece.expect("a pass has a piece"),
            first_host,
        );
    }
    match (at.pair_half, pass) {
        (Some(0), _) => walk.pair_forward_step = first_piece,
        (Some(1), ComputePass::Recompute | ComputePass::Backward) => {
            steps.pair_forwards[pass_slot] = walk.pair_forward_step;
        }
        _ => {}
    }
    steps.host_first_steps[pass_slot] = first_host;
    if makes_gradients {
        steps.gradients_ready[walk.group_index * cx.chunks + action.chunk as usize] = ready;
        walk.chunk_finished(steps, action.chunk);
    }
}

/// The chunk's last backward (split: its last weight-gradient pass) is cut
/// into gradient buckets when they are all-reduced as they become ready;
/// sharded data parallelism cuts passes its own way.
fn pieces_of(
    cx: &Lowering,
    stage: u32,
    at: &PassAt,
    with_embedding: bool,
    with_head: bool,
) -> Pieces {
    let (action, pass, layers) = (at.action, at.pass, at.chunk.layers);
    let makes_gradients = matches!(pass, ComputePass::Backward | ComputePass::WeightGradient);
    let sharded = cx
        .shard_plan
        .and_then(|plan| plan.pieces(pass, action.microbatch, layers, with_embedding, with_head));
    match (sharded, cx.bucket_layers) {
        (Some(pieces), _) => Pieces::Cut(pieces),
        (None, Some(per_bucket))
            if makes_gradients
                && cx.last_gradient_actions[stage as usize][action.chunk as usize]
                    == Some(action) =>
        {
            Pieces::Cut(backward_buckets(
                layers,
                per_bucket,
                with_embedding,
                with_head,
            ))
        }
        (None, _) => Pieces::Whole([BucketLayers {
            layers,
            embedding: with_embedding,
            head: with_head,
        }]),
    }
}

/// Lowers one piece of a pass: its segments on the compute stream, each
/// after its host issue when the stack simulates the host, the first after
/// `dequantize` (ZeRO++'s kernel over the gathered weights) when given.
#[allow(clippy::too_many_arguments)]
fn lower_piece(
    cx: &Lowering,
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    walk: &mut StageWalk,
    at: &PassAt,
    piece: BucketLayers,
    (dense_layers, first_layer): (u32, u32),
    mut dequantize: Option<Work>,
) -> PieceSteps {
    let (action, pass) = (at.action, at.pass);
    // With a host lane a pass is cut at its host synchronizations (the MoE
    // token dispatcher's device-to-host read): the host issues each segment
    // only once the GPU has run the one before, as it waits after a
    // synchronizing exchange. Padded to capacity, the dispatcher never
    // synchronizes: whole passes, as without a host lane.
    let segments: std::ops::RangeInclusive<u16> =
        if cx.host.is_some() && !crate::cost::pads_to_capacity(cx.scenario) {
            let syncs = crate::cost::host_syncs(cx.scenario, pass, piece.layers, dense_layers);
            0..=syncs as u16
        } else {
            taskgraph::task_graph::WHOLE_PASS..=taskgraph::task_graph::WHOLE_PASS
        };
    let mut first_segment = None;
    let mut first_host = None;
    let mut gathered_into = None;
    let mut previous_segment: Option<StepId> = None;
    for segment in segments {
        let issue = IssueWorkKey {
            pass,
            layers: piece.layers,
            dense_layers,
            embedding: piece.embedding,
            head: piece.head,
            segment,
        };
        let host_issue = cx
            .host
            .map(|_| issue_on_host(program, builder, walk, action, issue, previous_segment));
        first_host = first_host.or(host_issue);
        // The dequantization runs on the compute stream just before the
        // pass's first segment, once the host has reached the pass.
        let dequantized = dequantize.take().map(|work| {
            let kernels = (taskgraph::task::TaskKind::Compression, work);
            let step = program.rank_kernels(builder, walk.group, kernels, action, walk.iteration);
            if let Some(issued) = host_issue {
                program.depend(issued, step, Dependency::Data);
            }
            step
        });
        gathered_into = gathered_into.or(dequantized);
        let segment_step = program.pass(
            builder,
            walk.group,
            PassPiece {
                pass,
                chunk: action.chunk,
                microbatch: action.microbatch,
                iteration: walk.iteration,
                layers: piece.layers,
                dense_layers,
                first_layer,
                embedding: piece.embedding,
                head: piece.head,
                // Megatron-Core marks each iteration's first microbatch; TE
                // casts and caches FP8 weights then.
                fp8_weight_cast: cx.scenario.options.precision == scenario::Precision::Fp8
                    && pass == ComputePass::Forward
                    && action.microbatch == 0,
                segment,
            },
        );
        // Blocking sends hold the host, so whatever it issues next waits.
        for send in walk.blocking_sends.drain(..) {
            if cx.sends_block {
                let next = dequantized.unwrap_or(segment_step);
                program.depend(send, next, Dependency::ProgramOrder);
            }
        }
        // The stage's first pass uses the parameters its previous
        // iteration's optimizer updated.
        if let (None, None, Some(carried)) = (walk.tail, first_segment, walk.carry) {
            for &ready in &carried.params_ready[walk.group_index] {
                program.depend(ready, segment_step, Dependency::Data);
            }
        }
        if let Some(issued) = host_issue {
            program.depend(issued, segment_step, Dependency::Data);
        }
        first_segment.get_or_insert(segment_step);
        previous_segment = Some(segment_step);
    }
    PieceSteps {
        first: first_segment.expect("a pass has at least one segment"),
        last: previous_segment.expect("a pass has at least one segment"),
        first_host,
        gathered_into: gathered_into
            .or(first_segment)
            .expect("a pass has at least one segment"),
    }
}

/// The host lane's issue of one segment: its first launch (after the GPU
/// work the host waits for, and after the segment before: the
/// synchronization), then the rest. Returns the first launch.
fn issue_on_host(
    program: &mut Program,
    builder: &mut TaskGraphBuilder,
    walk: &mut StageWalk,
    action: Action,
    issue: IssueWorkKey,
    previous_segment: Option<StepId>,
) -> StepId {
    let (group, stage, iteration) = (walk.tensor_group, walk.stage, walk.iteration);
    let [first_work, rest_work] = program.issue_works(builder, walk.group, issue);
    let host_task_doing = |work| {
        host_task_doing(
            group,
            stage,
            action.chunk,
            action.microbatch,
            work,
            iteration,
        )
    };
    let first = program.task(host_task_doing(first_work));
    for wait in walk.host_waits.drain(..) {
        program.depend(wait, first, Dependency::Data);
    }
    // The synchronization: the host waits for the GPU's segment before this one.
    if let Some(previous) = previous_segment {
        program.depend(previous, first, Dependency::Data);
    }
    program.task(host_task_doing(rest_work));
    first
}
