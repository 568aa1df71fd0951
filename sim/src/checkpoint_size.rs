//! What one rank writes to a checkpoint, as a fully parallel save
//! (Megatron-Core's distributed checkpointing) spreads it: one copy of the
//! model states — bf16 weights, the optimizer's states (fp32 master weights
//! and its moments) and FP8's scaling state — over the ranks that hold them.
//! A stage's dense weights are held by its d·cp replicas, its routed experts
//! by their expert-data-parallel group (t·d·cp ÷ ep·etp ranks,
//! [`scenario::Layout::expert_replicas`]); however ZeRO or the distributed
//! optimizer shards them in memory, the unique bytes are the same. The stage
//! that holds most sets it. ZeRO-Offload's states live in host memory and are
//! saved all the same. DualPipe's two copies of the model are both counted
//! (a save that wrote one copy would halve them).

use crate::memory::MemoryBreakdown;
use models::memory::WEIGHT_BYTES_PER_PARAM;
use scenario::{Precision, Scenario};

/// Bytes each rank writes to one checkpoint, given the memory of each stage.
pub fn checkpoint_bytes_per_rank(scenario: &Scenario, memory: &[MemoryBreakdown]) -> u64 {
    let layout = &scenario.layout;
    let dense_holders = u64::from(layout.replicas());
    let expert_holders = u64::from(layout.expert_replicas());
    let sharding = layout.sharding();
    let optimizer = scenario.options.optimizer;
    memory
        .iter()
        .map(|stage| {
            let experts = models::sharding::expert_parameters_of_stage(
                &scenario.model,
                sharding,
                stage.stage,
            );
            let dense = stage.parameters - experts;
            let dense_bytes = (dense * WEIGHT_BYTES_PER_PARAM)
                .saturating_add(optimizer.state_bytes(dense))
                .saturating_add(fp8_scaling_bytes(scenario, stage.stage));
            let expert_bytes =
                (experts * WEIGHT_BYTES_PER_PARAM).saturating_add(optimizer.state_bytes(experts));
            dense_bytes
                .div_ceil(dense_holders)
                .saturating_add(expert_bytes.div_ceil(expert_holders))
        })
        .max()
        .unwrap_or(0)
}

/// FP8's scaling state on one rank of `stage` (0 without FP8).
fn fp8_scaling_bytes(scenario: &Scenario, stage: u32) -> u64 {
    if scenario.options.precision != Precision::Fp8 {
        return 0;
    }
    let sharding = scenario.layout.sharding();
    let layers: u64 = (0..scenario.layout.chunks.get())
        .map(|chunk| sharding.layers_of_chunk(scenario.model.layers, stage, chunk))
        .sum();
    layers * models::fp8::checkpointed_state_bytes_per_layer()
}
