//! What a fused attention kernel computes ([`FusedAttentionShape`]): the
//! shape the cost model prices it by (`sim::cost::attention`) and the FLOPs
//! it is charged with.

use serde::Serialize;

/// What the fused attention kernel computes, for the cost model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct FusedAttentionShape {
    /// Microbatch × query heads on this rank.
    pub batch_heads: u64,
    /// Query rows per head.
    pub seq_len: u64,
    /// Key/value rows per head (the query length, except for a ring
    /// attention step's block: `crate::ring_attention`).
    pub kv_seq_len: u64,
    pub head_dim: u64,
    /// Causal mask: the kernel skips the blocks above the diagonal.
    pub causal: bool,
    /// The backward kernel (dQ, dK, dV), else the forward.
    pub backward: bool,
    /// Dropout on the probabilities inside the kernel (a rate above 0): the
    /// kernel draws random numbers for every score it keeps.
    pub dropout: bool,
}

impl FusedAttentionShape {
    /// The forward's score and value products over the whole block,
    /// 2·(2·s·s_kv·d) per head — for a square block the attention core's
    /// FLOPs in Megatron's Eq. 3.
    pub fn model_forward_flops(&self) -> f64 {
        4.0 * self.batch_heads as f64
            * self.seq_len as f64
            * self.kv_seq_len as f64
            * self.head_dim as f64
    }

    /// The sequence length whose square block has this block's area, √(s·s_kv),
    /// at which a rectangular block's rate is looked up.
    pub fn equivalent_seq_len(&self) -> u64 {
        ((self.seq_len as f64 * self.kv_seq_len as f64).sqrt()).round() as u64
    }

    /// The FLOPs the kernel is charged with by FlashAttention's benchmark
    /// convention (`benchmarks/benchmark_flash_attention.py`: forward
    /// 4·b·h·s²·d, halved with a causal mask; backward 2.5 × forward, five
    /// products instead of two), the convention of the published rates the
    /// cost model divides by.
    pub fn benchmark_flops(&self) -> f64 {
        let forward = self.model_forward_flops() * if self.causal { 0.5 } else { 1.0 };
        if self.backward {
            2.5 * forward
        } else {
            forward
        }
    }
}
