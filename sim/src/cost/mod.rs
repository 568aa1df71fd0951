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

mod attention;
mod breakdown;
pub mod context;
pub mod gradients;
mod host;
mod kernels;
mod memory_bound;
mod network;
mod offload;
pub mod split_backward;
mod tp_overlap;

pub use breakdown::{layer_fp8_weight_casts, layer_kernel_costs, KernelCost, RING_EXCHANGE_ROW};
pub use kernels::{gemm_seconds, memory_bound_seconds, quantization_efficiency, KernelCostModel};
pub use memory_bound::{interpolate_seconds, MeasuredPoint, MemoryCostModel};
pub use network::{ClosedFormNetwork, NetworkModel};
pub use offload::{cpu_adam_host_seconds, cpu_adam_tile_seconds, pcie_seconds};
pub use tp_overlap::{exposed_with_tp_overlap, overlapping_gemms};

use crate::scenario::{Precision, Recompute, Scenario};
use crate::task_graph::{ComputePass, PcieDirection, Work};
use crate::time::SimDuration;
use models::ops::{self, PassSteps, Step};
use models::pipeline_ends;

/// The cost of one work: its duration and what it moves or computes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WorkCost {
    pub duration: SimDuration,
    /// Bytes communicated (communication) or moved through HBM (compute).
    pub bytes: u64,
    /// Matrix FLOPs per rank.
    pub flops: f64,
}

/// Kernels re-run by selective recompute: the attention core, whose
/// activations are large (5·a·s/h per element of the hidden state) but cheap to
/// recompute (Korthikanti et al. 2022, Sec. 5). No tensor all-reduce is
/// involved. A name covers its sub-kernels too ("softmax.scale" when the
/// softmax runs eagerly: [`models::softmax`]). With grouped-query attention
/// the core starts by expanding K and V to every query head (Megatron-Core's
/// `DotProductAttention`), so that copy is re-run too and only the
/// kv-sized K and V are kept ([`models::memory`]). Under a stack with fused
/// attention the core is one kernel ([`models::attention`]).
pub const SELECTIVE_RECOMPUTE_KERNELS: [&str; 6] = [
    "gqa_expand_kv",
    "attention_scores",
    "softmax",
    "attention_dropout",
    "attention_over_values",
    "fused_attention",
];

/// Whether selective recompute re-runs the kernel of this name.
fn is_selectively_recomputed(name: &str) -> bool {
    SELECTIVE_RECOMPUTE_KERNELS.iter().any(|kernel| {
        name.strip_prefix(kernel)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('.'))
    })
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
    let model = &scenario.model;
    let b = scenario.layout.microbatch_size as u64;
    let t = scenario.layout.tensor_parallel as u64;
    let pick = |steps: PassSteps| match pass {
        ComputePass::Forward | ComputePass::Recompute => steps.forward,
        ComputePass::Backward | ComputePass::InputGradient | ComputePass::WeightGradient => {
            steps.backward
        }
    };
    let mut layer_steps = ops::transformer_layer_with(
        model,
        b,
        t,
        ops::LayerOptions {
            sequence_parallel: scenario.options.sequence_parallel,
            fused_softmax_max_seq_len: scenario.stack.fused_softmax_max_seq_len,
            fused_attention: scenario.stack.fused_attention,
            context_parallel: scenario.layout.context_parallel as u64,
        },
    );
    let fp8 = scenario.options.precision == Precision::Fp8;
    if fp8 {
        layer_steps = models::fp8::fp8_layer(layer_steps);
    }
    let mut layer = pick(layer_steps);
    if pass == ComputePass::Recompute && scenario.recompute == Recompute::Selective {
        layer.retain(
            |step| matches!(step, Step::Kernel(kernel) if is_selectively_recomputed(kernel.name)),
        );
    }
    let accumulate = pass.is_backward()
        && !scenario.options.gradient_accumulation_fusion
        && scenario.options.offload.is_none();
    if accumulate {
        layer.extend(gradients::layer_accumulation(model, t));
    }
    let mut steps = Vec::new();
    // The stage that holds the embedding or the head loads the batch once per
    // microbatch: the head's piece of a forward cut into pieces (ZeRO-3 units)
    // loads it only on a stage without the embedding (p > 1).
    let loads_batch = embedding || (head && scenario.layout.pipeline_parallel > 1);
    if loads_batch && pass == ComputePass::Forward {
        steps.extend(pipeline_ends::data_load(model, b));
    }
    if embedding && pass == ComputePass::Forward {
        steps.extend(pick(pipeline_ends::embedding(model, b, t)));
    }
    if head && pass.is_backward() {
        steps.extend(pick(pipeline_ends::head(model, b, t)));
        if accumulate {
            steps.extend(gradients::head_accumulation(model, t));
        }
    }
    for _ in 0..layers {
        steps.extend(layer.iter().cloned());
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
            steps.extend(gradients::embedding_accumulation(model, t));
        }
    }
    match pass {
        ComputePass::InputGradient => split_backward::split(steps, false),
        ComputePass::WeightGradient => split_backward::split(steps, true),
        _ => steps,
    }
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
/// `window` kernels just before it (it runs alongside them; the pass waits
/// only for the rest).
pub(crate) fn exposed_after_overlap(
    full: SimDuration,
    before: &[Step],
    window: u32,
    kernels: &KernelCostModel,
) -> SimDuration {
    let overlapped_s: f64 = before
        .iter()
        .rev()
        .take(window as usize)
        .map(|step| match step {
            Step::Kernel(kernel) => kernels.kernel_seconds(kernel),
            Step::TensorAllReduce { .. } => 0.0,
        })
        .sum();
    SimDuration::from_seconds_ceil(full.as_seconds() - overlapped_s)
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
        Work::Compute {
            pass,
            layers,
            embedding,
            head,
            fp8_weight_cast,
        } => {
            let mut seconds = 0.0;
            let mut bytes = 0.0;
            let mut flops = 0.0;
            let mut steps = Vec::new();
            if fp8_weight_cast {
                steps = models::fp8::weight_cast_steps(
                    &scenario.model,
                    scenario.layout.tensor_parallel as u64,
                    layers,
                );
            }
            steps.extend(pass_steps(scenario, pass, layers, embedding, head));
            for step in &steps {
                if let Step::Kernel(kernel) = step {
                    seconds += kernels.kernel_seconds(kernel);
                    bytes += kernel.bytes;
                    flops += kernel.flops;
                }
            }
            // Ring attention's K/V exchanges, where the attention steps do not hide them.
            seconds += context::exposed_exchanges(scenario, pass, &steps, kernels, network).0;
            WorkCost {
                duration: SimDuration::from_seconds_ceil(seconds),
                bytes: bytes as u64,
                flops,
            }
        }
        Work::TensorAllReduce {
            pass,
            layers,
            embedding,
            head,
            group_size,
            nodes,
        } => {
            let steps = pass_steps(scenario, pass, layers, embedding, head);
            let mut duration = SimDuration::ZERO;
            let mut bytes = 0;
            for (index, step) in steps.iter().enumerate() {
                if let Step::TensorAllReduce {
                    bytes: payload,
                    async_window,
                } = *step
                {
                    let full = network.all_reduce(payload, group_size, nodes);
                    duration += if overlaps_all_reduce(scenario, pass, async_window) {
                        exposed_after_overlap(full, &steps[..index], async_window, kernels)
                    } else if scenario.options.tp_comm_overlap {
                        exposed_with_tp_overlap(full, &steps, index, kernels)
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
            nodes,
        } => WorkCost {
            duration: network.all_reduce(bytes, group_size, nodes),
            bytes,
            flops: 0.0,
        },
        Work::OptimizerStep { params } => {
            let fused = scenario.options.gradient_accumulation_fusion;
            let bytes = params as f64 * gradients::optimizer_bytes_per_param(fused);
            WorkCost {
                duration: SimDuration::from_seconds_ceil(kernels.optimizer_seconds(params, fused)),
                bytes: bytes as u64,
                flops: 0.0,
            }
        }
        Work::DataParallelReduceScatter {
            bytes,
            group_size,
            nodes,
        }
        | Work::DataParallelAllGather {
            bytes,
            group_size,
            nodes,
        } => WorkCost {
            duration: network.all_gather(bytes, group_size, nodes),
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
mod tests {
    use super::*;
    use crate::scenario::ScenarioFile;

    fn scenario(recompute: Recompute, sequence_parallel: bool) -> Scenario {
        ScenarioFile {
            recompute: Some(recompute),
            options: crate::scenario::TrainingOptionsFile {
                sequence_parallel: Some(sequence_parallel),
                ..Default::default()
            },
            ..ScenarioFile::embedded_default()
        }
        .resolve()
        .unwrap()
    }

    #[test]
    fn selective_recompute_reruns_only_the_attention_core_without_all_reduces() {
        let steps = pass_steps(
            &scenario(Recompute::Selective, true),
            ComputePass::Recompute,
            2,
            false,
            false,
        );
        let names: Vec<&str> = steps
            .iter()
            .map(|step| match step {
                Step::Kernel(kernel) => kernel.name,
                Step::TensorAllReduce { .. } => "all_reduce",
            })
            .collect();
        // GPT-3 has multi-head attention: no K/V expansion.
        let core = &SELECTIVE_RECOMPUTE_KERNELS[1..5];
        assert_eq!(names, [core, core].concat());
        let full = pass_steps(
            &scenario(Recompute::Full, false),
            ComputePass::Recompute,
            2,
            false,
            false,
        );
        assert_eq!(
            full,
            pass_steps(
                &scenario(Recompute::Full, false),
                ComputePass::Forward,
                2,
                false,
                false
            )
        );
    }

    #[test]
    fn selective_recompute_of_grouped_query_attention_reruns_the_kv_expansion() {
        let mut scenario = scenario(Recompute::Selective, true);
        scenario.model = models::preset("llama3-8b").unwrap();
        // Within the default stack's fused-softmax limit: one softmax kernel.
        scenario.model.seq_len = 2048;
        let steps = pass_steps(&scenario, ComputePass::Recompute, 1, false, false);
        let names: Vec<&str> = steps
            .iter()
            .filter_map(|step| match step {
                Step::Kernel(kernel) => Some(kernel.name),
                Step::TensorAllReduce { .. } => None,
            })
            .collect();
        assert_eq!(names, SELECTIVE_RECOMPUTE_KERNELS[..5]);
        // Under a stack with fused attention the core is the one fused kernel.
        scenario.stack.fused_attention = true;
        let fused: Vec<&str> = pass_steps(&scenario, ComputePass::Recompute, 1, false, false)
            .iter()
            .filter_map(|step| match step {
                Step::Kernel(kernel) => Some(kernel.name),
                Step::TensorAllReduce { .. } => None,
            })
            .collect();
        assert_eq!(fused, ["fused_attention"]);
    }

    fn accumulation_kernels(scenario: &Scenario, embedding: bool, head: bool) -> usize {
        pass_steps(scenario, ComputePass::Backward, 3, embedding, head)
            .iter()
            .filter(|step| matches!(step, Step::Kernel(k) if k.name.ends_with(".grad_accumulate")))
            .count()
    }

    #[test]
    fn unfused_backward_accumulates_every_parameter_tensor_once_per_microbatch() {
        let unfused = scenario(Recompute::Full, false);
        assert!(
            !unfused.options.gradient_accumulation_fusion,
            "the default is unfused"
        );
        // 12 tensors per layer, 3 layers; the embedding adds 2, the head 3.
        assert_eq!(accumulation_kernels(&unfused, false, false), 36);
        assert_eq!(accumulation_kernels(&unfused, true, true), 41);
        let fused = ScenarioFile {
            options: crate::scenario::TrainingOptionsFile {
                gradient_accumulation_fusion: Some(true),
                ..Default::default()
            },
            ..ScenarioFile::embedded_default()
        }
        .resolve()
        .unwrap();
        assert_eq!(accumulation_kernels(&fused, true, true), 0);
        // The forward never accumulates.
        assert!(pass_steps(&unfused, ComputePass::Forward, 3, true, true)
            .iter()
            .all(|step| !matches!(step, Step::Kernel(k) if k.name.ends_with(".grad_accumulate"))));
    }

    #[test]
    fn fused_accumulation_is_cheaper_per_microbatch_and_all_reduces_twice_the_bytes() {
        let file = |fused: bool| ScenarioFile {
            model: Some("gpt3-175b".into()),
            tp: Some(8),
            pp: Some(8),
            dp: Some(2),
            global_batch: Some(16),
            options: crate::scenario::TrainingOptionsFile {
                gradient_accumulation_fusion: Some(fused),
                ..Default::default()
            },
            ..ScenarioFile::embedded_default()
        };
        let cost = |fused: bool, work: Work| {
            let scenario = file(fused).resolve().unwrap();
            let network = ClosedFormNetwork::for_scenario(&scenario);
            cost_works(&scenario, &[work], &network)[0]
        };
        let backward = Work::Compute {
            pass: ComputePass::Backward,
            layers: 12,
            embedding: false,
            head: false,
            fp8_weight_cast: false,
        };
        let (unfused, fused) = (cost(false, backward.clone()), cost(true, backward));
        let scenario = file(false).resolve().unwrap();
        let params_per_layer: u64 = ops::layer_parameter_tensors(&scenario.model, 8)
            .iter()
            .map(|p| p.elements)
            .sum();
        assert_eq!(
            unfused.bytes - fused.bytes,
            12 * 6 * params_per_layer,
            "6 bytes per parameter of the 12 layers"
        );
        let optimizer = Work::OptimizerStep {
            params: 1_000_000_000,
        };
        assert_eq!(cost(false, optimizer.clone()).bytes, 54_000_000_000);
        assert_eq!(cost(true, optimizer).bytes, 50_000_000_000);
        let data_parallel_bytes = |fused: bool| -> Vec<u64> {
            let scenario = file(fused).resolve().unwrap();
            let l = scenario.layout;
            let schedule = crate::schedule::PipelineSchedule::generate(
                scenario.schedule,
                l.pipeline_parallel,
                l.chunks,
                l.microbatches,
            );
            crate::lowering::lower(&scenario, &schedule)
                .works()
                .iter()
                .filter_map(|work| match work {
                    Work::DataParallelAllReduce { bytes, .. } => Some(*bytes),
                    _ => None,
                })
                .collect()
        };
        let (fp16, fp32) = (data_parallel_bytes(false), data_parallel_bytes(true));
        assert!(!fp16.is_empty());
        assert_eq!(fp32, fp16.iter().map(|b| 2 * b).collect::<Vec<_>>());
    }

    #[test]
    fn an_asynchronous_all_reduce_is_charged_only_beyond_its_overlap_window() {
        let scenario = scenario(Recompute::Full, false);
        let kernels = KernelCostModel::new(&scenario.topology.gpu, &scenario.profile)
            .with_precision(scenario.options.precision);
        let memory = |bytes: f64| {
            Step::Kernel(models::ops::Kernel {
                name: "k",
                class: models::ops::KernelClass::MemoryBound,
                flops: 0.0,
                bytes,
            })
        };
        // Three kernels before the all-reduce; a window of 2 overlaps the last two.
        let before = [memory(1e9), memory(2e9), memory(3e9)];
        let seconds = |step: &Step| match step {
            Step::Kernel(k) => kernels.kernel_seconds(k),
            Step::TensorAllReduce { .. } => 0.0,
        };
        let window_s = seconds(&before[1]) + seconds(&before[2]);
        let long = SimDuration::from_seconds_ceil(window_s + 1e-3);
        let exposed = exposed_after_overlap(long, &before, 2, &kernels);
        assert!((exposed.as_seconds() - 1e-3).abs() < 2e-9, "{exposed:?}");
        let short = SimDuration::from_seconds_ceil(window_s * 0.5);
        assert_eq!(
            exposed_after_overlap(short, &before, 2, &kernels),
            SimDuration::ZERO
        );
    }

    #[test]
    fn async_tensor_all_reduce_hides_backward_all_reduces_only() {
        let file = |overlap: bool| ScenarioFile {
            model: Some("gpt-22b".into()),
            tp: Some(8),
            pp: Some(1),
            dp: Some(1),
            microbatch_size: Some(4),
            global_batch: Some(4),
            options: crate::scenario::TrainingOptionsFile {
                async_tensor_allreduce: Some(overlap),
                ..Default::default()
            },
            ..ScenarioFile::embedded_default()
        };
        let cost = |overlap: bool, pass: ComputePass| {
            let scenario = file(overlap).resolve().unwrap();
            let network = ClosedFormNetwork::for_scenario(&scenario);
            let work = Work::TensorAllReduce {
                pass,
                layers: 2,
                embedding: false,
                head: false,
                group_size: 8,
                nodes: 1,
            };
            cost_works(&scenario, &[work], &network)[0]
        };
        assert_eq!(
            cost(true, ComputePass::Forward),
            cost(false, ComputePass::Forward)
        );
        let (blocking, overlapped) = (
            cost(false, ComputePass::Backward),
            cost(true, ComputePass::Backward),
        );
        assert_eq!(blocking.bytes, overlapped.bytes, "the same bytes move");
        // 22B at t=8, b=4: each 100 MB all-reduce (0.84 ms) is shorter than the
        // weight-gradient GEMM it overlaps (0.93 and 1.28 ms): nothing is exposed.
        assert!(blocking.duration > SimDuration::ZERO);
        assert_eq!(overlapped.duration, SimDuration::ZERO);
        let error = ScenarioFile {
            options: crate::scenario::TrainingOptionsFile {
                sequence_parallel: Some(true),
                ..file(true).options.clone()
            },
            ..file(true)
        }
        .resolve()
        .unwrap_err()
        .to_string();
        assert!(error.contains("async_tensor_allreduce"), "{error}");
    }

    #[test]
    fn sequence_parallelism_splits_elementwise_bytes_but_not_gemm_flops() {
        let plain = pass_steps(
            &scenario(Recompute::None, false),
            ComputePass::Forward,
            1,
            false,
            false,
        );
        let split = pass_steps(
            &scenario(Recompute::None, true),
            ComputePass::Forward,
            1,
            false,
            false,
        );
        assert_eq!(PassSteps::flops(&plain), PassSteps::flops(&split));
        let bytes_of = |steps: &[Step], name: &str| {
            steps
                .iter()
                .find_map(|s| match s {
                    Step::Kernel(k) if k.name == name => Some(k.bytes),
                    _ => None,
                })
                .unwrap()
        };
        assert_eq!(
            bytes_of(&plain, "layernorm_1"),
            8.0 * bytes_of(&split, "layernorm_1")
        );
        assert_eq!(bytes_of(&plain, "softmax"), bytes_of(&split, "softmax"));
    }
}
