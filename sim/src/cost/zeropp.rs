//! What ZeRO++ (`scenario::zeropp`) adds to the kernels and collectives of
//! ZeRO-3, from DeepSpeed at 38327e07:
//!
//! - **qwZ**: before a unit runs, its gathered INT8 weights are dequantized
//!   (`AllGatherCoalescedHandle.wait` → `dequantize`: 1 B read, 2 B written
//!   per parameter) and, before the gather, each rank quantized its shard
//!   (`CUDAQuantizer.quantize`: 2 B read, 1 B written per shard parameter).
//!   Both are costed on the compute stream at the start of the pass, the
//!   quantization at the size of the group most of the pass's gathers use
//!   (the hpZ group, else the shard group). DeepSpeed quantizes on its
//!   all-gather stream, so this is pessimistic by at most that kernel.
//! - **qgZ** (`coalesced_collectives.py`, `all_to_all_quant_reduce`), per
//!   unit and rank, with G gradient bytes per element, L ranks per node and
//!   N nodes: `swizzle_quant` to INT4 (G read, ½ written per element), the
//!   all-to-all of the INT4 buffer inside the node, `quantized_reduction`
//!   (½ read, ½/L written), the all-to-all of that 1/L across nodes,
//!   `dequantize` (½/L read, G/L written) and the sum of the N chunks (G/L
//!   read, G/(L·N) written). The gradients are reduced on DeepSpeed's
//!   reduce-and-partition stream, so the whole chain is one task there.

use super::{KernelCostModel, NetworkModel, WorkCost};
use models::ops::{KernelRole, Step};
use models::sharding::parameters_of_pass;
use scenario::{Scenario, ZeroStage};
use taskgraph::task_graph::ComputePass;
use timeline::time::SimDuration;

/// Bytes a dequantization moves per parameter: INT8 read, bf16/fp16 written.
pub const DEQUANTIZE_BYTES_PER_PARAM: f64 = 3.0;
/// Bytes a quantization moves per parameter: bf16/fp16 read, INT8 written.
pub const QUANTIZE_BYTES_PER_PARAM: f64 = 3.0;

/// qwZ's kernels before a pass of `layers` layers (`dense_layers` of them
/// a mixture of experts' dense ones) plus embedding and/or head: the
/// shard's quantization and the gathered weights' dequantization; none
/// unless qwZ is on over ZeRO-3 shard groups of two or more.
pub fn qwz_steps(
    scenario: &Scenario,
    pass: ComputePass,
    layers: u32,
    dense_layers: u32,
    embedding: bool,
    head: bool,
) -> Vec<Step> {
    let options = &scenario.options;
    let group = options.shard_group(scenario.layout.replicas());
    if !options.zeropp.quantized_weights || options.sharding != ZeroStage::Full || group < 2 {
        return Vec::new();
    }
    let params = parameters_of_pass(
        &scenario.model,
        scenario.layout.sharding(),
        u64::from(layers),
        u64::from(dense_layers),
        embedding,
        head,
    ) as f64;
    let gather_group = options.zeropp.secondary_group().unwrap_or(group);
    let role = match pass {
        ComputePass::Forward | ComputePass::Recompute => KernelRole::Forward,
        _ => KernelRole::Backward,
    };
    vec![
        Step::memory(
            role,
            "zeropp_quantize_weights",
            QUANTIZE_BYTES_PER_PARAM * params / f64::from(gather_group),
        ),
        Step::memory(
            role,
            "zeropp_dequantize_weights",
            DEQUANTIZE_BYTES_PER_PARAM * params,
        ),
    ]
}

/// Per-rank bytes of the two qgZ phases: the INT4 buffer all-to-all'ed
/// inside the node, and its reduced 1/L sent across nodes.
pub fn qgz_phase_bytes(elements: u64, local_ranks: u32) -> (u64, u64) {
    let int4 = elements.div_ceil(8 / scenario::zeropp::QGZ_BITS);
    (int4, int4.div_ceil(u64::from(local_ranks.max(1))))
}

/// The cost of one qgZ reduction ([`taskgraph::task_graph::Work::QuantizedGradientReduce`]).
pub fn quantized_gradient_reduce(
    elements: u64,
    gradient_bytes: u64,
    local_ranks: u32,
    nodes: u32,
    kernels: &KernelCostModel,
    network: &dyn NetworkModel,
) -> WorkCost {
    let (intra, inter) = qgz_phase_bytes(elements, local_ranks);
    let local = f64::from(local_ranks.max(1));
    let full = elements as f64 * gradient_bytes as f64;
    let reduced = full / local;
    let kernel_bytes = [
        full + intra as f64,                         // swizzle_quant
        intra as f64 + inter as f64,                 // quantized_reduction
        inter as f64 + reduced,                      // dequantize
        reduced + reduced / f64::from(nodes.max(1)), // sum of the nodes' chunks
    ];
    let kernel_seconds: f64 = kernel_bytes
        .iter()
        .map(|&bytes| kernels.memory_kernel_seconds(None, bytes))
        .sum();
    let duration = SimDuration::from_seconds_ceil(kernel_seconds)
        + network.all_to_all(intra, local_ranks, 1)
        + network.all_to_all(inter, nodes, nodes);
    WorkCost {
        duration,
        bytes: intra + inter,
        flops: 0.0,
    }
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
