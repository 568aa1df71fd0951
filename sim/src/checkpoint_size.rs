//! What one rank writes to a checkpoint, as a fully parallel save
//! (Megatron-Core's distributed checkpointing) spreads it: one copy of the
//! model states — weights and optimizer states (fp32 master weights and Adam
//! moments) — over every rank. A rank's weights are held by its d·cp
//! replicas (by d·cp ÷ shard group under ZeRO-3, which shards them), its
//! optimizer states likewise unless the distributed optimizer shards them.
//! The stage that holds most sets it. Routed experts are counted as dense
//! weights are (replicated over d·cp, not over their smaller
//! expert-data-parallel group), which undercounts a mixture of experts'
//! checkpoint.

use crate::memory::MemoryBreakdown;
use scenario::{Scenario, ZeroStage};

/// Bytes each rank writes to one checkpoint, given the memory of each stage.
pub fn checkpoint_bytes_per_rank(scenario: &Scenario, memory: &[MemoryBreakdown]) -> u64 {
    let replicas = u64::from(scenario.layout.replicas());
    let options = &scenario.options;
    let shard_group = u64::from(options.shard_group(scenario.layout.replicas()));
    // The shard group divides d (validated), so at least one copy.
    let copies_of_sharded = replicas / shard_group;
    let weight_copies = match options.sharding {
        ZeroStage::Full => copies_of_sharded,
        _ => replicas,
    };
    let optimizer_copies = if options.distributed_optimizer {
        copies_of_sharded
    } else {
        replicas
    };
    memory
        .iter()
        .map(|stage| {
            (stage.weight_bytes / weight_copies)
                .saturating_add(stage.optimizer_state_bytes / optimizer_copies)
        })
        .max()
        .unwrap_or(0)
}
