//! ZeRO-Offload options of a scenario and their validation.

use super::ScenarioFile;
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

impl ScenarioFile {
    /// The ZeRO-Offload keys and the iteration count; problems are appended.
    pub(super) fn resolve_offload(
        &self,
        pipeline_parallel: u32,
        problems: &mut Vec<String>,
    ) -> (Option<Offload>, u32) {
        let zero_offload = self.zero_offload.unwrap_or(false);
        let delayed_update = self.delayed_update.unwrap_or(false);
        if delayed_update && !zero_offload {
            problems.push(
                "delayed_update: needs zero_offload (the delayed parameter update overlaps ZeRO-Offload's CPU optimizer step; add --zero-offload)"
                    .into(),
            );
        }
        if self.dpu_warmup_iterations.is_some() && !delayed_update {
            problems.push(
                "dpu_warmup_iterations: only meaningful with delayed_update (--delayed-update)"
                    .into(),
            );
        }
        if self.offload_bucket_params.is_some() && !zero_offload {
            problems.push("offload_bucket_params: only meaningful with zero_offload".into());
        }
        if self.offload_bucket_params == Some(0) {
            problems.push("offload_bucket_params: must be at least 1".into());
        }
        if zero_offload && pipeline_parallel > 1 {
            problems.push(format!(
                "zero_offload: pipeline parallelism is not supported with ZeRO-Offload (pp = {pipeline_parallel}); it composes with data and tensor parallelism, as in the paper: use --pp 1"
            ));
        }
        let warmup = self
            .dpu_warmup_iterations
            .unwrap_or(DEFAULT_DPU_WARMUP_ITERATIONS);
        let default_iterations = if delayed_update && zero_offload {
            warmup + 3
        } else {
            1
        };
        let iterations = self.iterations.unwrap_or(default_iterations);
        if iterations == 0 {
            problems.push("iterations: must be at least 1".into());
        } else if iterations > u16::MAX as u32 {
            problems.push(format!(
                "iterations: at most {} can be simulated (got {iterations})",
                u16::MAX
            ));
        } else if iterations > 1 && !zero_offload {
            problems.push(
                "iterations: several consecutive iterations are simulated only with zero_offload (every other iteration is identical)"
                    .into(),
            );
        } else if delayed_update && zero_offload && iterations < warmup + 3 {
            problems.push(format!(
                "iterations: {iterations} cannot show the delayed steady state (warm-up, a first delayed iteration, the measured one and one after it); with dpu_warmup_iterations = {warmup} simulate at least {}",
                warmup + 3
            ));
        }
        let offload = zero_offload.then_some(Offload {
            delayed_update,
            dpu_warmup_iterations: warmup,
            bucket_params: self
                .offload_bucket_params
                .unwrap_or(DEFAULT_OFFLOAD_BUCKET_PARAMS)
                .max(1),
        });
        (offload, iterations.max(1))
    }
}
