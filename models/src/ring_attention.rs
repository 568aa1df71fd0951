//! Context parallelism's attention core: Transformer Engine's ring attention
//! as the kernels one rank runs per layer pass (see [`ring_attention_steps`]).

use crate::attention_shape::FusedAttentionShape;
use crate::element_bytes::FP16_BYTES;
use crate::kernel_role::KernelRole;
use crate::step::{Kernel, KernelClass, Step};
use std::num::NonZeroU64;

/// Kernels per ring step, forward and backward: one fused attention call
/// each (`flash_attn_fwd` / `flash_attn_bwd` in TE's per-step loop).
pub const RING_ATTENTION_KERNELS_PER_STEP: [usize; 2] = [1, 1];

/// The attention core of one layer under context parallelism, as Transformer
/// Engine runs it (`AttnFuncWithCPAndKVP2P` in
/// `transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py`;
/// Megatron-Core's local `DotProductAttention` refuses cp > 1, so ring
/// attention is always TE's fused kernel: no scores in HBM, no separate
/// softmax or dropout kernels, grouped-query K/V used without expansion).
/// The rank's s/cp tokens are two load-balanced chunks of s/(2·cp) (chunks r
/// and 2·cp−1−r, so every rank does the same causal work); the ring runs cp
/// steps, each one fused attention call of the local Q against one K/V
/// chunk: the diagonal step is causal over (s/cp)², the others attend the
/// whole local Q to half the received K/V or half the Q to all of it — each
/// step computes an s/cp × s/(2·cp) block of scores, costed as a fused
/// attention kernel of that block without a mask ([`FusedAttentionShape`],
/// `kv_seq_len` = s/(2·cp)). `seq_len` is the whole sequence s.
///
/// FLOPs: Megatron's Eq. 3 counts the whole s×s square, so each step carries
/// 1/cp of this rank's share of it, twice the block it computes (the causal
/// half of the square is what the ring computes); the backward twice the
/// forward. Bytes per step: Q and O of s/cp tokens, K and V of s/(2·cp)
/// (query heads: a step's K/V block is the one received, at the query heads'
/// count as the kernel reads it), the softmax statistics; backward also dO,
/// dQ, dK and dV.
pub fn ring_attention_steps(
    microbatch: u64,
    heads_per_rank: u64,
    seq_len: u64,
    head_dim: u64,
    context_parallel: NonZeroU64,
    dropout: bool,
) -> (Vec<Step>, Vec<Step>) {
    let cp = context_parallel.get();
    let batch_heads = microbatch * heads_per_rank;
    let (q, kv) = (seq_len / cp, seq_len / (2 * cp));
    let shape = FusedAttentionShape {
        batch_heads,
        seq_len: q,
        kv_seq_len: kv,
        head_dim,
        causal: false,
        backward: false,
        dropout,
    };
    let element = FP16_BYTES as f64 * (batch_heads * head_dim) as f64;
    let stats = (batch_heads * q * 4) as f64;
    let forward_bytes = element * (2 * q + 2 * kv) as f64 + stats;
    let backward_bytes = element * (4 * q + 4 * kv) as f64 + stats;
    // Eq. 3's share: twice the block's products.
    let forward_flops = 2.0 * shape.model_forward_flops();
    let mut forward = Vec::new();
    let mut backward = Vec::new();
    for _ in 0..cp {
        forward.push(Step::Kernel(Kernel {
            name: "ring_attention.step",
            class: KernelClass::FusedAttention(shape),
            flops: forward_flops,
            bytes: forward_bytes,
            role: KernelRole::Forward,
            attention_core: true,
            fp8_linear: None,
            memory_class: None,
        }));
        backward.push(Step::Kernel(Kernel {
            name: "ring_attention.bwd.step",
            class: KernelClass::FusedAttention(FusedAttentionShape {
                backward: true,
                ..shape
            }),
            flops: 2.0 * forward_flops,
            bytes: backward_bytes,
            role: KernelRole::Backward,
            attention_core: true,
            fp8_linear: None,
            memory_class: None,
        }));
    }
    (forward, backward)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cp_steps_carry_eq3_share_and_the_block_shape() {
        // b=1, 4 heads, s=256, d=64, cp=2: blocks 128 × 64.
        let (forward, backward) = ring_attention_steps(1, 4, 256, 64, crate::nz(2), false);
        assert_eq!((forward.len(), backward.len()), (2, 2));
        let flops: f64 = forward
            .iter()
            .map(|s| match s {
                Step::Kernel(k) => k.flops,
                _ => 0.0,
            })
            .sum();
        // Eq. 3's attention forward over s×s, split over cp ranks.
        assert_eq!(flops, 4.0 * 4.0 * 256.0 * 256.0 * 64.0 / 2.0);
        let Step::Kernel(kernel) = &backward[0] else {
            panic!()
        };
        let KernelClass::FusedAttention(shape) = kernel.class else {
            panic!()
        };
        assert_eq!((shape.seq_len, shape.kv_seq_len), (128, 64));
        assert!(shape.backward && !shape.causal);
        assert_eq!(shape.equivalent_seq_len(), 91);
    }
}
