//! A backward split into its input-gradient pass (`I`) and its
//! weight-gradient pass (`W`), as the zero-bubble schedules run it (Qi et al.,
//! "Zero Bubble Pipeline Parallelism", ICLR 2024, Sec. 2; their Megatron fork
//! sail-sg/zero-bubble-pipeline-parallelism,
//! `megatron/core/tensor_parallel/layers.py`,
//! `LinearWithGradAccumulationAndAsyncCommunication.backward`).
//!
//! In that code a linear layer's backward computes the data-gradient GEMM
//! (`grad_output.matmul(weight)`), issues the tensor-parallel all-reduce (or
//! reduce-scatter) of the input gradient synchronously, and reduces the bias
//! gradient (`grad_output.sum(dim=0)`) at once; only the weight-gradient GEMM
//! (`wgrad_gemm_accum`) is put into the `WeightGradStore` and runs later as
//! `W`. Everything else of the backward — LayerNorm (its fused kernel
//! computes its weight gradients together with the input gradient), softmax,
//! dropout, attention-core GEMMs (no weights), the cross-entropy, the
//! embedding's scatter — stays in `I`. So here:
//!
//! - `W` = the weight-gradient GEMMs (role
//!   [`KernelRole::WeightGradientGemm`]: the linear layers' and the logits
//!   GEMM's) and, when the scenario accumulates gradients unfused, the
//!   accumulation kernels of the weights those GEMMs produce (each adds its
//!   GEMM's fresh gradient into `main_grad`, so it follows its GEMM:
//!   [`KernelRole::WeightGradientAccumulation`], set per parameter tensor in
//!   [`models::parameter_tensors`]);
//! - `I` = every other step of the backward, tensor all-reduces included.
//!
//! `I` + `W` hold exactly the backward's kernels. The all-reduces of `I` are
//! blocking: with the weight-gradient GEMM deferred there is nothing for
//! Megatron's asynchronous all-reduce to overlap (the fork issues it with
//! `async_op=False` when the backward is split).

use models::ops::{KernelRole, Step};

/// Whether a backward step belongs to the weight-gradient pass `W`: by the
/// role its kernel was created with ([`KernelRole::in_weight_gradient_pass`]).
pub fn is_weight_gradient(step: &Step) -> bool {
    match step {
        Step::Kernel(kernel) => kernel.role.in_weight_gradient_pass(),
        Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => false,
    }
}

/// The steps of the input-gradient pass (`weight = false`) or of the
/// weight-gradient pass (`weight = true`) of a backward, in backward order.
pub fn split(backward: Vec<Step>, weight: bool) -> Vec<Step> {
    backward
        .into_iter()
        .filter(|step| is_weight_gradient(step) == weight)
        .collect()
}

/// Bytes one deferred weight-gradient pass keeps on its rank from its
/// input-gradient pass until it runs, for `layers` transformer layers (and
/// the head's output layer when `head`): what each weight-gradient GEMM
/// dW = Xᵀ·dY reads, the linear layer's saved input X and its output
/// gradient dY (the fork's `WeightGradStore` queues `wgrad_gemm_accum`
/// with both tensors). Exactly the A and B operands of every `*.wgrad`
/// GEMM of the pass, batch·(m·k + k·n) elements of the GEMM's shape, at
/// 2 bytes (fp16/bf16) or 1 for an FP8 GEMM ([`models::fp8::FP8_BYTES`]:
/// Transformer Engine keeps both operands of its FP8 weight-gradient GEMM
/// in FP8). Under sequence parallelism the input is the gathered one the
/// GEMM reads.
pub fn weight_gradient_state_bytes(scenario: &scenario::Scenario, layers: u32, head: bool) -> u64 {
    let steps = super::pass_steps(
        scenario,
        taskgraph::task_graph::ComputePass::WeightGradient,
        layers,
        false,
        head,
    );
    steps
        .iter()
        .map(|step| match step {
            Step::Kernel(kernel) if kernel.role == KernelRole::WeightGradientGemm => {
                match kernel.class {
                    models::ops::KernelClass::Gemm { shape, .. } => {
                        operand_elements(shape) * models::ops::FP16_BYTES
                    }
                    models::ops::KernelClass::Fp8Gemm { shape, .. } => {
                        operand_elements(shape) * models::fp8::FP8_BYTES
                    }
                    _ => 0,
                }
            }
            _ => 0,
        })
        .sum()
}

/// Elements of a GEMM's two inputs A[m,k] and B[k,n], `batch` times.
fn operand_elements(shape: models::gemm::GemmShape) -> u64 {
    shape.batch * (shape.m * shape.k + shape.k * shape.n)
}

#[cfg(test)]
mod tests {
    use crate::cost::pass_steps;
    use models::ops::{PassSteps, Step};
    use scenario::{Recompute, ScenarioFile, TrainingOptionsFile};
    use taskgraph::task_graph::ComputePass;

    fn names(steps: &[Step]) -> Vec<&'static str> {
        steps
            .iter()
            .map(|step| match step {
                Step::Kernel(kernel) => kernel.name,
                Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => {
                    "all_reduce"
                }
            })
            .collect()
    }

    #[test]
    fn input_and_weight_gradient_passes_partition_the_backward() {
        for fused in [false, true] {
            let scenario = ScenarioFile {
                tp: Some(2),
                recompute: Some(Recompute::None),
                options: TrainingOptionsFile {
                    gradient_accumulation_fusion: Some(fused),
                    ..Default::default()
                },
                ..ScenarioFile::embedded_default()
            }
            .resolve()
            .unwrap();
            for (embedding, head) in [(false, false), (true, true)] {
                let of = |pass| pass_steps(&scenario, pass, 2, embedding, head);
                let (backward, input, weight) = (
                    of(ComputePass::Backward),
                    of(ComputePass::InputGradient),
                    of(ComputePass::WeightGradient),
                );
                assert_eq!(input.len() + weight.len(), backward.len());
                // W: 4 weight-gradient GEMMs per layer (+ the logits GEMM with the
                // head), each followed unfused by its weight's accumulation.
                let gemms = 2 * 4 + usize::from(head);
                let per_gemm = if fused { 1 } else { 2 };
                assert_eq!(weight.len(), gemms * per_gemm, "fused={fused}");
                assert!(names(&weight)
                    .iter()
                    .all(|n| n.ends_with(".wgrad") || n.ends_with(".weight.grad_accumulate")));
                // I keeps every tensor all-reduce and every data-gradient GEMM.
                let all_reduces = |steps: &[Step]| {
                    steps
                        .iter()
                        .filter(|s| matches!(s, Step::TensorAllReduce { .. }))
                        .count()
                };
                assert_eq!(all_reduces(&input), all_reduces(&backward));
                assert!(all_reduces(&input) > 0);
                assert!(names(&input).iter().any(|n| n.ends_with(".dgrad")));
                assert!(names(&input).iter().any(|n| n.ends_with("bias_grad")));
                // The FLOPs split: W has exactly the weight-gradient GEMMs' FLOPs.
                let total = PassSteps::flops(&backward);
                let split = PassSteps::flops(&input) + PassSteps::flops(&weight);
                assert_eq!(split, total);
            }
        }
    }
}
