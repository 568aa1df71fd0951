//! Parameter counts per GPU under Megatron's sharding: layers split over p·v
//! virtual stages (evenly, or with the embedding and the loss counted as a
//! layer each: [`PipelineSplit`]), every weight matrix split t ways, the word
//! embedding vocab-parallel. Pure counts: no bytes, no time.

use crate::formulas;
use crate::spec::ModelSpec;
pub use crate::stage_map::StageMap;
use serde::{Deserialize, Serialize};
use std::num::NonZeroU32;

/// Megatron-Core's uneven pipeline split
/// (`--account-for-embedding-in-pipeline-split`,
/// `--account-for-loss-in-pipeline-split`;
/// `megatron/core/transformer/transformer_block.py` `get_num_layers_to_build`):
/// the embedding and/or the loss count as one layer each, the L (+1 +1)
/// "layers" are split evenly over the p·v virtual stages, and the first
/// (last) virtual stage builds one transformer layer fewer. Llama 3.1 405B's
/// 126 layers on 8 × 8 virtual stages run so (Megatron-Bridge's recipes set
/// both): 2 per virtual stage, 1 on the first and the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSplit {
    /// The embedding counts as a layer of the first virtual stage.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub embedding: bool,
    /// The loss counts as a layer of the last virtual stage.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub loss: bool,
    /// Megatron-Core's `--pipeline-model-parallel-layout`: the transformer
    /// layers of every virtual stage, as written (`crate::pipeline_layout`);
    /// the embedding on the first virtual stage, the loss on the last. Set
    /// by the scenario's `pipeline_layout` key (validated there), never read
    /// from this object.
    #[serde(default, skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub layout: Option<crate::pipeline_layout::StageLayers>,
}

impl PipelineSplit {
    /// Every virtual stage builds L/(p·v) layers.
    pub fn is_even(&self) -> bool {
        !self.embedding && !self.loss && self.layout.is_none()
    }

    /// The split of an explicit layout.
    pub fn from_layout(layout: crate::pipeline_layout::StageLayers) -> PipelineSplit {
        PipelineSplit {
            layout: Some(layout),
            ..PipelineSplit::default()
        }
    }

    /// The "layers" the split adds to the model's: one for the embedding
    /// and one for the loss where it counts them.
    pub fn counted_ends(&self) -> u64 {
        u64::from(self.embedding) + u64::from(self.loss)
    }
}

/// How a model is cut up: tensor-parallel degree t, pipeline stages p and
/// model chunks per stage v (interleaved and V schedules), so p·v virtual
/// stages, how the layers are split over them, and which rank holds which
/// virtual stage ([`StageMap`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sharding {
    pub tensor_parallel: NonZeroU32,
    pub pipeline_parallel: NonZeroU32,
    pub chunks: NonZeroU32,
    pub split: PipelineSplit,
    pub map: StageMap,
    /// Expert-parallel degree ep: each rank holds E/ep of every MoE layer's
    /// routed experts (1 for dense models).
    pub expert_parallel: NonZeroU32,
    /// Expert tensor-parallel degree etp: each of those experts' fc1
    /// column-parallel and fc2 row-parallel over etp ranks, 1/etp of its
    /// weights on each (Megatron-Core's `TEGroupedMLP` over the expert
    /// tensor group; 1 for dense models).
    pub expert_tensor_parallel: NonZeroU32,
}

impl Sharding {
    /// Ways a MoE layer's routed experts' parameters are split: ep·etp.
    pub fn expert_ways(&self) -> u64 {
        u64::from(self.expert_parallel.get()) * u64::from(self.expert_tensor_parallel.get())
    }

    /// Virtual stages p·v.
    pub fn virtual_stages(&self) -> u32 {
        self.pipeline_parallel.get() * self.chunks.get()
    }

    /// The stages one copy of the model is cut into: p·v, or p for
    /// DualPipe's two copies of p stages each.
    pub fn model_stages(&self) -> NonZeroU32 {
        match self.map {
            StageMap::DualPipe => self.pipeline_parallel,
            StageMap::Interleaved | StageMap::V => {
                self.pipeline_parallel.saturating_mul(self.chunks)
            }
        }
    }

    /// Which stage of its model copy virtual stage `virtual_stage` is (the
    /// virtual stage itself unless the pipeline holds two copies).
    pub fn model_stage(&self, virtual_stage: u32) -> u32 {
        virtual_stage % self.model_stages().get()
    }

    /// Whether virtual stage `virtual_stage` is the first of its copy (the
    /// embedding) and whether it is the last (the head and the loss).
    pub fn is_end(&self, virtual_stage: u32) -> (bool, bool) {
        let stage = self.model_stage(virtual_stage);
        (stage == 0, stage + 1 == self.model_stages().get())
    }

    /// Whether some chunk of pipeline stage (rank) `stage` holds a head
    /// and its loss (DualPipe: ranks 0 and p−1 both do).
    pub fn holds_head(&self, stage: u32) -> bool {
        (0..self.chunks.get()).any(|chunk| self.is_end(self.virtual_stage(stage, chunk)).1)
    }

    /// The "layers" split evenly over the virtual stages: the model's, plus
    /// the embedding and the loss where the split counts them.
    pub fn split_layers(&self, layers: u64) -> u64 {
        layers + self.split.counted_ends()
    }

    /// Transformer layers an ordinary virtual stage builds (the most any
    /// builds): the split layers over p·v, or a layout's largest stage.
    pub fn layers_per_chunk(&self, layers: u64) -> u64 {
        if let Some(layout) = self.split.layout {
            return layout.layers().iter().copied().max().unwrap_or(0) as u64;
        }
        self.split_layers(layers) / (self.model_stages().get() as u64)
    }

    /// The virtual stage chunk `chunk` of pipeline stage (rank) `stage` runs.
    pub fn virtual_stage(&self, stage: u32, chunk: u32) -> u32 {
        self.map
            .stage_of(self.pipeline_parallel.get(), stage, chunk)
    }

    /// (pipeline stage, chunk) of the first and of the last virtual stage:
    /// where the embedding and the head are.
    pub fn ends(&self) -> ((u32, u32), (u32, u32)) {
        let p = self.pipeline_parallel.get();
        (
            self.map.place(p, 0),
            self.map.place(p, self.virtual_stages() - 1),
        )
    }

    /// Transformer layers of chunk `chunk` on pipeline stage `stage`
    /// (virtual stage [`Self::virtual_stage`]): [`Self::layers_per_chunk`],
    /// one fewer on the first virtual stage when the embedding counts as a
    /// layer and on the last when the loss does.
    /// With a layout, the layout's count for that virtual stage.
    pub fn layers_of_chunk(&self, layers: u64, stage: u32, chunk: u32) -> u64 {
        let virtual_stage = self.map.stage_of_wide(
            u64::from(self.pipeline_parallel.get()),
            stage as u64,
            chunk as u64,
        ) % (self.model_stages().get() as u64);
        if let Some(layout) = self.split.layout {
            return layout
                .layers()
                .get(virtual_stage as usize)
                .copied()
                .unwrap_or(0) as u64;
        }
        let last = self.model_stages().get() as u64 - 1;
        let mut count = self.layers_per_chunk(layers);
        if virtual_stage == 0 && self.split.embedding {
            count = count.saturating_sub(1);
        }
        if virtual_stage == last && self.split.loss {
            count = count.saturating_sub(1);
        }
        count
    }
}

impl Sharding {
    /// The model's index (0-based) of the first transformer layer of chunk
    /// `chunk` on pipeline stage `stage`: the layers of every earlier
    /// virtual stage ([`Self::layers_of_chunk`]).
    pub fn first_layer_of_chunk(&self, layers: u64, stage: u32, chunk: u32) -> u64 {
        let virtual_stage = self.map.stage_of_wide(
            u64::from(self.pipeline_parallel.get()),
            stage as u64,
            chunk as u64,
        );
        // Its place in its model copy (DualPipe's second copy starts over).
        let virtual_stage = virtual_stage % u64::from(self.model_stages().get());
        if let Some(layout) = self.split.layout {
            return layout
                .layers()
                .iter()
                .take(virtual_stage as usize)
                .map(|&n| n as u64)
                .sum();
        }
        let before = virtual_stage * self.layers_per_chunk(layers);
        before.saturating_sub(u64::from(virtual_stage > 0 && self.split.embedding))
    }
}

/// Whether a model's layers differ in kind: a mixture of experts with dense
/// layers among its MoE layers (`first_dense_layers`, `layer_frequency`).
pub fn has_dense_and_moe_layers(model: &ModelSpec) -> bool {
    model
        .moe
        .as_ref()
        .is_some_and(|moe| moe.moe_layers(model.layers) != model.layers)
}

/// Of the `layers` layers from the model's layer `first`, how many are dense
/// in a model with experts (0 for a dense model: its every layer is the
/// model's one kind).
pub fn dense_layers_in(model: &ModelSpec, first: u64, layers: u64) -> u64 {
    model
        .moe
        .as_ref()
        .map_or(0, |moe| layers - moe.moe_layers_in(first, layers))
}

/// Parameters held by one rank of pipeline stage `stage`: its layers split t
/// ways, the vocab-parallel word embedding on the first virtual stage (plus
/// position embeddings, replicated, unless RoPE), and the output layer (the
/// tied embedding's copy, or the untied output matrix) plus final norm on the
/// last virtual stage.
pub fn parameters_on_rank(model: &ModelSpec, sharding: Sharding, stage: u32) -> u64 {
    // The sum of `parameters_of_chunk` over the stage's chunks in closed
    // form (a user may ask for 2³¹ chunks: validation refuses them, but
    // counts them first): every chunk but the first virtual stage's and the
    // last's has the same layers; the first adds the embedding, the last the
    // head. A layout's chunks may all differ: summed one by one (its p·v
    // stages were written out, so there are few).
    // DualPipe's two copies put an end on both ranks 0 and p−1: summed too,
    // as are the chunks of a model with dense layers among its MoE layers.
    if sharding.split.layout.is_some()
        || sharding.map.copies() > 1
        || (has_dense_and_moe_layers(model) && u64::from(sharding.chunks.get()) <= model.layers)
    {
        return (0..sharding.chunks.get())
            .map(|chunk| parameters_of_chunk(model, sharding, stage, chunk))
            .sum();
    }
    let chunks = sharding.chunks.get();
    let ordinary = parameters_of_layers(
        model,
        sharding,
        sharding.layers_per_chunk(model.layers),
        false,
        false,
    );
    let ((first_stage, first_chunk), (last_stage, last_chunk)) = sharding.ends();
    let mut special: Vec<u32> = Vec::new();
    if stage == first_stage {
        special.push(first_chunk);
    }
    if stage == last_stage && !special.contains(&last_chunk) {
        special.push(last_chunk);
    }
    let special_layers: u64 = special
        .iter()
        .map(|&chunk| {
            parameters_of_layers(
                model,
                sharding,
                sharding.layers_of_chunk(model.layers, stage, chunk),
                false,
                false,
            )
        })
        .sum();
    let ends = parameters_of_layers(
        model,
        sharding,
        0,
        stage == first_stage,
        stage == last_stage,
    );
    ordinary
        .saturating_mul(u64::from(chunks) - special.len() as u64)
        .saturating_add(special_layers)
        .saturating_add(ends)
}

/// Parameters of one model chunk on one rank of pipeline stage `stage`.
pub fn parameters_of_chunk(model: &ModelSpec, sharding: Sharding, stage: u32, chunk: u32) -> u64 {
    let (first, last) = sharding.is_end(sharding.virtual_stage(stage, chunk));
    parameters_of_layer_range(
        model,
        sharding,
        sharding.first_layer_of_chunk(model.layers, stage, chunk),
        sharding.layers_of_chunk(model.layers, stage, chunk),
        first,
        last,
    )
}

/// [`parameters_of_layers`] of the `layers` layers from the model's layer
/// `first`, each at its own kind: a dense layer of a model with experts
/// holds [`formulas::layer_parameters`] split t ways.
pub fn parameters_of_layer_range(
    model: &ModelSpec,
    sharding: Sharding,
    first: u64,
    layers: u64,
    embedding: bool,
    head: bool,
) -> u64 {
    let dense = dense_layers_in(model, first, layers);
    parameters_of_pass(model, sharding, layers, dense, embedding, head)
}

/// Parameters on one rank of a pass over `layers` layers of which
/// `dense_layers` are a mixture of experts' dense ones (0 for a dense
/// model), plus the embedding and/or head: what ZeRO-3 gathers for it.
pub fn parameters_of_pass(
    model: &ModelSpec,
    sharding: Sharding,
    layers: u64,
    dense_layers: u64,
    embedding: bool,
    head: bool,
) -> u64 {
    let dense_layer = formulas::layer_parameters(model) / u64::from(sharding.tensor_parallel.get());
    parameters_of_layers(model, sharding, layers - dense_layers, embedding, head)
        .saturating_add(dense_layers.saturating_mul(dense_layer))
}

/// [`expert_parameters_of_layers`] of the `layers` layers from the model's
/// layer `first`: only its MoE layers hold routed experts.
pub fn expert_parameters_of_layer_range(
    model: &ModelSpec,
    sharding: Sharding,
    first: u64,
    layers: u64,
) -> u64 {
    let moe_layers = layers - dense_layers_in(model, first, layers);
    expert_parameters_of_layers(model, sharding, moe_layers)
}

/// Parameters of one layer on one rank: a dense layer's split t ways; a MoE
/// layer's (the layers of a model with `moe`, but its dense ones:
/// [`parameters_of_layer_range`]) attention, norms and router t ways and
/// its routed experts ep·etp ways ([`expert_parameters_of_layers`]).
pub fn layer_parameters_on_rank(model: &ModelSpec, sharding: Sharding) -> u64 {
    let t = u64::from(sharding.tensor_parallel.get());
    if model.moe.is_none() {
        return formulas::layer_parameters(model) / t;
    }
    let routed = formulas::routed_expert_parameters(model);
    (formulas::moe_layer_parameters(model) - routed) / t + routed / sharding.expert_ways()
}

/// The routed experts' parameters among `layers` layers on one rank: E/ep
/// experts per layer, each 1/etp of its weights (0 for a dense model; the
/// simulator requires etp to divide the expert's inner size, and refuses
/// biased experts, so the split is exact). Their gradients are reduced over
/// the expert-data-parallel group (t·dp·cp/(ep·etp) ranks), the rest over
/// dp·cp.
pub fn expert_parameters_of_layers(model: &ModelSpec, sharding: Sharding, layers: u64) -> u64 {
    layers * formulas::routed_expert_parameters(model) / sharding.expert_ways()
}

/// The routed experts' parameters on one rank of pipeline stage `stage`
/// (every chunk's layers; 0 for a dense model).
pub fn expert_parameters_of_stage(model: &ModelSpec, sharding: Sharding, stage: u32) -> u64 {
    (0..sharding.chunks.get())
        .map(|chunk| {
            expert_parameters_of_layer_range(
                model,
                sharding,
                sharding.first_layer_of_chunk(model.layers, stage, chunk),
                sharding.layers_of_chunk(model.layers, stage, chunk),
            )
        })
        .sum()
}

/// Parameters on one rank of `layers` layers plus, optionally, the embedding
/// (word and, without RoPE, position tables) and the head (final norm, and
/// the output layer: its own matrix when untied, else the copy of the word
/// embedding when that sits on another stage).
pub fn parameters_of_layers(
    model: &ModelSpec,
    sharding: Sharding,
    layers: u64,
    embedding: bool,
    head: bool,
) -> u64 {
    let t = u64::from(sharding.tensor_parallel.get());
    let mut params = layers * layer_parameters_on_rank(model, sharding);
    if embedding {
        params += model.vocab * model.hidden / t;
        if model.learned_positions() {
            params += model.seq_len * model.hidden;
        }
    }
    if head {
        if sharding.virtual_stages() > 1 || !model.tied_embeddings {
            params += model.vocab * model.hidden / t;
        }
        params += model.norm_parameters();
    }
    params
}

#[cfg(test)]
#[path = "sharding_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "sharding_moe_tests.rs"]
mod moe_tests;
