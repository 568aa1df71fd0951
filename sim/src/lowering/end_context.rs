//! What the iteration's end reads from the stages' passes ([`StagesDone`],
//! with each chunk's [`GradientsReady`]) and shares between its parts
//! ([`EndContext`], and the data-parallel [`Reductions`] the gradient sums and
//! optimizer steps wait for). `iteration_end.rs` emits the end.

use super::program::StepId;
use super::sharded::ShardedPiece;
use crate::cost::gradients;
use crate::placement::Placement;
use crate::plan::ShardPlan;
use scenario::Scenario;

/// Where the gradients of a chunk (or of one bucket of it) are ready, and how many parameters they hold.
#[derive(Debug, Clone, Copy)]
pub(super) struct GradientsReady {
    pub step: StepId,
    pub params: u64,
    /// Of `params`, a mixture of experts' routed experts (reduced over the
    /// expert-data-parallel group).
    pub expert_params: u64,
}

/// What every stage's passes left for the iteration's end, per (data index, stage).
pub(super) struct StagesDone {
    /// Replicas lowered: all d·cp, or 1 (the representative, `crate::symmetry`).
    pub lowered_replicas: u32,
    /// The iteration (0 unless optimizer post-validation simulates several).
    pub iteration: u16,
    /// Last compute step of each (data index, stage) group.
    pub stage_tails: Vec<Option<StepId>>,
    /// Sends still in flight after it (the optimizer waits for them).
    pub trailing_sends: Vec<Vec<StepId>>,
    /// Where each (data index, stage, chunk)'s gradients become ready (per bucket).
    pub gradients_ready: Vec<Vec<GradientsReady>>,
    /// The order each stage's chunks finish their gradients (data index 0).
    pub chunk_finish_order: Vec<Vec<u32>>,
    /// ZeRO-2/3: the pieces of every pass.
    pub sharded_pieces: Vec<Vec<ShardedPiece>>,
}

/// What every part of the iteration's end reads.
pub(super) struct EndContext<'a> {
    pub scenario: &'a Scenario,
    pub placement: &'a Placement,
    pub shard_plan: Option<ShardPlan>,
    pub done: &'a StagesDone,
    /// Tensor-parallel degree.
    pub t: u32,
    /// Pipeline stages.
    pub p: u32,
    /// The d·cp replicas of each stage's tensor group.
    pub d: u32,
}

impl<'a> EndContext<'a> {
    pub(super) fn new(
        scenario: &'a Scenario,
        placement: &'a Placement,
        shard_plan: Option<ShardPlan>,
        done: &'a StagesDone,
    ) -> EndContext<'a> {
        let layout = scenario.layout;
        EndContext {
            scenario,
            placement,
            shard_plan,
            done,
            t: layout.tensor_parallel.get(),
            p: layout.pipeline_parallel.get(),
            d: layout.replicas(),
        }
    }

    /// Index of (data index, stage) in the per-stage lists of [`StagesDone`].
    pub fn stage_index(&self, data_index: u32, stage: u32) -> usize {
        (data_index * self.p + stage) as usize
    }

    /// The last compute step of (data index, stage).
    pub fn stage_tail(&self, data_index: u32, stage: u32) -> StepId {
        self.done.stage_tails[self.stage_index(data_index, stage)].expect("set for every stage")
    }

    /// The sends of (data index, stage) still in flight after its last pass.
    pub fn trailing_sends(&self, data_index: u32, stage: u32) -> &[StepId] {
        &self.done.trailing_sends[self.stage_index(data_index, stage)]
    }

    /// Whether the data-parallel reductions are the distributed optimizer's
    /// reduce-scatters (and its parameter all-gathers follow the optimizer).
    pub fn distributed_optimizer(&self) -> bool {
        self.scenario.options.distributed_optimizer && self.d > 1
    }

    /// Bytes of one parameter's gradient in the reduced buffer.
    pub fn gradient_bytes_per_param(&self) -> u64 {
        gradients::main_grad_bytes_per_param(self.scenario.options.fp32_main_grads())
    }
}

/// What the data-parallel reductions left for the rest of the iteration's end.
pub(super) struct Reductions {
    /// Per stage, per tensor index: the reductions the optimizer waits for.
    pub by_stage: Vec<Vec<Vec<StepId>>>,
    /// Local DDP's copy back after the all-reduce, per rank, by
    /// `(data index · p + stage) · t + tensor index` (empty without one).
    pub(super) copy_backs: Vec<StepId>,
}

impl Reductions {
    pub fn copy_back(
        &self,
        cx: &EndContext,
        stage: u32,
        data_index: u32,
        tensor_index: u32,
    ) -> Option<StepId> {
        let index = cx.stage_index(data_index, stage) * cx.t as usize + tensor_index as usize;
        self.copy_backs.get(index).copied()
    }
}
