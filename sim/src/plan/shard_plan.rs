//! The ZeRO shard plan: how the data-parallel group shards gradients and
//! parameters (`--zero-stage 2|3`, `--shard-group-size`, the distributed
//! optimizer's `--overlap-param-gather`), decided once from the scenario:
//! the sharding mode, the shard groups (HSDP's replication across them), and
//! the pieces each pass is cut into (ZeRO-3's one unit per layer, ZeRO-2's
//! gradient buckets, the overlapped gather's buckets). Lowering emits its
//! collectives ([`crate::lowering::sharded`]); memory reads the largest piece;
//! symmetry whether shard groups replicate.

use super::buckets::{backward_buckets, BucketLayers};
use models::sharding::parameters_of_layers;
use scenario::bucket_sizes::{layers_per_bucket, DEFAULT_ZERO2_BUCKET_PARAMS};
use scenario::{Scenario, ZeroStage};
use taskgraph::task::ComputePass;

/// FSDP's `_max_num_inflight_all_gathers` under `limit_all_gathers=True`.
pub const INFLIGHT_ALL_GATHERS: u64 = 2;

/// How the data-parallel group shards gradients (and parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardPlan {
    /// Gradients or Full.
    pub mode: ZeroStage,
    /// Data-parallel ranks per shard group (N).
    pub group: u32,
    /// Shard groups (d / N), replicating each other.
    pub replicas: u32,
    /// ZeRO-2: whole layers per gradient bucket.
    pub bucket_layers: u32,
}

impl ShardPlan {
    /// The plan of a scenario sharding gradients or everything with d > 1.
    pub fn new(scenario: &Scenario) -> Option<ShardPlan> {
        // Megatron shards over the dp-cp group: d·cp ranks (`replicas`).
        let d = scenario.layout.replicas();
        let mode = scenario.options.sharding;
        let gathers_overlapped =
            mode == ZeroStage::Optimizer && scenario.options.overlap_param_gather;
        if (mode < ZeroStage::Gradients && !gathers_overlapped) || d < 2 {
            return None;
        }
        let group = scenario.options.shard_group(d);
        let layers_per_chunk = scenario
            .layout
            .sharding()
            .layers_per_chunk(scenario.model.layers) as u32;
        let per_layer =
            parameters_of_layers(&scenario.model, scenario.layout.sharding(), 1, false, false);
        // Megatron-Core's parameter-gather buckets are its gradient buckets
        // (one per chunk without them); ZeRO-2's default is DeepSpeed's.
        let bucket = scenario
            .options
            .grad_reduce_bucket_params
            .unwrap_or(if gathers_overlapped {
                u64::MAX
            } else {
                DEFAULT_ZERO2_BUCKET_PARAMS
            });
        Some(ShardPlan {
            mode,
            group,
            replicas: d / group,
            bucket_layers: match mode {
                ZeroStage::Full => 1,
                _ => layers_per_bucket(bucket, per_layer, layers_per_chunk),
            },
        })
    }

    /// Whether gradients (and more) are sharded (ZeRO-2/3), not only the
    /// optimizer with its overlapped parameter gather.
    pub fn shards_gradients(&self) -> bool {
        self.mode >= ZeroStage::Gradients
    }

    /// The pieces a pass is cut into, in the order it runs them, or None
    /// when it stays whole: ZeRO-3 cuts every pass into one unit per layer,
    /// ZeRO-2 every backward into its gradient buckets, the overlapped
    /// parameter gather each chunk's first forward into its buckets.
    pub fn pieces(
        &self,
        pass: ComputePass,
        microbatch: u32,
        layers: u32,
        embedding: bool,
        head: bool,
    ) -> Option<Vec<BucketLayers>> {
        match (self.mode, pass) {
            (ZeroStage::Optimizer, ComputePass::Forward) if microbatch == 0 => {
                let mut buckets = backward_buckets(layers, self.bucket_layers, embedding, head);
                buckets.reverse();
                Some(buckets)
            }
            (ZeroStage::Full, ComputePass::Backward)
            | (ZeroStage::Gradients, ComputePass::Backward) => Some(backward_buckets(
                layers,
                self.bucket_layers,
                embedding,
                head,
            )),
            (ZeroStage::Full, _) => {
                // Forward order: the reverse of the backward's (embedding first, head last).
                let mut units = backward_buckets(layers, 1, embedding, head);
                units.reverse();
                Some(units)
            }
            _ => None,
        }
    }
}

/// The most parameters (on one tensor rank) of one piece of `stage`'s
/// backwards: ZeRO-3's largest unit, ZeRO-2's largest bucket.
pub fn largest_piece_params(scenario: &Scenario, plan: &ShardPlan, stage: u32) -> u64 {
    let layout = scenario.layout;
    let virtual_stages = layout.virtual_stages();
    let sharding = layout.sharding();
    (0..layout.chunks.get())
        .flat_map(|chunk| {
            let virtual_stage = sharding.virtual_stage(stage, chunk);
            plan.pieces(
                ComputePass::Backward,
                0,
                sharding.layers_of_chunk(scenario.model.layers, stage, chunk) as u32,
                virtual_stage == 0,
                virtual_stage + 1 == virtual_stages,
            )
            .unwrap_or_default()
        })
        .map(|piece| {
            parameters_of_layers(
                &scenario.model,
                layout.sharding(),
                piece.layers as u64,
                piece.embedding,
                piece.head,
            )
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_sharding_cuts_forwards_embedding_first_and_backwards_head_first() {
        let plan = ShardPlan {
            mode: ZeroStage::Full,
            group: 2,
            replicas: 1,
            bucket_layers: 1,
        };
        let forward = plan.pieces(ComputePass::Forward, 1, 3, true, true).unwrap();
        assert_eq!(forward.len(), 3);
        assert!(forward[0].embedding && !forward[0].head && forward[2].head);
        let backward = plan
            .pieces(ComputePass::Backward, 1, 3, true, true)
            .unwrap();
        assert!(backward[0].head && backward[2].embedding);
        assert!(forward.iter().chain(&backward).all(|u| u.layers == 1));
        let gradients = ShardPlan {
            mode: ZeroStage::Gradients,
            bucket_layers: 2,
            ..plan
        };
        assert_eq!(
            gradients.pieces(ComputePass::Forward, 0, 3, true, true),
            None
        );
        let buckets = gradients
            .pieces(ComputePass::Backward, 0, 3, true, true)
            .unwrap();
        assert_eq!(buckets.iter().map(|b| b.layers).collect::<Vec<_>>(), [2, 1]);
    }
}
