//! What a kernel does for training, set where the kernel is created: which
//! pass it belongs to and, in the backward, whether it is weight-gradient
//! work a zero-bubble schedule defers (`sim::cost::split_backward`). Rules
//! that depend on it read the role, not the kernel's name.

use serde::Serialize;

/// A kernel's part in a training step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelRole {
    /// Forward computation (run again when recomputed), the data a stage
    /// loads before its forward, and the casts before forward GEMMs.
    Forward,
    /// Backward work that is not a weight-gradient GEMM: data-gradient
    /// GEMMs, the attention core's GEMMs (no weights), the backwards of
    /// norms (their fused kernels compute the norm's own weight gradient
    /// too), activations, softmax and dropout, bias-gradient reductions, the
    /// embedding's scatter.
    Backward,
    /// A weight-gradient GEMM dW = Xᵀ·dY.
    WeightGradientGemm,
    /// Unfused accumulation into `main_grad` of a gradient that a
    /// weight-gradient GEMM produced: it follows that GEMM.
    WeightGradientAccumulation,
    /// Unfused accumulation of any other parameter's gradient (norm
    /// weights, biases, embedding tables), which backward kernels produce.
    GradientAccumulation,
}

impl KernelRole {
    /// Whether a zero-bubble schedule defers this kernel to the
    /// weight-gradient pass `W`.
    pub fn in_weight_gradient_pass(self) -> bool {
        matches!(
            self,
            KernelRole::WeightGradientGemm | KernelRole::WeightGradientAccumulation
        )
    }
}
