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
//!   writing the fp16 main gradient (4 B); under bf16, whose main gradients
//!   Megatron keeps in fp32, reading and writing 8 B
//!   ([`scenario::TrainingOptions::fp32_main_grads`]). Gradient-accumulation fusion arrived
//!   on 2022-02-13 and until 2022-09-27 only with fp32 accumulation, which
//!   `--fp16` runs did not request, so they ran unfused.
//! - **Fused** (`--accumulate-allreduce-grads-in-fp32` with fusion, Megatron's
//!   later default): the weight-gradient GEMM accumulates straight into an
//!   fp32 `main_grad`; no extra kernel, but gradients are all-reduced in fp32.
//!
//! The optimizer step's kernels are `optimizer_step.rs`'s.

use models::ops::{self, ParameterTensor, Step};
use models::ModelSpec;
use std::num::NonZeroU64;

/// Bytes per element of one unfused accumulation `main_grad.add_(grad)`:
/// the fresh 2-byte gradient read, the main gradient (`main_grad_bytes`
/// wide) read and written: 6 with fp16 main gradients, 10 with fp32 ones.
pub fn unfused_accumulation_bytes_per_param(main_grad_bytes: u64) -> f64 {
    (2 + 2 * main_grad_bytes) as f64
}

/// Bytes per parameter of the `main_grad` buffer — what the data-parallel
/// all-reduce moves and what gradients occupy in memory: 2 (fp16/bf16) or 4
/// (fp32: [`scenario::TrainingOptions::fp32_main_grads`]).
pub fn main_grad_bytes_per_param(fp32_main_grads: bool) -> u64 {
    if fp32_main_grads {
        4
    } else {
        2
    }
}

fn accumulation_steps(tensors: &[ParameterTensor], main_grad_bytes: u64) -> Vec<Step> {
    let per_param = unfused_accumulation_bytes_per_param(main_grad_bytes);
    tensors
        .iter()
        .map(|tensor| {
            Step::memory(
                tensor.accumulate_role,
                tensor.accumulate_kernel,
                per_param * tensor.elements as f64,
            )
        })
        .collect()
}

/// The unfused accumulation kernels after one layer's backward, one per
/// parameter tensor, a mixture of experts' experts split `expert_parallel`
/// ways and each `expert_tensor_parallel` ways, into main gradients
/// `main_grad_bytes` wide.
pub fn layer_accumulation_with_expert_split(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
    expert_parallel: NonZeroU64,
    expert_tensor_parallel: NonZeroU64,
    main_grad_bytes: u64,
) -> Vec<Step> {
    accumulation_steps(
        &models::parameter_tensors::layer_parameter_tensors_with_expert_split(
            model,
            tensor_parallel,
            expert_parallel,
            expert_tensor_parallel,
        ),
        main_grad_bytes,
    )
}

/// The unfused accumulation kernels after the embedding's backward.
pub fn embedding_accumulation(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
    main_grad_bytes: u64,
) -> Vec<Step> {
    accumulation_steps(
        &ops::embedding_parameter_tensors(model, tensor_parallel),
        main_grad_bytes,
    )
}

/// The unfused accumulation kernels after the head's backward (the output
/// layer's copy of the tied word embedding and the final LayerNorm; with one
/// stage autograd first sums the head's and the embedding's contributions to
/// the shared weight, which costs the same add).
pub fn head_accumulation(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
    main_grad_bytes: u64,
) -> Vec<Step> {
    accumulation_steps(
        &ops::head_parameter_tensors(model, tensor_parallel),
        main_grad_bytes,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use models::ops::Kernel;

    #[test]
    fn layer_accumulation_moves_six_or_ten_bytes_per_parameter_of_the_rank() {
        let model = models::preset("gpt3-175b").unwrap();
        let (one, eight) = (crate::nz(1), crate::nz(8));
        let steps = layer_accumulation_with_expert_split(&model, eight, one, one, 2);
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
        // fp32 main gradients (bf16 training): 2 read, 4 + 4 read and written.
        let fp32: f64 = layer_accumulation_with_expert_split(&model, eight, one, one, 4)
            .iter()
            .map(|step| match step {
                Step::Kernel(Kernel { bytes, .. }) => *bytes,
                _ => 0.0,
            })
            .sum();
        assert_eq!(fp32, 10.0 * params as f64);
    }

    #[test]
    fn fused_accumulation_all_reduces_fp32_and_skips_the_gradient_copy() {
        assert_eq!(main_grad_bytes_per_param(false), 2);
        assert_eq!(main_grad_bytes_per_param(true), 4);
        assert_eq!(
            super::super::optimizer_step::optimizer_bytes_per_param(false, Default::default())
                - super::super::optimizer_step::optimizer_bytes_per_param(true, Default::default()),
            4.0
        );
    }
}
