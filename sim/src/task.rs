//! What a task is: its kind, the stream it occupies on each rank of its
//! group, its place in the schedule, and the work it does.

use crate::ids::{GroupId, WorkId};
use serde::{Deserialize, Serialize};

/// What a task does, as reports and metrics see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskKind {
    /// Forward pass of one model chunk for one microbatch.
    Forward,
    /// Recomputation of the forward pass before a backward (full recompute).
    Recompute,
    /// Backward pass of one model chunk for one microbatch.
    Backward,
    /// The blocking tensor-parallel all-reduces of one forward/recompute/backward.
    TensorAllReduce,
    /// Activations sent to the next pipeline stage.
    PipelineActivation,
    /// Gradients sent to the previous pipeline stage.
    PipelineGradient,
    /// Data-parallel gradient all-reduce of one stage's chunk.
    DataParallelAllReduce,
    /// The optimizer step on the GPU.
    OptimizerStep,
}

impl TaskKind {
    pub const ALL: [TaskKind; 8] = [
        TaskKind::Forward,
        TaskKind::Recompute,
        TaskKind::Backward,
        TaskKind::TensorAllReduce,
        TaskKind::PipelineActivation,
        TaskKind::PipelineGradient,
        TaskKind::DataParallelAllReduce,
        TaskKind::OptimizerStep,
    ];

    /// Kernels that do math (the compute stream's useful work).
    pub fn is_compute(self) -> bool {
        matches!(
            self,
            TaskKind::Forward | TaskKind::Recompute | TaskKind::Backward | TaskKind::OptimizerStep
        )
    }

    /// The communication class, for exposed-communication metrics.
    pub fn communication_class(self) -> Option<CommClass> {
        match self {
            TaskKind::TensorAllReduce => Some(CommClass::Tensor),
            TaskKind::PipelineActivation | TaskKind::PipelineGradient => Some(CommClass::Pipeline),
            TaskKind::DataParallelAllReduce => Some(CommClass::DataParallel),
            _ => None,
        }
    }

    /// Snake-case name as in JSON.
    pub fn name(self) -> &'static str {
        match self {
            TaskKind::Forward => "forward",
            TaskKind::Recompute => "recompute",
            TaskKind::Backward => "backward",
            TaskKind::TensorAllReduce => "tensor_all_reduce",
            TaskKind::PipelineActivation => "pipeline_activation",
            TaskKind::PipelineGradient => "pipeline_gradient",
            TaskKind::DataParallelAllReduce => "data_parallel_all_reduce",
            TaskKind::OptimizerStep => "optimizer_step",
        }
    }
}

/// Communication classes reported separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommClass {
    Tensor,
    Pipeline,
    DataParallel,
}

/// A stream of a GPU: tasks on one (rank, stream) run one at a time, in program order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamKind {
    /// Kernels, and the tensor-parallel all-reduces Megatron issues synchronously between them.
    Compute,
    /// Sends to the next pipeline stage.
    PipelineSendNext,
    /// Sends to the previous pipeline stage.
    PipelineSendPrevious,
    /// Data-parallel gradient communication.
    DataParallel,
}

impl StreamKind {
    pub const ALL: [StreamKind; 4] = [
        StreamKind::Compute,
        StreamKind::PipelineSendNext,
        StreamKind::PipelineSendPrevious,
        StreamKind::DataParallel,
    ];

    pub fn index(self) -> usize {
        self as usize
    }

    pub fn name(self) -> &'static str {
        match self {
            StreamKind::Compute => "compute",
            StreamKind::PipelineSendNext => "pp_send_next",
            StreamKind::PipelineSendPrevious => "pp_send_prev",
            StreamKind::DataParallel => "dp",
        }
    }
}

/// One node of the task graph. 24 bytes; millions of these exist at 3072 GPUs.
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
    /// The ranks that run it; the task occupies `stream` on each.
    pub group: GroupId,
    /// What it does (its cost is computed once per work).
    pub work: WorkId,
}

/// Microbatch value of tasks that are not tied to one microbatch.
pub const NO_MICROBATCH: u32 = u32::MAX;
