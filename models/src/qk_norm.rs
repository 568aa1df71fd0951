//! Qwen3's per-head query and key norms (`qk_norm`): Megatron-Core's
//! `SelfAttention` with `qk_layernorm` (`megatron/core/transformer/attention.py`,
//! `get_query_key_value_tensors`) splits the QKV GEMM's output into Q
//! (a/t heads) and K (kv/t heads) of `head_dim` each and runs
//! `q_layernorm` on Q and `k_layernorm` on K, each normalizing the last
//! (head_dim) dimension, before the rotary embedding and the attention core.
//!
//! Each is a memory-bound kernel costed as the layer's own norms are
//! ([`crate::ops`]): forward 4 B per element (read the bf16 input, write the
//! bf16 output; the head_dim weight is not counted), backward 6 B per element
//! (read the output gradient and the input, write the input gradient; the
//! weight gradient's partial sums are not counted). Elements: tokens × heads
//! on the rank × head_dim. The backward saves the norm's input: Q and K
//! (2 B per element) are kept once more ([`crate::memory`]).

use crate::element_bytes::FP16_BYTES;
use crate::kernel_role::KernelRole;
use crate::spec::ModelSpec;
use crate::spec::NormType;
use crate::step::Step;

/// Bytes per element a norm's forward moves (read input, write output).
pub const FORWARD_BYTES_PER_ELEMENT: u64 = 2 * FP16_BYTES;
/// Bytes per element a norm's backward moves (read gradient and input,
/// write the input gradient).
pub const BACKWARD_BYTES_PER_ELEMENT: u64 = 3 * FP16_BYTES;

/// Names of the query norm's and the key norm's forward and backward kernels.
fn names(norm: NormType) -> [&'static str; 4] {
    match norm {
        NormType::Layernorm => [
            "q_layernorm",
            "q_layernorm.bwd",
            "k_layernorm",
            "k_layernorm.bwd",
        ],
        NormType::Rmsnorm => ["q_rmsnorm", "q_rmsnorm.bwd", "k_rmsnorm", "k_rmsnorm.bwd"],
    }
}

/// The q and k norms of one layer on one tensor rank for `tokens` tokens
/// with `heads` query and `kv_heads` key/value heads on the rank: the
/// forward kernels in order, and the backward kernels in forward order (the
/// caller reverses blocks). Empty when the model has no `qk_norm`.
pub fn qk_norm_steps(
    model: &ModelSpec,
    tokens: u64,
    heads: u64,
    kv_heads: u64,
) -> (Vec<Step>, Vec<Step>) {
    if !model.qk_norm {
        return (Vec::new(), Vec::new());
    }
    let [q, q_bwd, k, k_bwd] = names(model.norm);
    let d = model.head_dim();
    let q_elems = (tokens * heads * d) as f64;
    let k_elems = (tokens * kv_heads * d) as f64;
    let (fwd, bwd) = (
        FORWARD_BYTES_PER_ELEMENT as f64,
        BACKWARD_BYTES_PER_ELEMENT as f64,
    );
    (
        vec![
            Step::memory(KernelRole::Forward, q, fwd * q_elems),
            Step::memory(KernelRole::Forward, k, fwd * k_elems),
        ],
        vec![
            Step::memory(KernelRole::Backward, q_bwd, bwd * q_elems),
            Step::memory(KernelRole::Backward, k_bwd, bwd * k_elems),
        ],
    )
}

/// Bytes one token keeps per layer for the q/k norms' backward (their
/// inputs, bf16), without tensor parallelism: 2·(a + kv)·head_dim; 0
/// without `qk_norm`.
pub fn saved_bytes_per_token(model: &ModelSpec) -> u64 {
    if !model.qk_norm {
        return 0;
    }
    FP16_BYTES * (model.heads + model.kv_heads()) * model.head_dim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::{transformer_layer, Kernel, Step};

    fn kernel<'a>(steps: &'a [Step], name: &str) -> &'a Kernel {
        steps
            .iter()
            .find_map(|s| match s {
                Step::Kernel(k) if k.name == name => Some(k),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no {name}"))
    }

    #[test]
    fn qwen3_30b_a3b_layer_by_hand() {
        // h = 2048, 32 query heads and 4 KV heads of 128 (q width 4096).
        let mut model = crate::presets::preset("qwen3-30b-a3b").unwrap();
        model.moe = None;
        model.ffn_hidden = Some(6144);
        let (b, s, t) = (1u64, 4096u64, 2u64);
        let layer = transformer_layer(&model, b, crate::nz(t));
        let tokens = (b * s) as f64;
        let (qh, kvh, d, h) = (16.0, 2.0, 128.0, 2048.0);
        let qkv = kernel(&layer.forward, "qkv_gemm");
        assert_eq!(qkv.flops, 2.0 * tokens * (qh + 2.0 * kvh) * d * h);
        // The projection reads the a/t heads' width: k = 32·128/2.
        let proj = kernel(&layer.forward, "output_projection");
        assert_eq!(proj.flops, 2.0 * tokens * h * qh * d);
        assert_eq!(
            kernel(&layer.backward, "output_projection.wgrad").flops,
            2.0 * tokens * h * qh * d
        );
        assert_eq!(
            kernel(&layer.forward, "q_rmsnorm").bytes,
            4.0 * tokens * qh * d
        );
        assert_eq!(
            kernel(&layer.forward, "k_rmsnorm").bytes,
            4.0 * tokens * kvh * d
        );
        assert_eq!(
            kernel(&layer.backward, "q_rmsnorm.bwd").bytes,
            6.0 * tokens * qh * d
        );
        assert_eq!(
            kernel(&layer.backward, "k_rmsnorm.bwd").bytes,
            6.0 * tokens * kvh * d
        );
        // The norms run after the QKV GEMM and before RoPE, forward; their
        // backwards after RoPE's and before the QKV GEMM's.
        let position = |steps: &[Step], name: &str| {
            steps
                .iter()
                .position(|s| matches!(s, Step::Kernel(k) if k.name == name))
                .unwrap()
        };
        let f = &layer.forward;
        assert!(position(f, "qkv_gemm") < position(f, "q_rmsnorm"));
        assert!(position(f, "k_rmsnorm") < position(f, "rope"));
        let bw = &layer.backward;
        assert!(position(bw, "rope.bwd") < position(bw, "q_rmsnorm.bwd"));
        assert!(position(bw, "k_rmsnorm.bwd") < position(bw, "qkv_gemm.dgrad"));
        assert_eq!(saved_bytes_per_token(&model), 2 * (32 + 4) * 128);
        // The attention core on head_dim 128: scores 2·b·(a/t)·s²·d.
        assert_eq!(
            kernel(&layer.forward, "attention_scores").flops,
            2.0 * qh * tokens * tokens * d
        );
    }

    #[test]
    fn without_qk_norm_nothing_is_added() {
        let model = crate::presets::preset("llama3-8b").unwrap();
        assert_eq!(qk_norm_steps(&model, 8, 4, 1), (Vec::new(), Vec::new()));
        assert_eq!(saved_bytes_per_token(&model), 0);
    }
}
