//! What the scenario's bucket options mean in layers and parameters: the
//! defaults of the options that leave them unset, and how a bucket cap
//! becomes whole layers. Read by validation's task estimate, the plan and
//! lowering alike, so the three cannot disagree.

use crate::offload::DEFAULT_OFFLOAD_BUCKET_PARAMS;

/// ZeRO-2 buckets without `grad_reduce_bucket_params`: DeepSpeed's default
/// `reduce_bucket_size` (deepspeed/runtime/zero/config.py, 5e8 elements).
pub const DEFAULT_ZERO2_BUCKET_PARAMS: u64 = DEFAULT_OFFLOAD_BUCKET_PARAMS;

/// Parameters per CPU Adam tile: DeepSpeed's `TILE` (128 Mi elements) in
/// `csrc/includes/cpu_adam.h`; each tile is copied to the GPU as soon as it is updated.
pub const CPU_ADAM_TILE_PARAMS: u64 = 128 * 1024 * 1024;

/// Whole layers per gradient bucket for a bucket cap of `bucket_params`
/// parameters: as many layers as fit under the cap, at least one, at most all.
pub fn layers_per_bucket(bucket_params: u64, layer_params: u64, layers: u32) -> u32 {
    (bucket_params / layer_params.max(1)).clamp(1, layers.max(1) as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_holds_as_many_layers_as_fit_under_the_cap_and_at_least_one() {
        assert_eq!(layers_per_bucket(100, 30, 8), 3);
        assert_eq!(layers_per_bucket(10, 30, 8), 1);
        assert_eq!(layers_per_bucket(1_000, 30, 8), 8);
    }
}
