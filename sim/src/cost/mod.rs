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
pub use tile_fit::{fit_tile_model, SustainedFrom, TileFit};
pub use tp_overlap::{exposed_with_tp_overlap, overlapping_gemms};

use models::ops::{self, PassSteps, Step};
use models::pipeline_ends;
use scenario::{Precision, Recompute, Scenario};
use std::num::NonZeroU64;
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

/// The steps of one pass over `layers` layers plus embedding/head (the
/// recompute pass: the layers' forward, or its attention core when selective);
/// a forward on a stage with the embedding or the head first loads its
/// microbatch ([`pipeline_ends::data_load`]).
/// Backward passes end each layer (and the embedding and head) with
/// Megatron's unfused gradient-accumulation kernels unless the scenario fuses
/// them ([`gradients`]); ZeRO-Offload's gradient path is DeepSpeed's, costed
/// in `offload.rs`, so it has none. A split backward's input- and
/// weight-gradient passes hold the backward's steps divided as
/// [`split_backward`] says.
pub fn pass_steps(
    scenario: &Scenario,
    pass: ComputePass,
    layers: u32,
    embedding: bool,
    head: bool,
) -> Vec<Step> {
    pass_steps_of(scenario, pass, layers, 0, embedding, head)
}

/// [`pass_steps`] of `layers` layers of which `dense_layers` are dense
/// layers of a model with experts (DeepSeek-V3's `first_dense_layers`):
/// those run the model's dense MLP of `ffn_hidden`, before the MoE layers
/// in a forward and after them in a backward (a chunk's dense layers come
/// first in the model; with a `layer_frequency` interleaving them the
/// kernels are the same, their order within the pass is not).
pub fn pass_steps_of(
    scenario: &Scenario,
    pass: ComputePass,
    layers: u32,
    dense_layers: u32,
    embedding: bool,
    head: bool,
) -> Vec<Step> {
    pass_steps_with(
        scenario,
        pass,
        layers,
        dense_layers,
        embedding,
        head,
        moe_layer_options(scenario),
    )
}

/// The steps of one segment of a pass: those between its `segment`-th and
/// the next host synchronization ([`Step::HostSync`]), or every step but the
/// synchronizations for [`WHOLE_PASS`]. Segment 0 starts the pass.
pub fn segment_steps(steps: Vec<Step>, segment: u16) -> Vec<Step> {
    if let Some(piece) = pair_overlap::piece_of(segment) {
        return pair_overlap::piece_steps(steps, piece);
    }
    if segment == WHOLE_PASS {
        return steps
            .into_iter()
            .filter(|step| !matches!(step, Step::HostSync))
            .collect();
    }
    let mut index = 0u16;
    let mut out = Vec::new();
    for step in steps {
        if matches!(step, Step::HostSync) {
            index += 1;
        } else if index == segment {
            out.push(step);
        }
    }
    out
}

/// How many host synchronizations a pass of `layers` layers (`dense_layers`
/// of them dense) makes: one per MoE layer in a forward or a full
/// recompute (the token dispatcher's device-to-host read, [`models::moe_ops`]),
/// none in a backward or a selective recompute (which does not re-run the
/// dispatcher). The segments of the pass are one more. Equals the
/// [`Step::HostSync`] steps of [`pass_steps_of`] (tested).
pub fn host_syncs(scenario: &Scenario, pass: ComputePass, layers: u32, dense_layers: u32) -> u32 {
    let moe_layers = if scenario.model.moe.is_some() && !pads_to_capacity(scenario) {
        layers - dense_layers.min(layers)
    } else {
        0
    };
    match pass {
        ComputePass::Forward => moe_layers,
        ComputePass::Recompute if scenario.recompute != Recompute::Selective => moe_layers,
        _ => 0,
    }
}

/// Whether the scenario's experts take inputs padded to their capacity
/// (`moe.pad_expert_input_to_capacity`): the dispatcher then knows every
/// split on the host and never synchronizes ([`models::moe_ops`]), so no
/// pass is cut at a host synchronization.
pub fn pads_to_capacity(scenario: &Scenario) -> bool {
    scenario
        .model
        .moe
        .as_ref()
        .is_some_and(|moe| moe.capacity_factor.is_some() && moe.pad_expert_input_to_capacity)
}

/// [`pass_steps_of`] with the MoE layers' options given (the uniform
/// routing's for the FLOPs a skewed routing's pass reports).
pub fn pass_steps_with(
    scenario: &Scenario,
    pass: ComputePass,
    layers: u32,
    dense_layers: u32,
    embedding: bool,
    head: bool,
    moe: Option<models::moe_ops::MoeLayerOptions>,
) -> Vec<Step> {
    let model = &scenario.model;
    let b = scenario.layout.microbatch_size.get() as u64;
    let t = NonZeroU64::from(scenario.layout.tensor_parallel);
    let pick = |steps: PassSteps| match pass {
        ComputePass::Forward | ComputePass::Recompute => steps.forward,
        ComputePass::Backward | ComputePass::InputGradient | ComputePass::WeightGradient => {
            steps.backward
        }
    };
    let fp8 = scenario.options.precision == Precision::Fp8;
    let accumulate = pass.is_backward()
        && !scenario.options.gradient_accumulation_fusion
        && scenario.options.offload.is_none();
    let main_grad_bytes = gradients::main_grad_bytes_per_param(scenario.options.fp32_main_grads());
    // One layer's steps: a MoE layer with `moe` (every layer of a dense
    // model), or a dense layer of a model with experts.
    let layer_of = |moe: Option<models::moe_ops::MoeLayerOptions>, dense_model: Option<&_>| {
        let layer_model = dense_model.unwrap_or(model);
        let mut layer_steps = ops::transformer_layer_with(
            layer_model,
            b,
            t,
            ops::LayerOptions {
                sequence_parallel: scenario.options.sequence_parallel,
                fused_softmax_max_seq_len: scenario.stack.fused_softmax_max_seq_len,
                fused_attention: scenario.stack.fused_attention,
                context_parallel: scenario.layout.context_parallel.into(),
                moe,
            },
        );
        if fp8 {
            layer_steps = models::fp8::fp8_layer(layer_steps);
        }
        let mut layer = pick(layer_steps);
        if pass == ComputePass::Recompute && scenario.recompute == Recompute::Selective {
            // Selective recompute re-runs the attention core, whose
            // activations are large (5·a·s/h per element of the hidden state)
            // but cheap to recompute (Korthikanti et al. 2022, Sec. 5): the
            // kernels `models` marks as the core where it creates them (with
            // grouped-query attention the K/V expansion before it, as
            // Megatron-Core's `DotProductAttention` does, so only the
            // kv-sized K and V are kept; under fused attention the one
            // kernel). No tensor all-reduce is involved.
            layer.retain(|step| matches!(step, Step::Kernel(kernel) if kernel.attention_core));
        }
        if accumulate {
            layer.extend(gradients::layer_accumulation_with_expert_split(
                layer_model,
                t,
                scenario.layout.expert_parallel.into(),
                scenario.layout.expert_tensor_parallel.into(),
                main_grad_bytes,
            ));
        }
        layer
    };
    let layer = layer_of(moe, None);
    let dense_layers = if model.moe.is_some() {
        dense_layers.min(layers)
    } else {
        0
    };
    let dense_layer = if dense_layers > 0 {
        let dense_model = models::ModelSpec {
            moe: None,
            ..model.clone()
        };
        layer_of(None, Some(&dense_model))
    } else {
        Vec::new()
    };
    let mut steps = Vec::new();
    // The stage that holds the embedding or the head loads the batch once per
    // microbatch: the head's piece of a forward cut into pieces (ZeRO-3 units)
    // loads it only on a stage without the embedding (p > 1).
    let loads_batch = embedding || (head && scenario.layout.pipeline_parallel.get() > 1);
    if loads_batch && pass == ComputePass::Forward {
        steps.extend(pipeline_ends::data_load(model, b));
    }
    if embedding && pass == ComputePass::Forward {
        steps.extend(pick(pipeline_ends::embedding(model, b, t)));
    }
    if head && pass.is_backward() {
        steps.extend(pick(pipeline_ends::head(model, b, t)));
        if accumulate {
            steps.extend(gradients::head_accumulation(model, t, main_grad_bytes));
        }
    }
    // Dense layers first in a forward (and recompute), last in a backward.
    let dense_first = !pass.is_backward();
    if dense_first {
        for _ in 0..dense_layers {
            steps.extend(dense_layer.iter().cloned());
        }
    }
    for _ in 0..layers - dense_layers {
        steps.extend(layer.iter().cloned());
    }
    if !dense_first {
        for _ in 0..dense_layers {
            steps.extend(dense_layer.iter().cloned());
        }
    }
    // Transformer Engine's delayed scaling: one fused amax-history and scale
    // update after each forward and each backward of the chunk (none in a
    // recompute, which reuses the forward's scales).
    if fp8 && layers > 0 && pass != ComputePass::Recompute {
        steps.push(models::fp8::amax_scale_update_step(
            layers,
            pass == ComputePass::Backward,
        ));
    }
    if head && pass == ComputePass::Forward {
        steps.extend(pick(pipeline_ends::head(model, b, t)));
    }
    if embedding && pass.is_backward() {
        steps.extend(pick(pipeline_ends::embedding(model, b, t)));
        if accumulate {
            steps.extend(gradients::embedding_accumulation(model, t, main_grad_bytes));
        }
    }
    match pass {
        ComputePass::InputGradient => split_backward::split(steps, false),
        ComputePass::WeightGradient => split_backward::split(steps, true),
        _ => steps,
    }
}

/// What expert parallelism and the routing make of a MoE layer on the
/// busiest rank of its expert-parallel group (None for dense models).
pub fn moe_layer_options(scenario: &Scenario) -> Option<models::moe_ops::MoeLayerOptions> {
    let (routing, moe) = scenario.experts.as_ref().zip(scenario.model.moe.as_ref())?;
    Some(routing.layer_options(moe_tokens_per_rank(scenario), moe.top_k))
}

/// The tokens a rank routes per microbatch: b·s/cp split t ways
/// ([`models::moe_ops::tokens_per_rank`]).
pub fn moe_tokens_per_rank(scenario: &Scenario) -> u64 {
    let layout = &scenario.layout;
    models::moe_ops::tokens_per_rank(
        layout.microbatch_size.get() as u64 * scenario.model.seq_len
            / layout.context_parallel.get() as u64,
        layout.tensor_parallel.into(),
    )
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

/// The steps a compute work runs, in order: an FP8 pass's weight casts
/// first (in its first segment), then its segment of the pass's steps;
/// `None` for a work that is not a computation.
pub fn compute_steps(scenario: &Scenario, work: &Work) -> Option<Vec<Step>> {
    let Work::Compute {
        pass,
        layers,
        dense_layers,
        embedding,
        head,
        fp8_weight_cast,
        segment,
    } = *work
    else {
        return None;
    };
    let mut steps = Vec::new();
    if pair_overlap::is_first_segment(segment) {
        steps = activation_codec::codec_steps(scenario, pass, layers);
    }
    if fp8_weight_cast && pair_overlap::is_first_segment(segment) {
        steps.extend(models::fp8::weight_cast_steps(
            &scenario.model,
            scenario.layout.tensor_parallel.into(),
            scenario.layout.expert_parallel.into(),
            layers,
        ));
    }
    steps.extend(segment_steps(
        pass_steps_of(scenario, pass, layers, dense_layers, embedding, head),
        segment,
    ));
    Some(steps)
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
                            Some(moe),
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
            layers,
            dense_layers,
            embedding,
            head,
            group_size,
            nodes,
            segment,
        } => {
            let steps = segment_steps(
                pass_steps_of(scenario, pass, layers, dense_layers, embedding, head),
                segment,
            );
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
            pass,
            layers,
            dense_layers,
            embedding,
            head,
            group_size,
            nodes,
            expert_tensor_group,
            segment,
        } => {
            let mut duration = SimDuration::ZERO;
            let mut bytes = 0;
            for step in segment_steps(
                pass_steps_of(scenario, pass, layers, dense_layers, embedding, head),
                segment,
            ) {
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
            let seconds =
                pcie_seconds(bytes, rate, sharing_gpus, scenario.topology.pcie.latency_ns);
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
