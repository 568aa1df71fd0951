//! FP8 training as NVIDIA Transformer Engine (TE) runs it under Megatron-Core
//! (`--fp8-format hybrid`, TE's `DelayedScaling` recipe): which kernels of a
//! layer change, what they move, and what FP8 adds to and saves from memory.
//!
//! - FP8 GEMMs: the four linear layers (`te.Linear`/`te.LayerNormLinear`:
//!   QKV, output projection, FC1, FC2), forward, data gradient and weight
//!   gradient. E4M3 in the forward and E5M2 for gradients (the HYBRID format:
//!   TE common API, `transformer_engine.common.recipe.Format`). Their FLOPs are
//!   unchanged; they read 1-byte inputs and write a bf16 output. cuBLASLt runs
//!   FP8 GEMMs only in the TN layout on Hopper (cuBLAS documentation,
//!   `cublasLtMatmul` FP8 type combinations), which is why TE keeps transposed
//!   FP8 copies: every FP8 GEMM here is TN.
//! - Everything else stays in bf16: the attention core (its batched GEMMs and
//!   softmax), norms, embeddings, the LM head, the optimizer; master weights
//!   and Adam states fp32 (TE's FP8 primer, "Using FP8 with Transformer
//!   Engine": only the GEMMs of TE modules inside `fp8_autocast` run in FP8).
//! - Casts (memory-bound): each linear layer's input is cast to FP8 with its
//!   transpose in one kernel in the forward (TE `fp8_cast_transpose_fused`:
//!   read bf16 2 B, write FP8 1 B + FP8 transpose 1 B = 4 B per element), the
//!   output gradient likewise before the data-gradient GEMM (the backward's
//!   `fp8_cast_transpose_bgrad_fused`; the bias gradient is kept as its own
//!   kernel here, so its read is counted twice: conservative). The amax of
//!   each cast tensor is reduced inside the cast kernel.
//! - Weights: cast to FP8 with their transpose (4 B per weight element) once
//!   per iteration, on each model chunk's first microbatch: Megatron-Core
//!   calls `set_is_first_microbatch()` on the first microbatch
//!   (`megatron/core/pipeline_parallel/schedules.py`, `forward_step`) and TE's
//!   modules then cast and cache the FP8 weights, reusing them for the
//!   iteration's other microbatches (TE `Linear.forward`, `is_first_microbatch`).
//! - Delayed scaling: each FP8 tensor keeps an fp32 amax history of
//!   [`AMAX_HISTORY_LEN`] steps (TE's `DelayedScaling` default, 1024) with a
//!   scale and its inverse; 3 tensors per module in the forward (input,
//!   weight, output) and 2 in the backward (output gradient, input gradient),
//!   TE's `FP8FwdTensors`/`FP8BwdTensors`. After each forward and each
//!   backward of a model chunk one fused kernel rolls every history and
//!   recomputes every scale (TE `amax_and_scale_update`, multi-tensor): it
//!   reads and writes the histories and writes the scales.
//! - Memory: the cached FP8 weight and its transpose (2 B per linear weight
//!   element), the amax histories and scales, and the linear layers' inputs
//!   saved for the backward in FP8 (1 B instead of 2: TE saves `inputmat` /
//!   `inputmat_t` and `ln_out` as FP8).

use crate::gemm::{GemmLayout, GemmShape};
use crate::kernel_role::KernelRole;
use crate::ops::{Kernel, KernelClass, PassSteps, Step, FP16_BYTES};
use crate::spec::FfnType;
use crate::spec::ModelSpec;
use std::num::NonZeroU64;

/// A mixture of experts' linear layers TE runs in FP8 (`te.pytorch.GroupedLinear`
/// for the routed experts, Megatron-Core's `TEGroupedMLP`; `te.Linear` for the
/// shared experts), by the name of their forward GEMM in [`crate::moe_ops`].
/// The router is not one: Megatron-Core computes its logits with
/// `torch.nn.functional.linear` (or in fp32 with `moe_router_dtype`) outside
/// any TE module (`megatron/core/transformer/moe/router.py`, `Router.gating`),
/// and `fp8_autocast` only changes TE modules' GEMMs.
pub const FP8_EXPERT_LINEAR_LAYERS: [&str; 4] = [
    "expert_fc1",
    "expert_fc2",
    "shared_expert_fc1",
    "shared_expert_fc2",
];
/// Bytes per FP8 element (E4M3 or E5M2).
pub const FP8_BYTES: u64 = 1;
/// Bytes per fp32 element (amax history, scales).
const FP32_BYTES: u64 = 4;
/// Length of each FP8 tensor's amax history: TE `DelayedScaling`'s
/// `amax_history_len` default (TE common API, releases 1.x and 2.x).
pub const AMAX_HISTORY_LEN: u64 = 1024;
/// FP8 tensors TE scales per linear module in the forward: input, weight,
/// output (`FP8FwdTensors.GEMM1_INPUT/WEIGHT/OUTPUT`).
pub const FORWARD_SCALED_TENSORS: u64 = 3;
/// FP8 tensors TE scales per linear module in the backward: output gradient
/// and input gradient (`FP8BwdTensors.GRAD_OUTPUT1/GRAD_INPUT1`).
pub const BACKWARD_SCALED_TENSORS: u64 = 2;
/// The linear layers TE runs in FP8, by the name of their forward GEMM in
/// [`crate::ops`].
pub const FP8_LINEAR_LAYERS: [&str; 4] = ["qkv_gemm", "output_projection", "mlp_fc1", "mlp_fc2"];
/// Bytes a cast-transpose moves per element: read bf16, write FP8 and its
/// FP8 transpose.
pub const CAST_TRANSPOSE_BYTES_PER_ELEMENT: u64 = FP16_BYTES + 2 * FP8_BYTES;

/// Whether `name` is one of an FP8 linear layer's GEMMs (forward, `.dgrad`,
/// `.wgrad`) by the names above: the FP8 conversion reads the kernels'
/// [`crate::step::Kernel::fp8_linear`] marks, and a test checks the two
/// agree.
pub fn is_fp8_gemm(name: &str) -> bool {
    FP8_LINEAR_LAYERS
        .iter()
        .chain(FP8_EXPERT_LINEAR_LAYERS.iter())
        .any(|layer| {
            name.strip_prefix(layer)
                .is_some_and(|rest| rest.is_empty() || rest == ".dgrad" || rest == ".wgrad")
        })
}

/// Bytes of an FP8 GEMM: both inputs in FP8, the output in bf16.
pub fn fp8_gemm_bytes(shape: &GemmShape) -> f64 {
    let (b, m, n, k) = (
        shape.batch as f64,
        shape.m as f64,
        shape.n as f64,
        shape.k as f64,
    );
    b * ((m * k + k * n) * FP8_BYTES as f64 + m * n * FP16_BYTES as f64)
}

/// One layer's steps as TE runs them in FP8: each linear layer's GEMMs
/// become FP8 GEMMs (TN), preceded by the cast-transpose of their forward
/// input (m·k elements) and, in the backward, of their output gradient
/// (m·n elements of the forward shape, the data-gradient GEMM's m·k).
pub fn fp8_layer(layer: PassSteps) -> PassSteps {
    PassSteps {
        forward: convert(layer.forward),
        backward: convert(layer.backward),
    }
}

fn convert(steps: Vec<Step>) -> Vec<Step> {
    let mut out = Vec::with_capacity(steps.len() + 4);
    for step in steps {
        match step {
            Step::Kernel(Kernel {
                name,
                class: KernelClass::Gemm { shape, .. },
                flops,
                role,
                fp8_linear: Some(linear),
                memory_class,
                ..
            }) => {
                if let Some(cast) = linear.cast {
                    // The GEMM's A operand: the input (forward) or the output
                    // gradient (data gradient), m×k of this GEMM.
                    let elements = (shape.batch * shape.m * shape.k) as f64;
                    // Cast with the GEMM: before a forward GEMM, or in the
                    // backward before its data-gradient GEMM.
                    out.push(Step::memory(
                        role,
                        cast,
                        elements * CAST_TRANSPOSE_BYTES_PER_ELEMENT as f64,
                    ));
                }
                out.push(Step::Kernel(Kernel {
                    name,
                    class: KernelClass::Fp8Gemm {
                        shape,
                        layout: GemmLayout::Tn,
                    },
                    flops,
                    bytes: fp8_gemm_bytes(&shape),
                    role,
                    attention_core: false,
                    fp8_linear: Some(linear),
                    memory_class,
                }));
            }
            other => out.push(other),
        }
    }
    out
}

/// The weights of one layer's FP8 linear layers on one rank, by the name of
/// their per-iteration cast (biases stay bf16): QKV and the output projection
/// (a·head_dim wide) split t ways; a dense MLP's fc1 and fc2 split t ways, or
/// a mixture of experts' E/ep local experts' fc1 and fc2 (Transformer
/// Engine's `GroupedLinear`, one weight per expert, each cast as `te.Linear`
/// casts its own) and its shared experts' MLP. The router is not an FP8
/// linear layer ([`FP8_EXPERT_LINEAR_LAYERS`]).
fn fp8_weights(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
    expert_parallel: NonZeroU64,
) -> Vec<(&'static str, u64)> {
    let h = model.hidden;
    let t = tensor_parallel.get();
    let columns = |f: u64| match model.ffn_type {
        FfnType::Gelu => f,
        FfnType::Swiglu => 2 * f,
    };
    let mut weights = vec![
        ("qkv_gemm.weight_cast_transpose", h * model.qkv_width() / t),
        (
            "output_projection.weight_cast_transpose",
            model.q_width() * h / t,
        ),
    ];
    match &model.moe {
        None => {
            weights.push((
                "mlp_fc1.weight_cast_transpose",
                h * columns(model.ffn()) / t,
            ));
            weights.push(("mlp_fc2.weight_cast_transpose", model.ffn() * h / t));
        }
        Some(moe) => {
            let local = moe.experts / expert_parallel.get();
            let f = moe.expert_ffn_hidden;
            weights.push(("expert_fc1.weight_cast_transpose", local * h * columns(f)));
            weights.push(("expert_fc2.weight_cast_transpose", local * f * h));
            if moe.shared_experts > 0 {
                let shared = moe.shared_experts * moe.shared_ffn();
                weights.push((
                    "shared_expert_fc1.weight_cast_transpose",
                    h * columns(shared),
                ));
                weights.push(("shared_expert_fc2.weight_cast_transpose", shared * h));
            }
        }
    }
    weights
}

/// Weight elements of one layer's FP8 linear layers on one rank (tensor
/// parallelism t, expert parallelism ep; biases stay bf16).
pub fn fp8_weight_elements_per_layer(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
    expert_parallel: NonZeroU64,
) -> u64 {
    fp8_weights(model, tensor_parallel, expert_parallel)
        .iter()
        .map(|(_, elements)| elements)
        .sum()
}

/// The per-iteration cast of `layers` layers' weights to FP8 with their
/// transposes, one kernel per linear layer, on a chunk's first microbatch.
pub fn weight_cast_steps(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
    expert_parallel: NonZeroU64,
    layers: u32,
) -> Vec<Step> {
    let weights = fp8_weights(model, tensor_parallel, expert_parallel);
    let mut steps = Vec::new();
    for _ in 0..layers {
        for &(name, elements) in &weights {
            steps.push(Step::memory(
                KernelRole::Forward,
                name,
                elements as f64 * CAST_TRANSPOSE_BYTES_PER_ELEMENT as f64,
            ));
        }
    }
    steps
}

/// Bytes of one layer's FP8 state a checkpoint holds: TE saves the scaling
/// factors and amax histories under each module's `._extra_state` key
/// (TransformerEngine docs/faq.rst, "FP8 checkpoint compatibility"); the
/// cached FP8 weights are derived from the bf16 ones and not saved.
pub fn checkpointed_state_bytes_per_layer() -> u64 {
    scaling_state_bytes(FORWARD_SCALED_TENSORS + BACKWARD_SCALED_TENSORS)
}

/// Bytes of one layer's amax histories and scales for `scaled_tensors`
/// tensors per module: history (fp32 × [`AMAX_HISTORY_LEN`]), scale and
/// inverse scale (fp32 each).
fn scaling_state_bytes(scaled_tensors: u64) -> u64 {
    FP8_LINEAR_LAYERS.len() as u64 * scaled_tensors * (AMAX_HISTORY_LEN + 2) * FP32_BYTES
}

/// The fused amax-history and scale update after a forward (`backward`
/// false) or backward of `layers` layers: it reads and writes every history
/// and writes every scale and inverse scale.
pub fn amax_scale_update_step(layers: u32, backward: bool) -> Step {
    let tensors = if backward {
        BACKWARD_SCALED_TENSORS
    } else {
        FORWARD_SCALED_TENSORS
    };
    let per_tensor = (2 * AMAX_HISTORY_LEN + 2) * FP32_BYTES;
    let bytes = layers as u64 * FP8_LINEAR_LAYERS.len() as u64 * tensors * per_tensor;
    Step::memory(
        if backward {
            KernelRole::Backward
        } else {
            KernelRole::Forward
        },
        if backward {
            "fp8.amax_scale_update.bwd"
        } else {
            "fp8.amax_scale_update"
        },
        bytes as f64,
    )
}

/// GPU bytes FP8 training adds per layer on one tensor rank: the cached FP8
/// weights and their transposes, and every amax history and scale.
pub fn extra_state_bytes_per_layer(
    model: &ModelSpec,
    tensor_parallel: NonZeroU64,
    expert_parallel: NonZeroU64,
) -> u64 {
    2 * FP8_BYTES * fp8_weight_elements_per_layer(model, tensor_parallel, expert_parallel)
        + scaling_state_bytes(FORWARD_SCALED_TENSORS + BACKWARD_SCALED_TENSORS)
}

/// Bytes per token one layer saves less for the backward when the linear
/// layers' inputs are kept in FP8 (1 B instead of 2), without tensor
/// parallelism: (replicated on tensor ranks, split across them), the parts
/// of [`crate::memory::linear_bytes_per_token`] they come from. Replicated:
/// the QKV and FC1 inputs (h each); split: the projection's input (a·head_dim)
/// and FC2's input (ffn: GeLU's output, or SwiGLU's product). A mixture of
/// experts has no dense FC1/FC2: only the QKV input and the projection's
/// (its experts' inputs are per routed copy: [`expert_saved_input_bytes_per_copy`]).
pub fn saved_input_bytes_per_token(model: &ModelSpec) -> (u64, u64) {
    let h = model.hidden;
    let saved = FP16_BYTES - FP8_BYTES;
    if model.moe.is_some() {
        return (h * saved, model.q_width() * saved);
    }
    (2 * h * saved, (model.q_width() + model.ffn()) * saved)
}

/// Bytes each routed token copy saves less when the experts' fc1 input (h)
/// and fc2 input (the activation's output, the expert's inner size) are
/// kept in FP8 (`GroupedLinear` saves its inputs as `Linear` does); 0 for a
/// dense model.
pub fn expert_saved_input_bytes_per_copy(model: &ModelSpec) -> u64 {
    model.moe.as_ref().map_or(0, |moe| {
        (model.hidden + moe.expert_ffn_hidden) * (FP16_BYTES - FP8_BYTES)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_linear_layers_gemms_are_fp8() {
        for name in ["qkv_gemm", "mlp_fc2.dgrad", "output_projection.wgrad"] {
            assert!(is_fp8_gemm(name), "{name}");
        }
        for name in [
            "attention_scores",
            "attention_over_values.dgrad_probs",
            "qkv_gemm.bias_grad",
            "head_gemm",
            "mlp_fc1.grad_accumulate",
        ] {
            assert!(!is_fp8_gemm(name), "{name}");
        }
    }

    #[test]
    fn fp8_gemm_reads_one_byte_inputs_and_writes_bf16() {
        let shape = GemmShape {
            batch: 1,
            m: 4,
            n: 3,
            k: 2,
        };
        // A 4×2 and B 2×3 at 1 B, C 4×3 at 2 B.
        assert_eq!(fp8_gemm_bytes(&shape), 8.0 + 6.0 + 24.0);
    }

    #[test]
    fn amax_state_and_update_bytes_follow_the_history_length() {
        // 4 modules × 5 tensors × (1024 + 2) fp32.
        assert_eq!(scaling_state_bytes(5), 4 * 5 * 1026 * 4);
        match amax_scale_update_step(3, false) {
            Step::Kernel(kernel) => {
                assert_eq!(kernel.bytes, (3 * 4 * 3 * (2 * 1024 + 2) * 4) as f64)
            }
            Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => {
                unreachable!()
            }
        }
    }
}
