//! ZeRO-Offload options of a scenario, validated ([`Offload`]), and their
//! defaults.

use serde::{Deserialize, Serialize};

/// DeepSpeed's default `reduce_bucket_size` (elements), used as the offload bucket.
pub const DEFAULT_OFFLOAD_BUCKET_PARAMS: u64 = 500_000_000;
/// Default warm-up iterations before the delayed parameter update starts. The
/// paper warms up for N−1 steps to protect early training; for timing one
/// undelayed iteration is enough to show the transition.
pub const DEFAULT_DPU_WARMUP_ITERATIONS: u32 = 1;

/// ZeRO-Offload options, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offload {
    /// Delayed parameter update (DPU).
    pub delayed_update: bool,
    /// Iterations without delay before DPU starts.
    pub dpu_warmup_iterations: u32,
    /// Target gradient bucket size in parameters (rounded down to whole layers, at least one).
    pub bucket_params: u64,
}
