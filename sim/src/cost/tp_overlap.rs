//! Megatron-Core's tensor-parallel communication overlap (`--tp-comm-overlap`,
//! Transformer Engine userbuffers): with sequence parallelism each linear
//! layer's all-gather (of its sequence-sharded input) or reduce-scatter (of
//! its partial output) is split into chunks exchanged around the ring while
//! the GEMM computes on the chunks already there, so only the part of the
//! collective longer than its GEMM is exposed (Megatron-Core
//! `ModelParallelConfig.tp_comm_overlap`: "overlapping of Linear layer
//! execution with tensor parallel communication collectives like
//! AllGather/ReduceScatter ... during the forward and the backward pass";
//! Megatron Bridge's communication-overlap guide: it needs tensor
//! parallelism and sequence parallelism).
//!
//! A layer lists each sequence-parallel reduce-scatter + all-gather pair as
//! one [`Step::TensorAllReduce`] (a ring costs RS + AG exactly as the
//! all-reduce, half each). Which GEMM hides which half, by the GEMM just
//! before the step:
//!
//! | step after | reduce-scatter hidden by | all-gather hidden by |
//! |---|---|---|
//! | `output_projection` (fwd) | `output_projection` (row-parallel output) | `mlp_fc1` (its input) |
//! | `mlp_fc2` (fwd) | `mlp_fc2` | `qkv_gemm` (the next layer's input; every layer is the same) |
//! | `mlp_fc1.wgrad` (bwd) | `mlp_fc1.wgrad` (bulk overlap of the input-gradient RS) | `mlp_fc2.dgrad` (all-gather of its output gradient) |
//! | `qkv_gemm.wgrad` (bwd) | `qkv_gemm.wgrad` | `output_projection.dgrad` |
//!
//! Any other tensor all-reduce (the embedding's, the head's) is charged in
//! full. The SMs the userbuffers copy kernels take from the GEMM are not
//! modeled (as for the asynchronous tensor all-reduce).

use super::KernelCostModel;
use crate::time::SimDuration;
use models::ops::{KernelClass, Step};

/// The GEMMs hiding the (reduce-scatter, all-gather) halves of the tensor
/// all-reduce that follows `gemm`, per the table above.
pub fn overlapping_gemms(gemm: &str) -> Option<(&'static str, &'static str)> {
    Some(match gemm {
        "output_projection" => ("output_projection", "mlp_fc1"),
        "mlp_fc2" => ("mlp_fc2", "qkv_gemm"),
        "mlp_fc1.wgrad" => ("mlp_fc1.wgrad", "mlp_fc2.dgrad"),
        "qkv_gemm.wgrad" => ("qkv_gemm.wgrad", "output_projection.dgrad"),
        _ => return None,
    })
}

fn is_gemm(step: &Step) -> Option<&'static str> {
    match step {
        Step::Kernel(kernel)
            if matches!(
                kernel.class,
                KernelClass::Gemm { .. } | KernelClass::Fp8Gemm { .. }
            ) =>
        {
            Some(kernel.name)
        }
        _ => None,
    }
}

/// What the tensor all-reduce at `steps[index]`, costing `full` alone, leaves
/// exposed under `--tp-comm-overlap`: each half beyond the GEMM that hides
/// it, each rounded up to a nanosecond; `full` when no GEMM hides it.
pub fn exposed_with_tp_overlap(
    full: SimDuration,
    steps: &[Step],
    index: usize,
    kernels: &KernelCostModel,
) -> SimDuration {
    let Some((reduce_scatter, all_gather)) = steps[..index]
        .iter()
        .rev()
        .find_map(is_gemm)
        .and_then(overlapping_gemms)
    else {
        return full;
    };
    let gemm_seconds = |name: &str| {
        steps.iter().find_map(|step| match step {
            Step::Kernel(kernel) if kernel.name == name => Some(kernels.kernel_seconds(kernel)),
            _ => None,
        })
    };
    let (Some(rs_s), Some(ag_s)) = (gemm_seconds(reduce_scatter), gemm_seconds(all_gather)) else {
        return full;
    };
    let half_s = full.as_seconds() / 2.0;
    SimDuration::from_seconds_ceil((half_s - rs_s).max(0.0))
        + SimDuration::from_seconds_ceil((half_s - ag_s).max(0.0))
}
