//! The cost model: how long each distinct [`Work`] takes on this hardware.
//!
//! Compute work is the sum of its kernels (`kernels.rs`): GEMMs from measured
//! profile entries when present (interpolated between measured shapes), else
//! peak × large-GEMM efficiency × tile/wave quantization, bounded below by
//! their HBM traffic; memory-bound kernels from the measured entries of their
//! kernel class (LayerNorm, softmax, dropout, …; interpolated in bytes) or
//! else at achieved HBM bandwidth (`memory_bound.rs`), the optimizer step
//! phase by phase the same way; a fixed launch overhead per modeled kernel.
//! Communication goes through one interface,
//! [`NetworkModel`], so the contention-aware fabric can replace the closed-form
//! NCCL formulas without touching anything else. ZeRO-Offload's PCIe copies
//! and CPU Adam are costed in `offload.rs`; a ZeRO-2 reduce-scatter is costed
//! as an all-gather of the same bytes (NCCL's ring moves (n−1)/n of the
//! buffer in n−1 steps for both, so the formulas are identical).

mod activation_codec;
pub mod activation_offload;
mod attention;
mod attention_dropout;
mod breakdown;
pub mod class_time;
mod comm_sms;
pub mod context;
mod gemm_tiles;
mod gemm_time;
pub mod gradients;
mod host;
mod kernels;
mod memory_bound;
mod nelder_mead;
mod network;
mod offload;
pub mod onebit;
pub mod optimizer_step;
pub mod pair_overlap;
mod pass_steps;
pub mod powersgd;
mod seq_len_table;
pub mod split_backward;
mod tile_fit;
mod tp_overlap;
pub mod zeropp;

pub use attention::sustained_share as attention_sustained_share;
pub use breakdown::{
    layer_fp8_weight_casts, layer_kernel_costs, GemmDetail, KernelCost, RING_EXCHANGE_ROW,
};
pub use comm_sms::{intra_node_collective_sm_share, NVSWITCH_NODE_COLLECTIVE_CHANNELS};
pub use gemm_tiles::{GemmEstimate, TileModel};
pub use gemm_time::{gemm_estimate, gemm_peak_flops_per_s, gemm_seconds, quantization_efficiency};
pub use kernels::KernelCostModel;
pub use memory_bound::{interpolate_seconds, memory_bound_seconds, MeasuredPoint, MemoryCostModel};
pub use network::{ClosedFormNetwork, NetworkModel};
pub use offload::{cpu_adam_host_seconds, cpu_adam_tile_seconds, pcie_seconds};
pub use pass_steps::{
    compute_steps, host_syncs, moe_layer_options, moe_tokens_per_rank, pads_to_capacity,
    pass_steps, pass_steps_at, pass_steps_of, pass_steps_with, routes_per_layer, segment_steps,
    work_first_layer, work_piece_steps, PassRouting,
};
pub use tile_fit::{fit_tile_model, SustainedFrom, TileFit};
pub use tp_overlap::{exposed_with_tp_overlap, overlapping_gemms};

use models::ops::{PassSteps, Step};
use scenario::Scenario;
use taskgraph::task_graph::{ComputePass, NodeSpread, PcieDirection, Work, WHOLE_PASS};
use timeline::time::SimDuration;

/// The cost of one work: its duration and what it moves or computes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkCost {
    pub duration: SimDuration,
    /// Bytes communicated (communication) or moved through HBM (compute).
    pub bytes: u64,
    /// Matrix FLOPs per rank.
    pub flops: f64,
}

/// Whether a tensor all-reduce of this pass is charged only beyond what it
/// overlaps (`--async-tensor-allreduce`): a whole backward's only; a split
/// backward's input-gradient all-reduces are blocking ([`split_backward`]).
pub(crate) fn overlaps_all_reduce(
    scenario: &Scenario,
    pass: ComputePass,
    async_window: u32,
) -> bool {
    scenario.options.async_tensor_allreduce
        && async_window > 0
        && pass != ComputePass::InputGradient
}

/// The least a pass's tensor all-reduces (`steps`, the whole pass's) cost
/// on a group of `group_size` ranks over `nodes` nodes, however the pass is
/// cut into segments: the full all-reduces nothing overlaps (no
/// asynchronous window, no TP communication overlap), each priced as its
/// [`Work::TensorAllReduce`] prices it; 0 for those that may overlap.
pub fn unhidden_tensor_all_reduces(
    scenario: &Scenario,
    pass: ComputePass,
    steps: &[Step],
    (group_size, nodes): (u32, u32),
    network: &dyn NetworkModel,
) -> SimDuration {
    if scenario.options.tp_comm_overlap || group_size < 2 || pass == ComputePass::WeightGradient {
        return SimDuration::ZERO;
    }
    let mut total = SimDuration::ZERO;
    for step in steps {
        if let Step::TensorAllReduce {
            bytes,
            async_window,
        } = *step
        {
            if !overlaps_all_reduce(scenario, pass, async_window) {
                total += network.all_reduce(bytes, group_size, NodeSpread::even(group_size, nodes));
            }
        }
    }
    total
}

/// What an asynchronous all-reduce of `full` leaves exposed after the
/// `window` kernels just before it: it runs alongside them, and while it runs
/// they progress at `1 − sm_share` of their rate (the SMs its NCCL kernel holds,
/// [`intra_node_collective_sm_share`]); the pass waits for whatever of the two
/// ends last. With W the kernels' time alone and A = `full`, the pair takes
/// A + W − min(W, A·(1 − sm_share)), so the all-reduce adds
/// A − min(W, A·(1 − sm_share)): A − W when the kernels end first, A·sm_share
/// when they outlast it (0 and the old max(A − W, 0) at `sm_share` 0).
pub(crate) fn exposed_after_overlap(
    full: SimDuration,
    before: &[Step],
    window: u32,
    kernels: &KernelCostModel,
    sm_share: f64,
) -> SimDuration {
    let overlapped_s: f64 = before
        .iter()
        .rev()
        .take(window as usize)
        .map(|step| match step {
            Step::Kernel(kernel) => kernels.kernel_seconds(kernel),
            Step::TensorAllReduce { .. } | Step::ExpertAllToAll { .. } | Step::HostSync => 0.0,
        })
        .sum();
    let full_s = full.as_seconds();
    let kernel_rate = (1.0 - sm_share).clamp(0.0, 1.0);
    SimDuration::from_seconds_ceil(full_s - overlapped_s.min(full_s * kernel_rate))
}

/// Costs every work of a task graph, in `WorkId` order.
pub fn cost_works(
    scenario: &Scenario,
    works: &[Work],
    network: &dyn NetworkModel,
) -> Vec<WorkCost> {
    let kernels = KernelCostModel::new(&scenario.topology.gpu, &scenario.profile)
        .with_precision(scenario.options.precision);
    works
        .iter()
        .map(|work| cost_work(scenario, work, &kernels, network))
        .collect()
}

fn cost_work(
    scenario: &Scenario,
    work: &Work,
    kernels: &KernelCostModel,
    network: &dyn NetworkModel,
) -> WorkCost {
    match *work {
        Work::HostIssuePass { .. } | Work::HostCall | Work::HostOptimizer => {
            host::host_cost(scenario, work)
        }
        Work::ComputeBeside {
            ref compute,
            ref beside,
        } => {
            let computed = cost_work(scenario, compute, kernels, network);
            let communicated = cost_work(scenario, beside, kernels, network);
            WorkCost {
                duration: pair_overlap::stretched(
                    computed.duration,
                    communicated.duration,
                    pair_overlap::communication_sms(scenario),
                ),
                ..computed
            }
        }
        Work::Compute {
            pass,
            layers,
            dense_layers,
            first_layer: _,
            embedding,
            head,
            fp8_weight_cast: _,
            segment,
        } => {
            let mut seconds = 0.0;
            let mut bytes = 0.0;
            let mut flops = 0.0;
            let steps = compute_steps(scenario, work).expect("a compute work");
            for step in &steps {
                if let Step::Kernel(kernel) = step {
                    seconds += kernels.kernel_seconds(kernel);
                    bytes += kernel.bytes;
                    flops += kernel.flops;
                }
            }
            // Ring attention's K/V exchanges, where the attention steps do not hide them.
            seconds += context::exposed_exchanges(scenario, pass, &steps, kernels, network).0;
            // CPU offloading's copies, where the layers they overlap do not hide them.
            if segment == 0 || segment == WHOLE_PASS {
                seconds += activation_offload::pass_stall_seconds(
                    scenario, pass, layers, embedding, kernels, network,
                );
            }
            // A skewed routing costs every rank as its group's busiest, but
            // the FLOPs reported are the model's: the uniform routing's.
            // Token dropping and padding likewise: the dropless uniform
            // routing's FLOPs, on the rank's own b·s/(cp·t) tokens.
            if let (Some(moe), Some(routing), Some(spec)) = (
                moe_layer_options(scenario),
                &scenario.experts,
                &scenario.model.moe,
            ) {
                let uniform =
                    routing.uniform_layer_options(moe_tokens_per_rank(scenario), spec.top_k);
                if moe != uniform {
                    let moe = uniform;
                    flops = PassSteps::flops(&segment_steps(
                        pass_steps_with(
                            scenario,
                            pass,
                            layers,
                            dense_layers,
                            embedding,
                            head,
                            PassRouting::Alike(Some(moe)),
                        ),
                        segment,
                    ));
                }
            }
            WorkCost {
                duration: SimDuration::from_seconds_ceil(seconds),
                bytes: bytes as u64,
                flops,
            }
        }
        Work::TensorAllReduce {
            pass,
            group_size,
            nodes,
            ..
        } => {
            let steps = work_piece_steps(scenario, work).expect("a pass work");
            let mut duration = SimDuration::ZERO;
            let mut bytes = 0;
            for (index, step) in steps.iter().enumerate() {
                if let Step::TensorAllReduce {
                    bytes: payload,
                    async_window,
                } = *step
                {
                    let full = network.all_reduce(
                        payload,
                        group_size,
                        NodeSpread::even(group_size, nodes),
                    );
                    duration += if overlaps_all_reduce(scenario, pass, async_window) {
                        exposed_after_overlap(
                            full,
                            &steps[..index],
                            async_window,
                            kernels,
                            intra_node_collective_sm_share(&scenario.topology),
                        )
                    } else if scenario.options.tp_comm_overlap {
                        exposed_with_tp_overlap(
                            full,
                            &steps,
                            index,
                            kernels,
                            scenario.options.tp_comm_overlap_config,
                            scenario.topology.gpu.sm_count,
                        )
                    } else {
                        full
                    };
                    bytes += payload;
                }
            }
            WorkCost {
                duration,
                bytes,
                flops: 0.0,
            }
        }
        Work::ExpertAllToAll {
            group_size,
            nodes,
            expert_tensor_group,
            ..
        } => {
            let mut duration = SimDuration::ZERO;
            let mut bytes = 0;
            for step in work_piece_steps(scenario, work).expect("a pass work") {
                if let Step::ExpertAllToAll {
                    bytes: payload,
                    expert_tensor_bytes,
                } = step
                {
                    duration += pair_overlap::expert_all_to_all(
                        scenario, network, payload, group_size, nodes,
                    );
                    // The expert tensor group's all-gather or reduce-scatter
                    // (NCCL's tuner costs both alike: n − 1 ring steps, bus
                    // factor (n − 1)/n, `ring_steps`).
                    let (etp, etp_nodes) = expert_tensor_group;
                    duration += network.all_gather(
                        expert_tensor_bytes,
                        etp,
                        NodeSpread::even(etp, etp_nodes),
                    );
                    bytes += payload + expert_tensor_bytes;
                }
            }
            WorkCost {
                duration,
                bytes,
                flops: 0.0,
            }
        }
        Work::PipelineTransfer {
            bytes,
            tensor_parallel,
            crosses_nodes,
            scatter_gather,
        } => WorkCost {
            duration: network.pipeline_transfer(
                bytes,
                tensor_parallel,
                crosses_nodes,
                scatter_gather,
            ),
            bytes,
            flops: 0.0,
        },
        Work::DataParallelAllReduce {
            bytes,
            group_size,
            spread,
        } => WorkCost {
            duration: network.all_reduce(bytes, group_size, spread),
            bytes,
            flops: 0.0,
        },
        Work::OptimizerStep { params } => {
            let fused = scenario.options.fp32_main_grads();
            let optimizer = scenario.options.optimizer;
            let bytes = params as f64 * optimizer_step::optimizer_bytes_per_param(fused, optimizer);
            WorkCost {
                duration: SimDuration::from_seconds_ceil(
                    kernels.optimizer_seconds(params, fused, optimizer),
                ),
                bytes: bytes as u64,
                flops: 0.0,
            }
        }
        Work::GradientCopy {
            bytes,
            kernels: count,
        } => {
            // Each kernel reads and writes the gradients once (`bytes` in
            // all): not a class calibrate times, so costed as what a copy of
            // its bytes cost on the profiled GPU (`memory_bound.rs`).
            let seconds = count as f64 * kernels.memory_kernel_seconds(None, bytes as f64);
            WorkCost {
                duration: SimDuration::from_seconds_ceil(seconds),
                bytes: bytes.saturating_mul(count as u64),
                flops: 0.0,
            }
        }
        Work::DataParallelReduceScatter {
            bytes,
            group_size,
            spread,
        }
        | Work::DataParallelAllGather {
            bytes,
            group_size,
            spread,
        } => WorkCost {
            duration: network.all_gather(bytes, group_size, spread),
            bytes,
            flops: 0.0,
        },
        Work::OneBitAllReduce {
            elements,
            group_size,
            spread,
        } => onebit::onebit_all_reduce(elements, group_size, spread, network),
        Work::PowerSgdAllReduce {
            elements,
            matrix_elements,
            p_elements,
            q_elements,
            element_bytes,
            rank: _,
            group_size,
            spread,
        } => powersgd::powersgd_all_reduce(
            &powersgd::PowerSgdSizes {
                elements,
                matrix_elements,
                p_elements,
                q_elements,
            },
            element_bytes,
            group_size,
            spread,
            network,
        ),
        Work::DataParallelAllToAll {
            bytes,
            group_size,
            nodes,
        } => WorkCost {
            duration: network.all_to_all(bytes, group_size, nodes),
            bytes,
            flops: 0.0,
        },
        Work::PcieTransfer {
            direction,
            bytes,
            sharing_gpus,
        } => {
            let pcie = &scenario.profile.pcie;
            let rate = match direction {
                PcieDirection::DeviceToHost => pcie.device_to_host_bytes_per_s.value,
                PcieDirection::HostToDevice => pcie.host_to_device_bytes_per_s.value,
            };
            let seconds = offload::pcie_seconds_through(
                bytes,
                rate,
                sharing_gpus,
                network.pcie_link_slowdown(),
                scenario.topology.pcie.latency_ns,
            );
            WorkCost {
                duration: SimDuration::from_seconds_ceil(seconds),
                bytes,
                flops: 0.0,
            }
        }
        Work::CpuAdam {
            params,
            step_params,
            sharing_gpus,
        } => {
            let seconds = cpu_adam_tile_seconds(
                &scenario.profile.cpu_adam,
                scenario.topology.host_cpu.cores,
                params,
                step_params,
                sharing_gpus,
            );
            WorkCost {
                duration: SimDuration::from_seconds_ceil(seconds),
                // fp32 master weight, momentum and variance read and written, fp16 gradient read.
                bytes: params * 26,
                flops: 0.0,
            }
        }
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod kernel_roles_tests;
