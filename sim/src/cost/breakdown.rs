//! One transformer layer's kernels on one rank, each with its modeled time:
//! what `simulate --explain` prints so a user can see where a layer's time
//! goes (which GEMMs are quantized, which kernels are memory-bound, what the
//! tensor all-reduces cost) and hold it against a profiler trace.

use super::{
    exposed_after_overlap, exposed_with_tp_overlap, intra_node_collective_sm_share,
    overlaps_all_reduce, pass_steps, ClosedFormNetwork, KernelCostModel, NetworkModel,
};
use super::{gemm_estimate, gemm_peak_flops_per_s, GemmEstimate};
use crate::placement::Placement;
use models::ops::{GemmShape, Kernel, KernelClass, Step};
use scenario::{Precision, Recompute, Scenario};
use taskgraph::task_graph::{ComputePass, NodeSpread};

/// One kernel (or tensor all-reduce) of one pass of one layer.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelCost {
    pub pass: ComputePass,
    /// Kernel name, or "tensor_all_reduce", or "expert_all_to_all".
    pub name: &'static str,
    pub seconds: f64,
    /// Matrix FLOPs (0 for memory-bound kernels and communication).
    pub flops: f64,
    /// Bytes through HBM (kernels) or per rank on the wire (all-reduces).
    pub bytes: f64,
    /// A GEMM on FP8 inputs (`--precision fp8`).
    pub is_fp8: bool,
    pub is_communication: bool,
    /// How a GEMM was priced (none for other rows).
    pub gemm: Option<GemmDetail>,
}

impl KernelCost {
    /// A GEMM (bf16/fp16 or FP8) row.
    pub fn is_gemm(&self) -> bool {
        self.gemm.is_some()
    }
}

/// A GEMM row's shape, the datasheet peak it runs against, whether a
/// measured entry priced it, and the tile model's run of it (none without a
/// tile model in the profile).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GemmDetail {
    pub shape: GemmShape,
    pub peak_flops_per_s: f64,
    pub measured: bool,
    pub estimate: Option<GemmEstimate>,
}

/// [`GemmDetail`] of a GEMM kernel, `None` for any other.
fn gemm_detail(
    kernels: &KernelCostModel,
    kernel: &Kernel,
    scenario: &Scenario,
) -> Option<GemmDetail> {
    let (shape, precision, measured) = match kernel.class {
        KernelClass::Gemm { shape, layout } => (
            shape,
            scenario.options.precision.high_precision(),
            kernels.measured_gemm_seconds(&shape, layout).is_some(),
        ),
        KernelClass::Fp8Gemm { shape, layout } => (
            shape,
            Precision::Fp8,
            kernels.measured_fp8_gemm_seconds(&shape, layout).is_some(),
        ),
        KernelClass::MemoryBound | KernelClass::FusedAttention(_) => return None,
    };
    let gpu = &scenario.topology.gpu;
    Some(GemmDetail {
        shape,
        peak_flops_per_s: gemm_peak_flops_per_s(precision, gpu),
        measured,
        estimate: gemm_estimate(precision, &shape, gpu, &scenario.profile),
    })
}

/// The kernels of one layer's forward, recompute (when the scenario
/// recomputes) and backward on one rank, in execution order, costed as the
/// simulation costs them (tensor all-reduces alone on the fabric; with the
/// asynchronous tensor all-reduce, only their exposed part). `placement`
/// is the plan's ([`crate::plan::Plan::placement`]).
pub fn layer_kernel_costs(scenario: &Scenario, placement: &Placement) -> Vec<KernelCost> {
    let kernels = KernelCostModel::new(&scenario.topology.gpu, &scenario.profile)
        .with_precision(scenario.options.precision);
    let network = ClosedFormNetwork::for_scenario(scenario);
    let t = scenario.layout.tensor_parallel.get();
    let nodes = t.div_ceil(scenario.topology.node.gpus_per_node);
    // The expert-parallel group of the first rank (every group is alike).
    let ep = scenario.layout.expert_parallel.get();
    let ep_nodes = placement.nodes_spanned(&placement.expert_group(0, 0, 0));
    // Its expert tensor group, whose all-gather or reduce-scatter the
    // all-to-all's row carries (etp > 1).
    let etp = scenario.layout.expert_tensor_parallel.get();
    let etp_nodes = placement.nodes_spanned(&placement.expert_tensor_group(0, 0, 0));
    // A schedule that splits the backward runs it as its two halves.
    let backward: &[ComputePass] = if scenario.schedule.splits_backward() {
        &[ComputePass::InputGradient, ComputePass::WeightGradient]
    } else {
        &[ComputePass::Backward]
    };
    let mut passes = vec![ComputePass::Forward];
    if scenario.recompute != Recompute::None {
        passes.push(ComputePass::Recompute);
    }
    passes.extend_from_slice(backward);
    let mut rows = Vec::new();
    for pass in passes {
        // The host synchronizations cost the GPU nothing: the engine's host
        // lane shows them (`host_syncs`), not this table.
        let steps = super::segment_steps(
            pass_steps(scenario, pass, 1, false, false),
            taskgraph::task_graph::WHOLE_PASS,
        );
        for (index, step) in steps.iter().enumerate() {
            rows.push(match *step {
                Step::Kernel(ref kernel) => KernelCost {
                    pass,
                    name: kernel.name,
                    seconds: kernels.kernel_seconds(kernel),
                    flops: kernel.flops,
                    bytes: kernel.bytes,
                    is_fp8: matches!(kernel.class, KernelClass::Fp8Gemm { .. }),
                    is_communication: false,
                    gemm: gemm_detail(&kernels, kernel, scenario),
                },
                Step::TensorAllReduce {
                    bytes,
                    async_window,
                } => {
                    let full = network.all_reduce(bytes, t, NodeSpread::even(t, nodes));
                    let charged = if overlaps_all_reduce(scenario, pass, async_window) {
                        exposed_after_overlap(
                            full,
                            &steps[..index],
                            async_window,
                            &kernels,
                            intra_node_collective_sm_share(&scenario.topology),
                        )
                    } else if scenario.options.tp_comm_overlap {
                        exposed_with_tp_overlap(
                            full,
                            &steps,
                            index,
                            &kernels,
                            scenario.options.tp_comm_overlap_config,
                            scenario.topology.gpu.sm_count,
                        )
                    } else {
                        full
                    };
                    KernelCost {
                        pass,
                        name: "tensor_all_reduce",
                        seconds: charged.as_seconds(),
                        flops: 0.0,
                        bytes: bytes as f64,
                        is_fp8: false,
                        is_communication: true,
                        gemm: None,
                    }
                }
                Step::HostSync => unreachable!("segment_steps drops host synchronizations"),
                Step::ExpertAllToAll {
                    bytes,
                    expert_tensor_bytes,
                } => KernelCost {
                    pass,
                    name: "expert_all_to_all",
                    seconds: (super::pair_overlap::expert_all_to_all(
                        scenario, &network, bytes, ep, ep_nodes,
                    ) + network.all_gather(
                        expert_tensor_bytes,
                        etp,
                        NodeSpread::even(etp, etp_nodes),
                    ))
                    .as_seconds(),
                    flops: 0.0,
                    bytes: (bytes + expert_tensor_bytes) as f64,
                    is_fp8: false,
                    is_communication: true,
                    gemm: None,
                },
            });
        }
        if scenario.layout.context_parallel.get() > 1 {
            // Ring attention's K/V (and dK/dV) exchanges: only what the
            // attention steps leave exposed is charged (`context.rs`).
            let (exposed_s, bytes) =
                super::context::exposed_exchanges(scenario, pass, &steps, &kernels, &network);
            rows.push(KernelCost {
                pass,
                name: RING_EXCHANGE_ROW,
                seconds: exposed_s,
                flops: 0.0,
                bytes: bytes as f64,
                is_fp8: false,
                is_communication: true,
                gemm: None,
            });
        }
    }
    rows
}

/// Under `--precision fp8`, one layer's per-iteration weight casts (each
/// chunk's first forward runs them before its layers: [`models::fp8`]), costed
/// as the simulation costs them; empty otherwise.
pub fn layer_fp8_weight_casts(scenario: &Scenario) -> Vec<KernelCost> {
    if scenario.options.precision != scenario::Precision::Fp8 {
        return Vec::new();
    }
    let kernels = KernelCostModel::new(&scenario.topology.gpu, &scenario.profile)
        .with_precision(scenario.options.precision);
    models::fp8::weight_cast_steps(
        &scenario.model,
        scenario.layout.tensor_parallel.into(),
        scenario.layout.expert_parallel.into(),
        1,
    )
    .into_iter()
    .filter_map(|step| match step {
        Step::Kernel(kernel) => Some(KernelCost {
            pass: ComputePass::Forward,
            name: kernel.name,
            seconds: kernels.kernel_seconds(&kernel),
            flops: 0.0,
            bytes: kernel.bytes,
            is_fp8: false,
            is_communication: false,
            gemm: None,
        }),
        Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => None,
    })
    .collect()
}

/// The row name of a pass's ring-attention exchanges under context parallelism.
pub const RING_EXCHANGE_ROW: &str = "ring_kv_exchange (exposed)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::cost_works;
    use scenario::ScenarioFile;
    use taskgraph::task_graph::Work;

    #[test]
    fn the_rows_add_up_to_what_the_simulation_charges_for_one_layer() {
        let scenario = ScenarioFile {
            model: Some("gpt-22b".into()),
            tp: Some(8),
            pp: Some(1),
            dp: Some(1),
            microbatch_size: Some(4),
            global_batch: Some(4),
            recompute: Some(Recompute::Selective),
            ..ScenarioFile::embedded_default()
        }
        .resolve()
        .unwrap();
        let rows = layer_kernel_costs(&scenario, &crate::placement::Placement::of(&scenario));
        let network = ClosedFormNetwork::for_scenario(&scenario);
        for pass in [
            ComputePass::Forward,
            ComputePass::Recompute,
            ComputePass::Backward,
        ] {
            let works = [
                Work::Compute {
                    pass,
                    layers: 1,
                    dense_layers: 0,
                    first_layer: 0,
                    embedding: false,
                    head: false,
                    fp8_weight_cast: false,
                    segment: taskgraph::task_graph::WHOLE_PASS,
                },
                Work::TensorAllReduce {
                    pass,
                    layers: 1,
                    dense_layers: 0,
                    first_layer: 0,
                    embedding: false,
                    head: false,
                    group_size: 8,
                    nodes: 1,
                    segment: taskgraph::task_graph::WHOLE_PASS,
                },
            ];
            let costs = cost_works(&scenario, &works, &network);
            let sum = |communication: bool| -> f64 {
                rows.iter()
                    .filter(|r| r.pass == pass && r.is_communication == communication)
                    .map(|r| r.seconds)
                    .sum()
            };
            // The simulation rounds each work up to a whole nanosecond once.
            assert!((sum(false) - costs[0].duration.as_seconds()).abs() < 1e-9);
            assert!((sum(true) - costs[1].duration.as_seconds()).abs() < 1e-9 * 4.0);
        }
        assert!(rows.iter().any(|r| r.is_gemm() && r.flops > 0.0));
        assert!(rows
            .iter()
            .filter(|r| r.pass == ComputePass::Recompute)
            .all(|r| !r.is_communication));
    }
}
