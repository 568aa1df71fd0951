//! The parallel layout, validated ([`Layout`]): degrees that cannot be 0,
//! the batch and the microbatches it gives, the pipeline split and stage map.

use serde::{Deserialize, Serialize};
use std::num::NonZeroU32;

/// The parallel layout, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// Tensor-parallel degree t.
    pub tensor_parallel: NonZeroU32,
    /// Pipeline stages p.
    pub pipeline_parallel: NonZeroU32,
    /// Data-parallel degree d.
    pub data_parallel: NonZeroU32,
    /// Model chunks per stage v (interleaved schedule), 1 otherwise.
    pub chunks: NonZeroU32,
    /// Interleaved: microbatches per group N when set (default p).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub microbatch_group_size: Option<NonZeroU32>,
    /// Context-parallel degree cp (1: none); absent in older files.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub context_parallel: NonZeroU32,
    /// Expert-parallel degree ep (1: none); absent in older files.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub expert_parallel: NonZeroU32,
    /// Expert tensor-parallel degree etp (1: none); absent in older files.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub expert_tensor_parallel: NonZeroU32,
    /// How layers are split over the virtual stages (even unless the
    /// embedding or the loss count as a layer: `models::sharding::PipelineSplit`).
    #[serde(
        default,
        skip_serializing_if = "models::sharding::PipelineSplit::is_even"
    )]
    pub pipeline_split: models::sharding::PipelineSplit,
    /// Which rank holds which virtual stage: interleaved (k·p + r, the
    /// default, not written) or V (rank r holds stages r and 2p−1−r: the
    /// V-shaped schedules).
    #[serde(
        default,
        skip_serializing_if = "models::sharding::StageMap::is_interleaved"
    )]
    pub stage_map: models::sharding::StageMap,
    /// Microbatch size b.
    pub microbatch_size: NonZeroU32,
    /// Global batch B.
    pub global_batch: NonZeroU32,
    /// Microbatches per pipeline per iteration, m = B/(b·d).
    pub microbatches: NonZeroU32,
}

impl Layout {
    pub fn gpus(&self) -> u32 {
        self.tensor_parallel.get()
            * self.context_parallel.get()
            * self.pipeline_parallel.get()
            * self.data_parallel.get()
    }
    /// Ranks per stage and tensor index that hold the same weights: the
    /// data- and context-parallel group d·cp (Megatron's dp-cp group, over
    /// which gradients are reduced and the distributed optimizer shards).
    pub fn replicas(&self) -> u32 {
        self.data_parallel.get() * self.context_parallel.get()
    }
    /// Ranks that hold the same routed experts: the expert-data-parallel
    /// group t·d·cp/(ep·etp) (Megatron-Core's expert grid spans the stage's
    /// t·cp·d ranks, `parallel_state.py`: expert_data_parallel_size =
    /// world_size // (etp·ep·pp)), over which expert gradients are reduced
    /// and their optimizer states shard (d·cp/ep at t = etp = 1; at least 1:
    /// validation refuses an ep·etp that does not divide t·d·cp).
    pub fn expert_replicas(&self) -> u32 {
        let ways = self.expert_parallel.get() * self.expert_tensor_parallel.get();
        let replicas = self.tensor_parallel.get() * self.replicas() / ways;
        assert!(replicas > 0, "validated: ep·etp divides t·d·cp");
        replicas
    }
    /// Virtual stages p·v.
    pub fn virtual_stages(&self) -> u32 {
        self.pipeline_parallel.get() * self.chunks.get()
    }
    /// Interleaved microbatch group size N: as set, else p.
    pub fn microbatch_group_size(&self) -> u32 {
        self.microbatch_group_size
            .unwrap_or(self.pipeline_parallel)
            .get()
    }
    /// How the model is cut up (t, p, v), for parameter counts.
    pub fn sharding(&self) -> models::sharding::Sharding {
        models::sharding::Sharding {
            tensor_parallel: self.tensor_parallel,
            pipeline_parallel: self.pipeline_parallel,
            chunks: self.chunks,
            split: self.pipeline_split,
            map: self.stage_map,
            expert_parallel: self.expert_parallel,
            expert_tensor_parallel: self.expert_tensor_parallel,
        }
    }
}

fn one() -> NonZeroU32 {
    NonZeroU32::MIN
}

fn is_one(value: &NonZeroU32) -> bool {
    value.get() == 1
}
