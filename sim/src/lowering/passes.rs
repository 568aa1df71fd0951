//! Passes: what one pass of a tensor group covers ([`PassPiece`]), and the
//! task kind of each pass. Shared by the pipeline and ZeRO-Offload programs;
//! how a backward is cut into gradient buckets is the plan's
//! ([`crate::plan::buckets`]).

use taskgraph::task::TaskKind;
use taskgraph::task_graph::ComputePass;

/// A pass, or a gradient bucket of one, over some layers of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassPiece {
    pub pass: ComputePass,
    pub chunk: u32,
    pub microbatch: u32,
    pub iteration: u16,
    pub layers: u32,
    /// Of those, the dense layers of a model with experts (0 for a dense
    /// model): [`taskgraph::task_graph::Work::Compute`]'s `dense_layers`.
    pub dense_layers: u32,
    /// The piece's first model layer where the scenario routes each MoE
    /// layer its own way, else 0 ([`crate::cost::work_first_layer`]).
    pub first_layer: u32,
    pub embedding: bool,
    pub head: bool,
    /// FP8 training: the chunk's first forward of the iteration, which casts
    /// the chunk's weights to FP8 (Transformer Engine's weight cache).
    pub fp8_weight_cast: bool,
    /// The part of the pass between host synchronizations
    /// ([`taskgraph::task_graph::WHOLE_PASS`]: all of it).
    pub segment: u16,
}

/// The task kind of a compute pass.
pub fn task_kind(pass: ComputePass) -> TaskKind {
    match pass {
        ComputePass::Forward => TaskKind::Forward,
        ComputePass::Recompute => TaskKind::Recompute,
        ComputePass::Backward => TaskKind::Backward,
        ComputePass::InputGradient => TaskKind::BackwardInput,
        ComputePass::WeightGradient => TaskKind::BackwardWeight,
    }
}
