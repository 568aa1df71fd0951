//! What a task is: its kind, the stream it occupies on each rank of its
//! group, its place in the schedule, and the work it does; the pass a
//! compute task runs and why an edge exists.

use crate::ids::{GroupId, WorkId};
use schedules::Pass;
use serde::{Deserialize, Serialize};
pub use timeline::{CommClass, StreamKind, TaskKind};

/// One node of the task graph. 24 bytes (a test checks it); millions of these exist at 3072 GPUs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Task {
    pub kind: TaskKind,
    pub stream: StreamKind,
    /// Model chunk (virtual stage index on this rank), 0 unless interleaved.
    pub chunk: u16,
    /// Pipeline stage of the ranks that run it.
    pub stage: u32,
    /// Microbatch, or `u32::MAX` for per-iteration tasks (DP all-reduce, optimizer).
    pub microbatch: u32,
    /// Training iteration (0 unless several consecutive iterations are simulated, as
    /// ZeRO-Offload's delayed parameter update needs); fits the struct's padding.
    pub iteration: u16,
    /// The ranks that run it; the task occupies `stream` on each.
    pub group: GroupId,
    /// What it does (its cost is computed once per work).
    pub work: WorkId,
}

/// Microbatch value of tasks that are not tied to one microbatch.
pub const NO_MICROBATCH: u32 = u32::MAX;

/// Which pass a compute task runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ComputePass {
    Forward,
    Recompute,
    Backward,
    /// The input-gradient half of a split backward (`sim::cost::split_backward`).
    InputGradient,
    /// The weight-gradient half of a split backward.
    WeightGradient,
}

impl ComputePass {
    /// Short lowercase name (`simulate --explain`).
    pub fn name(self) -> &'static str {
        match self {
            ComputePass::Forward => "forward",
            ComputePass::Recompute => "recompute",
            ComputePass::Backward => "backward",
            ComputePass::InputGradient => "bwd_input",
            ComputePass::WeightGradient => "bwd_weight",
        }
    }

    /// Whether the pass runs (part of) the backward's kernels.
    pub fn is_backward(self) -> bool {
        matches!(
            self,
            ComputePass::Backward | ComputePass::InputGradient | ComputePass::WeightGradient
        )
    }
}

impl From<Pass> for ComputePass {
    fn from(pass: Pass) -> ComputePass {
        match pass {
            Pass::Forward => ComputePass::Forward,
            Pass::Backward => ComputePass::Backward,
            Pass::InputGradient => ComputePass::InputGradient,
            Pass::WeightGradient => ComputePass::WeightGradient,
            // A pair is two passes: lowering splits it first (`Action::halves`).
            Pass::ForwardBackward => unreachable!("an F&B pair is two passes, not one"),
        }
    }
}

/// Why an edge exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dependency {
    /// The target needs the source's output.
    Data,
    /// The source precedes the target on a stream of some rank.
    ProgramOrder,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn task_stays_24_bytes() {
        assert_eq!(std::mem::size_of::<Task>(), 24);
    }
}
