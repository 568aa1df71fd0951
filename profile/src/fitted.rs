//! Rates fitted to a user's own runs (`clustersim fit`, issue 32): factors
//! on the calibrated kernel rates that a FIT.json applies to a profile in
//! memory. They are not part of the profile file format (never read or
//! written with it); every factor is 1 unless a fit was applied, and then
//! the costs are exactly the calibrated ones (x / 1.0 is exact in f64).

/// What a fit changed in the kernel rates of a profile.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FittedRates {
    /// Achieved over calibrated GEMM throughput (bf16/fp16 and FP8 alike):
    /// a GEMM's time, launch included, is divided by it.
    pub gemm: f64,
    /// Achieved over calibrated rate of memory-bound kernels (elementwise,
    /// normalization, softmax, the optimizer step, copies).
    pub memory_bound: f64,
    /// Achieved over calibrated rate of the fused attention kernel.
    pub attention: f64,
}

impl FittedRates {
    /// No fit: the calibrated rates as they are.
    pub const CALIBRATED: FittedRates = FittedRates {
        gemm: 1.0,
        memory_bound: 1.0,
        attention: 1.0,
    };
}

impl Default for FittedRates {
    fn default() -> Self {
        FittedRates::CALIBRATED
    }
}
