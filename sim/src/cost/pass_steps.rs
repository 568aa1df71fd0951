//! Which kernels a compute work runs, in order: a pass's steps over its
//! layers, the embedding and the head (Megatron's gradient accumulation, a
//! split backward's halves, the host syncs a mixture of experts pays), cut
//! into the work's segment, with an FP8 pass's weight casts and the
//! activation codec first. [`super`] prices the steps.

use super::{activation_codec, gradients, pair_overlap, split_backward};
use models::ops::{self, PassSteps, Step};
use models::pipeline_ends;
use scenario::{Precision, Recompute, Scenario};
use std::num::NonZeroU64;
use taskgraph::task_graph::{ComputePass, Work, WHOLE_PASS};

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
        PassRouting::Alike(moe_layer_options(scenario)),
    )
}

/// [`pass_steps_of`] of a work's piece from model layer `first_layer` (the
/// work's `first_layer`): where the scenario routes each MoE layer its own
/// way, each of the piece's MoE layers takes its layer's routing; else the
/// same steps.
pub fn pass_steps_at(
    scenario: &Scenario,
    pass: ComputePass,
    (first_layer, layers, dense_layers): (u32, u32, u32),
    embedding: bool,
    head: bool,
) -> Vec<Step> {
    // A work whose layer counts do not match its place (activation
    // offloading's one layer standing for each, at layer 0, where layer 0
    // is dense) routes alike.
    let placed = scenario.model.moe.as_ref().is_some_and(|moe| {
        moe.moe_layers_in(u64::from(first_layer), u64::from(layers))
            == u64::from(layers - dense_layers.min(layers))
    });
    let routing = if routes_per_layer(scenario) && placed {
        PassRouting::PerLayer { first_layer }
    } else {
        PassRouting::Alike(moe_layer_options(scenario))
    };
    pass_steps_with(
        scenario,
        pass,
        layers,
        dense_layers,
        embedding,
        head,
        routing,
    )
}

/// Whether `scenario` routes each MoE layer its own way (an
/// `expert_imbalance` histogram of one line per MoE layer).
pub fn routes_per_layer(scenario: &Scenario) -> bool {
    scenario
        .experts
        .as_ref()
        .is_some_and(|routing| !routing.layers.is_empty())
}

/// The `first_layer` a work of a piece from model layer `first` carries:
/// `first` where the scenario routes each MoE layer its own way, else 0, so
/// that pieces that cost alike share one work.
pub fn work_first_layer(scenario: &Scenario, first: u64) -> u32 {
    if routes_per_layer(scenario) {
        u32::try_from(first).expect("a model's layer index fits u32")
    } else {
        0
    }
}

/// How a pass's MoE layers are routed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PassRouting {
    /// Every MoE layer with these options (`None`: a dense model).
    Alike(Option<models::moe_ops::MoeLayerOptions>),
    /// Each MoE layer of the pass's layers from model layer `first_layer` as
    /// the scenario's per-layer routing says.
    PerLayer { first_layer: u32 },
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

/// [`pass_steps_of`] with the MoE layers' routing given (the uniform
/// routing's for the FLOPs a skewed routing's pass reports).
pub fn pass_steps_with(
    scenario: &Scenario,
    pass: ComputePass,
    layers: u32,
    dense_layers: u32,
    embedding: bool,
    head: bool,
    routing: PassRouting,
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
    let alike = match routing {
        PassRouting::Alike(moe) => moe,
        PassRouting::PerLayer { .. } => moe_layer_options(scenario),
    };
    let layer = layer_of(alike, None);
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
    match routing {
        PassRouting::PerLayer { first_layer } => {
            for ordinal in moe_ordinals(scenario, pass, first_layer, layers) {
                let options = scenario.experts.as_ref().map(|routing| {
                    routing.layers[ordinal].layer_options(
                        moe_tokens_per_rank(scenario),
                        model.moe.as_ref().map_or(1, |moe| moe.top_k),
                    )
                });
                steps.extend(layer_of(options, None));
            }
        }
        PassRouting::Alike(_) => {
            for _ in 0..layers - dense_layers {
                steps.extend(layer.iter().cloned());
            }
        }
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

/// The MoE layers among the `layers` model layers from `first_layer`, as
/// indices into the scenario's per-layer routing, in the order `pass` runs
/// them (from the top in a backward).
fn moe_ordinals(
    scenario: &Scenario,
    pass: ComputePass,
    first_layer: u32,
    layers: u32,
) -> Vec<usize> {
    let Some(moe) = scenario.model.moe.as_ref() else {
        return Vec::new();
    };
    let first = u64::from(first_layer);
    let mut ordinals: Vec<usize> = (first..first + u64::from(layers))
        .filter(|&layer| moe.is_moe_layer(layer))
        .map(|layer| moe.moe_layers(layer) as usize)
        .collect();
    if pass.is_backward() {
        ordinals.reverse();
    }
    ordinals
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

/// The steps of the pass piece a compute, tensor all-reduce or expert
/// all-to-all work covers: its segment of its pass's steps, from its first
/// layer ([`pass_steps_at`]); `None` for any other work.
pub fn work_piece_steps(scenario: &Scenario, work: &Work) -> Option<Vec<Step>> {
    let (Work::Compute {
        pass,
        first_layer,
        layers,
        dense_layers,
        embedding,
        head,
        segment,
        ..
    }
    | Work::TensorAllReduce {
        pass,
        first_layer,
        layers,
        dense_layers,
        embedding,
        head,
        segment,
        ..
    }
    | Work::ExpertAllToAll {
        pass,
        first_layer,
        layers,
        dense_layers,
        embedding,
        head,
        segment,
        ..
    }) = *work
    else {
        return None;
    };
    let pass_steps = pass_steps_at(
        scenario,
        pass,
        (first_layer, layers, dense_layers),
        embedding,
        head,
    );
    Some(segment_steps(pass_steps, segment))
}

/// The steps a compute work runs, in order: an FP8 pass's weight casts
/// first (in its first segment), then its segment of the pass's steps;
/// `None` for a work that is not a computation.
pub fn compute_steps(scenario: &Scenario, work: &Work) -> Option<Vec<Step>> {
    let Work::Compute {
        pass,
        layers,
        fp8_weight_cast,
        segment,
        ..
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
    steps.extend(work_piece_steps(scenario, work)?);
    Some(steps)
}
