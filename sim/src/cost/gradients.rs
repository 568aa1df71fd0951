//! Megatron-LM's gradient path outside the GEMMs: where weight gradients are
//! accumulated across microbatches, what the data-parallel all-reduce moves,
//! and how much HBM traffic the optimizer step makes. Read from Megatron-LM's
//! code of the time of the published runs (`megatron/model/distributed.py`,
//! `megatron/optimizer/optimizer.py`, `megatron/arguments.py`; SC21 scripts of
//! Aug 2021 and the code of May 2022).
//!
//! - **Unfused** (fp16 training as in SC21 and Korthikanti et al. 2022): the
//!   local DDP keeps an fp16 `main_grad` buffer; each parameter's backward hook
//!   runs `main_grad.add_(grad)` once per microbatch — one memory-bound kernel
//!   per parameter tensor reading the fresh fp16 gradient (2 B) and reading and
//!   writing the fp16 main gradient (4 B). Gradient-accumulation fusion arrived
//!   on 2022-02-13 and until 2022-09-27 only with fp32 accumulation, which
//!   `--fp16` runs did not request, so they ran unfused.
//! - **Fused** (`--accumulate-allreduce-grads-in-fp32` with fusion, Megatron's
//!   later default): the weight-gradient GEMM accumulates straight into an
//!   fp32 `main_grad`; no extra kernel, but gradients are all-reduced in fp32.
//!
//! The optimizer step's bytes are also listed kernel by kernel
//! ([`optimizer_phases`]), each with the memory-bound class `calibrate`
//! times it as, so that phases it timed (copy, unscale, norm, Adam) are
//! costed from their measurements.

use models::memory_class::MemoryKernelClass;
use models::ops::{self, ParameterTensor, Step};
use models::ModelSpec;
use std::num::NonZeroU64;

/// Bytes per element of one unfused accumulation `main_grad.add_(grad)`:
/// fp16 gradient read (2), fp16 main gradient read and written (4).
pub const UNFUSED_ACCUMULATION_BYTES_PER_PARAM: f64 = 6.0;

/// HBM bytes per parameter of Megatron's fp16 optimizer step
/// (`Float16OptimizerWithFloat16Params.step` with local DDP), unfused:
/// zero the fp16 gradient buffer (2), `main_grad.float()` copy to fp32 (2 + 4),
/// unscale and inf check (4 + 4), gradient-norm read (4), fused Adam reading
/// fp32 weight, gradient, momentum and variance and writing weight, momentum
/// and variance (16 + 12), fp32 → fp16 weight copy (4 + 2). Gradient clipping
/// adds a scale pass (8) only when the norm exceeds the threshold; not counted.
pub const OPTIMIZER_BYTES_PER_PARAM_UNFUSED: f64 = 54.0;

/// The same with fp32 main gradients (fused accumulation): the buffer zeroing
/// writes 4 bytes and the fp16 → fp32 gradient copy disappears.
pub const OPTIMIZER_BYTES_PER_PARAM_FUSED: f64 = 50.0;

/// One kernel of the optimizer step: its name, the memory-bound class
/// `calibrate` times it as (`None` for "optimizer.zero_grad": the cost model
/// reads this, never the name), and its HBM bytes per parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OptimizerPhase {
    pub kernel: &'static str,
    pub class: Option<MemoryKernelClass>,
    pub bytes_per_param: f64,
}

const fn phase(
    kernel: &'static str,
    class: Option<MemoryKernelClass>,
    bytes_per_param: f64,
) -> OptimizerPhase {
    OptimizerPhase {
        kernel,
        class,
        bytes_per_param,
    }
}

/// The unfused step's kernels in order; their bytes add up to
/// [`OPTIMIZER_BYTES_PER_PARAM_UNFUSED`].
const OPTIMIZER_PHASES_UNFUSED: [OptimizerPhase; 6] = [
    phase("optimizer.zero_grad", None, 2.0),
    phase(
        "optimizer.copy",
        Some(MemoryKernelClass::OptimizerCopy),
        6.0,
    ),
    phase(
        "optimizer.unscale",
        Some(MemoryKernelClass::OptimizerUnscale),
        8.0,
    ),
    phase(
        "optimizer.l2norm",
        Some(MemoryKernelClass::OptimizerL2Norm),
        4.0,
    ),
    phase(
        "optimizer.adam",
        Some(MemoryKernelClass::OptimizerAdam),
        28.0,
    ),
    phase(
        "optimizer.copy_params",
        Some(MemoryKernelClass::OptimizerCopy),
        6.0,
    ),
];

/// The fused step's kernels (fp32 main gradients: no copy to them, a 4-byte
/// zeroing); their bytes add up to [`OPTIMIZER_BYTES_PER_PARAM_FUSED`].
const OPTIMIZER_PHASES_FUSED: [OptimizerPhase; 5] = [
    phase("optimizer.zero_grad", None, 4.0),
    phase(
        "optimizer.unscale",
        Some(MemoryKernelClass::OptimizerUnscale),
        8.0,
    ),
    phase(
        "optimizer.l2norm",
        Some(MemoryKernelClass::OptimizerL2Norm),
        4.0,
    ),
    phase(
        "optimizer.adam",
        Some(MemoryKernelClass::OptimizerAdam),
        28.0,
    ),
    phase(
        "optimizer.copy_params",
        Some(MemoryKernelClass::OptimizerCopy),
        6.0,
    ),
];

/// The kernels of the optimizer step, with the bytes each moves per parameter.
pub fn optimizer_phases(fused_accumulation: bool) -> &'static [OptimizerPhase] {
    if fused_accumulation {
        &OPTIMIZER_PHASES_FUSED
    } else {
        &OPTIMIZER_PHASES_UNFUSED
    }
}

/// HBM bytes per parameter of the optimizer step.
pub fn optimizer_bytes_per_param(fused_accumulation: bool) -> f64 {
    if fused_accumulation {
        OPTIMIZER_BYTES_PER_PARAM_FUSED
    } else {
        OPTIMIZER_BYTES_PER_PARAM_UNFUSED
    }
}

/// Bytes per parameter of the `main_grad` buffer — what the data-parallel
/// all-reduce moves and what gradients occupy in memory: fp16 unfused, fp32 fused.
pub fn main_grad_bytes_per_param(fused_accumulation: bool) -> u64 {
    if fused_accumulation {
        4
    } else {
        2
    }
}

fn accumulation_steps(tensors: &[ParameterTensor]) -> Vec<Step> {
    tensors
        .iter()
        .map(|tensor| {
            Step::memory(
                tensor.accumulate_role,
                tensor.accumulate_kernel,
                UNFUSED_ACCUMULATION_BYTES_PER_PARAM * tensor.elements as f64,
            )
        })
        .collect()
}

/// The unfused accumulation kernels after one layer's backward, one per parameter tensor.
pub fn layer_accumulation(model: &ModelSpec, tensor_parallel: NonZeroU64) -> Vec<Step> {
    layer_accumulation_with_experts(model, tensor_parallel, NonZeroU64::MIN)
}

/// [`layer_accumulation`] of a MoE layer whose experts split `expert_parallel` ways.
pub fn layer_accumulation_with_experts(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
    expert_parallel: NonZeroU64,
) -> Vec<Step> {
    layer_accumulation_with_expert_split(model, tensor_parallel, expert_parallel, NonZeroU64::MIN)
}

/// [`layer_accumulation_with_experts`] with each expert split
/// `expert_tensor_parallel` ways too.
pub fn layer_accumulation_with_expert_split(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
    expert_parallel: NonZeroU64,
    expert_tensor_parallel: NonZeroU64,
) -> Vec<Step> {
    accumulation_steps(
        &models::parameter_tensors::layer_parameter_tensors_with_expert_split(
            model,
            tensor_parallel,
            expert_parallel,
            expert_tensor_parallel,
        ),
    )
}

/// The unfused accumulation kernels after the embedding's backward.
pub fn embedding_accumulation(model: &ModelSpec, tensor_parallel: NonZeroU64) -> Vec<Step> {
    accumulation_steps(&ops::embedding_parameter_tensors(model, tensor_parallel))
}

/// The unfused accumulation kernels after the head's backward (the output
/// layer's copy of the tied word embedding and the final LayerNorm; with one
/// stage autograd first sums the head's and the embedding's contributions to
/// the shared weight, which costs the same add).
pub fn head_accumulation(model: &ModelSpec, tensor_parallel: NonZeroU64) -> Vec<Step> {
    accumulation_steps(&ops::head_parameter_tensors(model, tensor_parallel))
}

#[cfg(test)]
mod tests {
    use super::*;
    use models::ops::Kernel;

    #[test]
    fn layer_accumulation_moves_six_bytes_per_parameter_of_the_rank() {
        let model = models::preset("gpt3-175b").unwrap();
        let steps = layer_accumulation(&model, crate::nz(8));
        assert_eq!(steps.len(), 12);
        let bytes: f64 = steps
            .iter()
            .map(|step| match step {
                Step::Kernel(Kernel { bytes, .. }) => *bytes,
                Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => {
                    panic!("no communication")
                }
            })
            .sum();
        let params: u64 = ops::layer_parameter_tensors(&model, crate::nz(8))
            .iter()
            .map(|p| p.elements)
            .sum();
        assert_eq!(bytes, 6.0 * params as f64);
    }

    #[test]
    fn optimizer_phases_add_up_to_the_step_bytes_and_carry_their_classes() {
        for fused in [false, true] {
            let phases = optimizer_phases(fused);
            let total: f64 = phases.iter().map(|p| p.bytes_per_param).sum();
            assert_eq!(total, optimizer_bytes_per_param(fused), "fused {fused}");
            for phase in phases {
                // The mark is the class the phase's name lists.
                assert_eq!(
                    phase.class,
                    MemoryKernelClass::of_kernel(phase.kernel),
                    "{}",
                    phase.kernel
                );
                match phase.class {
                    // A class's bytes per parameter are the phase's.
                    Some(class) => assert_eq!(
                        class.bytes_per_element() as f64,
                        phase.bytes_per_param,
                        "{}",
                        phase.kernel
                    ),
                    None => assert_eq!(phase.kernel, "optimizer.zero_grad"),
                }
            }
        }
        assert!(optimizer_phases(true)
            .iter()
            .all(|p| p.kernel != "optimizer.copy"));
    }

    #[test]
    fn fused_accumulation_all_reduces_fp32_and_skips_the_gradient_copy() {
        assert_eq!(main_grad_bytes_per_param(false), 2);
        assert_eq!(main_grad_bytes_per_param(true), 4);
        assert_eq!(
            optimizer_bytes_per_param(false) - optimizer_bytes_per_param(true),
            4.0
        );
    }
}
