//! How a ZeRO-Offload step is cut up on each rank (Ren et al., USENIX
//! ATC'21; DeepSpeed's stage-2 offload): gradient buckets of whole layers in
//! backward order, each rank's 1/d shard of them (ZeRO-2), and the CPU Adam
//! tiles of that shard. Read by the offload program and by the memory model.

use super::buckets::backward_buckets;
use models::formulas;
use models::ops::FP16_BYTES;
use models::sharding::parameters_on_rank;
use scenario::bucket_sizes::{layers_per_bucket, CPU_ADAM_TILE_PARAMS};
use scenario::Scenario;

/// A gradient bucket: consecutive layers of the backward pass (in backward order).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bucket {
    pub layers: u32,
    /// Holds the output head's backward (the first bucket).
    pub head: bool,
    /// Holds the embedding's backward (the last bucket).
    pub embedding: bool,
    /// Gradient parameters of one rank in this bucket.
    pub params: u64,
    /// Parameters of the bucket this rank offloads and updates: params/d, rounded up (ZeRO-2 padding).
    pub shard_params: u64,
}

/// How a scenario's ZeRO-Offload step is cut up, per rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffloadPlan {
    /// Parameters one rank holds in fp16 (its 1/t of the model).
    pub params_per_rank: u64,
    /// Buckets in backward order.
    pub buckets: Vec<Bucket>,
    /// Parameters this rank offloads and updates per step (sum of bucket shards).
    pub shard_params: u64,
    /// CPU Adam tiles of the shard, in parameters.
    pub tiles: Vec<u64>,
    /// GPUs of the job on one node (they share the host's cores and memory).
    pub gpus_per_node_in_use: u32,
    /// GPUs of the job behind one PCIe host link.
    pub pcie_sharing_gpus: u32,
}

impl OffloadPlan {
    /// The plan for a scenario (pp must be 1; `bucket_params` from its offload options).
    pub fn new(scenario: &Scenario) -> OffloadPlan {
        let layout = &scenario.layout;
        let model = &scenario.model;
        let (t, d) = (
            layout.tensor_parallel.get() as u64,
            layout.data_parallel.get() as u64,
        );
        let bucket_target = scenario
            .options
            .offload
            .map(|o| o.bucket_params)
            .unwrap_or(scenario::DEFAULT_OFFLOAD_BUCKET_PARAMS);
        let params_per_rank = parameters_on_rank(model, layout.sharding(), 0);
        let layer_params = formulas::layer_parameters(model) / t;
        let layers = model.layers as u32;
        let per_bucket = layers_per_bucket(bucket_target, layer_params, layers);
        let mut buckets: Vec<Bucket> = backward_buckets(layers, per_bucket, true, true)
            .into_iter()
            .map(|b| Bucket {
                layers: b.layers,
                head: b.head,
                embedding: b.embedding,
                params: b.layers as u64 * layer_params,
                shard_params: 0,
            })
            .collect();
        let others: u64 = buckets.iter().map(|b| b.params).sum::<u64>()
            - buckets.last().expect("non-empty").params;
        let last = buckets.last_mut().expect("non-empty");
        last.params = params_per_rank - others;
        for bucket in &mut buckets {
            bucket.shard_params = bucket.params.div_ceil(d);
        }
        let shard_params: u64 = buckets.iter().map(|b| b.shard_params).sum();
        let mut tiles = Vec::new();
        let mut left = shard_params;
        while left > 0 {
            let tile = left.min(CPU_ADAM_TILE_PARAMS);
            tiles.push(tile);
            left -= tile;
        }
        let gpus_per_node_in_use = layout
            .gpus()
            .min(scenario.topology.node.gpus_per_node)
            .max(1);
        OffloadPlan {
            params_per_rank,
            buckets,
            shard_params,
            tiles,
            gpus_per_node_in_use,
            pcie_sharing_gpus: scenario
                .topology
                .pcie
                .gpus_per_host_link
                .clamp(1, gpus_per_node_in_use),
        }
    }

    /// fp16 gradient bytes this rank copies to the CPU per backward pass.
    pub fn device_to_host_bytes_per_backward(&self) -> u64 {
        self.shard_params * FP16_BYTES
    }

    /// fp16 parameter bytes this rank receives from the CPU per step.
    pub fn host_to_device_bytes_per_step(&self) -> u64 {
        self.shard_params * FP16_BYTES
    }

    /// The largest bucket's gradient parameters (the GPU buffers hold two of them).
    pub fn largest_bucket_params(&self) -> u64 {
        self.buckets.iter().map(|b| b.params).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scenario::ScenarioFile;

    fn scenario(dp: u32, tp: u32, bucket_params: u64) -> Scenario {
        ScenarioFile {
            model: Some("gpt2-10b".into()),
            topology: Some("dgx2-v100".into()),
            tp: Some(tp),
            pp: Some(1),
            dp: Some(dp),
            microbatch_size: Some(10),
            global_batch: Some(10 * dp),
            options: scenario::TrainingOptionsFile {
                zero_offload: Some(true),
                offload_bucket_params: Some(bucket_params),
                ..Default::default()
            },
            ..ScenarioFile::default()
        }
        .resolve()
        .unwrap()
    }

    #[test]
    fn buckets_cover_every_layer_and_parameter_once() {
        for (dp, tp) in [(1, 1), (16, 1), (4, 4)] {
            let scenario = scenario(dp, tp, 500_000_000);
            let plan = OffloadPlan::new(&scenario);
            assert_eq!(
                plan.buckets.iter().map(|b| b.layers as u64).sum::<u64>(),
                scenario.model.layers
            );
            assert_eq!(
                plan.buckets.iter().map(|b| b.params).sum::<u64>(),
                plan.params_per_rank
            );
            assert!(plan.buckets[0].head && plan.buckets.last().unwrap().embedding);
            assert_eq!(plan.tiles.iter().sum::<u64>(), plan.shard_params);
            assert!(plan.shard_params * dp as u64 >= plan.params_per_rank);
        }
        // 10B: a layer has ~201M parameters, so 500M buckets hold two layers.
        assert_eq!(
            OffloadPlan::new(&scenario(1, 1, 500_000_000)).buckets[0].layers,
            2
        );
        // A tiny bucket still holds one layer.
        assert_eq!(OffloadPlan::new(&scenario(1, 1, 1)).buckets.len(), 50);
    }

    #[test]
    fn dgx2_links_are_shared_by_two_gpus_and_cores_by_the_node() {
        let plan = OffloadPlan::new(&scenario(16, 1, 500_000_000));
        assert_eq!((plan.pcie_sharing_gpus, plan.gpus_per_node_in_use), (2, 16));
        let plan = OffloadPlan::new(&scenario(1, 1, 500_000_000));
        assert_eq!((plan.pcie_sharing_gpus, plan.gpus_per_node_in_use), (1, 1));
    }
}
