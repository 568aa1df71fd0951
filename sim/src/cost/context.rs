//! Context parallelism's ring exchanges, costed inside the pass that runs
//! them (Transformer Engine's `AttnFuncWithCPAndKVP2P`,
//! `transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py`).
//!
//! Each layer's attention core runs cp ring steps ([`models::ops::ring_attention_steps`]);
//! while step i computes, the K/V chunk for step i+1 is sent to the next
//! ring rank and received from the previous one (`flash_attn_p2p_communicate`
//! on a side stream, waited before the next step). Forward: steps
//! 0..cp−1 each send K and V of the rank's s/cp tokens (cp−1 exchanges; the
//! last step needs none). Backward (`for i in range(cp_size)`): step 0 sends
//! K/V, steps 1..cp−2 send K/V and the accumulated dK/dV (the `(2, *kv.shape)`
//! buffer), step cp−1 sends dK/dV only: cp exchanges. A step therefore lasts
//! max(its attention kernels, its exchange); the pass is charged the
//! exchanges' exposed part, Σ max(0, exchange − step kernels). This is a
//! closed form inside the compute pass rather than tasks of their own: all cp
//! ranks of a ring run the same steps in lockstep (load-balanced causal
//! masking gives every rank equal work), so the ring's own synchronization
//! adds nothing the closed form misses, and the pass granularity of the
//! task graph (one task per pass) stays as it is. The exchange is a
//! point-to-point send/receive of one hop: over NVLink when the ring stays in
//! a node (t·cp ≤ GPUs per node, validated to divide or be a multiple of
//! it), else over the NIC rails, every tensor rank sending its own heads in
//! parallel as pipeline transfers do.

use super::{KernelCostModel, NetworkModel};
use models::ops::{Step, FP16_BYTES, RING_ATTENTION_KERNELS_PER_STEP};
use scenario::Scenario;
use taskgraph::task_graph::ComputePass;

/// The kernel-name prefix of ring-attention steps.
pub const RING_ATTENTION_PREFIX: &str = "ring_attention.";

/// Bytes of one rank's K and V chunk: 2 · b · (s/cp) · (kv_heads/t) · head_dim
/// in 16-bit elements (TE exchanges K and V in the activation dtype).
pub fn kv_chunk_bytes(scenario: &Scenario) -> u64 {
    let model = &scenario.model;
    let layout = &scenario.layout;
    let cp = layout.context_parallel.get() as u64;
    2 * layout.microbatch_size.get() as u64
        * (model.seq_len / cp)
        * (model.kv_heads() / layout.tensor_parallel.get() as u64)
        * model.head_dim()
        * FP16_BYTES
}

/// Bytes each ring step of one layer's pass exchanges (0: no exchange),
/// one entry per step.
pub fn exchange_bytes_per_step(scenario: &Scenario, pass: ComputePass) -> Vec<u64> {
    let cp = scenario.layout.context_parallel.get() as usize;
    // A split backward's weight-gradient pass runs no attention (the
    // attention core's backward is the input-gradient pass's).
    if cp == 1 || pass == ComputePass::WeightGradient {
        return Vec::new();
    }
    let chunk = kv_chunk_bytes(scenario);
    (0..cp)
        .map(|step| match pass {
            ComputePass::Forward | ComputePass::Recompute => {
                if step + 1 < cp {
                    chunk
                } else {
                    0
                }
            }
            ComputePass::Backward | ComputePass::InputGradient | ComputePass::WeightGradient => {
                if step == 0 || step + 1 == cp {
                    chunk
                } else {
                    2 * chunk
                }
            }
        })
        .collect()
}

/// Whether the context-parallel ring's hops leave the node.
pub fn ring_crosses_nodes(scenario: &Scenario) -> bool {
    let layout = &scenario.layout;
    layout.tensor_parallel.get() as u64 * layout.context_parallel.get() as u64
        > scenario.topology.node.gpus_per_node as u64
}

/// The exchanges of a pass's steps: their exposed seconds (what the pass
/// waits beyond its attention kernels) and bytes each rank sends. The ring
/// kernels in `steps` are read in order, layer after layer.
pub fn exposed_exchanges(
    scenario: &Scenario,
    pass: ComputePass,
    steps: &[Step],
    kernels: &KernelCostModel,
    network: &dyn NetworkModel,
) -> (f64, u64) {
    let per_step = exchange_bytes_per_step(scenario, pass);
    if per_step.is_empty() {
        return (0.0, 0);
    }
    let per_step_kernels = match pass {
        ComputePass::Forward | ComputePass::Recompute => RING_ATTENTION_KERNELS_PER_STEP[0],
        ComputePass::Backward | ComputePass::InputGradient | ComputePass::WeightGradient => {
            RING_ATTENTION_KERNELS_PER_STEP[1]
        }
    };
    let crosses = ring_crosses_nodes(scenario);
    let t = scenario.layout.tensor_parallel.get();
    let ring_kernel_seconds: Vec<f64> = steps
        .iter()
        .filter_map(|step| match step {
            Step::Kernel(kernel) if kernel.name.starts_with(RING_ATTENTION_PREFIX) => {
                Some(kernels.kernel_seconds(kernel))
            }
            _ => None,
        })
        .collect();
    let mut exposed_s = 0.0;
    let mut bytes = 0;
    for (index, step_kernels) in ring_kernel_seconds.chunks(per_step_kernels).enumerate() {
        let payload = per_step[index % per_step.len()];
        if payload == 0 {
            continue;
        }
        let transfer_s = network
            .pipeline_transfer(payload, t, crosses, false)
            .as_seconds();
        let compute_s: f64 = step_kernels.iter().sum();
        exposed_s += (transfer_s - compute_s).max(0.0);
        bytes += payload;
    }
    (exposed_s, bytes)
}
