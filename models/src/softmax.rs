//! The attention softmax as Megatron runs it: one fused scale-mask-softmax
//! kernel when that kernel's shape constraints hold, PyTorch's eager ops
//! otherwise.
//!
//! Megatron's `FusedScaleMaskSoftmax` (`megatron/model/fused_softmax.py`)
//! uses its CUDA kernel only when `16 < sk <= 2048` (the 2021 code, and
//! Megatron-DeepSpeed until 2023-07; the causal kernel asserts
//! `seq_len <= 2048` in NVIDIA's code until 6753e8bf, 2023-05-05, which
//! raised it to 16384), `sq % 4 == 0` and `b·np % 4 == 0`, where `np` is the
//! number of attention heads on the rank (a/t). For causal masks the v2.6+
//! check also asks `b·np % batch_per_block == 0`, and `batch_per_block` is
//! 4 for every `sk > 128` on CUDA (`scaled_upper_triang_masked_softmax.h`:
//! 128 threads per block / 32-thread warps × 1 batch per warp), which the
//! first condition already implies. Otherwise `forward_torch_softmax` runs:
//! with query-key layer scaling on (the default: `--no-query-key-layer-scaling`
//! is `store_false`) the softmax is in fp32, so the scores are cast to float,
//! multiplied by the scale, masked in place (`masked_fill_`), softmaxed and
//! cast back to half: five kernels instead of one, and autograd runs the five
//! backwards.
//!
//! So a small microbatch with many tensor ranks (b = 1, 16 heads, t = 8:
//! b·np = 2) falls off the fused kernel, and so does any sequence over the
//! stack's limit.

use crate::kernel_role::KernelRole;
use crate::memory_class::MemoryKernelClass;
use crate::step::Step;

/// Which softmax implementation a layer runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionSoftmax {
    /// Megatron's fused scale-mask-softmax CUDA kernel (one kernel each way).
    Fused,
    /// PyTorch's eager fallback in fp32 (five kernels each way).
    Eager,
}

/// The implementation Megatron picks for a causal self-attention with
/// `scores_per_rank = b·np` score matrices of `seq_len`², when its fused
/// kernel accepts sequences up to `fused_max_seq_len` (`None`: no fused
/// kernel in this software).
pub fn megatron_attention_softmax(
    scores_per_rank: u64,
    seq_len: u64,
    fused_max_seq_len: Option<u64>,
) -> AttentionSoftmax {
    let Some(max_seq_len) = fused_max_seq_len else {
        return AttentionSoftmax::Eager;
    };
    let fits = seq_len > 16
        && seq_len <= max_seq_len
        && seq_len.is_multiple_of(4)
        && scores_per_rank.is_multiple_of(4);
    if fits {
        AttentionSoftmax::Fused
    } else {
        AttentionSoftmax::Eager
    }
}

/// Forward kernels over `score_elems` fp16 scores, whose causal mask (one
/// byte per element, shared by the `heads_per_rank` heads) is read by
/// `masked_fill_`.
pub fn forward(softmax: AttentionSoftmax, score_elems: f64, heads_per_rank: u64) -> Vec<Step> {
    match softmax {
        // Read the fp16 scores, write fp16 probabilities.
        AttentionSoftmax::Fused => vec![Step::memory_of_class(
            KernelRole::Forward,
            "softmax",
            MemoryKernelClass::Softmax,
            4.0 * score_elems,
        )],
        AttentionSoftmax::Eager => {
            let mask_bytes = score_elems / heads_per_rank.max(1) as f64;
            vec![
                // input.float(): read fp16, write fp32.
                Step::memory(KernelRole::Forward, "softmax.to_fp32", 6.0 * score_elems),
                // input * scale: fp32 in and out.
                Step::memory(KernelRole::Forward, "softmax.scale", 8.0 * score_elems),
                // masked_fill_(mask, -10000.0): fp32 in place plus the mask.
                Step::memory(
                    KernelRole::Forward,
                    "softmax.mask_fill",
                    8.0 * score_elems + mask_bytes,
                ),
                // torch.nn.Softmax in fp32.
                Step::memory(
                    KernelRole::Forward,
                    "softmax.softmax_fp32",
                    8.0 * score_elems,
                ),
                // probs.half(): read fp32, write fp16.
                Step::memory(KernelRole::Forward, "softmax.to_fp16", 6.0 * score_elems),
            ]
        }
    }
}

/// Backward kernels, in the order autograd runs them.
pub fn backward(softmax: AttentionSoftmax, score_elems: f64, heads_per_rank: u64) -> Vec<Step> {
    match softmax {
        // Read the gradient and the saved probabilities, write the gradient.
        AttentionSoftmax::Fused => vec![Step::memory_of_class(
            KernelRole::Backward,
            "softmax.bwd",
            MemoryKernelClass::SoftmaxBackward,
            6.0 * score_elems,
        )],
        AttentionSoftmax::Eager => {
            let mask_bytes = score_elems / heads_per_rank.max(1) as f64;
            vec![
                // Gradient of .half(): fp16 → fp32.
                Step::memory(
                    KernelRole::Backward,
                    "softmax.to_fp16.bwd",
                    6.0 * score_elems,
                ),
                // _softmax_backward_data: read gradient and output, write gradient.
                Step::memory(
                    KernelRole::Backward,
                    "softmax.softmax_fp32.bwd",
                    12.0 * score_elems,
                ),
                // masked_fill backward: zero the masked gradient.
                Step::memory(
                    KernelRole::Backward,
                    "softmax.mask_fill.bwd",
                    8.0 * score_elems + mask_bytes,
                ),
                // Gradient of the scale multiply.
                Step::memory(KernelRole::Backward, "softmax.scale.bwd", 8.0 * score_elems),
                // Gradient of .float(): fp32 → fp16.
                Step::memory(
                    KernelRole::Backward,
                    "softmax.to_fp32.bwd",
                    6.0 * score_elems,
                ),
            ]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fused_kernel_needs_four_score_matrices_per_rank_and_a_short_sequence() {
        use AttentionSoftmax::*;
        // 16 heads: t = 4, b = 1 → 4 matrices; t = 8, b = 1 → 2; t = 8, b = 2 → 4.
        assert_eq!(megatron_attention_softmax(4, 1024, Some(2048)), Fused);
        assert_eq!(megatron_attention_softmax(2, 1024, Some(2048)), Eager);
        assert_eq!(megatron_attention_softmax(4, 2048, Some(2048)), Fused);
        assert_eq!(megatron_attention_softmax(4, 4096, Some(2048)), Eager);
        assert_eq!(megatron_attention_softmax(4, 4096, Some(16384)), Fused);
        assert_eq!(megatron_attention_softmax(4, 16, Some(2048)), Eager);
        assert_eq!(megatron_attention_softmax(4, 1026, Some(2048)), Eager);
        assert_eq!(megatron_attention_softmax(8, 1024, None), Eager);
    }

    #[test]
    fn the_eager_fallback_is_five_kernels_each_way_and_moves_more_bytes() {
        let bytes = |steps: &[Step]| -> f64 {
            steps
                .iter()
                .map(|s| match s {
                    Step::Kernel(k) => k.bytes,
                    Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => {
                        0.0
                    }
                })
                .sum()
        };
        let elems = 1.0e6;
        let fused = (
            forward(AttentionSoftmax::Fused, elems, 2),
            backward(AttentionSoftmax::Fused, elems, 2),
        );
        let eager = (
            forward(AttentionSoftmax::Eager, elems, 2),
            backward(AttentionSoftmax::Eager, elems, 2),
        );
        assert_eq!((fused.0.len(), fused.1.len()), (1, 1));
        assert_eq!((eager.0.len(), eager.1.len()), (5, 5));
        assert_eq!(bytes(&eager.0), 36.5e6);
        assert_eq!(bytes(&eager.1), 40.5e6);
        assert!(bytes(&eager.0) > 9.0 * bytes(&fused.0));
    }
}
