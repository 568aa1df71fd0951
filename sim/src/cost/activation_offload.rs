//! CPU offloading of activations (`cpu_offloading_num_layers`, Megatron-Core
//! over Transformer Engine's `AsyncDoubleBufferGroupOffloadHandler`): what
//! the copies cost the forward and the backward of a stage.
//!
//! TE offloads N groups (one layer each) of the stage's L layers and spreads
//! them with its `layer_window_map`: window[i] = ⌊L/N⌋·(i + 1) − 1, plus
//! i + 1 for the first L mod N groups and L mod N for the rest
//! ([`windows`]). Group 0's copy to the host starts when layer 0's forward
//! ends; at the end of layer window[i]'s forward the compute stream waits
//! for group i's copy, frees it and starts group i + 1's. So copy i overlaps
//! the forwards of the n_i = window[i] − window[i − 1] layers after it
//! (window[−1] = 0), and the forward stalls by max(0, copy − n_i·f) there
//! (f: one layer's forward). The backward mirrors it: at layer window[i]'s
//! backward commit the compute stream waits for the previous reload and
//! group i's reload from the host starts, and layer 0's backward waits for
//! all, so reload i overlaps n_i layers' backwards (b each) and stalls by
//! max(0, reload − n_i·b).
//!
//! A copy moves the layer's saved activations for one microbatch
//! ([`crate::memory::layer_activation_bytes`]) at the profile's PCIe rate
//! for its direction, shared with the other GPUs behind the same host link
//! (all of them copy at once, as ZeRO-Offload's copies are costed). Exact
//! for layers that all take the same time, which is why mixtures of experts
//! are refused; TE's offloading of weights (`cpu_offloading_weights`) is not
//! modeled.

use models::memory::RecomputeKind;
use scenario::Scenario;
use taskgraph::task_graph::{ComputePass, Work, WHOLE_PASS};

use super::kernels::KernelCostModel;
use super::network::NetworkModel;

/// TE's `layer_window_map` for `offloaded` groups among `layers` layers
/// (0 < offloaded < layers): the layer at whose forward end group i's copy
/// must be done.
pub fn windows(layers: u32, offloaded: u32) -> Vec<u32> {
    let (per_group, extra) = (layers / offloaded, layers % offloaded);
    (0..offloaded)
        .map(|i| {
            let base = per_group * (i + 1) - 1;
            if i < extra {
                base + i + 1
            } else {
                base + extra
            }
        })
        .collect()
}

/// The layers each group's copy overlaps: n_i = window[i] − window[i − 1],
/// window[−1] = 0.
pub fn overlapped_layers(layers: u32, offloaded: u32) -> Vec<u32> {
    let windows = windows(layers, offloaded);
    let mut previous = 0;
    windows
        .iter()
        .map(|&window| {
            let n = window - previous;
            previous = window;
            n
        })
        .collect()
}

/// What copies of `copy_s` each cost a pass whose layers take `layer_s`,
/// copy i overlapping `overlaps[i]` layers: Σ max(0, copy − n_i·layer).
pub fn stall_seconds(copy_s: f64, layer_s: f64, overlaps: &[u32]) -> f64 {
    overlaps
        .iter()
        .map(|&n| (copy_s - f64::from(n) * layer_s).max(0.0))
        .sum()
}

/// One layer's wall time in `pass` on one rank: its kernels and, at t > 1,
/// its exposed tensor-parallel all-reduces.
fn layer_seconds(
    scenario: &Scenario,
    pass: ComputePass,
    kernels: &KernelCostModel,
    network: &dyn NetworkModel,
) -> f64 {
    let compute = Work::Compute {
        pass,
        layers: 1,
        dense_layers: 0,
        // One layer standing for each (under per-layer routing, layer 0).
        first_layer: 0,
        embedding: false,
        head: false,
        fp8_weight_cast: false,
        segment: WHOLE_PASS,
    };
    let mut seconds = super::cost_work(scenario, &compute, kernels, network)
        .duration
        .as_seconds();
    let t = scenario.layout.tensor_parallel.get();
    if t > 1 {
        let nodes = t.div_ceil(scenario.topology.node.gpus_per_node);
        let all_reduce = Work::TensorAllReduce {
            pass,
            layers: 1,
            dense_layers: 0,
            first_layer: 0,
            embedding: false,
            head: false,
            group_size: t,
            nodes,
            segment: WHOLE_PASS,
        };
        seconds += super::cost_work(scenario, &all_reduce, kernels, network)
            .duration
            .as_seconds();
    }
    seconds
}

/// One copy of a layer's saved activations for one microbatch, seconds,
/// through a GPU link `network` may report slow (a slow PCIe link: the
/// slower of the link and the uplink's share sets the pace).
pub fn copy_seconds(scenario: &Scenario, pass: ComputePass, network: &dyn NetworkModel) -> f64 {
    let pcie = &scenario.profile.pcie;
    let rate = match pass {
        ComputePass::Forward => pcie.device_to_host_bytes_per_s.value,
        _ => pcie.host_to_device_bytes_per_s.value,
    };
    let gpus_on_node = scenario
        .layout
        .gpus()
        .min(scenario.topology.node.gpus_per_node);
    let sharing = scenario
        .topology
        .pcie
        .gpus_per_host_link
        .clamp(1, gpus_on_node.max(1));
    let bytes = crate::memory::layer_activation_bytes(scenario, RecomputeKind::None);
    super::offload::pcie_seconds_through(
        bytes as u64,
        rate,
        sharing,
        network.pcie_link_slowdown(),
        scenario.topology.pcie.latency_ns,
    )
}

/// What offloading adds to the stage's forward or backward, charged to the
/// compute work of `layers` layers (with the `embedding`) that carries it:
/// a whole pass, or of a pass cut into pieces (the last microbatch's
/// backward into gradient buckets, ZeRO-3's passes into units) the piece
/// with the embedding, so the pass's total is exact and its stalls fall at
/// that piece rather than spread over the pieces. 0 for any other work, or
/// without offloading.
pub fn pass_stall_seconds(
    scenario: &Scenario,
    pass: ComputePass,
    layers: u32,
    embedding: bool,
    kernels: &KernelCostModel,
    network: &dyn NetworkModel,
) -> f64 {
    let offloaded = scenario.options.activation_offload_layers;
    let stage_layers = scenario.model.layers;
    let carries_the_pass = u64::from(layers) == stage_layers || embedding;
    if offloaded == 0
        || !carries_the_pass
        || !matches!(pass, ComputePass::Forward | ComputePass::Backward)
    {
        return 0.0;
    }
    // Validated: 0 < N < L, and L fits the task graph's u32 layer counts.
    let overlaps = overlapped_layers(stage_layers as u32, offloaded);
    stall_seconds(
        copy_seconds(scenario, pass, network),
        layer_seconds(scenario, pass, kernels, network),
        &overlaps,
    )
}

/// The copies' stalls of one microbatch's forward and backward on the
/// stage, seconds (each 0 without offloading), with the per-layer times
/// and copy times they come from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OffloadStalls {
    pub layer_forward_s: f64,
    pub layer_backward_s: f64,
    pub copy_to_host_s: f64,
    pub copy_from_host_s: f64,
    pub forward_stall_s: f64,
    pub backward_stall_s: f64,
}

/// [`OffloadStalls`] of `scenario` under the closed-form network.
pub fn stage_stalls(scenario: &Scenario) -> OffloadStalls {
    let kernels = KernelCostModel::new(&scenario.topology.gpu, &scenario.profile)
        .with_precision(scenario.options.precision);
    let network = super::ClosedFormNetwork::for_scenario(scenario);
    let offloaded = scenario.options.activation_offload_layers;
    let layers = scenario.model.layers as u32;
    let overlaps = if offloaded == 0 {
        Vec::new()
    } else {
        overlapped_layers(layers, offloaded)
    };
    let layer_forward_s = layer_seconds(scenario, ComputePass::Forward, &kernels, &network);
    let layer_backward_s = layer_seconds(scenario, ComputePass::Backward, &kernels, &network);
    let copy_to_host_s = copy_seconds(scenario, ComputePass::Forward, &network);
    let copy_from_host_s = copy_seconds(scenario, ComputePass::Backward, &network);
    OffloadStalls {
        layer_forward_s,
        layer_backward_s,
        copy_to_host_s,
        copy_from_host_s,
        forward_stall_s: stall_seconds(copy_to_host_s, layer_forward_s, &overlaps),
        backward_stall_s: stall_seconds(copy_from_host_s, layer_backward_s, &overlaps),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_are_te_s_layer_window_map() {
        // L = 4, N = 3: ⌊4/3⌋ = 1, 4 mod 3 = 1: group 0 → 0 + 1 = 1, then
        // i + 1 for i ≥ 1: 2, 3.
        assert_eq!(windows(4, 3), [1, 2, 3]);
        // L = 8, N = 2: 3, 7; L = 8, N = 3: ⌊8/3⌋ = 2, 8 mod 3 = 2:
        // 2·1 − 1 + 1 = 2, 2·2 − 1 + 2 = 5, 2·3 − 1 + 2 = 7.
        assert_eq!(windows(8, 2), [3, 7]);
        assert_eq!(windows(8, 3), [2, 5, 7]);
        // One group: its copy overlaps the whole rest of the forward.
        assert_eq!(windows(8, 1), [7]);
        // The last window is always the last layer.
        for layers in 2..40 {
            for offloaded in 1..layers {
                assert_eq!(*windows(layers, offloaded).last().unwrap(), layers - 1);
                let overlaps = overlapped_layers(layers, offloaded);
                assert_eq!(overlaps.iter().sum::<u32>(), layers - 1);
                assert!(overlaps.iter().all(|&n| n >= 1));
            }
        }
    }

    #[test]
    fn a_copy_stalls_by_what_its_layers_do_not_hide() {
        // L = 4, N = 3: each copy overlaps one layer. Copies of 3 ms under
        // layers of 2 ms stall 1 ms each; under 5 ms layers, not at all.
        let overlaps = overlapped_layers(4, 3);
        assert_eq!(overlaps, [1, 1, 1]);
        assert!((stall_seconds(3e-3, 2e-3, &overlaps) - 3e-3).abs() < 1e-15);
        assert_eq!(stall_seconds(3e-3, 5e-3, &overlaps), 0.0);
        // L = 8, N = 3: overlaps 2, 3, 2 layers of 1 ms under copies of
        // 2.5 ms: 0.5 + 0 + 0.5 ms.
        assert_eq!(overlapped_layers(8, 3), [2, 3, 2]);
        let stall = stall_seconds(2.5e-3, 1e-3, &overlapped_layers(8, 3));
        assert!((stall - 1e-3).abs() < 1e-15, "{stall}");
    }
}
