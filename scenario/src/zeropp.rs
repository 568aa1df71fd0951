//! ZeRO++ (Wang et al. 2023, arXiv 2306.10209) over ZeRO-3, as DeepSpeed
//! configures it (`deepspeed/runtime/zero/config.py`, `DeepSpeedZeroConfig`
//! at 38327e07): three independent parts, each a key of its own.
//!
//! - **qwZ** (`zero_quantized_weights`): every parameter all-gather moves
//!   INT8 weights with one fp32 scale per group of about
//!   [`QWZ_GROUP_ELEMENTS`] (`CUDAQuantizer.target_group_size`), gathered by
//!   a second all-gather; the receiver dequantizes before the layer runs.
//! - **hpZ** (`zero_hpz_partition_size`): after a unit's first gather of the
//!   iteration each rank keeps a secondary shard (1/hpZ of the unit, in the
//!   parameters' dtype) and every later gather of the unit (forwards of
//!   later microbatches, recomputation, backward) runs inside its group of
//!   hpZ consecutive ranks, on the node when hpZ is the GPUs per node, as the
//!   tutorial advises; the optimizer step invalidates it
//!   (`stage3.py`, `invalidate_secondary_tensor`).
//! - **qgZ** (`zero_quantized_gradients`): each unit's gradient
//!   reduce-scatter becomes a hierarchical all-to-all of INT4 gradients,
//!   inside the node, then across nodes (`coalesced_collectives.py`,
//!   `all_to_all_quant_reduce`).
//!
//! DeepSpeed forms the hpZ and qgZ groups over the whole world (consecutive
//! global ranks; `device_count()` ranks per node), so those two need a
//! purely data-parallel layout here, and qgZ whole nodes. What is costed,
//! and what is not: `docs/dev/zeropp.md`.

use crate::options::{TrainingOptions, TrainingOptionsFile, ZeroStage};
use crate::problem::Problem;
use serde::Serialize;

/// Elements per qwZ quantization group (one fp32 scale each): DeepSpeed's
/// `CUDAQuantizer.target_group_size` (its comment: "the optimal size is 4k").
pub const QWZ_GROUP_ELEMENTS: u64 = 8000;
/// Bytes of one quantization scale (fp32).
pub const SCALE_BYTES: u64 = 4;
/// Bits per gradient element under qgZ (`swizzle_quant(..., 4, ...)`).
pub const QGZ_BITS: u64 = 4;

/// The ZeRO++ parts a scenario uses (all off by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ZeroPlusPlus {
    /// qwZ: parameters all-gathered as INT8 with per-group scales.
    #[serde(
        rename = "zero_quantized_weights",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub quantized_weights: bool,
    /// hpZ: ranks per secondary partition group (1: off).
    #[serde(rename = "zero_hpz_partition_size", skip_serializing_if = "is_one")]
    pub hpz_partition_size: u32,
    /// qgZ: gradients reduced by a hierarchical INT4 all-to-all.
    #[serde(
        rename = "zero_quantized_gradients",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub quantized_gradients: bool,
}

fn is_one(value: &u32) -> bool {
    *value == 1
}

impl Default for ZeroPlusPlus {
    fn default() -> ZeroPlusPlus {
        ZeroPlusPlus {
            quantized_weights: false,
            hpz_partition_size: 1,
            quantized_gradients: false,
        }
    }
}

impl ZeroPlusPlus {
    /// Whether any part is on.
    pub fn is_on(&self) -> bool {
        self.quantized_weights || self.secondary_group().is_some() || self.quantized_gradients
    }

    /// The hpZ group size when hpZ is on (above 1).
    pub fn secondary_group(&self) -> Option<u32> {
        (self.hpz_partition_size > 1).then_some(self.hpz_partition_size)
    }

    /// Bytes on the wire of an all-gather of `params` parameters: INT8 under
    /// qwZ (the scales' own gather apart,
    /// [`ZeroPlusPlus::scale_gather_bytes`]); 2 B/param otherwise.
    pub fn weight_gather_bytes(&self, params: u64) -> u64 {
        if self.quantized_weights {
            params
        } else {
            params.saturating_mul(2)
        }
    }

    /// Bytes of qwZ's scale all-gather for `params` parameters gathered over
    /// `group` ranks: each rank's shard quantized in groups of
    /// [`QWZ_GROUP_ELEMENTS`], one fp32 scale each (0 without qwZ).
    pub fn scale_gather_bytes(&self, params: u64, group: u32) -> u64 {
        if !self.quantized_weights || group == 0 {
            return 0;
        }
        let shard = params.div_ceil(u64::from(group));
        shard
            .div_ceil(QWZ_GROUP_ELEMENTS)
            .saturating_mul(SCALE_BYTES)
            .saturating_mul(u64::from(group))
    }

    /// The title's label ("ZeRO++ (qwZ, hpZ 8, qgZ)"), None when off.
    pub fn label(&self) -> Option<String> {
        if !self.is_on() {
            return None;
        }
        let mut parts = Vec::new();
        if self.quantized_weights {
            parts.push("qwZ".to_string());
        }
        if let Some(group) = self.secondary_group() {
            parts.push(format!("hpZ {group}"));
        }
        if self.quantized_gradients {
            parts.push("qgZ".to_string());
        }
        Some(format!("ZeRO++ ({})", parts.join(", ")))
    }
}

impl TrainingOptionsFile {
    /// The ZeRO++ parts these keys ask for (checked by [`check`]).
    pub(crate) fn zeropp(&self) -> ZeroPlusPlus {
        ZeroPlusPlus {
            quantized_weights: self.zero_quantized_weights.unwrap_or(false),
            hpz_partition_size: self.zero_hpz_partition_size.unwrap_or(1),
            quantized_gradients: self.zero_quantized_gradients.unwrap_or(false),
        }
    }
}

/// The layout facts ZeRO++'s checks need.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ZeroPlusPlusLayout {
    /// Tensor, pipeline, context and expert parallel degrees.
    pub model_parallel: [u32; 4],
    pub data_parallel: u32,
    pub gpus_per_node: u32,
}

/// What ZeRO++ refuses, each problem naming its key.
pub(crate) fn check(
    options: &TrainingOptions,
    layout: ZeroPlusPlusLayout,
    problems: &mut Vec<Problem>,
) {
    let zeropp = options.zeropp;
    if zeropp.hpz_partition_size == 0 {
        problems.push(Problem::new(
            "zero_hpz_partition_size",
            "must be at least 1 (1: hpZ off)",
        ));
        return;
    }
    if !zeropp.is_on() {
        return;
    }
    if options.sharding != ZeroStage::Full {
        for (on, key) in [
            (zeropp.quantized_weights, "zero_quantized_weights"),
            (
                zeropp.secondary_group().is_some(),
                "zero_hpz_partition_size",
            ),
            (zeropp.quantized_gradients, "zero_quantized_gradients"),
        ] {
            if on {
                problems.push(Problem::new(key, "ZeRO++ builds on ZeRO stage 3 (DeepSpeed's ZeRO++ tutorial): add --zero-stage 3"));
            }
        }
        return;
    }
    let d = layout.data_parallel;
    let pure_data_parallel = layout.model_parallel.iter().all(|&degree| degree == 1);
    let world_groups = |key: &'static str, problems: &mut Vec<Problem>| {
        if !pure_data_parallel {
            let [t, p, cp, ep] = layout.model_parallel;
            problems.push(Problem::new(key, format!(
                "DeepSpeed forms its groups over the whole world, so it needs a purely data-parallel layout (got tp {t}, pp {p}, cp {cp}, ep {ep})"
            )));
        }
        if options.shard_group_size.is_some_and(|group| group != d) {
            problems.push(Problem::new(
                key,
                "does not combine with HSDP shard groups (shard_group_size)",
            ));
        }
    };
    if let Some(group) = zeropp.secondary_group() {
        world_groups("zero_hpz_partition_size", problems);
        if !d.is_multiple_of(group) {
            problems.push(Problem::new(
                "zero_hpz_partition_size",
                format!("must divide the data-parallel size {d} (got {group})"),
            ));
        }
    }
    if zeropp.quantized_gradients {
        world_groups("zero_quantized_gradients", problems);
        let per_node = layout.gpus_per_node;
        if !d.is_multiple_of(per_node) {
            problems.push(Problem::new("zero_quantized_gradients", format!(
                "qgZ's hierarchy takes whole nodes of {per_node} GPUs (DeepSpeed's local world is device_count()), so the data-parallel size must be a multiple of {per_node} (got {d})"
            )));
        }
        if options.network_contention {
            problems.push(Problem::new(
                "zero_quantized_gradients",
                "its hierarchical all-to-all is not modeled as fabric flows: drop --contention",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qwz_halves_a_gather_and_adds_one_fp32_scale_per_8000_elements() {
        let on = ZeroPlusPlus {
            quantized_weights: true,
            ..ZeroPlusPlus::default()
        };
        // 64 M parameters over 16 ranks: 4 M per shard, ⌈4 M / 8000⌉ = 500
        // scales of 4 B per shard, 16 shards.
        let params = 64 << 20;
        assert_eq!(on.weight_gather_bytes(params), params);
        assert_eq!(
            ZeroPlusPlus::default().weight_gather_bytes(params),
            2 * params
        );
        assert_eq!(on.scale_gather_bytes(params, 16), 525 * 4 * 16);
        assert_eq!(ZeroPlusPlus::default().scale_gather_bytes(params, 16), 0);
    }

    #[test]
    fn the_label_names_each_part_on() {
        let all = ZeroPlusPlus {
            quantized_weights: true,
            hpz_partition_size: 8,
            quantized_gradients: true,
        };
        assert_eq!(all.label().as_deref(), Some("ZeRO++ (qwZ, hpZ 8, qgZ)"));
        assert_eq!(ZeroPlusPlus::default().label(), None);
        assert!(!ZeroPlusPlus::default().is_on());
    }
}
