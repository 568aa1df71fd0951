//! What ZeRO++ (`scenario::zeropp`) adds to the kernels and collectives of
//! ZeRO-3, from DeepSpeed at 38327e07:
//!
//! - **qwZ**: before each all-gather every rank quantizes its shard
//!   (`CUDAQuantizer.quantize`: 2 B read, 1 B written per shard parameter),
//!   a task on the data-parallel stream just before the gather, as DeepSpeed
//!   quantizes on its all-gather stream; before the unit runs, its gathered
//!   INT8 weights are dequantized (`AllGatherCoalescedHandle.wait` →
//!   `dequantize`: 1 B read, 2 B written per parameter), a task on each
//!   tensor rank's compute stream just before the pass. The host's launch
//!   of these kernels is not costed.
//! - **qgZ** (`coalesced_collectives.py`, `all_to_all_quant_reduce`), per
//!   unit and rank, with G gradient bytes per element, L ranks per node and
//!   N nodes: `swizzle_quant` to INT4 (G read, ½ written per element), the
//!   all-to-all of the INT4 buffer inside the node, `quantized_reduction`
//!   (½ read, ½/L written), the all-to-all of that 1/L across nodes,
//!   `dequantize` (½/L read, G/L written) and the sum of the N chunks (G/L
//!   read, G/(L·N) written). The gradients are reduced on DeepSpeed's
//!   reduce-and-partition stream, so the chain is tasks in that order on
//!   the data-parallel stream: four kernels and the two all-to-alls.

use crate::plan::shard_plan::ShardPlan;
use scenario::{Scenario, ZeroStage};
use taskgraph::task::TaskKind;
use taskgraph::task_graph::Work;

/// Bytes a dequantization moves per parameter: INT8 read, bf16/fp16 written.
pub const DEQUANTIZE_BYTES_PER_PARAM: u64 = 3;
/// Bytes a quantization moves per parameter: bf16/fp16 read, INT8 written.
pub const QUANTIZE_BYTES_PER_PARAM: u64 = 3;

/// Whether qwZ quantizes the parameter all-gathers of `shard_plan`: ZeRO-3
/// over shard groups of two or more ranks.
pub fn quantizes_gathers(scenario: &Scenario, shard_plan: Option<ShardPlan>) -> bool {
    scenario.options.zeropp.quantized_weights
        && shard_plan.is_some_and(|plan| plan.mode == ZeroStage::Full && plan.group >= 2)
}

/// The parameters of a piece (`params` on a tensor rank, `expert_params` of
/// them routed experts) its all-gathers bring: all of them, but the
/// experts only when an expert-data group of two or more shards them.
pub fn gathered_params(scenario: &Scenario, params: u64, expert_params: u64) -> u64 {
    if scenario.layout.expert_replicas() > 1 {
        params
    } else {
        params - expert_params
    }
}

/// qwZ's dequantization of a piece's gathered INT8 weights, the work of
/// a compute-stream task before the piece (none unless qwZ quantizes the
/// gathers).
pub fn dequantize_before_pass(
    scenario: &Scenario,
    shard_plan: Option<ShardPlan>,
    params: u64,
    expert_params: u64,
) -> Option<Work> {
    quantizes_gathers(scenario, shard_plan).then(|| Work::GradientCopy {
        bytes: DEQUANTIZE_BYTES_PER_PARAM * gathered_params(scenario, params, expert_params),
        kernels: 1,
    })
}

/// qwZ's quantization of one rank's shard before the all-gathers of a
/// piece: `dense` parameters over a gather group of `group` ranks and
/// `experts` over the expert-data group of `expert_group`.
pub fn quantize_shard(dense: u64, group: u32, experts: u64, expert_group: u32) -> Work {
    let shard = dense.div_ceil(u64::from(group)) + experts.div_ceil(u64::from(expert_group));
    Work::GradientCopy {
        bytes: QUANTIZE_BYTES_PER_PARAM * shard,
        kernels: 1,
    }
}

/// Per-rank bytes of the two qgZ phases: the INT4 buffer all-to-all'ed
/// inside the node, and its reduced 1/L sent across nodes.
pub fn qgz_phase_bytes(elements: u64, local_ranks: u32) -> (u64, u64) {
    let int4 = elements.div_ceil(8 / scenario::zeropp::QGZ_BITS);
    (int4, int4.div_ceil(u64::from(local_ranks.max(1))))
}

/// qgZ's reduction of `elements` gradients of `gradient_bytes` each on
/// every rank of a shard group of `nodes` nodes of `local_ranks` ranks, as
/// the data-parallel stream runs it: each task's kind and work, in order
/// (all-to-alls over one rank left out).
pub fn qgz_chain(
    elements: u64,
    gradient_bytes: u64,
    local_ranks: u32,
    nodes: u32,
) -> Vec<(TaskKind, Work)> {
    let (intra, inter) = qgz_phase_bytes(elements, local_ranks);
    let full = elements * gradient_bytes;
    let reduced = full.div_ceil(u64::from(local_ranks.max(1)));
    let kernel = |bytes: u64| {
        let work = Work::GradientCopy { bytes, kernels: 1 };
        Some((TaskKind::Compression, work))
    };
    let all_to_all = |bytes: u64, group_size: u32, nodes: u32| {
        let work = Work::DataParallelAllToAll {
            bytes,
            group_size,
            nodes,
        };
        (group_size > 1).then_some((TaskKind::DataParallelReduceScatter, work))
    };
    [
        kernel(full + intra), // swizzle_quant
        all_to_all(intra, local_ranks, 1),
        kernel(intra + inter), // quantized_reduction
        all_to_all(inter, nodes, nodes),
        kernel(inter + reduced), // dequantize
        kernel(reduced + reduced.div_ceil(u64::from(nodes.max(1)))), // sum of the nodes' chunks
    ]
    .into_iter()
    .flatten()
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qgz_sends_a_quarter_of_fp16_inside_the_node_and_1_over_l_of_that_across() {
        // 64 Mi fp16 gradients (128 MiB) on nodes of 8: 32 MiB of INT4
        // inside the node (¼ of fp16), 4 MiB of it across nodes (the
        // blog's M/(Z·N) with Z = 4 and N = 8).
        let elements = 64 << 20;
        assert_eq!(qgz_phase_bytes(elements, 8), (32 << 20, 4 << 20));
        assert_eq!(qgz_phase_bytes(3, 1), (2, 2));
    }
}
