//! Context parallelism's attention core: Transformer Engine's ring attention
//! as the kernels one rank runs per layer pass (see [`ring_attention_steps`]).

use crate::ops::{GemmLayout, GemmShape, Kernel, KernelClass, Step, FP16_BYTES};

/// The attention core of one layer under context parallelism, as Transformer
/// Engine runs it (`AttnFuncWithCPAndKVP2P` in
/// `transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py`;
/// Megatron-Core's local `DotProductAttention` refuses cp > 1, so ring
/// attention is always TE's fused/flash kernel: no scores in HBM, no separate
/// softmax or dropout kernels, grouped-query K/V used without expansion).
/// The rank's s/cp tokens are two load-balanced chunks of s/(2·cp) (chunks r
/// and 2·cp−1−r, so every rank does the same causal work); the ring runs cp
/// steps, each an attention block of the local Q against one K/V chunk: the
/// diagonal step is causal over (s/cp)², the others attend the whole local Q
/// to half the received K/V or half the Q to all of it — each step is
/// s/cp × s/(2·cp) of scores, charged as that GEMM shape. Per step the
/// forward runs 2 GEMMs (Q·Kᵀ, P·V) and the backward 5 (scores recomputed,
/// dP = dO·Vᵀ, dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q: FlashAttention-2, Dao
/// 2023, Sec. 3.1.2). `seq_len` is the whole sequence s.
pub fn ring_attention_steps(
    microbatch: u64,
    heads_per_rank: u64,
    seq_len: u64,
    head_dim: u64,
    context_parallel: u64,
) -> (Vec<Step>, Vec<Step>) {
    let cp = context_parallel.max(1);
    let batch = microbatch * heads_per_rank;
    let (q, kv) = (seq_len / cp, seq_len / (2 * cp));
    let shape = |m, n, k| GemmShape { batch, m, n, k };
    // Fused: the q × kv scores and probabilities stay on chip; each kernel
    // moves its q- and kv-sized operands, batch·(q + kv)·head_dim 16-bit elements.
    let bytes = (batch * (q + kv) * head_dim * FP16_BYTES) as f64;
    let fused = |name: &'static str, shape: GemmShape, layout: GemmLayout| {
        Step::Kernel(Kernel {
            name,
            class: KernelClass::Gemm { shape, layout },
            flops: shape.flops(),
            bytes,
        })
    };
    let mut forward = Vec::new();
    let mut backward = Vec::new();
    for _ in 0..cp {
        forward.push(fused(
            "ring_attention.scores",
            shape(q, kv, head_dim),
            GemmLayout::Tn,
        ));
        forward.push(fused(
            "ring_attention.values",
            shape(q, head_dim, kv),
            GemmLayout::Nn,
        ));
        backward.push(fused(
            "ring_attention.bwd.scores",
            shape(q, kv, head_dim),
            GemmLayout::Tn,
        ));
        backward.push(fused(
            "ring_attention.bwd.dgrad_probs",
            shape(q, kv, head_dim),
            GemmLayout::Tn,
        ));
        backward.push(fused(
            "ring_attention.bwd.dgrad_values",
            shape(kv, head_dim, q),
            GemmLayout::Nt,
        ));
        backward.push(fused(
            "ring_attention.bwd.dgrad_q",
            shape(q, head_dim, kv),
            GemmLayout::Nn,
        ));
        backward.push(fused(
            "ring_attention.bwd.dgrad_k",
            shape(kv, head_dim, q),
            GemmLayout::Nt,
        ));
    }
    (forward, backward)
}

/// GEMM kernels per ring-attention step: forward, backward ([`ring_attention_steps`]).
pub const RING_ATTENTION_KERNELS_PER_STEP: [usize; 2] = [2, 5];
