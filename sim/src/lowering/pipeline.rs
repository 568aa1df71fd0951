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

//!
//! The code: [`program`] here loops over iterations and tensor groups and,
//! once all groups are walked, joins every transfer to the pass receiving
//! it; `stage_walk.rs` walks one tensor group's actions; `pass_lowering.rs`
//! lowers one pass (its pieces, host-sync segments and host issue);
//! `pipeline_sends.rs` an action's sends.

use super::iteration_end::{self, StagesDone};
use super::post_validation::{Carry, PostValidation};
use super::program::{Program, StepId};
use super::sharded::ShardedPiece;
use super::stage_walk::lower_tensor_group;
use crate::placement::Placement;
use crate::plan::ShardPlan;
use crate::scenario::bucket_sizes::layers_per_bucket;
use crate::scenario::{HostCosts, Layout, Recompute, Scenario};
use crate::task::{StreamKind, Task, TaskKind};
use crate::task_graph::{ComputePass, Dependency, TaskGraphBuilder, Work};
use models::sharding::{parameters_of_layers, Sharding};
use schedules::{Action, PipelineSchedule};

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
    fn new(
        scenario: &'a Scenario,
        schedule: &'a PipelineSchedule,
        lowered_replicas: u32,
    ) -> Lowering<'a> {
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
            placement: Placement::new(layout, scenario.topology.node.gpus_per_node),
            tensor_parallel: layout.tensor_parallel.get(),
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
                && scenario.schedule == crate::scenario::ScheduleKind::Interleaved
                && layout.chunks.get() > 1
                && layout.microbatch_group_size() == p
                && m != p,
            bucket_layers: scenario.options.grad_reduce_bucket_params.map(|bucket| {
                let per_layer = parameters_of_layers(&scenario.model, sharding, 1, false, false);
                layers_per_bucket(bucket, per_layer, layers_per_chunk)
            }),
            shard_plan: ShardPlan::new(scenario),
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
    fn new(cx: &Lowering) -> IterationSteps {
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
    fn connect_receives(&self, program: &mut Program, synchronize_after_p2p: bool) {
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
    let cx = Lowering::new(scenario, schedule, lowered_replicas);
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
        let mut steps = IterationSteps::new(&cx);
        let replica_loop = program.begin_replicas(builder);
        for data_index in 0..cx.replicas {
            for stage in 0..cx.stages {
                lower_tensor_group(
                    &cx,
                    &mut steps,
                    &mut program,
                    builder,
                    (carry.as_ref(), iteration),
                    data_index,
                    stage,
                );
            }
        }
        program.end_replicas(builder, replica_loop);
        steps.connect_receives(&mut program, cx.synchronize_after_p2p);
        steps.validation.connect(&mut program, cx.stages);

        let done = StagesDone {
            lowered_replicas,
            iteration,
            stage_tails: steps.stage_tails,
            trailing_sends: steps.trailing_sends,
            gradients_ready: steps.gradients_ready,
            chunk_finish_order: steps.chunk_finish_order,
            sharded_pieces: steps.sharded_pieces,
        };
        carry = Some(iteration_end::emit(
            &mut program,
            builder,
            scenario,
            &cx.placement,
            cx.shard_plan,
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
