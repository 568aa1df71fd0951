//! GPU memory per rank: model states (fp16 weights, fp16 gradients, fp32
//! Adam states: 16 bytes per parameter, ZeRO paper Sec. 3.1; other
//! optimizers' states are [`scenario::optimizer`]'s), activations of
//! the microbatches in flight (the schedule's own peak, counted from its action
//! list), the head's logits, and pipeline buffers. Allocator fragmentation and
//! library workspaces are not modeled; the report says so. Under context
//! parallelism a rank keeps the activations of its s/cp tokens (Korthikanti's
//! selective count: Transformer Engine's fused ring attention stores no
//! scores), four K/V-sized ring receive buffers, and the distributed
//! optimizer shards over the d·cp ranks of the dp-cp group.
//!
//! Under ZeRO-Offload (paper Sec. 4.1) the GPU keeps only fp16 parameters
//! (2 bytes per parameter), activations and two gradient-bucket buffers (one
//! filling while the other drains over PCIe); the CPU keeps each rank's
//! 1/d shard of fp16 gradients (2) and fp32 master weights, momentum and
//! variance (12): 14 bytes per shard parameter, plus a second gradient buffer
//! (2) with the delayed parameter update, whose next backward lands while the
//! CPU still reads the previous gradients. CPU capacity per GPU is the host's
//! memory divided by the job's GPUs on that node.
//!
//! Under `--precision fp8` (`models::fp8`) the weights grow by each layer's
//! cached FP8 weights and transposes and its amax histories and scales
//! (counted in `weight_bytes`), and the linear layers' saved inputs shrink to
//! 1 byte per element.
//!
//! Sharded data parallelism over shard groups of N ranks (N = d unless HSDP):
//! ZeRO-1 keeps 1/d of the optimizer states; ZeRO-2 also 1/N of the
//! gradients, plus two buckets of full gradients (one filling while the
//! other is reduce-scattered); ZeRO-3 also 1/N of the parameters, plus the
//! gathered working set: the weights and gradients of the two largest units
//! FSDP's rate limiter lets be in flight (`plan::shard_plan`), at most the
//! rank's whole share.
//!
//! Under CPU offloading of N layers' activations (p = 1, one microbatch in
//! flight; `cost::activation_offload`) the GPU holds at most L − N + 1
//! layers' activations, the moment before Transformer Engine frees the last
//! offloaded group, and the host N layers' (in `cpu_bytes`).

use crate::cost::gradients;
use crate::plan::shard_plan;
use crate::plan::Plan;
use models::memory::{
    stored_activation_bytes_per_layer_with, RecomputeKind, GRADIENT_BYTES_PER_PARAM,
    WEIGHT_BYTES_PER_PARAM,
};
use models::sharding::parameters_on_rank;
use scenario::ZeroStage;
use scenario::{Recompute, Scenario};
use serde::Serialize;

/// Memory use of one rank at its peak.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MemoryBreakdown {
    pub stage: u32,
    pub parameters: u64,
    pub weight_bytes: u64,
    pub gradient_bytes: u64,
    pub optimizer_state_bytes: u64,
    /// Activations at the rank's peak, with what deferred weight-gradient
    /// passes keep at that same moment (split backwards).
    pub activation_bytes: u64,
    /// Of `activation_bytes`, the deferred weight-gradient passes' state
    /// (each linear layer's input and output gradient; 0 unless split).
    #[serde(skip_serializing_if = "is_zero")]
    pub weight_gradient_pending_bytes: u64,
    pub peak_microbatches_in_flight: u32,
    /// GPU bytes: weights + gradients + optimizer states + activations.
    pub total_bytes: u64,
    pub capacity_bytes: u64,
    /// GPU and CPU both fit.
    pub fits: bool,
    /// Host memory this rank uses (ZeRO-Offload's gradients and optimizer states; 0 otherwise).
    pub cpu_bytes: u64,
    /// This rank's share of its node's host memory.
    pub cpu_capacity_bytes: u64,
    pub cpu_fits: bool,
}

fn is_zero(bytes: &u64) -> bool {
    *bytes == 0
}

/// Host bytes per offloaded parameter: fp16 gradient (2) + fp32 weight, momentum, variance (12).
pub const OFFLOAD_CPU_BYTES_PER_PARAM: u64 = 14;

/// Bytes one layer saves less per microbatch when the linear layers' inputs
/// are kept in FP8 ([`models::fp8::saved_input_bytes_per_token`]): the
/// replicated part on every tensor rank (÷t with sequence parallelism), the
/// split part ÷t.
pub fn fp8_saved_input_reduction(
    model: &models::ModelSpec,
    microbatch: u64,
    tensor_parallel: u64,
    sequence_parallel: bool,
) -> f64 {
    let (replicated, split) = models::fp8::saved_input_bytes_per_token(model);
    let tokens = (model.seq_len * microbatch) as f64;
    let t = tensor_parallel as f64;
    let replicated = if sequence_parallel {
        replicated as f64 / t
    } else {
        replicated as f64
    };
    tokens * (replicated + split as f64 / t)
}

/// What a MoE layer stores per microbatch beyond the dense layer's formula
/// ([`models::memory`], whose MLP term is the dense `ffn_hidden` MLP's: 4·F
/// (GeLU) or 6·F (SwiGLU) bytes per token): per routed copy on the busiest
/// rank (R/T per token) the expert's input and output (2·2h, the latter for
/// the combine's probability gradient), its fc1 output and activation
/// output (4·F + 2·F for SwiGLU, 2·F + 2·F for GeLU); per token the k routing
/// probabilities and int64 indices (10·k) and the E router probabilities
/// (2·E) for the softmax's backward; under FP8 each copy's fc1 and fc2
/// inputs at 1 B ([`models::fp8::expert_saved_input_bytes_per_copy`]).
/// Under expert tensor parallelism the experts run on the etp·R copies
/// their group gathered: the gathered input (2h each) and 1/etp of the
/// fc1 and activation outputs per gathered copy, the output still per
/// received copy: R·(2h + etp·2h + expert MLP). Under a capacity factor
/// R is the capped (or padded) count, and the router keeps its T×E
/// capacity mask (1 B each) for the probabilities' backward.
/// Nothing under full recompute (only the layer input is kept). 0 for dense
/// models. A model's dense layers among its MoE layers (DeepSeek-V3's first
/// three) are counted with it too: an overestimate where a MoE layer stores
/// more than the dense one, as DeepSeek-V3's do.
pub fn moe_activation_delta_bytes(scenario: &Scenario, kind: RecomputeKind) -> f64 {
    let (Some(moe), Some(options)) = (
        &scenario.model.moe,
        crate::cost::moe_layer_options(scenario),
    ) else {
        return 0.0;
    };
    if kind == RecomputeKind::Full {
        return 0.0;
    }
    let model = &scenario.model;
    let tokens = models::moe_ops::tokens_per_rank(
        scenario.layout.microbatch_size.get() as u64 * model.seq_len
            / scenario.layout.context_parallel.get() as u64,
        scenario.layout.tensor_parallel.into(),
    ) as f64;
    let (h, f) = (model.hidden as f64, moe.expert_ffn_hidden as f64);
    let (dense_mlp, expert_mlp) = match model.ffn_type {
        models::FfnType::Gelu => (4.0 * model.ffn() as f64, 4.0 * f),
        models::FfnType::Swiglu => (6.0 * model.ffn() as f64, 6.0 * f),
    };
    let routed = options.busiest_rank_tokens as f64;
    // Under FP8 the experts' fc1 and fc2 inputs are saved in FP8 (1 B).
    let fp8_saved = if scenario.options.precision == scenario::Precision::Fp8 {
        models::fp8::expert_saved_input_bytes_per_copy(model) as f64
    } else {
        0.0
    };
    let etp = options.expert_tensor_parallel.get() as f64;
    let capacity_mask = if options.capacity.is_some() {
        moe.experts as f64
    } else {
        0.0
    };
    routed * (2.0 * h + etp * 2.0 * h + expert_mlp - fp8_saved)
        + tokens * (10.0 * moe.top_k as f64 + 2.0 * moe.experts as f64 + capacity_mask - dense_mlp)
}

/// The model as one rank sees its sequence: under context parallelism its
/// s/cp tokens.
fn rank_model_of(scenario: &Scenario) -> models::ModelSpec {
    let cp = scenario.layout.context_parallel.get() as u64;
    let mut rank_model = scenario.model.clone();
    if cp > 1 {
        rank_model.seq_len = scenario.model.seq_len / cp;
    }
    rank_model
}

/// One layer's saved activations for one microbatch on one rank, bytes,
/// under recompute `kind`. Under context parallelism a rank keeps the
/// activations of its s/cp tokens, and its attention core is Transformer
/// Engine's fused ring attention, which stores no s² scores
/// (`models::attention`).
pub fn layer_activation_bytes(scenario: &Scenario, kind: RecomputeKind) -> f64 {
    let layout = &scenario.layout;
    let (b, t) = (
        layout.microbatch_size.get() as u64,
        layout.tensor_parallel.get() as u64,
    );
    let sequence_parallel = scenario.options.sequence_parallel;
    let fp8 = scenario.options.precision == scenario::Precision::Fp8;
    let rank_model = rank_model_of(scenario);
    let fused_attention = scenario.stack.fused_attention || layout.context_parallel.get() > 1;
    stored_activation_bytes_per_layer_with(
        &rank_model,
        b,
        t,
        sequence_parallel,
        kind,
        fused_attention,
    ) + moe_activation_delta_bytes(scenario, kind)
        - if fp8 && kind != RecomputeKind::Full {
            fp8_saved_input_reduction(&rank_model, b, t, sequence_parallel)
        } else {
            0.0
        }
}

/// What a layer keeps for its backward under a scenario's recompute mode.
pub fn recompute_kind(recompute: Recompute) -> RecomputeKind {
    match recompute {
        Recompute::None => RecomputeKind::None,
        Recompute::Selective => RecomputeKind::Selective,
        Recompute::Full => RecomputeKind::Full,
    }
}

/// The stage with the most memory (of equals, the first).
pub fn peak_of(memory: &[MemoryBreakdown]) -> &MemoryBreakdown {
    memory
        .iter()
        .max_by_key(|m| (m.total_bytes, std::cmp::Reverse(m.stage)))
        .expect("at least one stage")
}

/// Peak memory of one rank of every stage.
pub fn memory_per_stage(scenario: &Scenario, plan: &Plan) -> Vec<MemoryBreakdown> {
    let schedule = &plan.schedule;
    let model = &scenario.model;
    let layout = &scenario.layout;
    let (b, t) = (
        layout.microbatch_size.get() as u64,
        layout.tensor_parallel.get() as u64,
    );
    // The most layers a chunk builds: under an uneven split the first and
    // last virtual stages build one fewer, which this overstates by a layer
    // of activations there (conservative). An explicit pipeline layout
    // counts each chunk's own layers (`peak_in_flight_layers` below).
    let sharding = layout.sharding();
    let layers_per_chunk = sharding.layers_per_chunk(model.layers);
    let kind = recompute_kind(scenario.recompute);
    let fp8 = scenario.options.precision == scenario::Precision::Fp8;
    let cp = layout.context_parallel.get() as u64;
    let rank_model = rank_model_of(scenario);
    let stored = |kind| layer_activation_bytes(scenario, kind);
    // What a layer keeps for its backward, encoded under activation
    // compression (the working set of a recomputed layer is not).
    let compression = scenario
        .options
        .activation_compression
        .map_or(1.0, |ratio| ratio.get());
    let saved = |kind| stored(kind) / compression;
    // CPU offloading (p = 1, one microbatch in flight): at most L − N + 1
    // layers' activations on the GPU, N layers' in host memory.
    let offloaded = u64::from(scenario.options.activation_offload_layers);
    let resident_layers = match offloaded {
        0 => layers_per_chunk,
        n => layers_per_chunk - n + 1,
    };
    let per_microbatch_chunk = resident_layers as f64 * saved(kind);
    // Working set while one layer's recomputed activations are live (one layer at a time).
    let working_layer = match scenario.recompute {
        Recompute::None => 0.0,
        Recompute::Selective | Recompute::Full => stored(RecomputeKind::None) - stored(kind),
    };
    // The ring's double-buffered receive: two buffers of K/V and dK/dV
    // (TE's backward `p2p_comm_buffers`, each `(2, *kv.shape)`), live while
    // one layer's attention runs.
    let ring_buffers = if cp > 1 {
        4.0 * crate::cost::context::kv_chunk_bytes(scenario) as f64
    } else {
        0.0
    };
    let hidden_bytes = (b * rank_model.seq_len * model.hidden * 2) as f64;
    // A MoE layer's all-to-all send and receive buffers (the busiest rank's
    // R·h bf16 each), live while one layer runs; under etp > 1 also the
    // experts' gathered output before its reduce-scatter (etp·R·h bf16).
    let dispatch_buffers = crate::cost::moe_layer_options(scenario).map_or(0.0, |moe| {
        let etp = moe.expert_tensor_parallel.get();
        let gathered = if etp > 1 { etp } else { 0 };
        ((2 + gathered) * moe.busiest_rank_tokens * model.hidden * 2) as f64
    });
    let shard_plan = plan
        .shard_plan
        .filter(shard_plan::ShardPlan::shards_gradients);
    (0..layout.pipeline_parallel.get())
        .map(|stage| {
            let parameters = parameters_on_rank(model, layout.sharding(), stage);
            let expert_parameters =
                models::sharding::expert_parameters_of_stage(model, layout.sharding(), stage);
            let in_flight = schedule.peak_in_flight(stage);
            // A stage holding a head (DualPipe: ranks 0 and p−1 both do).
            let is_last = sharding.holds_head(stage);
            // fp16 logits plus their fp32 softmax for the loss, one microbatch at a time.
            let logits = if is_last {
                (b * rank_model.seq_len * model.vocab / t * 6) as f64
            } else {
                0.0
            };
            // Send and receive buffers for both directions.
            let pipeline_buffers = if layout.pipeline_parallel.get() > 1 {
                4.0 * hidden_bytes
            } else {
                0.0
            };
            // An explicit layout's chunks may differ by many layers: count
            // the layers whose activations are held at the peak exactly.
            let held = match sharding.split.layout {
                Some(_) => {
                    schedule.peak_in_flight_layers(stage, |chunk| {
                        sharding.layers_of_chunk(model.layers, stage, chunk)
                    }) as f64
                        * saved(kind)
                }
                None => in_flight as f64 * per_microbatch_chunk,
            };
            // A split backward keeps, from each input-gradient pass until its
            // deferred weight-gradient pass, the linear layers' inputs and
            // output gradients: counted with the activations at their joint
            // peak over the stage's action order (not the sum of both peaks).
            let (held, weight_gradient_pending_bytes) = if scenario.schedule.splits_backward() {
                let chunk_layers = |chunk| sharding.layers_of_chunk(model.layers, stage, chunk);
                let pending: Vec<f64> = (0..layout.chunks.get())
                    .map(|chunk| {
                        let head = sharding.is_end(sharding.virtual_stage(stage, chunk)).1;
                        crate::cost::split_backward::weight_gradient_state_bytes(
                            scenario,
                            chunk_layers(chunk) as u32,
                            head,
                        ) as f64
                    })
                    .collect();
                let (joint, owed) = schedule.peak_held_bytes(
                    stage,
                    |chunk| match sharding.split.layout {
                        Some(_) => chunk_layers(chunk) as f64 * saved(kind),
                        None => per_microbatch_chunk,
                    },
                    |chunk| pending[chunk as usize],
                );
                (joint, owed as u64)
            } else {
                (held, 0)
            };
            let activation_bytes = (held
                + working_layer
                + ring_buffers
                + dispatch_buffers
                + logits
                + pipeline_buffers) as u64;
            // FP8: each layer's cached FP8 weights with their transposes and
            // its amax histories and scales ([`models::fp8`]).
            let fp8_state_bytes = if fp8 {
                (0..layout.chunks.get())
                    .map(|chunk| sharding.layers_of_chunk(model.layers, stage, chunk))
                    .sum::<u64>()
                    * models::fp8::extra_state_bytes_per_layer(
                        model,
                        layout.tensor_parallel.into(),
                        layout.expert_parallel.into(),
                    )
            } else {
                0
            };
            let mut weight_bytes = parameters * WEIGHT_BYTES_PER_PARAM + fp8_state_bytes;
            let grad_bytes_per_param =
                gradients::main_grad_bytes_per_param(scenario.options.fp32_main_grads());
            let optimizer = scenario.options.optimizer;
            let (gradient_bytes, optimizer_state_bytes, cpu_bytes) = match scenario.options.offload
            {
                None if shard_plan.is_some() => {
                    let plan = shard_plan.expect("checked");
                    let n = plan.group as u64;
                    let largest = shard_plan::largest_piece_params(scenario, &plan, stage);
                    let shard = parameters.div_ceil(n);
                    // ZeRO-2: two gradient buckets; ZeRO-3: two units in flight.
                    // (Nothing is gathered or scattered in shard groups of one rank.)
                    let working = if n < 2 {
                        0
                    } else {
                        (shard_plan::INFLIGHT_ALL_GATHERS * largest).min(parameters)
                    };
                    if plan.mode == ZeroStage::Full {
                        weight_bytes = (shard + working) * WEIGHT_BYTES_PER_PARAM
                            + fp8_state_bytes
                            + zeropp_bytes(scenario.options.zeropp, parameters, working);
                    }
                    (
                        (shard + working) * grad_bytes_per_param,
                        optimizer.state_bytes(parameters).div_ceil(n),
                        0,
                    )
                }
                None => (
                    parameters * grad_bytes_per_param
                        + powersgd_bytes(scenario, stage, grad_bytes_per_param),
                    // The distributed optimizer keeps 1/d of the fp32 master
                    // weights and Adam states (Megatron's distrib_optimizer.py).
                    // A mixture of experts' routed experts shard over their
                    // expert-data-parallel group (dp·cp/ep ranks).
                    if scenario.options.distributed_optimizer {
                        optimizer
                            .state_bytes(parameters - expert_parameters)
                            .div_ceil(layout.replicas().max(1) as u64)
                            + optimizer
                                .state_bytes(expert_parameters)
                                .div_ceil(layout.expert_replicas() as u64)
                    } else {
                        optimizer.state_bytes(parameters).saturating_add(
                            optimizer.onebit_server_error_bytes(parameters, layout.replicas()),
                        )
                    },
                    0,
                ),
                Some(offload) => {
                    let plan = plan.offload();
                    let buffers = (2 * plan.largest_bucket_params()).min(parameters);
                    let per_param = OFFLOAD_CPU_BYTES_PER_PARAM
                        + if offload.delayed_update {
                            GRADIENT_BYTES_PER_PARAM
                        } else {
                            0
                        };
                    (
                        buffers * GRADIENT_BYTES_PER_PARAM,
                        0,
                        plan.shard_params * per_param,
                    )
                }
            };
            // Offloaded activations wait in the host's pinned memory.
            let cpu_bytes = cpu_bytes + (offloaded as f64 * stored(kind)) as u64;
            let total_bytes =
                weight_bytes + gradient_bytes + optimizer_state_bytes + activation_bytes;
            let capacity_bytes = scenario.topology.gpu.hbm_bytes;
            let gpus_on_node = layout
                .gpus()
                .min(scenario.topology.node.gpus_per_node)
                .max(1);
            let cpu_capacity_bytes = scenario.topology.host_cpu.memory_bytes / gpus_on_node as u64;
            let cpu_fits = cpu_bytes <= cpu_capacity_bytes;
            MemoryBreakdown {
                stage,
                parameters,
                weight_bytes,
                gradient_bytes,
                optimizer_state_bytes,
                activation_bytes,
                weight_gradient_pending_bytes,
                peak_microbatches_in_flight: in_flight,
                total_bytes,
                capacity_bytes,
                fits: total_bytes <= capacity_bytes && cpu_fits,
                cpu_bytes,
                cpu_capacity_bytes,
                cpu_fits,
            }
        })
        .collect()
}

/// What PowerSGD's hook keeps beside the gradients of a rank of `stage`
/// (`powerSGD_hook.py`): the error feedback, a buffer the size of the
/// bucket ("increases the peak memory consumption by the size of the
/// gradient tensor"), and warm start's P and Q, all in the gradients'
/// dtype; 0 without PowerSGD or with one data-parallel rank.
fn powersgd_bytes(scenario: &Scenario, stage: u32, element_bytes: u64) -> u64 {
    match scenario.options.powersgd_rank {
        Some(rank) if scenario.layout.replicas() > 1 => {
            let sizes = crate::cost::powersgd::stage_sizes(scenario, stage, u64::from(rank.get()));
            (sizes.elements + sizes.p_elements + sizes.q_elements) * element_bytes
        }
        _ => 0,
    }
}

/// What ZeRO++ adds to a ZeRO-3 rank's weights (`scenario::zeropp`): hpZ's
/// secondary shard, 1/hpZ of the stage's `parameters` in their 2-byte dtype
/// (`_partition_param_sec`: `dtype=param.dtype`), held from a unit's first
/// gather to the optimizer step; qwZ's INT8 receive buffers of the
/// `working` parameters in flight (1 B each) until they are dequantized.
fn zeropp_bytes(zeropp: scenario::ZeroPlusPlus, parameters: u64, working: u64) -> u64 {
    let secondary = zeropp.secondary_group().map_or(0, |group| {
        parameters.div_ceil(u64::from(group)) * WEIGHT_BYTES_PER_PARAM
    });
    let int8_buffers = if zeropp.quantized_weights { working } else { 0 };
    secondary + int8_buffers
}

#[cfg(test)]
mod tests {
    use super::*;
    use scenario::ScenarioFile;

    #[test]
    fn parameters_summed_over_ranks_equal_the_model_plus_tied_copy() {
        let scenario = ScenarioFile::embedded_default().resolve().unwrap();
        let layout = scenario.layout;
        let total: u64 = (0..layout.pipeline_parallel.get())
            .map(|stage| {
                parameters_on_rank(&scenario.model, layout.sharding(), stage)
                    * layout.tensor_parallel.get() as u64
            })
            .sum();
        let model = &scenario.model;
        let expected = models::formulas::parameter_count(model)
            + model.vocab * model.hidden // tied output embedding on the last stage
            + model.seq_len * model.hidden * (layout.tensor_parallel.get() as u64 - 1) // replicated position embeddings
            + 2 * model.hidden * layout.tensor_parallel.get() as u64; // final LayerNorm, replicated
        assert_eq!(total, expected);
    }
}

#[cfg(test)]
mod offload_tests {
    use super::*;
    use scenario::ScenarioFile;

    #[test]
    fn offload_keeps_two_bytes_of_model_state_per_parameter_on_the_gpu() {
        let file = ScenarioFile {
            model: Some("gpt2-10b".into()),
            topology: Some("dgx2-v100".into()),
            tp: Some(1),
            pp: Some(1),
            dp: Some(1),
            microbatch_size: Some(1),
            global_batch: Some(1),
            ..ScenarioFile::default()
        };
        let memory = |file: ScenarioFile| {
            let scenario = file.resolve().unwrap();
            memory_per_stage(&scenario, &Plan::of(&scenario)).remove(0)
        };
        let plain = memory(file.clone());
        let offload = memory(ScenarioFile {
            options: scenario::TrainingOptionsFile {
                zero_offload: Some(true),
                offload_bucket_params: Some(1),
                ..file.options.clone()
            },
            ..file
        });
        let states = |m: &MemoryBreakdown| m.weight_bytes + m.optimizer_state_bytes;
        assert_eq!(states(&plain) + plain.gradient_bytes, 16 * plain.parameters);
        assert_eq!(states(&offload), 2 * offload.parameters);
        assert_eq!(offload.cpu_bytes, 14 * offload.parameters);
        assert_eq!(plain.cpu_bytes, 0);
        assert_eq!(offload.cpu_capacity_bytes, 1536 << 30);
        assert!(!plain.fits && offload.fits);
    }
}
