//! The kernels of multi-head latent attention (MLA, DeepSeek-V2/V3) as
//! Megatron-Core's `MLASelfAttention` runs them
//! (`megatron/core/transformer/multi_latent_attention.py`, NVIDIA/Megatron-LM
//! commit 003b4ce2615f4e501ecbc39e01e0f76d237a35d9): the projections in
//! front of the attention core and the core's head dimensions. The layer's
//! input norm, the output projection and the residual are [`crate::ops`]'s.
//!
//! With `T` tokens, hidden size h, `n` query heads on the rank (a/t), query
//! latent rank r_q, key/value latent rank r_kv, per-head dimensions
//! `nope` (no rotary embedding), `rope` (rotary, the key's shared by all
//! heads), d_qk = nope + rope and d_v:
//!
//! | forward | kind | shape (m × n × k) / bytes |
//! |---|---|---|
//! | `mla_q_down` | GEMM (`linear_q_down_proj`) | T × r_q × h |
//! | `mla_kv_down` | GEMM (`linear_kv_down_proj`: latent and rotary key) | T × (r_kv + rope) × h |
//! | `mla_q_norm` | RMSNorm on the query latent | 4·T·r_q B |
//! | `mla_kv_norm` | RMSNorm on the key/value latent | 4·T·r_kv B |
//! | `mla_q_up` | GEMM (`linear_q_up_proj`) | T × n·d_qk × r_q |
//! | `mla_kv_up` | GEMM (`linear_kv_up_proj`: keys without rope and values) | T × n·(nope + d_v) × r_kv |
//! | `mla_rope_q` | rotary embedding into the contiguous query | read and write T·n·d_qk, 2 B each |
//! | `mla_rope_kv` | rotary key broadcast to every head, key and value made contiguous | read T·n·(nope + d_v) + T·rope, write T·n·(d_qk + d_v), 2 B each |
//!
//! Without `q_lora_rank` the query is one GEMM `mla_q_proj` (T × n·d_qk × h)
//! and has no norm. The two rotary kernels are Megatron-Core's
//! `fused_apply_mla_rope_for_q` / `fused_apply_mla_rope_for_kv`
//! (`megatron/core/fusions/fused_mla_yarn_rope_apply.py`, used with
//! `apply_rope_fusion`); the unfused path's rotations, `torch.cat` and
//! `.contiguous()` copies move the same tensors once more each and are not
//! modeled separately. Backward: each GEMM's data- and weight-gradient
//! GEMMs, the norms' backward (6 B per element, as [`crate::ops`]' norms),
//! the rotary kernels' backward (the same bytes: read the gradients, write
//! the inputs' gradients).
//!
//! The attention core then runs with query/key head dimension d_qk and
//! value head dimension d_v (192 and 128 for DeepSeek-V3):
//! [`crate::attention::fused_attention_with_dims`] when fused, else
//! [`crate::ops`]' score GEMM over d_qk and value GEMM over d_v. The output
//! projection (`linear_proj`, row-parallel) maps n·d_v to h.
//!
//! Tensor parallelism (Megatron-Core's spec builds the down projections as
//! `TELinear` with `parallel_mode='duplicated'`: every tensor rank computes
//! them on all its tokens with the whole weight; the up projections are
//! column-parallel over the heads): `n` = a/t, the down projections and
//! latent norms unsplit, and each up projection's input gradient (the
//! latents' gradients, T·r_q and T·r_kv) all-reduced over the tensor group
//! as any column-parallel layer's. The simulator lowers MLA at t = 1 only
//! (the partial gradient of the shared rotary key at t > 1 is not modeled).

use crate::element_bytes::FP16_BYTES;
use crate::gemm::{GemmLayout, GemmShape};
use crate::kernel_role::KernelRole;
use crate::linear::gemm_with_gradients;
use crate::moe::MlaSpec;
use crate::spec::ModelSpec;
use crate::step::Step;
use std::num::NonZeroU64;

/// The attention core's per-head query/key and value dimensions:
/// (d_qk, d_v) with MLA, (d, d) otherwise.
pub fn core_head_dims(model: &ModelSpec) -> (u64, u64) {
    match &model.mla {
        Some(mla) => (mla.qk_head_dim(), mla.v_head_dim),
        None => (model.head_dim(), model.head_dim()),
    }
}

/// Columns of the attention's output (the output projection's input) on one
/// of `tensor_parallel` ranks: a·d_v/t with MLA, h/t otherwise.
pub fn attention_output_width(model: &ModelSpec, tensor_parallel: NonZeroU64) -> u64 {
    let tensor_parallel = tensor_parallel.get();
    match &model.mla {
        Some(mla) => model.heads / tensor_parallel * mla.v_head_dim,
        None => model.q_width() / tensor_parallel,
    }
}

/// The forward steps of MLA's projections (after the layer's input norm,
/// before the attention core) on `tokens` tokens of one of `tensor_parallel`
/// ranks, and their backward blocks in forward order (the caller reverses
/// them with the layer's).
pub fn mla_projections(
    model: &ModelSpec,
    mla: &MlaSpec,
    tokens: u64,
    tensor_parallel: NonZeroU64,
) -> (Vec<Step>, Vec<Vec<Step>>) {
    let (t_tokens, h, t) = (tokens, model.hidden, tensor_parallel.get());
    let n = model.heads / t;
    let (nope, rope, v) = (mla.qk_nope_head_dim, mla.qk_rope_head_dim, mla.v_head_dim);
    let qk = mla.qk_head_dim();
    let r_kv = mla.kv_lora_rank;
    let b = FP16_BYTES as f64;
    let tf = t_tokens as f64;
    let mut forward = Vec::new();
    let mut backward: Vec<Vec<Step>> = Vec::new();
    let shape = |n, k| GemmShape {
        batch: 1,
        m: t_tokens,
        n,
        k,
    };
    let linear = |forward: &mut Vec<Step>, names: [&'static str; 3], shape: GemmShape| {
        let [f, dgrad, wgrad] = gemm_with_gradients(names, shape, GemmLayout::LINEAR_FORWARD);
        forward.push(f);
        vec![dgrad, wgrad]
    };
    // Down projections (duplicated on tensor ranks).
    let q_down = mla.q_lora_rank.map(|r_q| {
        linear(
            &mut forward,
            ["mla_q_down", "mla_q_down.dgrad", "mla_q_down.wgrad"],
            shape(r_q, h),
        )
    });
    let kv_down = linear(
        &mut forward,
        ["mla_kv_down", "mla_kv_down.dgrad", "mla_kv_down.wgrad"],
        shape(r_kv + rope, h),
    );
    if let Some(block) = q_down {
        backward.push(block);
    }
    backward.push(kv_down);
    // Latent norms (RMSNorm: LayerNorm's bytes, as the layer's norms).
    if let Some(r_q) = mla.q_lora_rank {
        forward.push(Step::memory(
            KernelRole::Forward,
            "mla_q_norm",
            4.0 * tf * r_q as f64,
        ));
        backward.push(vec![Step::memory(
            KernelRole::Backward,
            "mla_q_norm.bwd",
            6.0 * tf * r_q as f64,
        )]);
    }
    forward.push(Step::memory(
        KernelRole::Forward,
        "mla_kv_norm",
        4.0 * tf * r_kv as f64,
    ));
    backward.push(vec![Step::memory(
        KernelRole::Backward,
        "mla_kv_norm.bwd",
        6.0 * tf * r_kv as f64,
    )]);
    // Up projections (column-parallel over the heads): their inputs'
    // gradients are all-reduced over the tensor group when t > 1.
    let latent_all_reduce = |width: u64| Step::TensorAllReduce {
        bytes: t_tokens * width * FP16_BYTES,
        async_window: 1,
    };
    let mut q_up = match mla.q_lora_rank {
        Some(r_q) => linear(
            &mut forward,
            ["mla_q_up", "mla_q_up.dgrad", "mla_q_up.wgrad"],
            shape(n * qk, r_q),
        ),
        None => linear(
            &mut forward,
            ["mla_q_proj", "mla_q_proj.dgrad", "mla_q_proj.wgrad"],
            shape(n * qk, h),
        ),
    };
    let mut kv_up = linear(
        &mut forward,
        ["mla_kv_up", "mla_kv_up.dgrad", "mla_kv_up.wgrad"],
        shape(n * (nope + v), r_kv),
    );
    if t > 1 {
        q_up.push(latent_all_reduce(mla.q_lora_rank.unwrap_or(h)));
        kv_up.push(latent_all_reduce(r_kv));
    }
    backward.push(q_up);
    backward.push(kv_up);
    // Rotary embedding into contiguous query, key and value.
    let rope_q = 2.0 * b * tf * (n * qk) as f64;
    let rope_kv = b * tf * ((n * (nope + v) + rope) as f64 + (n * (qk + v)) as f64);
    forward.push(Step::memory(KernelRole::Forward, "mla_rope_q", rope_q));
    forward.push(Step::memory(KernelRole::Forward, "mla_rope_kv", rope_kv));
    backward.push(vec![
        Step::memory(KernelRole::Backward, "mla_rope_q.bwd", rope_q),
        Step::memory(KernelRole::Backward, "mla_rope_kv.bwd", rope_kv),
    ]);
    (forward, backward)
}

/// Bytes one token keeps per layer for MLA's projections and core inputs,
/// split across tensor ranks (the attention part of
/// [`crate::memory::linear_bytes_per_token`]'s split term): the query
/// latent before and after its norm (2·r_q each), the key/value latent
/// likewise (2·r_kv each), the core's Q and K (2·a·d_qk each) and V
/// (2·a·d_v), and the output projection's input (2·a·d_v). The down
/// projections' input is the input norm's output, counted with the
/// replicated 10h. A rotation keeps nothing (its backward is the inverse
/// rotation).
pub fn mla_attention_bytes_per_token(model: &ModelSpec, mla: &MlaSpec) -> u64 {
    let a = model.heads;
    let latents = 4 * mla.q_lora_rank.unwrap_or(0) + 4 * mla.kv_lora_rank;
    latents + 4 * a * mla.qk_head_dim() + 2 * a * mla.v_head_dim + 2 * a * mla.v_head_dim
}

#[cfg(test)]
#[path = "mla_ops_tests.rs"]
mod tests;
