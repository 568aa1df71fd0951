//! The attention core as Megatron ran it before fused attention kernels:
//! the score product Q·Kᵀ (a batched GEMM per head), the softmax
//! ([`crate::softmax`]: Megatron's fused scale-mask-softmax kernel or
//! PyTorch's eager ops), dropout on the probabilities, and the product with
//! the values P·V, each a kernel of its own that reads or writes the
//! b·heads·s×s scores in HBM. Its backward mirrors it: the value product's
//! two gradients, dropout's and the softmax's backwards, the score
//! product's two gradients.
//!
//! One list for the layer ([`crate::ops`]) and for the kernel tables that
//! check it against published runtimes (`clustersim validate`'s attention
//! tables), so the two cannot drift apart.

use crate::gemm::{GemmLayout, GemmShape};
use crate::kernel_role::KernelRole;
use crate::linear::activation_gemm_with_gradients;
use crate::memory_class::MemoryKernelClass;
use crate::softmax::{self, AttentionSoftmax};
use crate::step::Step;

/// One rank's unfused attention core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnfusedCore {
    /// Microbatch size.
    pub batch: u64,
    /// Query heads on this rank (the key and value heads expanded to them).
    pub heads: u64,
    pub seq_len: u64,
    /// Width of a query and key head.
    pub qk_dim: u64,
    /// Width of a value head.
    pub v_dim: u64,
    /// Which softmax runs.
    pub softmax: AttentionSoftmax,
    /// Whether dropout runs on the probabilities (a dropout rate above 0).
    pub dropout: bool,
}

/// The core's forward kernels, and its backward kernels in groups: one per
/// forward operation, in forward order (the layer runs them reversed).
#[derive(Debug, Clone, PartialEq)]
pub struct UnfusedCoreSteps {
    pub forward: Vec<Step>,
    pub backward_groups: Vec<Vec<Step>>,
}

impl UnfusedCore {
    /// Elements of the b·heads s×s score matrices.
    pub fn score_elems(&self) -> f64 {
        (self.batch * self.heads * self.seq_len * self.seq_len) as f64
    }

    /// The core's kernels.
    pub fn steps(&self) -> UnfusedCoreSteps {
        let score_elems = self.score_elems();
        let scores_batch = self.batch * self.heads;
        // Q·Kᵀ: `baddbmm(Q, Kᵀ)` reads Kᵀ as a transposed view (TN, see GemmLayout).
        let [scores, scores_dgrad_q, scores_dgrad_k] = activation_gemm_with_gradients(
            [
                "attention_scores",
                "attention_scores.dgrad_q",
                "attention_scores.dgrad_k",
            ],
            GemmShape {
                batch: scores_batch,
                m: self.seq_len,
                n: self.seq_len,
                k: self.qk_dim,
            },
            GemmLayout::Tn,
        );
        // P·V: `bmm(P, V)` with both operands row-major (NN, see GemmLayout).
        let [values, values_dgrad_probs, values_dgrad_values] = activation_gemm_with_gradients(
            [
                "attention_over_values",
                "attention_over_values.dgrad_probs",
                "attention_over_values.dgrad_values",
            ],
            GemmShape {
                batch: scores_batch,
                m: self.seq_len,
                n: self.v_dim,
                k: self.seq_len,
            },
            GemmLayout::Nn,
        );
        let mut forward = vec![scores];
        let mut backward_groups = vec![vec![scores_dgrad_q, scores_dgrad_k]];
        forward.extend(softmax::forward(self.softmax, score_elems, self.heads));
        backward_groups.push(softmax::backward(self.softmax, score_elems, self.heads));
        if self.dropout {
            // Read the fp16 probabilities, write them and a one-byte mask.
            forward.push(Step::memory_of_class(
                KernelRole::Forward,
                "attention_dropout",
                MemoryKernelClass::Dropout,
                5.0 * score_elems,
            ));
            backward_groups.push(vec![Step::memory(
                KernelRole::Backward,
                "attention_dropout.bwd",
                5.0 * score_elems,
            )]);
        }
        forward.push(values);
        backward_groups.push(vec![values_dgrad_probs, values_dgrad_values]);
        let core = |steps: Vec<Step>| -> Vec<Step> {
            steps.into_iter().map(Step::in_attention_core).collect()
        };
        UnfusedCoreSteps {
            forward: core(forward),
            backward_groups: backward_groups.into_iter().map(core).collect(),
        }
    }
}
