//! The attention core as one fused kernel forward and one backward
//! (FlashAttention / cuDNN fused attention, as Transformer Engine's
//! `DotProductAttention` runs it), instead of the unfused score GEMM,
//! softmax, dropout and value GEMM of [`crate::ops`].
//!
//! Which implementation a software stack uses is the stack's choice (its
//! `kernels.fused_attention`); [`crate::ops::LayerOptions::fused_attention`]
//! carries it here. Transformer Engine picks cuDNN's fused attention over
//! FlashAttention on Hopper and later ("Disabling FlashAttention to give
//! FusedAttention preference on Hopper+ for performance reasons",
//! `transformer_engine/pytorch/attention.py`, `get_attention_backend`).
//!
//! FLOPs are counted as Megatron's Eq. 3 counts the attention core — the
//! score and value products over the whole s×s square, 4·b·a·s²·d forward
//! and twice that backward — so a fused layer reports the same model FLOPs
//! as an unfused one. What the kernel executes differs (a causal kernel
//! skips the masked half, the backward recomputes the scores); the cost
//! model takes that from [`FusedAttentionShape`] (`sim::cost::attention`).
//!
//! Bytes: forward reads Q, K, V and writes O (2-byte elements) and the
//! softmax statistics (one fp32 log-sum-exp per query row and head);
//! backward reads Q, K, V, O, dO and the statistics and writes dQ, dK, dV.
//! K and V have the model's `kv_heads` (grouped-query attention needs no
//! expanded copy: the fused kernels read each K/V head for its query group).

pub use crate::attention_shape::FusedAttentionShape;
use crate::element_bytes::FP16_BYTES;
use crate::kernel_role::KernelRole;
use crate::step::{Kernel, KernelClass, Step};

/// Bytes of one fp32 softmax statistic (log-sum-exp) per query row.
const SOFTMAX_STAT_BYTES: u64 = 4;

/// The fused forward and backward kernels of the attention core on one
/// tensor-parallel rank: `microbatch` sequences of `seq_len` tokens,
/// `heads` query and `kv_heads` key/value heads of `head_dim` on this rank.
pub fn fused_attention(
    microbatch: u64,
    seq_len: u64,
    heads: u64,
    kv_heads: u64,
    head_dim: u64,
    dropout: bool,
) -> (Step, Step) {
    fused_attention_with_dims(
        microbatch, seq_len, heads, kv_heads, head_dim, head_dim, dropout,
    )
}

/// [`fused_attention`] with the query/key head dimension `qk_dim` and the
/// value head dimension `v_dim` apart (multi-head latent attention:
/// [`crate::mla_ops`]). FLOPs are the score product over `qk_dim` and the
/// value product over `v_dim`, 2·b·a·s²·(d_qk + d_v) forward; the kernel is
/// costed at the head dimension of the same FLOPs, ⌈(d_qk + d_v)/2⌉ (the
/// published rates are per head dimension of equal Q, K and V). Q, K, dQ,
/// dK have `qk_dim` columns per head; V, O, dO, dV `v_dim`.
pub fn fused_attention_with_dims(
    microbatch: u64,
    seq_len: u64,
    heads: u64,
    kv_heads: u64,
    qk_dim: u64,
    v_dim: u64,
    dropout: bool,
) -> (Step, Step) {
    let shape = FusedAttentionShape {
        batch_heads: microbatch * heads,
        seq_len,
        kv_seq_len: seq_len,
        head_dim: (qk_dim + v_dim).div_ceil(2),
        causal: true,
        backward: false,
        dropout,
    };
    let tokens = (microbatch * seq_len) as f64;
    let b = FP16_BYTES as f64;
    let (q, o) = (
        tokens * (heads * qk_dim) as f64 * b,
        tokens * (heads * v_dim) as f64 * b,
    );
    let (k, v) = (
        tokens * (kv_heads * qk_dim) as f64 * b,
        tokens * (kv_heads * v_dim) as f64 * b,
    );
    let stats = tokens * heads as f64 * SOFTMAX_STAT_BYTES as f64;
    let forward_flops = 2.0
        * (microbatch * heads) as f64
        * seq_len as f64
        * seq_len as f64
        * (qk_dim + v_dim) as f64;
    let forward = Step::Kernel(Kernel {
        name: "fused_attention",
        class: KernelClass::FusedAttention(shape),
        flops: forward_flops,
        // Q and O; K and V; the statistics.
        bytes: q + o + k + v + stats,
        role: KernelRole::Forward,
        attention_core: true,
        fp8_linear: None,
        memory_class: None,
    });
    let backward = Step::Kernel(Kernel {
        name: "fused_attention.bwd",
        class: KernelClass::FusedAttention(FusedAttentionShape {
            backward: true,
            ..shape
        }),
        flops: 2.0 * forward_flops,
        // Q, O, dO, dQ; K, V, dK, dV; the statistics.
        bytes: 2.0 * (q + o) + 2.0 * (k + v) + stats,
        role: KernelRole::Backward,
        attention_core: true,
        fp8_linear: None,
        memory_class: None,
    });
    (forward, backward)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(step: &Step) -> &Kernel {
        match step {
            Step::Kernel(kernel) => kernel,
            other => panic!("not a kernel: {other:?}"),
        }
    }

    #[test]
    fn flops_and_bytes_by_hand() {
        // b=2, s=1024, 8 query heads and 2 kv heads of 128 on this rank.
        let (forward, backward) = fused_attention(2, 1024, 8, 2, 128, false);
        let (f, b) = (kernel(&forward), kernel(&backward));
        let model_flops = 4.0 * 16.0 * 1024.0 * 1024.0 * 128.0;
        assert_eq!(f.flops, model_flops);
        assert_eq!(b.flops, 2.0 * model_flops);
        let tokens = 2048.0;
        let q = tokens * 8.0 * 128.0 * 2.0;
        let kv = tokens * 2.0 * 128.0 * 2.0;
        let stats = tokens * 8.0 * 4.0;
        assert_eq!(f.bytes, 2.0 * q + 2.0 * kv + stats);
        assert_eq!(b.bytes, 4.0 * q + 4.0 * kv + stats);
        let (KernelClass::FusedAttention(fs), KernelClass::FusedAttention(bs)) = (f.class, b.class)
        else {
            panic!("fused kernels expected");
        };
        assert!(fs.causal && !fs.backward && bs.backward);
        assert_eq!(fs.benchmark_flops(), model_flops / 2.0);
        assert_eq!(bs.benchmark_flops(), 2.5 * model_flops / 2.0);
    }
}
