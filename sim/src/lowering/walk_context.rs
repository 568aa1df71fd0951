//! What lowering a pipeline schedule's walk carries: the scenario's
//! fixed facts ([`Lowering`]), what one iteration's tensor groups record for
//! each other ([`IterationSteps`]), one tensor group's place in the walk
//! ([`StageWalk`], [`ChunkAt`]), an action's send ([`Send`]) and the host
//! lane's tasks ([`host_task`]). `pipeline.rs` drives the walk,
//! `stage_walk.rs` walks one tensor group, and the pass, pair and send
//! lowerings below it read and write these.

use super::end_context::GradientsReady;
use super::post_validation::{Carry, PostValidation};
use super::program::{Program, StepId, TensorGroupId};
use super::sharded::ShardedPiece;
use crate::placement::Placement;
use crate::plan::Plan;
use crate::plan::ShardPlan;
use models::sharding::{parameters_of_layers, Sharding};
use scenario::bucket_sizes::layers_per_bucket;
use scenario::{HostCosts, Layout, Recompute, Scenario};
use schedules::{Action, PipelineSchedule};
use taskgraph::ids::{GroupId, Rank};
use taskgraph::task::{StreamKind, Task, TaskKind};
use taskgraph::task_graph::{ComputePass, Dependency, TaskGraphBuilder, Work};

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

/// What the pipeline program reads from the scenario and the schedule: the
/// same for every iteration and tensor group.
pub(super) struct Lowering<'a> {
    pub scenario: &'a Scenario,
    pub schedule: &'a PipelineSchedule,
    pub layout: Layout,
    pub sharding: Sharding,
    pub placement: Placement,
    /// t: ranks per tensor-parallel group.
    pub tensor_parallel: u32,
    /// A task per tensor rank, or one per tensor group (summary runs).
    pub tensor_ranks: super::program::TensorRanks,
    /// p: pipeline stages.
    pub stages: u32,
    /// d: the replicas lowered (d·cp, or 1 for the representative).
    pub replicas: u32,
    /// m: microbatches per iteration.
    pub microbatches: u32,
    pub virtual_stages: u32,
    /// Model chunks per stage.
    pub chunks: usize,
    pub recompute: bool,
    /// The host lane's costs, when the stack simulates the host.
    pub host: Option<HostCosts>,
    /// The zero-bubble runtime's sends hold neither the next pass nor the
    /// host (`ScheduleKind::sends_block`: it posts isend/irecv and never
    /// synchronizes); the iteration end still follows them.
    pub sends_block: bool,
    /// The host waits for each exchange's data after it (zero-bubble
    /// runtime with a host lane that synchronizes after p2p).
    pub synchronize_after_p2p: bool,
    /// The 2021 interleaved schedule's combined forward/backward exchange
    /// (megatron/schedules.py at de7dc40: in the steady state the output of
    /// forward k + warm-up goes out with backward k's gradient, in one
    /// `send_forward_backward_recv_forward_backward` after both). That code
    /// has the SC21 order only (groups of p), and with m = p every forward is
    /// a warm-up one (`all_warmup_microbatches`): no steady state, no holding.
    pub combined_exchange: bool,
    /// Layers per gradient bucket, with `grad_reduce_bucket_params`.
    pub bucket_layers: Option<u32>,
    /// ZeRO-2/3 (`sharded.rs`): how passes are cut and gradients sharded.
    pub shard_plan: Option<ShardPlan>,
    /// Each (stage, chunk)'s last gradient-making action (microbatch 0 in looped BFS).
    pub last_gradient_actions: Vec<Vec<Option<Action>>>,
}

impl<'a> Lowering<'a> {
    pub(super) fn new(
        scenario: &'a Scenario,
        plan: &'a Plan,
        lowered_replicas: u32,
        tensor_ranks: super::program::TensorRanks,
    ) -> Lowering<'a> {
        let schedule = &plan.schedule;
        let layout = scenario.layout;
        let sharding = layout.sharding();
        // With context parallelism every (data index, context index) pair is a
        // replica of the stage's tensor group running all m microbatches on its
        // s/cp tokens; gradients are reduced over the d·cp ranks (Megatron's
        // dp-cp group), so `d` here counts replicas: d·cp ([`Placement`]),
        // of which the first `lowered_replicas` are lowered.
        debug_assert!((1..=layout.replicas()).contains(&lowered_replicas));
        let (p, m) = (layout.pipeline_parallel.get(), layout.microbatches.get());
        // The most layers a chunk builds (all, unless the split counts the
        // embedding or the loss as a layer: then the first and last build fewer).
        let layers_per_chunk = sharding.layers_per_chunk(scenario.model.layers) as u32;
        let host = scenario.stack.host;
        let sends_block = scenario.schedule.sends_block();
        Lowering {
            scenario,
            schedule,
            layout,
            sharding,
            placement: plan.placement,
            tensor_parallel: layout.tensor_parallel.get(),
            tensor_ranks,
            stages: p,
            replicas: lowered_replicas,
            microbatches: m,
            virtual_stages: layout.virtual_stages(),
            chunks: layout.chunks.get() as usize,
            recompute: scenario.recompute != Recompute::None,
            host,
            sends_block,
            synchronize_after_p2p: sends_block
                && host.is_some_and(|costs| costs.synchronize_after_p2p),
            combined_exchange: scenario.stack.combined_interleaved_exchange
                && scenario.schedule == scenario::ScheduleKind::Interleaved
                && layout.chunks.get() > 1
                && layout.microbatch_group_size() == p
                && m != p,
            bucket_layers: scenario.options.grad_reduce_bucket_params.map(|bucket| {
                let per_layer = parameters_of_layers(&scenario.model, sharding, 1, false, false);
                layers_per_bucket(bucket, per_layer, layers_per_chunk)
            }),
            shard_plan: plan.shard_plan,
            last_gradient_actions: schedule.last_gradient_actions(),
        }
    }

    /// The index of a pass in the per-iteration tables by slot.
    pub fn slot(
        &self,
        data_index: u32,
        virtual_stage: u32,
        microbatch: u32,
        pass: ComputePass,
    ) -> usize {
        ((data_index as usize * self.virtual_stages as usize + virtual_stage as usize)
            * self.microbatches as usize
            + microbatch as usize)
            * PASSES
            + pass_slot(pass)
    }
}

/// What the walks of one iteration's tensor groups record for each other
/// and for the iteration's end.
pub(super) struct IterationSteps {
    /// The first step of every pass, by slot: where transfers are received.
    pub pass_steps: Vec<Option<StepId>>,
    /// Transfers whose receiving pass may not exist yet: (transfer, receiver slot).
    pub pending_receives: Vec<(StepId, usize)>,
    /// Last compute step of each (data index, stage) group, and the sends
    /// still in flight after it (the optimizer waits for them).
    pub stage_tails: Vec<Option<StepId>>,
    pub trailing_sends: Vec<Vec<StepId>>,
    /// With overlapped gradient reduction: where each (data index, stage,
    /// chunk)'s gradients become ready (per bucket), and the order chunks finish.
    pub gradients_ready: Vec<Vec<GradientsReady>>,
    pub chunk_finish_order: Vec<Vec<u32>>,
    /// The host lane (when the stack simulates the host): the first-issue
    /// step of every pass by slot, for receives the host must wait for.
    pub host_first_steps: Vec<Option<StepId>>,
    /// The forward of an F&B pair, by the slot of the pair's receiving
    /// backward (or recompute): it waits for that gradient too.
    pub pair_forwards: Vec<Option<StepId>>,
    /// ZeRO-2/3 (`sharded.rs`): the pieces of every pass, per (data index, stage).
    pub sharded_pieces: Vec<Vec<ShardedPiece>>,
    /// The post-validation sends and the passes they gate, per (data index, stage).
    pub validation: PostValidation,
}

impl IterationSteps {
    pub(super) fn new(cx: &Lowering) -> IterationSteps {
        let (d, p) = (cx.replicas as usize, cx.stages as usize);
        let slots = d * cx.virtual_stages as usize * cx.microbatches as usize * PASSES;
        IterationSteps {
            pass_steps: vec![None; slots],
            pending_receives: Vec::new(),
            stage_tails: vec![None; d * p],
            trailing_sends: vec![Vec::new(); d * p],
            gradients_ready: vec![Vec::new(); d * p * cx.chunks],
            chunk_finish_order: vec![Vec::new(); p],
            host_first_steps: vec![None; slots],
            pair_forwards: vec![None; slots],
            sharded_pieces: vec![Vec::new(); if cx.shard_plan.is_some() { d * p } else { 0 }],
            validation: PostValidation::new(cx.replicas, cx.stages),
        }
    }

    /// After every group's walk: each transfer (or local hand-off's pass)
    /// feeds the pass that receives it.
    pub(super) fn connect_receives(&self, program: &mut Program, synchronize_after_p2p: bool) {
        for &(transfer, receiver) in &self.pending_receives {
            let received =
                self.pass_steps[receiver].expect("every receiving pass exists in a valid schedule");
            program.depend(transfer, received, Dependency::Data);
            if let Some(forward) = self.pair_forwards[receiver] {
                program.depend(transfer, forward, Dependency::Data);
            }
            // A synchronizing exchange returns to the host only once the data is in.
            if let (true, Some(issued)) = (synchronize_after_p2p, self.host_first_steps[receiver]) {
                program.depend(transfer, issued, Dependency::Data);
            }
        }
    }
}

/// One tensor group's place in the walk and what it carries between actions.
pub(super) struct StageWalk<'a> {
    pub data_index: u32,
    pub stage: u32,
    /// Its index in the per-(data index, stage) tables: data index · p + stage.
    pub group_index: usize,
    pub group: TensorGroupId,
    /// The whole tensor group (host-lane and transfer tasks run on it).
    pub tensor_group: GroupId,
    pub tensor_ranks: Vec<Rank>,
    pub iteration: u16,
    /// The previous iteration's end, under optimizer post-validation.
    pub carry: Option<&'a Carry>,
    /// The group's last compute step so far.
    pub tail: Option<StepId>,
    /// Sends since the last pass: the next compute pass waits for them when
    /// sends block; the iteration end after the last pass.
    pub blocking_sends: Vec<StepId>,
    /// GPU work the host waits for before it issues more (synchronize).
    pub host_waits: Vec<StepId>,
    /// A send held until a later action: an F&B pair's forward output (sent
    /// when the pair ends), or the 2021 interleaved forward's output sent
    /// with the next backward's gradient.
    pub held_send: Option<(Action, Send)>,
    /// The first step of the current pair's forward (lowered back to back).
    pub pair_forward_step: Option<StepId>,
    /// Whether the current pair is lowered overlapped (`pair_overlap`).
    pub pair_overlapped: bool,
    /// The transfer work of a send to each peer stage so far (its bytes
    /// are the layout's; whether it crosses nodes, the peer's).
    pub transfer_works: Vec<(u32, taskgraph::ids::WorkId)>,
}

/// Where an action's chunk sits in the model.
#[derive(Debug, Clone, Copy)]
pub(super) struct ChunkAt {
    pub virtual_stage: u32,
    pub layers: u32,
    /// The model's index of the chunk's first layer: which of its layers
    /// are dense in a model with experts.
    pub first_layer: u64,
    /// The first and last stage of the chunk's model copy (DualPipe has two
    /// copies, each with its embedding and its head).
    pub embedding: bool,
    pub head: bool,
}

impl ChunkAt {
    pub(super) fn of(cx: &Lowering, stage: u32, chunk: u32) -> ChunkAt {
        let layers = cx.scenario.model.layers;
        let virtual_stage = cx.sharding.virtual_stage(stage, chunk);
        let (embedding, head) = cx.sharding.is_end(virtual_stage);
        ChunkAt {
            virtual_stage,
            layers: cx.sharding.layers_of_chunk(layers, stage, chunk) as u32,
            first_layer: cx.sharding.first_layer_of_chunk(layers, stage, chunk),
            embedding,
            head,
        }
    }
}

impl StageWalk<'_> {
    /// The sends to lower after `action`: its own send, then a held one (no
    /// Vec: at most two). A pair's forward, or a forward whose output goes
    /// with the next backward's gradient, holds its send instead.
    pub(super) fn sends_now(
        &mut self,
        action: Action,
        pair_half: Option<usize>,
        held_for_backward: bool,
        send: Option<Send>,
    ) -> impl Iterator<Item = (Action, Send)> {
        let sends: [Option<_>; 2] = match pair_half {
            Some(0) => {
                self.held_send = send.map(|send| (action, send));
                [None, None]
            }
            _ if held_for_backward => {
                self.held_send = send.map(|send| (action, send));
                [None, None]
            }
            _ => [send.map(|send| (action, send)), self.held_send.take()],
        };
        sends.into_iter().flatten()
    }

    /// Records that `chunk`'s gradients were just made: the chunks' finish
    /// order is taken from data index 0 (every replica runs the same order).
    pub fn chunk_finished(&self, steps: &mut IterationSteps, chunk: u32) {
        if self.data_index == 0 {
            let order = &mut steps.chunk_finish_order[self.stage as usize];
            order.retain(|&c| c != chunk);
            order.push(chunk);
        }
    }
}

/// A send of an action: what it carries, on which stream, and the pass of
/// the peer virtual stage that receives it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Send {
    pub kind: TaskKind,
    pub stream: StreamKind,
    pub peer_virtual_stage: u32,
    /// The gradient feeds the recompute when there is one.
    pub peer_pass: ComputePass,
}

/// A task of the host lane of a tensor group.
pub(super) fn host_task(
    builder: &mut TaskGraphBuilder,
    group: taskgraph::ids::GroupId,
    stage: u32,
    chunk: u32,
    microbatch: u32,
    work: Work,
    iteration: u16,
) -> Task {
    let work = builder.work(work);
    host_task_doing(group, stage, chunk, microbatch, work, iteration)
}

/// [`host_task`] with its work already interned.
pub(super) fn host_task_doing(
    group: taskgraph::ids::GroupId,
    stage: u32,
    chunk: u32,
    microbatch: u32,
    work: taskgraph::ids::WorkId,
    iteration: u16,
) -> Task {
    Task {
        kind: TaskKind::HostIssue,
        stream: StreamKind::Host,
        chunk: chunk as u16,
        stage,
        microbatch,
        group,
        work,
        iteration,
    }
}
